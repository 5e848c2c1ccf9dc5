"""Solving one chain: spec -> rig read -> solver -> pose values, and writing them (shared by
the Solve and Compare operators and the Live handler)."""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass

from .. import rig, solvers
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


class PlainOutcome:
    """A ChainOutcome from the plain path (see solve_plain): the same attributes, with `rig`
    and `solution` (numpy-backed) built only when something asks for them."""

    __slots__ = ("spec", "write", "error", "cost", "time_ms", "_chain", "_rows", "_rig", "_solution")

    def __init__(self, spec: ChainSpec, chain, rows, write, error: float, cost: float, time_ms: float) -> None:
        self.spec, self.write, self.error, self.cost, self.time_ms = spec, write, error, cost, time_ms
        self._chain, self._rows = chain, rows  # rig.plain.PlainChain, solvers.RowsSolution
        self._rig = self._solution = None

    @property
    def rig(self) -> rig.RigChain:
        if self._rig is None:
            self._rig = self._chain.rig_chain()
        return self._rig

    @property
    def solution(self) -> solvers.Solution:
        if self._solution is None:
            self._solution = self._rows.solution()
        return self._solution

    @property
    def iterations(self) -> int:
        return self._rows.iterations

    @property
    def reached(self) -> bool:
        return self._rows.reached


def solve_spec(obj, spec: ChainSpec, depsgraph, from_rest: bool = False) -> ChainOutcome | PlainOutcome:
    """Solve one chain of `obj` (the original object) on the evaluated pose; compute, don't write.

    `from_rest`: start from the chain bones' rest rotations instead of their current ones."""
    start = time.perf_counter()
    check_spec(obj, spec)
    check_in_view_layer(obj, spec, depsgraph)
    obj_eval = obj.evaluated_get(depsgraph)
    target_eval = rig.evaluated(spec.target, depsgraph)
    space = rig.object_space(obj_eval)
    stretch = rig.stretch.weights(obj_eval, spec.tip, spec.chain_length, spec.use_tail, spec.use_stretch)
    if stretch is None and _is_plain(spec) and not from_rest:
        outcome = solve_plain(obj, obj_eval, target_eval, space, spec, start)
        if outcome is not None:
            return outcome
    scales = {}
    if stretch is None:
        rig_chain = rig.read_chain(obj_eval, spec.tip, spec.chain_length, spec.use_tail, spec.use_limits)
        if from_rest:  # after read_chain's checks
            rig_chain = rig.read_chain_rest(obj_eval, spec.tip, spec.chain_length, spec.use_tail, spec.use_limits)
    target_world = rig.space.target_world_point(target_eval, spec.target_bone)
    target = space.to_local_point(target_world)
    if stretch is not None:  # read unstretched, stretched to the target as planned (rig.stretch)
        rig_chain, scales = rig.stretch.read_stretched(
            obj_eval, spec.tip, spec.chain_length, spec.use_tail, spec.use_limits, stretch, target, from_rest=from_rest
        )
    tolerance = space.distance_to_local(spec.tolerance) if spec.tolerance > 0.0 else None
    solution = solvers.solve(
        rig_chain.chain,
        target,
        method=spec.method,
        tolerance=tolerance,
        max_iterations=spec.max_iterations or None,
        **goal_arguments(spec, depsgraph, obj_eval, space, rig_chain),
        **spec.options,
    )
    write = rig.compute_pose(obj, rig_chain, solution.rotations, spec.influence, use_locks=spec.use_locks)
    if scales:
        values, before = rig.stretch.blend(obj.pose.bones, scales, spec.influence)
        write = dataclasses.replace(write, scales=values, scales_before=before)
    points = solution.points.tolist()
    error = space.world_distance(points[-1], target_world)
    cost = solvers.rotation_cost_one(rig_chain.chain, points)
    return ChainOutcome(spec, rig_chain, solution, write, error, cost, (time.perf_counter() - start) * 1e3)


def _is_plain(spec: ChainSpec) -> bool:
    """Settings the plain path takes: triangulation, no pole, no tip rotation, default iteration cap."""
    return (
        spec.method == "triangulation"
        and spec.pole is None
        and not (spec.use_rotation and spec.rotation_weight > 0.0)
        and spec.max_iterations == 0
        and spec.options.keys() <= {"fold_angle", "smooth_fold"}
    )


def solve_plain(obj, obj_eval, target_eval, space, spec: ChainSpec, start: float) -> PlainOutcome | None:
    """`solve_spec`'s result for a plain chain (rig.plain) in plain floats and mathutils, or None:
    the generic path then solves it, or raises the error this path stepped aside for."""
    chain = rig.plain.read_plain(obj, obj_eval, spec.tip, spec.chain_length, spec.use_tail, spec.use_limits)
    if chain is None:
        return None
    try:
        target_world = rig.space.target_world_point(target_eval, spec.target_bone)
        target = space.to_local_point(target_world)
    except ValueError:
        return None  # the generic path reports it (after any error of the chain, as always)
    tolerance = space.distance_to_local(spec.tolerance) if spec.tolerance > 0.0 else None
    options = spec.options
    solved = solvers.solve_rows(
        chain.rows,
        chain.frames,
        target,
        tolerance,
        fold_angle=options.get("fold_angle", 180.0),
        smooth_fold=options.get("smooth_fold", 0.0),
    )
    if solved is None:
        return None
    write = rig.plain.plain_pose(chain, solved.rotations, spec.influence, spec.use_locks)
    if write is None:
        return None
    error = space.world_distance(solved.points[-1], target_world)
    elapsed = (time.perf_counter() - start) * 1e3
    return PlainOutcome(spec, chain, solved, write, error, solved.rotation_cost(), elapsed)


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


def solve_and_write(obj, specs: list[ChainSpec], depsgraph_get) -> list[ChainOutcome]:
    """Solve and write chains in order; each later chain sees the earlier ones' result.

    All-or-nothing: on any error, every bone written so far is restored and the
    ValueError propagates. `depsgraph_get()` returns an up-to-date evaluated
    depsgraph (it is called again after each write when more chains follow).
    """
    outcomes: list[ChainOutcome] = []
    saved: dict[str, tuple[float, ...]] = {}
    saved_scales: dict[str, float] = {}
    try:
        for spec in specs:
            outcome = solve_spec(obj, spec, depsgraph_get())
            for name, values in outcome.write.before.items():
                saved.setdefault(name, values)
            for name, y in outcome.write.scales_before.items():
                saved_scales.setdefault(name, y)
            apply_write(obj, outcome.write)
            outcomes.append(outcome)
    except Exception:
        rig.apply(obj, saved)
        rig.stretch.apply(obj, saved_scales)
        raise
    return outcomes


def apply_write(obj, write: rig.PoseWrite) -> None:
    """Write a solve's rotations and, for a stretching chain, its Y scales."""
    rig.apply(obj, write.values)
    rig.stretch.apply(obj, write.scales)
