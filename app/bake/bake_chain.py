"""A chain alone with IK stretch, frame by frame: the one unit the tree read does not serve yet.

`rig.stretch.read_stretched` builds a lone chain's stretch straight in float64, so the tip lands
exactly at full reach and a bone inheriting its parent's stretch with Inherit Scale Full follows
(docs/design.md, "IK stretch"); the tree's stretch (`rig.stretch.stretch_tree`) leaves a slack
and refuses Full. Until rig.tree/the core stretch one effector exactly (issue 19 item 1, Solve's
side), this kernel reads such a chain with the chain reader on the previous frame's solution
(`rig.fk`), solves it with `solvers.solve` and writes it with `rig.compute_pose`, into the same
shared state as `bake_unit.UnitFrames`, with the same `step`."""

from __future__ import annotations

import time

import numpy as np

from ... import rig, solvers
from ...rig import modes
from ..solve.goals import chain_goals
from ..spec import ChainSpec
from .bake_unit import check_rigid_at, stretch_weights  # noqa: F401 - check_rigid_at: its callers'


class StretchedChainFrames:
    """One stretching chain's frames (a unit of one: `UnitFrames`' attributes the bake reads)."""

    def __init__(self, obj, specs: list[ChainSpec], members: tuple[int, ...], frames: int) -> None:
        self.obj, self.members, self.count = obj, members, frames
        self.specs = [specs[i] for i in members]
        self.lead = spec = self.specs[0]
        self.names = rig.chain_bone_names(obj, spec.tip, spec.chain_length, spec.use_tail)
        self.weights = stretch_weights(obj, spec)
        self.stretched = tuple(n for n, w in zip(self.names, self.weights, strict=True) if w > 0.0)
        self.roots = [self.names[0]]
        self.above = {a.name for a in obj.pose.bones[self.names[0]].parent_recursive}
        self.held: dict = {}
        self.reason = ""  # the solver's reason (the first frame that had one)
        self.carried_reason = ""

    def carry_reason(self, obj, animated) -> str:
        return "IK stretch"

    def step(self, state, k: int, frame, obj_eval, depsgraph, space) -> None:
        """Frame `k`, evaluated: read on the last frame's solution, solve, keep its channel values."""
        obj, spec, names = self.obj, self.spec, self.names
        target_world = rig.target_world_location(rig.evaluated(spec.target, depsgraph), spec.target_bone)
        target = space.to_local(target_world)
        # A pole chain starts every frame from its input pose (its own bones as evaluated).
        start = state.state_q if spec.pole is None else {n: q for n, q in state.state_q.items() if n not in names}
        chain, own = rig.stretch.read_stretched(
            obj_eval, spec.tip, spec.chain_length, spec.use_tail, spec.use_limits, self.weights, target, start,
            softness=spec.softness,
        )  # fmt: skip
        for name, y in rig.stretch.blend(obj_eval.pose.bones, own, spec.influence)[0].items():
            state.solved.scales[name][k] = y
        solve_start = time.perf_counter()
        # The tip's goal orientation with use_tail off keeps the tip bone's offset from the last
        # chain bone: read both from the evaluated pose, where they are consistent.
        goal_chain = chain
        if spec.use_rotation and not spec.use_tail:
            goal_chain = rig.read_chain(obj_eval, spec.tip, spec.chain_length, spec.use_tail)
        last = goal_chain.pose_matrices[-1]
        goals = chain_goals(obj_eval, space, spec, depsgraph, lambda: last.to_quaternion().normalized(), target_world)
        solution = solvers.solve(
            chain.chain, target, **spec.solver_arguments(spec.local_tolerance(space)),
            **goals.arguments(rig.stretch.stretched(own)),
        )  # fmt: skip
        if solution.reason and not self.reason:
            self.reason = f"solver: {solution.reason}"
        blend = None
        if spec.influence < 1.0:
            blend = {name: modes.current_quaternion(obj_eval.pose.bones[name]) for name in chain.names}
        write = rig.compute_pose(
            obj, chain, solution.rotations, spec.influence, state.state_v, blend, use_locks=spec.use_locks
        )
        for name, vals in write.values.items():
            state.state_v[name] = vals
            q = state.state_q[name] = modes.to_quaternion(obj.pose.bones[name].rotation_mode, vals)
            state.quats[name][k] = q[:]
            state.locks[name] = modes.locks(obj.pose.bones[name]) if spec.use_locks else modes.NO_LOCKS
        if k == 0:
            state.solved.locked.update(write.locked)
            state.solved.constrained.update(write.constrained)
        state.solved.seconds[spec.tip] += time.perf_counter() - solve_start
        error = float(np.linalg.norm(space.to_world(solution.points[-1]) - target_world))
        state.solved.worst[spec.tip] = max(state.solved.worst[spec.tip], error)

    @property
    def spec(self) -> ChainSpec:
        return self.lead
