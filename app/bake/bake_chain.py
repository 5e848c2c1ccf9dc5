"""The bake's per-frame kernel for a chain alone (`ChainFrames`; a group's is app.bake.bake_group's
`GroupFrames`, with the same `step`): at each evaluated frame the chain is read on the previous
frame's solution (rig.fk), or from its input pose with a pole, solved with `solvers.solve` and
its channel values kept continuous with the previous frame's."""

from __future__ import annotations

import time

import numpy as np

from ... import rig, solvers
from ...rig import modes, read
from ..solve.goals import chain_goals
from ..spec import ChainSpec


def stretch_weights(obj, spec: ChainSpec) -> list[float] | None:
    """The chain bones' ik_stretch when the chain stretches (rig.stretch), else None."""
    return rig.stretch.weights(obj, spec.tip, spec.chain_length, spec.use_tail, spec.use_stretch)


def check_rigid_at(obj_eval, names, frame) -> None:
    """The first frame's rigidity check again at a later frame: a parent's animated scale can
    turn non-uniform part way through, which would shear the chain."""
    try:
        read.check_rigid_bones(obj_eval, names)
    except ValueError as exc:
        raise ValueError(f"{exc} (at frame {int(frame)}); nothing was keyed") from None


class ChainFrames:
    """One chain's frames, written into the bake's shared state (`state`: app.bake.bake_frames.FrameChains)."""

    def __init__(self, obj, spec: ChainSpec) -> None:
        self.obj, self.spec = obj, spec
        self.names = rig.chain_bone_names(obj, spec.tip, spec.chain_length, spec.use_tail)
        self.stretch = stretch_weights(obj, spec)  # None: the chain does not stretch

    def step(self, state, k: int, frame, obj_eval, depsgraph, space) -> None:
        """Frame `k`, evaluated: read, solve, keep its channel values."""
        obj, spec, names, weights = self.obj, self.spec, self.names, self.stretch
        if k and weights is None:  # a stretching chain's read checks its unstretched pose itself
            check_rigid_at(obj_eval, names, frame)
        target_world = rig.target_world_location(rig.evaluated(spec.target, depsgraph), spec.target_bone)
        target = space.to_local(target_world)
        # A pole chain starts every frame from its input pose (its own bones as evaluated), as
        # Blender's IK and solve_sequence do; the solver pre-turns it toward the pole (solvers.goals).
        start = state.state_q if spec.pole is None else {n: q for n, q in state.state_q.items() if n not in names}
        if weights is None:
            chain = rig.read_chain_posed(obj_eval, spec.tip, spec.chain_length, spec.use_tail, start, spec.use_limits)
        else:
            chain, own = rig.stretch.read_stretched(
                obj_eval,
                spec.tip,
                spec.chain_length,
                spec.use_tail,
                spec.use_limits,
                weights,
                target,
                start,
                softness=spec.softness,
            )
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
            chain.chain,
            target,
            **spec.solver_arguments(spec.local_tolerance(space)),
            **goals.arguments(weights is not None and rig.stretch.stretched(own)),
        )
        if solution.reason:
            state.solver_reasons.setdefault(spec.tip, solution.reason)
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
