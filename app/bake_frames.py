"""The bake's per-frame kernel (`FrameChains`): chains and groups that need Blender each frame,
solved in order at every evaluated frame (a later chain reads the earlier ones' solution), and
the bake's solved state they share (`Solved`). See app.bake_solve for which chains come here."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from .. import rig, solvers
from ..rig import keys, modes, read
from . import bake_group, groups
from .goals import chain_goals
from .spec import ChainSpec


@dataclass
class Solved:
    values: dict[str, np.ndarray]  # bone -> (frames, channels) in its rotation mode
    worst: dict[str, float]  # chain tip -> worst world tip error as solved
    locked: set[str] = field(default_factory=set)
    constrained: set[str] = field(default_factory=set)
    seconds: dict[str, float] = field(default_factory=dict)  # chain tip -> solver time
    scales: dict[str, np.ndarray] = field(default_factory=dict)  # IK stretch: bone -> Y scale per frame
    reasons: dict[str, str] = field(default_factory=dict)  # chain label -> why a faster kernel did not serve
    held: dict[str, np.ndarray] = field(default_factory=dict)  # pinned chain label -> (frames, 3) held tip, world


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


class FrameChains:
    """The per-frame kernel for `specs`, in order (a later chain reads the earlier ones' solution):
    `step(k, ...)` at each evaluated frame, then `result()`."""

    def __init__(self, obj, specs: list[ChainSpec], frames: int) -> None:
        self.obj, self.specs, self.count = obj, specs, frames
        self.names = [rig.chain_bone_names(obj, s.tip, s.chain_length, s.use_tail) for s in specs]
        self.units = groups.units(obj, specs) if specs else []
        # Groups (and a pinned chain alone) by their first member; no IK stretch inside a group.
        self.groups = {
            u.members[0]: bake_group.GroupFrames(obj, [specs[i] for i in u.members], frames)
            for u in self.units
            if u.is_group or specs[u.members[0]].pin
        }
        in_group = {i for u in self.units if u.members[0] in self.groups for i in u.members}
        self.stretches = [None if i in in_group else stretch_weights(obj, s) for i, s in enumerate(specs)]
        self.state_q: dict = {}  # bone -> local rotation (Quaternion) solved at the previous frame
        self.state_v: dict[str, tuple[float, ...]] = {}  # bone -> its channel values (locks' reference)
        self.first: dict[str, tuple[float, ...]] = {}  # bone -> channel values before the bake
        self.quats: dict[str, np.ndarray] = {}  # bone -> (frames, 4) solved local rotations
        self.locks: dict[str, tuple] = {}  # bone -> the locks its keys keep (modes.locks)
        self.solved = Solved({}, {s.tip: 0.0 for s in specs}, seconds={s.tip: 0.0 for s in specs})
        self.solver_reasons: dict[str, str] = {}  # tip -> the solver's own reason (first frame that had one)
        self.notes: dict[str, str] = {}  # tip -> a group's notes, its solver's reason among them

    def step(self, k: int, frame, obj_eval, depsgraph) -> None:
        if not self.specs:
            return
        space = rig.object_space(obj_eval)
        if k == 0:
            self._first(obj_eval, depsgraph, space)
        for unit in self.units:
            group = self.groups.get(unit.members[0])
            if group is not None:
                if k and not group.stretched:  # a stretching group's read checks its unstretched pose
                    check_rigid_at(obj_eval, group.names, frame)
                group.step(self, k, obj_eval, depsgraph, space)
                continue
            i = unit.members[0]
            self._solve(k, frame, self.specs[i], self.names[i], self.stretches[i], obj_eval, depsgraph, space)

    def solve_sampled(self, frames: np.ndarray, obj_eval, depsgraph) -> None:
        """Every frame of every group at once, the targets read from their curves (`groups_only`)."""
        space = rig.object_space(obj_eval)
        self._first(obj_eval, depsgraph, space)
        for group in self.groups.values():
            group.solve_sampled(self, frames, obj_eval, space)

    def groups_only(self, obj) -> bool:
        """Whether every chain here is in a group that needs no frame evaluated (see
        bake_group.GroupFrames.static_reason) once the armature and targets are sampled."""
        if sum(len(g.specs) for g in self.groups.values()) != len(self.specs):
            return False
        for group in self.groups.values():  # one riding on another's bones needs its solution each frame
            if any(group.above.intersection(other.names) for other in self.groups.values() if other is not group):
                return False
        animated = keys.animated_paths(obj)
        return all(not g.static_reason(obj, animated) for g in self.groups.values())

    def group_roots(self) -> list[str]:
        """The top bones of the groups (what they hang from must not move for sampling)."""
        return [g.names[i] for g in self.groups.values() for i, p in enumerate(g.layout.parents) if p == -1]

    def _first(self, obj_eval, depsgraph, space) -> None:
        scales = self.solved.scales
        stretching = set()  # the chains of stretching groups: their group's read checks them
        for group in self.groups.values():
            if group.stretched:
                stretching.update(s.tip for s in group.specs)
                scales.update((name, np.empty(self.count)) for name in group.stretched)
        for spec, weights in zip(self.specs, self.stretches, strict=True):
            # Full read once: the rigidity checks and their messages (a stretching chain's: its own).
            if spec.tip in stretching:
                names = rig.chain_bone_names(obj_eval, spec.tip, spec.chain_length, spec.use_tail)
            elif weights is None:
                names = rig.read_chain(obj_eval, spec.tip, spec.chain_length, spec.use_tail, spec.use_limits).names
            else:
                goal = rig.target_world_location(rig.evaluated(spec.target, depsgraph), spec.target_bone)
                first, own = rig.stretch.read_stretched(
                    obj_eval, spec.tip, spec.chain_length, spec.use_tail, spec.use_limits, weights, space.to_local(goal)
                )
                names = first.names
                scales.update((name, np.empty(self.count)) for name in own)
            for name in names:
                pbone = obj_eval.pose.bones[name]
                self.state_v[name] = self.first[name] = modes.current_values(pbone)
                self.state_q[name] = modes.current_quaternion(pbone)
                self.quats[name] = np.empty((self.count, 4))

    def _solve(self, k, frame, spec, names, weights, obj_eval, depsgraph, space) -> None:
        obj = self.obj
        if k and weights is None:  # a stretching chain's read checks its unstretched pose itself
            check_rigid_at(obj_eval, names, frame)
        target_world = rig.target_world_location(rig.evaluated(spec.target, depsgraph), spec.target_bone)
        target = space.to_local(target_world)
        # A pole chain starts every frame from its input pose (its own bones as evaluated), as
        # Blender's IK and solve_sequence do; the solver pre-turns it toward the pole (solvers.goals).
        start = self.state_q if spec.pole is None else {n: q for n, q in self.state_q.items() if n not in names}
        if weights is None:
            chain = rig.read_chain_posed(obj_eval, spec.tip, spec.chain_length, spec.use_tail, start, spec.use_limits)
        else:
            chain, own = rig.stretch.read_stretched(
                obj_eval, spec.tip, spec.chain_length, spec.use_tail, spec.use_limits, weights, target, start
            )
            for name, y in rig.stretch.blend(obj_eval.pose.bones, own, spec.influence)[0].items():
                self.solved.scales[name][k] = y
        solve_start = time.perf_counter()
        # The tip's goal orientation with use_tail off keeps the tip bone's offset from the last
        # chain bone: read both from the evaluated pose, where they are consistent.
        goal_chain = chain
        if spec.use_rotation and not spec.use_tail:
            goal_chain = rig.read_chain(obj_eval, spec.tip, spec.chain_length, spec.use_tail)
        last = goal_chain.pose_matrices[-1]
        goals = chain_goals(obj_eval, space, spec, depsgraph, lambda: last.to_quaternion().normalized(), target_world)
        solution = solvers.solve(
            chain.chain, target, **spec.solver_arguments(spec.local_tolerance(space)), **goals.arguments()
        )
        if solution.reason:
            self.solver_reasons.setdefault(spec.tip, solution.reason)
        blend = None
        if spec.influence < 1.0:
            blend = {name: modes.current_quaternion(obj_eval.pose.bones[name]) for name in chain.names}
        write = rig.compute_pose(
            obj, chain, solution.rotations, spec.influence, self.state_v, blend, use_locks=spec.use_locks
        )
        for name, vals in write.values.items():
            self.state_v[name] = vals
            q = self.state_q[name] = modes.to_quaternion(obj.pose.bones[name].rotation_mode, vals)
            self.quats[name][k] = q[:]
            self.locks[name] = modes.locks(obj.pose.bones[name]) if spec.use_locks else modes.NO_LOCKS
        if k == 0:
            self.solved.locked.update(write.locked)
            self.solved.constrained.update(write.constrained)
        self.solved.seconds[spec.tip] += time.perf_counter() - solve_start
        error = float(np.linalg.norm(space.to_world(solution.points[-1]) - target_world))
        self.solved.worst[spec.tip] = max(self.solved.worst[spec.tip], error)

    def result(self) -> Solved:
        """The solved frames as keys: `modes.series_values`, the sequence kernel's conversion too."""
        for name, quats in self.quats.items():
            mode = self.obj.pose.bones[name].rotation_mode
            self.solved.values[name] = modes.series_values(mode, quats, self.first[name], self.locks[name])
        for group in self.groups.values():
            self.solved.held.update(group.held)
            if group.reason:  # already worded ("solver: ...", notes on what a group does not do)
                self.notes.update((s.tip, group.reason) for s in group.specs)
        return self.solved
