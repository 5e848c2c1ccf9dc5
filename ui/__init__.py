"""Panels and lists: draw only."""

from . import panels

CLASSES = panels.CLASSES

__all__ = ["CLASSES", "panels"]
