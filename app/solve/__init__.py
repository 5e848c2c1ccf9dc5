"""The one solve path of Solve, Live, Compare and cli.py: a unit (app.spec.groups: a chain alone, or
chains sharing bones) is read, its goals built once from the chain specs (app.solve.goals), solved,
its pose computed and written all-or-nothing; one outcome per chain (app.solve.outcome.ChainOutcome).

Inside it, a chain alone takes the chain kernel (`solve_spec`: rig.read_chain, solvers.solve, the
writer's quaternion kernel), a group, a pinned or aiming chain or one with Move Root the tree (app.solve.group_solve:
solvers.solve_skeleton); the outcome's `reason` says where a faster kernel did not serve."""

from __future__ import annotations

import dataclasses
import time

from ... import rig, solvers
from ..checks import check_in_view_layer, check_spec
from ..spec import ChainSpec, groups
from . import group_solve
from .goals import chain_goals
from .outcome import ChainOutcome, chain_reason


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
            obj_eval, spec.tip, spec.chain_length, spec.use_tail, spec.use_limits, stretch, target, from_rest=from_rest,
            softness=spec.softness,
        )
    last = rig_chain.pose_matrices[-1]
    goals = chain_goals(obj_eval, space, spec, depsgraph, lambda: last.to_quaternion().normalized(), target_world)
    solution = solvers.solve(
        rig_chain.chain, target, **spec.solver_arguments(spec.local_tolerance(space)),
        **goals.arguments(rig.stretch.stretched(scales)),
    )
    points, rotations = solution.rows()  # floats: no array round trip
    write = rig.compute_pose(obj, rig_chain, rotations, spec.influence, use_locks=spec.use_locks)
    if scales:
        values, before = rig.stretch.blend(obj.pose.bones, scales, spec.influence)
        write = dataclasses.replace(write, scales=values, scales_before=before)
    error = space.world_distance(points[-1], target_world)
    cost = solvers.rotation_cost_one(rig_chain.chain, points)
    elapsed = (time.perf_counter() - start) * 1e3
    return ChainOutcome(
        spec, write, rig_chain.names, error, cost, elapsed, solution.iterations, solution.reached,
        chain_reason(solution, rig_chain), rig=rig_chain, solution=solution,
    )  # fmt: skip


def solve_unit(obj, specs: list[ChainSpec], depsgraph) -> list[ChainOutcome]:
    """Solve one unit of `obj` (app.spec.groups: `specs` share bones, or one chain alone) on the evaluated
    pose; compute, don't write. One outcome per spec, in order (a group's: led by the first)."""
    if len(specs) == 1 and not (specs[0].pin or specs[0].aims or specs[0].move_root):  # those: the tree's
        return [solve_spec(obj, specs[0], depsgraph)]
    return group_solve.solve_group(obj, specs, depsgraph)


def solve_and_write(obj, specs: list[ChainSpec], depsgraph_get) -> list:
    """Solve and write chains; returns one ChainOutcome per spec, in order.

    Chains that share bones are solved together as one group (app.spec.groups); groups and single
    chains go in order of their top bone's depth, so one hanging below another sees its result.
    All-or-nothing: on any error, every bone written so far is restored and the
    ValueError propagates. `depsgraph_get()` returns an up-to-date evaluated
    depsgraph (it is called again after each write when more chains follow).
    """
    outcomes: list = [None] * len(specs)
    saved: dict[str, tuple[float, ...]] = {}
    saved_scales: dict[str, float] = {}
    saved_locations: dict[str, tuple[float, float, float]] = {}
    try:
        for spec in specs:
            check_spec(obj, spec)
        for unit in groups.units(obj, specs):
            solved = solve_unit(obj, [specs[i] for i in unit.members], depsgraph_get())
            for i, outcome in zip(unit.members, solved, strict=True):
                for name, values in outcome.write.before.items():
                    saved.setdefault(name, values)
                for name, y in outcome.write.scales_before.items():
                    saved_scales.setdefault(name, y)
                for name, xyz in outcome.write.locations_before.items():
                    saved_locations.setdefault(name, xyz)
                apply_write(obj, outcome.write)
                outcomes[i] = outcome
    except Exception:
        rig.apply(obj, saved)
        rig.stretch.apply(obj, saved_scales)
        rig.root_location.apply_locations(obj, saved_locations)
        raise
    return outcomes


def apply_write(obj, write: rig.PoseWrite) -> None:
    """Write a solve's rotations and, for a stretching chain, its Y scales; a moved root's location."""
    rig.apply(obj, write.values)
    rig.stretch.apply(obj, write.scales)
    rig.root_location.apply_locations(obj, write.locations)
