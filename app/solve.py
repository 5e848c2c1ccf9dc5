"""Solving one chain: spec -> rig read -> solver -> pose values, and writing them (shared by
the Solve and Compare operators and the Live handler)."""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass

from .. import rig, solvers
from . import group_solve, groups
from .checks import check_in_view_layer, check_spec
from .spec import ChainSpec


@dataclass
class ChainOutcome:
    spec: ChainSpec
    rig: rig.RigChain
    solution: solvers.Solution
    write: rig.PoseWrite
    error: float  # world-space tip error of the solution
    cost: float  # degrees
    time_ms: float

    @property
    def iterations(self) -> int:
        return self.solution.iterations

    @property
    def reached(self) -> bool:
        return self.solution.reached

    @property
    def names(self) -> tuple[str, ...]:
        return self.rig.names

    group = ""  # solved alone (a group's chains have app.group_solve.MemberOutcome)
    goal_world = None  # the target is the goal (a pin's held point is on MemberOutcome)

    @property
    def reason(self) -> str:
        """Why a faster kernel did not serve this solve ('' when they all did): the solver's
        plain-float kernel (solvers.Solution.reason) and the writer's quaternion kernel (rig.write)."""
        parts = []
        if self.solution.reason:
            parts.append(f"general solver: {self.solution.reason}")
        if isinstance(self.rig.pose_terms, str):
            parts.append(f"general writer: {self.rig.pose_terms}")
        return "; ".join(parts)


def solve_spec(obj, spec: ChainSpec, depsgraph, from_rest: bool = False) -> ChainOutcome:
    """Solve one chain of `obj` (the original object) on the evaluated pose; compute, don't write.

    One path for every chain and setting: rig.read_chain (or its stretched or rest-pose forms),
    solvers.solve, rig.compute_pose. Faster kernels run inside the solve and the writer where they
    can; where they cannot, the outcome's `reason` says why.
    `from_rest`: start from the chain bones' rest rotations instead of their current ones."""
    start = time.perf_counter()
    check_spec(obj, spec)
    check_in_view_layer(obj, spec, depsgraph)
    obj_eval = obj.evaluated_get(depsgraph)
    target_eval = rig.evaluated(spec.target, depsgraph)
    space = rig.object_space(obj_eval)
    # The chain's bones, walked once (read_chain's errors, raised here: nothing before read_chain raised).
    walk = rig.read.chain_pose_bones(obj_eval, spec.tip, spec.chain_length, spec.use_tail)
    stretch = rig.stretch.bone_weights(walk[0]) if spec.use_stretch else None
    scales = {}
    if stretch is None:
        rig_chain = rig.read_chain(obj_eval, spec.tip, spec.chain_length, spec.use_tail, spec.use_limits, walk)
        if from_rest:  # after read_chain's checks
            rig_chain = rig.read_chain_rest(obj_eval, spec.tip, spec.chain_length, spec.use_tail, spec.use_limits)
    target_world = rig.space.target_world_point(target_eval, spec.target_bone)
    target = space.to_local_point(target_world)
    if stretch is not None:  # read unstretched, stretched to the target as planned (rig.stretch)
        rig_chain, scales = rig.stretch.read_stretched(
            obj_eval, spec.tip, spec.chain_length, spec.use_tail, spec.use_limits, stretch, target, from_rest=from_rest
        )
    solution = solvers.solve(
        rig_chain.chain,
        target,
        **spec.solver_arguments(spec.local_tolerance(space)),
        **goal_arguments(spec, depsgraph, obj_eval, space, rig_chain),
    )
    points, rotations = solution.rows()  # floats: no array round trip
    write = rig.compute_pose(obj, rig_chain, rotations, spec.influence, use_locks=spec.use_locks)
    if scales:
        values, before = rig.stretch.blend(obj.pose.bones, scales, spec.influence)
        write = dataclasses.replace(write, scales=values, scales_before=before)
    error = space.world_distance(points[-1], target_world)
    cost = solvers.rotation_cost_one(rig_chain.chain, points)
    return ChainOutcome(spec, rig_chain, solution, write, error, cost, (time.perf_counter() - start) * 1e3)


def goal_arguments(spec: ChainSpec, depsgraph, obj_eval, space, rig_chain) -> dict:
    """solvers.solve's pole and target_rotation arguments (armature space), only those in use."""
    goals = {}
    if spec.pole is not None:
        pole_eval = rig.evaluated(spec.pole, depsgraph)
        goals["pole"] = space.to_local(rig.target_world_location(pole_eval, spec.pole_bone))
        goals["pole_angle"] = float(spec.pole_angle)
    if spec.use_rotation and spec.rotation_weight > 0.0:
        world = rig.ik_settings.world_matrix(rig.evaluated(spec.target, depsgraph), spec.target_bone)
        goals["target_rotation"] = rig.ik_settings.tip_goal_rotation(obj_eval, space.inverse, world, rig_chain)
        goals["rotation_weight"] = float(spec.rotation_weight)
    return goals


def solve_and_write(obj, specs: list[ChainSpec], depsgraph_get) -> list:
    """Solve and write chains; returns one outcome per spec, in order (a ChainOutcome, or a
    group_solve.MemberOutcome for a chain solved in a group).

    Chains that share bones are solved together as one group (app.groups); groups and single
    chains go in order of their top bone's depth, so one hanging below another sees its result.
    All-or-nothing: on any error, every bone written so far is restored and the
    ValueError propagates. `depsgraph_get()` returns an up-to-date evaluated
    depsgraph (it is called again after each write when more chains follow).
    """
    outcomes: list = [None] * len(specs)
    saved: dict[str, tuple[float, ...]] = {}
    saved_scales: dict[str, float] = {}
    try:
        for spec in specs:
            check_spec(obj, spec)
        for unit in groups.units(obj, specs):
            members = [specs[i] for i in unit.members]
            if unit.is_group or members[0].pin:
                solved = group_solve.solve_group(obj, members, depsgraph_get())
            else:
                solved = [solve_spec(obj, members[0], depsgraph_get())]
            for i, outcome in zip(unit.members, solved, strict=True):
                for name, values in outcome.write.before.items():
                    saved.setdefault(name, values)
                for name, y in outcome.write.scales_before.items():
                    saved_scales.setdefault(name, y)
                apply_write(obj, outcome.write)
                outcomes[i] = outcome
    except Exception:
        rig.apply(obj, saved)
        rig.stretch.apply(obj, saved_scales)
        raise
    return outcomes


def apply_write(obj, write: rig.PoseWrite) -> None:
    """Write a solve's rotations and, for a stretching chain, its Y scales."""
    rig.apply(obj, write.values)
    rig.stretch.apply(obj, write.scales)
