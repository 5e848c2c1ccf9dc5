"""`chain_ik.compare`: every solver on each chain in scope (all or the ticked ones, not muted), side by side.

Solves only, each solver from the chain's rest pose: the pose is never written. The figures are stored on the chain
(`comparison`) for the panel to draw.
"""

from __future__ import annotations

import bpy

from .. import solvers
from ..app import solve, spec
from ..app.spec import groups, scope
from .solve import chains_poll


class CHAINIK_OT_compare(bpy.types.Operator):
    """Every solver on the chains in scope, each from its rest pose: tip error, iterations, cost, time"""

    bl_idname = "chain_ik.compare"
    bl_label = "Compare Solvers"
    bl_options = {"REGISTER", "UNDO"}

    @classmethod
    def poll(cls, context) -> bool:
        return chains_poll(cls, context)

    def execute(self, context):
        obj = context.object
        depsgraph = context.evaluated_depsgraph_get()
        try:
            items = scope.scoped_items(obj.chain_ik)
            pinned = [item.name for item in items if item.pin]
            # An aim's pass is the same for every method (solvers.common.aim_goals): nothing to compare.
            aiming = [item.name for item in items if item.aim_axis != "NONE" and not item.pin]
            items = [item for item in items if not item.pin and item.aim_axis == "NONE"]  # a pin has no target
            if not items:
                raise ValueError(
                    "every chain in scope is pinned or aims: a pin has no target to compare reaching, an aim's pass is"
                    " the same for every solver"
                )
            # Every solver from the same start, the chain's rest pose: not from whatever the last Solve left.
            rows = [
                [
                    solve.solve_unit(obj, [spec.spec_from_item(item, method=m)], depsgraph, from_rest=True)[0]
                    for m in solvers.METHODS
                ]
                for item in items
            ]
        except ValueError as exc:
            self.report({"ERROR"}, str(exc))
            return {"CANCELLED"}
        if pinned:
            self.report({"INFO"}, f"pinned chains not compared (no target): {', '.join(pinned)}")
        if aiming:
            self.report({"INFO"}, f"aiming chains not compared (one aim pass for every solver): {', '.join(aiming)}")
        grouped = groups.membership(obj)
        for index, item in enumerate(obj.chain_ik.chains):
            if item in items and index in grouped:
                self.report({"WARNING"}, f"chain '{item.name}' shares bones: compared alone, not as its group")
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
