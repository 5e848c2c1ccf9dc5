"""Chain list operators: add, remove, and a chain from the selected bones."""

from __future__ import annotations

import bpy

from ..app.spec import add_chain
from ..rig import contacts as rig_contacts
from ..rig import selection
from .solve import armature_poll, chains_poll


def _new_chain(obj, tip: str, length: int | None = None):
    settings = obj.chain_ik
    settings.active_index = add_chain(obj)
    item = settings.chains[settings.active_index]
    item.name = tip or "Chain"
    item.tip = tip
    if length is not None:
        item.chain_length = length
    return item


class CHAINIK_OT_chain_add(bpy.types.Operator):
    """Add an IK chain ending at the active bone"""

    bl_idname = "chain_ik.chain_add"
    bl_label = "Add Chain"
    bl_options = {"REGISTER", "UNDO"}

    @classmethod
    def poll(cls, context) -> bool:
        return armature_poll(cls, context)

    def execute(self, context):
        obj = context.object
        bone = obj.data.bones.active
        _new_chain(obj, bone.name if bone is not None else "")
        return {"FINISHED"}


class CHAINIK_OT_chain_remove(bpy.types.Operator):
    """Remove the active IK chain from the list"""

    bl_idname = "chain_ik.chain_remove"
    bl_label = "Remove Chain"
    bl_options = {"REGISTER", "UNDO"}

    @classmethod
    def poll(cls, context) -> bool:
        return chains_poll(cls, context, active=True, message="There is no chain to remove")

    def execute(self, context):
        obj = context.object
        settings = obj.chain_ik
        paths = [rig_contacts.contact_path(item) for item in settings.chains]
        try:
            settings.chains.remove(settings.active_index)
        except TypeError:  # a library override may remove only the chains added in this file
            self.report({"ERROR"}, f"chain '{settings.active.name}' comes from the linked library: an override"
                        " can remove only the chains added in this file")  # fmt: skip
            return {"CANCELLED"}
        rig_contacts.follow_removed_chain(obj, paths, settings.active_index)  # keys name chains by index
        settings.active_index = max(0, min(settings.active_index, len(settings.chains) - 1))
        obj.update_tag()  # the evaluated copy's chains follow (their keyed Contact plays)
        return {"FINISHED"}


class CHAINIK_OT_chain_from_selected(bpy.types.Operator):
    """Add an IK chain made of the selected bones (one unbroken parent-child chain)"""

    bl_idname = "chain_ik.chain_from_selected"
    bl_label = "Chain from Selected Bones"
    bl_options = {"REGISTER", "UNDO"}

    @classmethod
    def poll(cls, context) -> bool:
        return armature_poll(cls, context)

    def execute(self, context):
        obj = context.object
        try:
            tip, length = selection.selected_chain(obj)
        except ValueError as exc:
            self.report({"ERROR"}, str(exc))
            return {"CANCELLED"}
        item = _new_chain(obj, tip, length)
        # A selected non-armature object is the natural target (select it, then the bones).
        others = [o for o in (getattr(context, "selected_objects", None) or []) if o is not obj]
        if len(others) == 1:
            item.target = others[0]
        self.report({"INFO"}, f"chain '{tip}' with {length} bone(s)")
        return {"FINISHED"}


CLASSES = (CHAINIK_OT_chain_add, CHAINIK_OT_chain_remove, CHAINIK_OT_chain_from_selected)
