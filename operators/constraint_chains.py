"""`chain_ik.chains_from_constraints` and `chain_ik.constraints_from_chains`: adopt a rig's IK
constraints as chains, and write chains back as IK constraints (for rigs that must work without
the extension). The work is app.spec.adopt's; these report what it did."""

from __future__ import annotations

import bpy
from bpy.props import BoolProperty

from ..app.spec import adopt
from .solve import armature_poll, chains_poll


def _report(operator, outcome: adopt.Outcome, skipped: str) -> None:
    for line in outcome.skipped:
        operator.report({"WARNING"}, f"{skipped}: {line}")
    for line in outcome.warnings:
        operator.report({"WARNING"}, line)
    for line in outcome.infos:
        operator.report({"INFO"}, line)


class CHAINIK_OT_chains_from_constraints(bpy.types.Operator):
    """One chain per IK constraint of the active armature (tip, length, target, pole, weights)"""

    bl_idname = "chain_ik.chains_from_constraints"
    bl_label = "Chains from IK Constraints"
    bl_options = {"REGISTER", "UNDO"}

    mute_constraints: BoolProperty(
        name="Mute Constraints",
        description="Mute the IK constraints that became chains, so Chain IK's result shows"
        " (where a driver or keys set the mute, as Rigify's pole switch does: influence 0)",
        default=True,
    )

    @classmethod
    def poll(cls, context) -> bool:
        return armature_poll(cls, context)

    def execute(self, context):
        try:
            outcome = adopt.adopt(context, context.object, self.mute_constraints)
        except ValueError as exc:
            self.report({"ERROR"}, str(exc))
            return {"CANCELLED"}
        _report(self, outcome, "not adopted")
        summary = f"{len(outcome.done)} chain(s) made, {len(outcome.updated)} updated from IK constraints"
        if outcome.skipped:
            summary += f", {len(outcome.skipped)} not adopted"
        self.report({"INFO"}, summary)
        return {"FINISHED"}


class CHAINIK_OT_constraints_from_chains(bpy.types.Operator):
    """Write the chains in scope (muted ones too) as IK constraints on their tip bones, so the rig poses
    without the extension"""

    bl_idname = "chain_ik.constraints_from_chains"
    bl_label = "IK Constraints from Chains"
    bl_options = {"REGISTER", "UNDO"}

    @classmethod
    def poll(cls, context) -> bool:
        return chains_poll(cls, context)

    def execute(self, context):
        obj = context.object
        settings = obj.chain_ik
        selected_only = settings.scope == "SELECTED"
        items = [c for c in settings.chains if c.select or not selected_only]
        try:
            outcome = adopt.write_back(context, obj, items)
        except ValueError as exc:
            self.report({"ERROR"}, str(exc))
            return {"CANCELLED"}
        if not outcome.done:
            self.report({"ERROR"}, "no IK constraint written: " + "; ".join(outcome.skipped))
            return {"CANCELLED"}
        _report(self, outcome, "not written")
        names = ", ".join(f"'{n}'" for n in outcome.done)
        self.report({"INFO"}, f"IK constraints written for {names}")
        return {"FINISHED"}


CLASSES = (CHAINIK_OT_chains_from_constraints, CHAINIK_OT_constraints_from_chains)
