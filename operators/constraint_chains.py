"""`chain_ik.chains_from_constraints` and `chain_ik.constraints_from_chains`: adopt a rig's IK
constraints as chains, and write chains back as IK constraints (for rigs that must work without
the extension)."""

from __future__ import annotations

import bpy
from bpy.props import BoolProperty

from ..rig import ik_constraints
from .solve import armature_poll

# Chain fields set from a ConstraintChain of the same name.
FIELDS = (
    "use_tail",
    "chain_length",
    "target_bone",
    "pole_angle",
    "use_rotation",
    "rotation_weight",
    "influence",
    "use_stretch",
    "use_locks",
)


def _fill(item, chain: ik_constraints.ConstraintChain) -> None:
    item.tip, item.constraint, item.target = chain.bone, chain.constraint, chain.target
    for name in FIELDS:
        setattr(item, name, getattr(chain, name))
    item.pole_target, item.pole_subtarget = chain.pole, chain.pole_bone
    item.max_iterations = chain.max_iterations
    item.mute = chain.muted


class CHAINIK_OT_chains_from_constraints(bpy.types.Operator):
    """One chain per IK constraint of the active armature (tip, length, target, pole, weights)"""

    bl_idname = "chain_ik.chains_from_constraints"
    bl_label = "Chains from IK Constraints"
    bl_options = {"REGISTER", "UNDO"}

    mute_constraints: BoolProperty(
        name="Mute Constraints",
        description="Mute the IK constraints that became chains, so Chain IK's result shows"
        " (where a driver sets the mute, as Rigify's pole switch does: influence 0)",
        default=True,
    )

    @classmethod
    def poll(cls, context) -> bool:
        return armature_poll(cls, context)

    def execute(self, context):
        obj = context.object
        found = ik_constraints.ik_constraints(obj)
        if not found:
            self.report({"ERROR"}, f"armature '{obj.name}' has no IK constraints")
            return {"CANCELLED"}
        settings = obj.chain_ik
        made, updated = [], []
        for pbone, con in found:
            chain = ik_constraints.read(obj, pbone, con)
            if isinstance(chain, str):
                self.report({"WARNING"}, f"not adopted: {chain}")
                continue
            item = next((c for c in settings.chains if c.tip == chain.bone and c.constraint == chain.constraint), None)
            (updated if item is not None else made).append(chain.name)
            if item is None:
                item = settings.chains.add()
                item.name = chain.name
            _fill(item, chain)
            for note in chain.unsupported:
                self.report({"WARNING"}, f"chain '{chain.name}': not supported, {note}")
            if self.mute_constraints:
                self._mute(obj, pbone, con, chain.name)
        if made or updated:
            settings.active_index = len(settings.chains) - 1
        self.report({"INFO"}, f"{len(made)} chain(s) made, {len(updated)} updated from IK constraints")
        return {"FINISHED"}

    def _mute(self, obj, pbone, con, name: str) -> None:
        if ik_constraints.driven(obj, pbone, con, "mute"):
            con.influence = 0.0
            self.report({"INFO"}, f"chain '{name}': a driver sets the mute of '{con.name}': influence set to 0")
        else:
            con.mute = True


class CHAINIK_OT_constraints_from_chains(bpy.types.Operator):
    """Write the chains in scope (muted ones too) as IK constraints on their tip bones, so the rig poses
    without the extension"""

    bl_idname = "chain_ik.constraints_from_chains"
    bl_label = "IK Constraints from Chains"
    bl_options = {"REGISTER", "UNDO"}

    @classmethod
    def poll(cls, context) -> bool:
        if not armature_poll(cls, context):
            return False
        if not context.object.chain_ik.chains:
            cls.poll_message_set("Add a chain first")
            return False
        return True

    def execute(self, context):
        obj = context.object
        settings = obj.chain_ik
        selected_only = settings.scope == "SELECTED"
        items = [c for c in settings.chains if c.select or not selected_only]
        bad = [c.name for c in items if c.tip not in obj.pose.bones]
        if bad or not items:
            self.report({"ERROR"}, f"no tip bone on {', '.join(bad)}" if bad else "no chain is selected")
            return {"CANCELLED"}
        written = []
        for item in items:
            pbone = obj.pose.bones[item.tip]
            con = pbone.constraints.get(item.constraint) if item.constraint else None
            if con is None or con.type != "IK":
                con = pbone.constraints.new("IK")
                item.constraint = con.name
            ik_constraints.write(pbone, con, item)
            if ik_constraints.driven(obj, pbone, con, "mute"):
                self.report({"WARNING"}, f"chain '{item.name}': a driver sets the mute of '{con.name}', not the chain")
            written.append(f"'{item.name}'")
        self.report({"INFO"}, f"IK constraints written for {', '.join(written)}")
        return {"FINISHED"}


CLASSES = (CHAINIK_OT_chains_from_constraints, CHAINIK_OT_constraints_from_chains)
