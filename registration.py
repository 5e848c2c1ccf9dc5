"""Class registration: explicit tuples, registered in order and removed in reverse."""

from __future__ import annotations

import bpy

from . import operators, properties, ui
from .app import live

# PropertyGroups first (operators and panels refer to them), then operators, then UI.
CLASSES = (*properties.CLASSES, *operators.CLASSES, *ui.CLASSES)

_register_classes, _unregister_classes = bpy.utils.register_classes_factory(CLASSES)


def register() -> None:
    _register_classes()
    properties.register_owner()
    live.register_handlers()


def unregister() -> None:
    live.unregister_handlers()
    properties.unregister_owner()
    _unregister_classes()
