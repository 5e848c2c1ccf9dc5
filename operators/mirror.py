"""`chain_ik.chain_mirror`: the active chain's .L <-> .R counterpart (app.spec.mirror)."""

from __future__ import annotations

import bpy

from ..app.spec import mirror
from .solve import chains_poll


class CHAINIK_OT_chain_mirror(bpy.types.Operator):
    """Create (or update) the active chain's counterpart on the other side: .L <-> .R names, targets and poles,
    mirrored pole angle, the same settings"""

    bl_idname = "chain_ik.chain_mirror"
    bl_label = "Mirror Chain"
    bl_options = {"REGISTER", "UNDO"}

    @classmethod
    def poll(cls, context) -> bool:
        return chains_poll(cls, context, active=True)

    def execute(self, context):
        obj = context.object
        source = obj.chain_ik.active.name
        try:
            name, made, changed = mirror.mirror_active(obj)
        except ValueError as exc:
            self.report({"ERROR"}, str(exc))
            return {"CANCELLED"}
        if made:
            self.report({"INFO"}, f"chain '{name}' made from '{source}'")
        elif changed:  # an update overwrites what was set there: say what (Undo brings it back)
            self.report({"WARNING"}, f"chain '{name}' updated from '{source}': {', '.join(changed)} overwritten")
        else:
            self.report({"INFO"}, f"chain '{name}' updated from '{source}': nothing changed")
        return {"FINISHED"}


CLASSES = (CHAINIK_OT_chain_mirror,)
