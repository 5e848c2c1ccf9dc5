"""`chain_ik.live_toggle`: switch Live on (or off) for the chains in scope, as the panel's Live button."""

from __future__ import annotations

import bpy

from ..app.spec import scope
from .solve import armature_poll


class CHAINIK_OT_live_toggle(bpy.types.Operator):
    """Switch Live on for the chains in scope (all or the ticked ones, not muted); off when all of them are on"""

    bl_idname = "chain_ik.live_toggle"
    bl_label = "Live"
    bl_options = {"REGISTER", "UNDO"}

    @classmethod
    def poll(cls, context) -> bool:
        return armature_poll(cls, context)

    def execute(self, context):
        try:
            items = scope.scoped_items(context.object.chain_ik)
        except ValueError as exc:
            self.report({"ERROR"}, str(exc))
            return {"CANCELLED"}
        state = not all(item.live for item in items)
        for item in items:
            if item.live != state:
                item.live = state  # its update starts Live's watch
        names = ", ".join(f"'{item.name}'" for item in items)
        self.report({"INFO"}, f"Live {'on' if state else 'off'} for {names}")
        return {"FINISHED"}


CLASSES = (CHAINIK_OT_live_toggle,)
