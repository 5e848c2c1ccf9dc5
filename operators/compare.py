"""`chain_ik.compare`: every solver on the active chain's current target, side by side.

Solves only, each solver from the chain's rest pose: the pose is never written. The figures are stored on the chain
(`comparison`) for the panel to draw.
"""

from __future__ import annotations

import bpy

from .. import solvers
from . import run
from .solve import armature_poll


class CHAINIK_OT_compare(bpy.types.Operator):
    """Every solver on the active chain, each from its rest pose: tip error, iterations, cost, time (pose unchanged)"""

    bl_idname = "chain_ik.compare"
    bl_label = "Compare Solvers"
    bl_options = {"REGISTER"}

    @classmethod
    def poll(cls, context) -> bool:
        if not armature_poll(cls, context):
            return False
        if context.object.chain_ik.active is None:
            cls.poll_message_set("Add a chain first")
            return False
        return True

    def execute(self, context):
        obj = context.object
        item = obj.chain_ik.active
        depsgraph = context.evaluated_depsgraph_get()
        try:
            # Every solver from the same start, the chain's rest pose: not from whatever the last Solve left.
            outcomes = [
                run.solve_spec(obj, run.spec_from_item(item, method=m), depsgraph, from_rest=True)
                for m in solvers.METHODS
            ]
        except ValueError as exc:
            self.report({"ERROR"}, str(exc))
            return {"CANCELLED"}
        item.comparison.clear()
        for o in outcomes:
            row = item.comparison.add()
            row.method = o.spec.method
            row.error = o.error
            row.iterations = o.iterations
            row.cost = o.cost
            row.time_ms = o.time_ms
            row.reached = o.reached
        best = min(outcomes, key=lambda o: (o.error, o.cost))
        self.report({"INFO"}, f"compared {len(outcomes)} solvers; closest: {best.spec.method}")
        return {"FINISHED"}


CLASSES = (CHAINIK_OT_compare,)
