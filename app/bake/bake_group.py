"""The bake's kernel for a group (chains sharing bones, app.spec.groups): every frame solved with all
the group's tips as effectors, continuing the frame before it (solvers.skeleton_sequence: the
last frame's solution moved toward this frame's goals by least-squares steps, then the lead's
method; with a pole or an animated input pose, the frame's own solve from its input pose is kept
unless it pops), its channel values kept continuous with the previous frame's.

Two ways through it (the bake's report says which):
- frame by frame (`step`): at each evaluated frame the tree is read (its layout once per bake)
  and solved with `solvers.solve_skeleton_next`;
- sampled (`solve_sampled`): when nothing but the targets moves (`static_reason`), the first
  frame's reading serves every frame and the targets come from their curves: every frame is
  solved in one `solvers.solve_skeleton_sequence` call. The same poses either way.
"""

from __future__ import annotations

import math
import time
from dataclasses import replace

import numpy as np

from ... import rig, solvers
from ...rig import keys, modes, sampling, sequence, tree_write
from ...rig.fk import PoseFK
from ...solvers import quat
from ...solvers.common.aim_goals import aim_miss
from ...solvers.model.aim_axis import axis_vector
from ..solve.group_solve import group_effectors, group_notes, group_rig, named_bones
from ..spec import ChainSpec
from ..spec.groups import group_label
from .bake_chain import check_rigid_at


class GroupFrames:
    """One group's frames, written into the bake's shared state (`state`: app.bake.bake_frames.FrameChains)."""

    def __init__(self, obj, specs: list[ChainSpec], frames: int) -> None:
        self.obj, self.specs = obj, specs
        self.lead = specs[0]
        self.rig = group_rig(obj, specs)
        self.layout = self.rig.layout
        self.label = group_label(specs)
        # A pinned tip's held point per frame (world), for the playback measure.
        self.held = {s.label: np.empty((frames, 3)) for s in specs if s.pin}
        self.reason = group_notes(obj, specs, self.layout.names, "")
        # The bones the group hangs from: solved earlier in a frame, they pose it (rig.fk).
        pose = obj.pose.bones
        roots = [self.layout.names[i] for i, p in enumerate(self.layout.parents) if p == -1]
        self.above = {a.name for root in roots for a in pose[root].parent_recursive}
        # Move Root: the root's location channel per frame, and whether it moved on any (then it is keyed).
        self.locations = np.empty((frames, 3))
        self.heads_in = np.empty((frames, 3))  # its head before the bake (world), for the report's measure
        self.moved = False
        # The last frame's solution and input pose (tree locals): the next frame continues them.
        self.previous: np.ndarray | None = None
        self.previous_input: np.ndarray | None = None

    @property
    def names(self) -> tuple[str, ...]:
        return self.layout.names

    @property
    def stretched(self) -> tuple[str, ...]:
        """The bones whose Y scale this group's bake keys (IK stretch), else ()."""
        w = self.rig.stretch_weights or ()
        return tuple(n for n, wi in zip(self.names, w, strict=False) if wi > 0.0)

    def static_reason(self, obj, animated: set[str]) -> str:
        """Why this group needs each frame evaluated ('' when, the armature and targets being
        sampled without frame_set (rig.sampling), its first frame's reading serves every frame)."""
        if self.rig.stretch_weights is not None:
            return "IK stretch"  # each frame's bone lengths follow its targets
        # With Use Tail off a chain's tip bone rides on it and its head is the goal point.
        riding = [s.tip for s in self.specs if not s.use_tail]
        why = sequence.unsuitable(obj, (*self.names, *riding), animated)
        if why:
            return why
        # Every frame starts from its own input pose: it must not move.
        moving = [n for n in self.names if any(p.startswith(keys.data_path(n, "rotation")) for p in animated)]
        if moving:
            return f"bone '{moving[0]}' has animated rotation (each frame starts from its own pose)"
        if any(s.use_rotation and s.rotation_weight > 0.0 for s in self.specs):
            return "a tip goal orientation (the target's rotation)"
        return ""

    def _read(self, obj_eval, space, state=None) -> tuple:
        fk = None
        if state is not None:
            solved = {n: state.state_q[n] for n in self.above if n in state.state_q}
            fk = PoseFK(obj_eval, solved) if solved else None
        return self.rig.read(self.obj, obj_eval, space, fk)

    def step(self, state, k: int, frame, obj_eval, depsgraph, space) -> None:
        """Frame `k`, evaluated: read, solve continuing frame k-1, keep its channel values."""
        if k and not self.stretched:  # a stretching group's read checks its unstretched pose
            check_rigid_at(obj_eval, self.names, frame)
        skeleton, local, names, tolerance = self._read(obj_eval, space, state)
        effectors = group_effectors(obj_eval, space, self.specs, self.layout.effectors, names, depsgraph)
        skeleton, stretched, effectors = self.rig.stretch(obj_eval, skeleton, local, effectors)
        for name, y in rig.stretch.blend(obj_eval.pose.bones, stretched, self.lead.influence)[0].items():
            state.solved.scales[name][k] = y
        start = time.perf_counter()
        previous = self.previous if k else None
        try:
            solution = solvers.solve_skeleton_next(
                skeleton, local, effectors, previous, self.previous_input,
                **self.lead.solver_arguments(tolerance), **self.lead.root_arguments(),
            )  # fmt: skip
        except ValueError as exc:  # the core names bones by index
            raise ValueError(named_bones(str(exc), names)) from None
        self._root(k, obj_eval, solution.root_shift)
        self.previous, self.previous_input = solution.local, local
        seconds = time.perf_counter() - start
        said = named_bones(solution.reason, names)
        if said and said not in self.reason:
            self.reason = "; ".join(filter(None, (self.reason, f"solver: {said}")))
        self._write(state, k, names, local, solution.local)
        effectors = solvers.skeleton.resolve_pins(skeleton, local, effectors)
        self._errors(state, [k], space, skeleton, solution.local[None], solution.error[None], effectors, seconds)

    def solve_sampled(self, state, frames: np.ndarray, obj_eval, space) -> None:
        """Every frame at once from the first frame's reading, targets and poles read from their
        curves (see static_reason)."""
        skeleton, local, names, tolerance = self._read(obj_eval, space)
        inverse = np.array(space.inverse)
        rows = []
        for spec in self.specs:
            if spec.pin:
                rows.append(np.full((len(frames), 3), np.nan))  # held where the input pose has it
            else:
                rows.append(_to_local(inverse, sampling.target_positions(spec.target, frames)))
        positions = np.stack(rows, axis=1)
        poles = None
        if any(s.pole is not None and not s.aims for s in self.specs):
            poles = np.stack(
                [
                    np.full((len(frames), 3), np.nan)
                    if s.pole is None or s.aims  # an aim has no pole (app.solve.goals)
                    else _to_local(inverse, sampling.target_positions(s.pole, frames))
                    for s in self.specs
                ],
                axis=1,
            )
        # Placeholders where a target or pole is: solve_skeleton_sequence takes each frame's from the rows.
        placeholders = [
            (None if x.pin else (0.0, 0.0, 0.0), None if x.pole is None else (0.0, 0.0, 1.0)) for x in self.specs
        ]
        template = group_effectors(obj_eval, space, self.specs, self.layout.effectors, names, None, placeholders)
        start = time.perf_counter()
        lead = self.lead
        try:
            batch = solvers.solve_skeleton_sequence(
                skeleton, local, template, positions, poles=poles,
                **lead.solver_arguments(tolerance), **lead.root_arguments(),
            )  # fmt: skip
        except ValueError as exc:  # the core names bones by index
            raise ValueError(named_bones(str(exc), names)) from None
        for k in range(len(frames)) if batch.root_shift is not None else ():
            self._root(k, obj_eval, batch.root_shift[k])
        seconds = time.perf_counter() - start
        if batch.reason:
            self.reason = "; ".join(filter(None, (self.reason, f"solver: {named_bones(batch.reason, names)}")))
        if lead.influence == 1.0:
            # No locks here (static_reason) and nothing blends: the solved rotations are the keys'
            # (modes.series_values converts them once at the end, with sign continuity).
            for i, name in enumerate(names):
                state.quats[name][:] = batch.local[:, i]
                state.locks[name] = modes.NO_LOCKS
        else:
            for k in range(len(frames)):
                self._write(state, k, names, local, batch.local[k])
        pins = solvers.skeleton.resolve_pins(skeleton, local, template)
        self._errors(state, range(len(frames)), space, skeleton, batch.local, batch.error, pins, seconds, positions)

    def _root(self, k: int, obj_eval, shift) -> None:
        """Frame k's location channel of a movable root (its input location where it stayed)."""
        if shift is None:
            return
        root = self.rig.root
        self.locations[k] = rig.root_location.location_values(self.obj, obj_eval, root, shift, self.lead.influence)
        self.heads_in[k] = rig.root_location.head_world(obj_eval, root)
        self.moved = self.moved or bool(np.any(shift))

    def _write(self, state, k: int, names, local, solved) -> None:
        """Channel values as Solve writes them (influence, locks, continuity with the last frame)."""
        lead, pose = self.lead, self.obj.pose.bones
        write = tree_write.tree_pose(self.obj, names, local, solved, lead.influence, lead.use_locks, state.state_v)
        for name, vals in write.values.items():
            state.state_v[name] = vals
            q = state.state_q[name] = modes.to_quaternion(pose[name].rotation_mode, vals)
            state.quats[name][k] = q[:]
            state.locks[name] = modes.locks(pose[name]) if lead.use_locks else modes.NO_LOCKS
        if k == 0:
            state.solved.locked.update(write.locked)
            state.solved.constrained.update(write.constrained)

    def _errors(self, state, ks, space, skeleton, solved, errors, effectors, seconds: float, rows=None) -> None:
        """Each tip's world error as solved at frames `ks` (`solved` (m, n, 4), `errors` (m, k) in
        armature space); pins' held points for the report's playback pass. `rows` (m, k, 3): each
        frame's goal positions (armature space) where the effectors hold placeholders (the sampled route)."""
        scale = space.uniform_scale()
        if scale is not None:  # the solver's own errors, scaled
            world = np.asarray(errors) * scale
        else:
            world = np.empty((len(solved), len(effectors)))
            for f, q in enumerate(solved):
                posed = skeleton.forward(q)
                for j, e in enumerate(effectors):
                    goal = e if rows is None or e.pin else replace(e, position=rows[f, j])
                    world[f, j] = _world_error(space, posed, goal)
        result = state.solved
        for j, (spec, goal) in enumerate(zip(self.specs, effectors, strict=True)):
            result.seconds[spec.tip] += seconds / len(self.specs)
            if spec.pin:
                held = space.to_world(goal.position)
                for k in ks:
                    self.held[spec.label][k] = held
            result.worst[spec.tip] = max(result.worst[spec.tip], float(np.max(world[:, j])))


def _world_error(space, posed, effector) -> float:
    """An effector's world error on the pose `posed` (Skeleton.forward's frames, heads, ends): its
    tip's distance to its position, or for an aim the world ray's miss (app.solve.result.aim_figures)."""
    frames, heads, ends = posed
    if not effector.aim_axis:
        return float(np.linalg.norm(space.to_world(ends[effector.bone]) - space.to_world(effector.position)))
    axis = np.array(space.matrix.to_3x3()) @ quat.rotate(frames[effector.bone], axis_vector(effector.aim_axis))
    to_target = space.to_world(effector.position) - space.to_world(heads[effector.bone])
    angle = math.atan2(float(np.linalg.norm(np.cross(axis, to_target))), float(axis @ to_target))
    return aim_miss(angle, float(np.linalg.norm(to_target)))


def _to_local(inverse: np.ndarray, points: np.ndarray) -> np.ndarray:
    """World points (m, 3) in armature space (`inverse`: the armature's inverse world matrix, 4x4)."""
    return points @ inverse[:3, :3].T + inverse[:3, 3]
