"""`chain_ik.compare`: every solver on each chain in scope (all or the ticked ones, not muted), side by side.

Solves only, each solver from the chain's rest pose: the pose is never written. The figures are stored on the chain
(`comparison`) for the panel to draw.
"""

from __future__ import annotations

import bpy

from .. import solvers
from ..app import scope, solve, spec
from .solve import armature_poll


class CHAINIK_OT_compare(bpy.types.Operator):
    """Every solver on the chains in scope, each from its rest pose: tip error, iterations, cost, time"""

    bl_idname = "chain_ik.compare"
    bl_label = "Compare Solvers"
    bl_options = {"REGISTER"}

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
        depsgraph = context.evaluated_depsgraph_get()
        try:
            items = scope.scoped_items(obj.chain_ik)
            # Every solver from the same start, the chain's rest pose: not from whatever the last Solve left.
            rows = [
                [
                    solve.solve_spec(obj, spec.spec_from_item(item, method=m), depsgraph, from_rest=True)
                    for m in solvers.METHODS
                ]
                for item in items
            ]
        except ValueError as exc:
            self.report({"ERROR"}, str(exc))
            return {"CANCELLED"}
        for item, outcomes in zip(items, rows, strict=True):
            _store(item, outcomes)
            best = min(outcomes, key=lambda o: (o.error, o.cost))
            self.report({"INFO"}, f"chain '{item.name}': compared {len(outcomes)} solvers; closest: {best.spec.method}")
        return {"FINISHED"}


def _store(item, outcomes) -> None:
    item.comparison.clear()
    for o in outcomes:
        row = item.comparison.add()
        row.method = o.spec.method
        row.error = o.error
        row.iterations = o.iterations
        row.cost = o.cost
        row.time_ms = o.time_ms
        row.reached = o.reached


CLASSES = (CHAINIK_OT_compare,)
