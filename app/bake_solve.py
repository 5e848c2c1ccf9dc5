"""The bake's one solve path: every chain solved frame after frame from its previous frame's
solution, its keys derived once from the solved local rotations (`rig.modes.series_values`:
quaternion sign, Euler and axis-angle continuity, locks), nothing written until all is solved.

Each chain's frames go through one of two kernels inside that path:
- sequence (`rig.sequence.ChainTrack` + `solvers.solve_sequence`): for a chain whose shape seen
  from its parent is a function of its own rotations. The scene is evaluated only to place the
  targets and poles in the chain's space (not at all when `rig.sampling` can read their curves),
  then the whole range solves in one call; poles, tip goal orientations and IK limits included.
- per frame (`_FrameChains`): each frame evaluated with `scene.frame_set` and the chain read
  there with the previous frame's rotations (`rig.fk`), solved with `solvers.solve`. What needs
  it: constraints, locked channels, animated location/scale or inheritance options on chain
  bones, Influence below 1, IK stretch, chains sharing bones or riding on each other, a pole
  chain with animated rotations.

Which kernel served each chain, and why a faster one did not, is kept per chain
(`Solved.reasons`, reported by the Bake operator and cli.py); never a silent fallback.
"""

from __future__ import annotations

import time
from collections.abc import Generator
from dataclasses import dataclass, field

import numpy as np

from .. import rig, solvers
from ..rig import keys, modes, read, sampling, sequence
from . import bake_group, groups, solve
from .spec import ChainSpec

PER_FRAME = "baked frame by frame"
SAMPLED_GROUP = "baked as a tree from the first frame's pose, targets read from their curves"
# Frames per sequence-kernel call in a modal bake (Esc is read between calls).
CHUNK = 64


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


def frame_reasons(obj, specs: list[ChainSpec]) -> list[str]:
    """Per chain, why it needs the per-frame kernel ('' when the sequence kernel can carry it)."""
    animated = keys.animated_paths(obj)
    chains = [rig.chain_bone_names(obj, s.tip, s.chain_length, s.use_tail) for s in specs]
    reasons = []
    for spec, names in zip(specs, chains, strict=True):
        reason = ""
        if spec.influence < 1.0:
            reason = "influence below 1"
        elif stretch_weights(obj, spec):
            reason = "IK stretch"
        else:
            # With use_tail off the tip bone's head reaches: it must ride rigidly on the chain too.
            reason = sequence.unsuitable(obj, names if spec.use_tail else (*names, spec.tip), animated)
        if not reason and spec.pole is not None:
            # A pole chain starts each frame from its own input pose (solvers.goals), which the
            # sequence kernel reads once: its bones' rotations must not be animated.
            moving = [n for n in names if any(p.startswith(keys.data_path(n, "rotation")) for p in animated)]
            if moving:
                reason = f"bone '{moving[0]}' has animated rotation and the chain a pole target"
        reasons.append(reason)
    # Chains sharing bones are solved together, as a group, frame by frame (app.bake_group).
    for unit in groups.units(obj, specs):
        members = [specs[i] for i in unit.members]
        if unit.is_group or members[0].pin:
            why = "pinned"
            if unit.is_group:
                why = f"chains that share bones solved together as one group ({groups.group_label(members)})"
            for i in unit.members:
                reasons[i] = why
    # Chains carried apart must be independent: no chain riding on another's bones (through a
    # parent, an own-bone target or Use Tail off); else both go per frame.
    owner: dict[str, int] = {}
    for i, names in enumerate(chains):
        for name in names:
            owner.setdefault(name, i)
    for i, (spec, names) in enumerate(zip(specs, chains, strict=True)):
        starts = [obj.pose.bones[names[0]].parent]
        if spec.target is obj and spec.target_bone:
            starts.append(obj.pose.bones.get(spec.target_bone))
        if not spec.use_tail:
            starts.append(obj.pose.bones[spec.tip])
        for bone in starts:
            while bone is not None:
                j = owner.get(bone.name, i)
                if j != i:
                    why = f"chain '{spec.label}' moves with chain '{specs[j].label}' (bone '{bone.name}')"
                    reasons[i], reasons[j] = reasons[i] or why, reasons[j] or why
                bone = bone.parent
    return reasons


def check_rigid_at(obj_eval, names, frame) -> None:
    """The first frame's rigidity check again at a later frame: a parent's animated scale can
    turn non-uniform part way through, which would shear the chain."""
    try:
        read.check_rigid_bones(obj_eval, names)
    except ValueError as exc:
        raise ValueError(f"{exc} (at frame {int(frame)}); nothing was keyed") from None


def solve_frames(
    context, obj, specs: list[ChainSpec], frames: np.ndarray, progress, stepwise: bool = False
) -> Generator[str, None, Solved]:
    """Solve every chain at every frame (yielding 'solve' between frames and chains; with
    `stepwise`, a modal bake, between chunks of CHUNK frames on the sequence kernel too)."""
    scene = context.scene
    n = len(frames)
    why = frame_reasons(obj, specs)
    carried = [i for i, r in enumerate(why) if not r]
    per_frame = _FrameChains(obj, [specs[i] for i, r in enumerate(why) if r], n)
    scene.frame_set(int(frames[0]))
    depsgraph = context.evaluated_depsgraph_get()
    obj_eval = obj.evaluated_get(depsgraph)
    tracks = {
        i: sequence.ChainTrack(
            obj_eval,
            specs[i].tip,
            specs[i].chain_length,
            specs[i].use_tail,
            n,
            specs[i].use_limits,
            pole=specs[i].pole is not None,
            rotation=specs[i].use_rotation and specs[i].rotation_weight > 0.0,
        )
        for i in carried
    }
    groups_only = per_frame.groups_only(obj)
    direct = bool(carried or per_frame.specs) and groups_only
    roots = [t.names[0] for t in tracks.values()] + per_frame.group_roots()
    direct = direct and not sampling.armature_static_reason(obj, roots)
    goals = [specs[i] for i in carried] + [s for s in per_frame.specs if not s.pin]
    direct = direct and not sampling.direct_targets_reason(scene, obj, goals)
    # Of the progress: the frame pass (a group solves in it, sampled or not).
    share = 0.0 if direct and not per_frame.specs else (1.0 if not carried else 0.5)
    if direct:
        # Nothing but the targets' (and poles') own location curves moves: evaluate just those.
        for i, track in tracks.items():
            spec = specs[i]
            poles = None if spec.pole is None else sampling.target_positions(spec.pole, frames)
            track.sample_all(
                track.space_to_world(obj_eval), sampling.target_positions(spec.target, frames), frames, poles
            )
        for group in per_frame.groups.values():
            group.sample(frames)
        for k, frame in enumerate(frames):  # groups: the first frame's reading, no frame_set
            if not per_frame.specs:
                break
            per_frame.step(k, frame, obj_eval, depsgraph)
            if progress is not None:
                progress(share * (k + 1) / n, int(frame))
            yield "solve"
    else:
        for k, frame in enumerate(frames):
            if k:
                scene.frame_set(int(frame))
                depsgraph = context.evaluated_depsgraph_get()
                obj_eval = obj.evaluated_get(depsgraph)
            for i, track in tracks.items():
                spec = specs[i]
                if k:
                    check_rigid_at(obj_eval, track.names, frame)
                goal = rig.evaluated(spec.target, depsgraph)
                pole = None
                if spec.pole is not None:
                    pole = rig.target_world_location(rig.evaluated(spec.pole, depsgraph), spec.pole_bone)
                rotation = None
                if track.rotations is not None:
                    rotation = rig.ik_settings.world_matrix(goal, spec.target_bone)
                target_world = rig.target_world_location(goal, spec.target_bone)
                to_world = track.space_to_world(obj_eval)
                track.sample(k, to_world, target_world, int(frame), obj_eval, pole, rotation)
            per_frame.step(k, frame, obj_eval, depsgraph)
            if progress is not None:
                progress(share * (k + 1) / n, int(frame))
            yield "solve"
    solved = per_frame.result()
    for i in range(len(specs)):
        if why[i]:
            solver = per_frame.solver_reasons.get(specs[i].tip, "")
            kernel = SAMPLED_GROUP if direct else PER_FRAME
            solved.reasons[specs[i].label] = f"{kernel}: {why[i]}" + (f"; solver: {solver}" if solver else "")
    for j, (i, track) in enumerate(tracks.items()):
        spec = specs[i]
        done = (share + (1.0 - share) * j / len(tracks), (1.0 - share) / len(tracks))

        def report(k: int, done=done) -> None:
            if progress is not None:
                progress(done[0] + done[1] * (k + 1) / n, int(frames[k]))

        # A modal bake (`stepwise`) yields between chunks of frames so Esc can stop it.
        steps = track.solve_in_chunks(spec, report, CHUNK if stepwise else n)
        seconds = 0.0
        while True:
            solve_start = time.perf_counter()
            try:
                next(steps)
            except StopIteration as done:
                solved.worst[spec.tip] = done.value
                break
            finally:
                seconds += time.perf_counter() - solve_start
            yield "solve"
        solved.seconds[spec.tip] = seconds
        solved.reasons[spec.label] = track.reason and f"sequence, {track.reason}"
        for name, table in track.channel_values(obj).items():
            if not np.all(np.isfinite(table)):
                raise ValueError(f"the solved rotation of bone '{name}' is not finite; nothing was keyed")
            solved.values[name] = table
    return solved


class _FrameChains:
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

    def step(self, k: int, frame, obj_eval, depsgraph) -> None:
        if not self.specs:
            return
        space = rig.object_space(obj_eval)
        if k == 0:
            self._first(obj_eval, depsgraph, space)
        for unit in self.units:
            group = self.groups.get(unit.members[0])
            if group is not None:
                if k and group.sampled is None:
                    check_rigid_at(obj_eval, group.names, frame)
                group.step(self, k, obj_eval, depsgraph, space)
                continue
            i = unit.members[0]
            self._solve(k, frame, self.specs[i], self.names[i], self.stretches[i], obj_eval, depsgraph, space)

    def groups_only(self, obj) -> bool:
        """Whether every chain here is in a group that needs no frame evaluated (see
        bake_group.GroupFrames.static_reason) once the armature and targets are sampled."""
        if sum(len(g.specs) for g in self.groups.values()) != len(self.specs):
            return False
        animated = keys.animated_paths(obj)
        return all(not g.static_reason(obj, animated) for g in self.groups.values())

    def group_roots(self) -> list[str]:
        """The top bones of the groups (what they hang from must not move for sampling)."""
        return [g.names[i] for g in self.groups.values() for i, p in enumerate(g.layout.parents) if p == -1]

    def _first(self, obj_eval, depsgraph, space) -> None:
        scales = self.solved.scales
        for spec, weights in zip(self.specs, self.stretches, strict=True):
            # Full read once: the rigidity checks and their messages (a stretching chain's: its own).
            if weights is None:
                first = rig.read_chain(obj_eval, spec.tip, spec.chain_length, spec.use_tail, spec.use_limits)
            else:
                goal = rig.target_world_location(rig.evaluated(spec.target, depsgraph), spec.target_bone)
                first, own = rig.stretch.read_stretched(
                    obj_eval, spec.tip, spec.chain_length, spec.use_tail, spec.use_limits, weights, space.to_local(goal)
                )
                scales.update((name, np.empty(self.count)) for name in own)
            for name in first.names:
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
        tolerance = space.distance_to_local(spec.tolerance) if spec.tolerance > 0.0 else None
        solve_start = time.perf_counter()
        # The tip's goal orientation with use_tail off keeps the tip bone's offset from the last
        # chain bone: read both from the evaluated pose, where they are consistent.
        goal_chain = chain
        if spec.use_rotation and not spec.use_tail:
            goal_chain = rig.read_chain(obj_eval, spec.tip, spec.chain_length, spec.use_tail)
        solution = solvers.solve(
            chain.chain,
            target,
            method=spec.method,
            tolerance=tolerance,
            max_iterations=spec.max_iterations or None,
            **solve.goal_arguments(spec, depsgraph, obj_eval, space, goal_chain),
            **spec.options,
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
            if group.reason:
                self.solver_reasons.update((s.tip, group.reason) for s in group.specs)
        return self.solved
