"""The bake's kernel for one unit (app.spec.groups: chains sharing bones, or a chain alone: a unit
of one): read by `rig.tree`, its effectors built by `app.solve.goals` (`frame_effectors`), solved
by the skeleton entry points, its solved local rotations written into the bake's shared state
(`app.bake.bake_frames.FrameUnits`), keyed by one conversion (`rig.modes.series_values`).

Two ways through it (app.bake.bake_solve decides, and the bake's report says which):
- frame by frame (`step`): at each evaluated frame the unit is read (its layout once per bake;
  bones above it solved earlier in the frame through `rig.fk.PoseFK`) and solved with
  `solvers.solve_skeleton_next`, continuing the frame before it;
- carried (`carry`, then `solve_carried`): when the unit's shape seen from its top bone's parent
  depends on its own rotations only (`carry_reason`), it is read once, in that parent's space
  (`rig.sequence`), its goals placed in that space at every frame (`sample`: the frame
  evaluated; `sample_curves`: read from the targets' curves), and every frame solved in one
  `solvers.solve_skeleton_sequence` call (a chain alone: `solvers.solve_sequence`'s kernels
  inside it). An animated parent or armature then costs a target mapping per frame, not a read.
The same poses either way.
"""

from __future__ import annotations

import dataclasses
import math
import time

import numpy as np

from ... import rig, solvers
from ...rig import keys, modes, read, root_location, sampling, sequence, tree, tree_write
from ...rig.fk import PoseFK
from ...solvers import quat
from ...solvers.common import root_move
from ...solvers.common.aim_goals import aim_miss
from ...solvers.model.aim_axis import axis_vector
from ..solve import read_alone
from ..solve.goals import Goals, chain_goals
from ..solve.group_solve import group_notes, group_rig, group_tolerance, named_bones
from ..spec import ChainSpec
from ..spec.groups import group_label


def stretch_weights(obj, spec: ChainSpec) -> list[float] | None:
    """The chain bones' ik_stretch when the chain stretches (rig.stretch), else None (an aim never does)."""
    if spec.aims:
        return None
    return rig.stretch.weights(obj, spec.tip, spec.chain_length, spec.use_tail, spec.use_stretch)


def check_rigid_at(obj_eval, names, frame) -> None:
    """The first frame's rigidity check again at a later frame: a parent's animated scale can
    turn non-uniform part way through, which would shear the chain."""
    try:
        read.check_rigid_bones(obj_eval, names)
    except ValueError as exc:
        raise ValueError(f"{exc} (at frame {int(frame)}); nothing was keyed") from None


def continues(specs: list[ChainSpec]) -> bool:
    """Whether each frame starts from the last frame's solution alone (one effector, not a pin, no
    pole: `solvers.solve_skeleton_next`), so the unit's own input rotations may be animated. An
    aim turns from each frame's input rotations (solvers.common.aim_goals): it does not."""
    return len(specs) == 1 and not specs[0].pin and specs[0].pole is None and not specs[0].aims


def frame_after_frame(specs: list[ChainSpec]) -> str:
    """Why the core solves the unit of `specs` one frame after another rather than through the
    chain sequence kernel ('' when that kernel can carry it): a group, a pin, an aim, Move Root."""
    lead = specs[0]
    if len(specs) > 1:
        return f"chains that share bones solved together as one group ({group_label(specs)})"
    if lead.pin:
        return "pinned"
    if lead.aims:
        return "aims (the tree's aim pass: solvers.common.aim_goals)"
    if lead.move_root:
        return "Move Root (the tree's frames)"
    return ""


def carry_reason(obj, specs: list[ChainSpec], names, animated: set[str]) -> str:
    """Why the unit of `specs` (its bones `names`) cannot be carried in its top bone's parent
    space ('' when it can): its shape there must be a function of its own rotations, and what
    its frames start from must not move."""
    if specs[0].influence < 1.0:
        return "influence below 1"
    if any(stretch_weights(obj, s) for s in specs):
        return "IK stretch"  # each frame's bone lengths follow its targets
    # With Use Tail off a chain's tip bone rides on it and its head is the goal point.
    riding = [s.tip for s in specs if not s.use_tail and s.tip not in names]
    why = sequence.unsuitable(obj, (*names, *riding), animated)
    if why or continues(specs):
        return why
    # Every frame starts from its own input pose (a pole, several effectors, a pin): it must not move.
    moving = [n for n in names if any(p.startswith(keys.data_path(n, "rotation")) for p in animated)]
    if not moving:
        return ""
    if len(specs) == 1 and specs[0].pole is not None and not specs[0].pin and not specs[0].aims:
        return f"bone '{moving[0]}' has animated rotation and the chain a pole target"
    return f"bone '{moving[0]}' has animated rotation (each frame starts from its own pose)"


class UnitFrames:
    """One unit's frames, written into the bake's shared state (`state`: app.bake.bake_frames.FrameUnits)."""

    def __init__(self, obj, specs: list[ChainSpec], members: tuple[int, ...], frames: int) -> None:
        """The unit of `specs[i]` for i in `members` (app.spec.groups.Unit.members)."""
        self.members = members
        self.obj, self.count = obj, frames
        self.specs = specs = [specs[i] for i in members]
        self.lead = specs[0]
        self.rig = group_rig(obj, specs)
        self.layout = self.rig.layout
        self.label = group_label(specs)
        # A pinned tip's held point per frame (world), for the playback measure.
        self.held = {s.label: np.empty((frames, 3)) for s in specs if s.pin}
        self.reason = group_notes(obj, specs, self.layout.names, "")
        # The bones the unit hangs from: solved earlier in a frame, they pose it (rig.fk).
        pose = obj.pose.bones
        self.roots = [self.layout.names[i] for i, p in enumerate(self.layout.parents) if p == -1]
        self.above = {a.name for root in self.roots for a in pose[root].parent_recursive}
        # Frame by frame: the last frame's solution and input pose (tree locals), continued next frame.
        self.previous: np.ndarray | None = None
        self.previous_input: np.ndarray | None = None
        self.carried: sequence.UnitSpace | None = None  # carried: the unit's space, after `carry`
        self.carried_reason = ""  # carried: why the core's faster kernel did not serve (its first reason)
        # Move Root: the root's location channel per frame, and whether it moved on any (then it is keyed).
        self.locations = np.empty((frames, 3))
        self.heads_in = np.empty((frames, 3))  # its head before the bake (world), for the report's measure
        self.moved = False
        # A chain alone with IK stretch (not pinned, no Move Root) stretches as Solve's does: straight
        # to each frame's target in float64 (`_step_alone`); a group's stretch keeps the tree's slack.
        lead = self.lead
        self.alone = len(specs) == 1 and not lead.pin and not lead.move_root and bool(stretch_weights(obj, lead))

    @property
    def names(self) -> tuple[str, ...]:
        return self.layout.names

    @property
    def stretched(self) -> tuple[str, ...]:
        """The bones whose Y scale this unit's bake keys (IK stretch), else ()."""
        w = self.rig.stretch_weights or ()
        return tuple(n for n, wi in zip(self.names, w, strict=False) if wi > 0.0)

    def carry_reason(self, obj, animated: set[str]) -> str:
        if len({getattr(obj.pose.bones[r].parent, "name", "") for r in self.roots}) > 1:
            return "its top bones hang from different parents"
        return carry_reason(obj, self.specs, self.names, animated)

    def tolerance(self, space, skeleton, names) -> float | None:
        """The reach tolerance in `space`: a chain alone with none set takes the core's default
        (its chain's share, as `solvers.solve`), a group its shortest chain's (group_tolerance)."""
        if len(self.specs) == 1 and not self.lead.pin:
            return self.lead.local_tolerance(space)
        return group_tolerance(space, self.lead, skeleton, names, self.rig.chain_bones)

    def frame_goals(self, obj_eval, space, depsgraph, names) -> list[Goals]:
        """The unit's goals at the evaluated frame, in `space`, per chain (app.solve.goals): the one
        place a unit's per-frame targets, poles and tip orientations are made (`sample_curves`
        reads the same targets and poles from their curves)."""
        pose = obj_eval.pose.bones
        out = []
        for spec, bone in zip(self.specs, self.layout.effectors, strict=True):
            last = pose[names[bone]]
            out.append(
                chain_goals(obj_eval, space, spec, depsgraph, lambda b=last: b.matrix.to_quaternion().normalized())
            )
        return out

    def frame_effectors(self, obj_eval, space, depsgraph, names) -> list:
        """The solver's effectors of `frame_goals`."""
        goals = self.frame_goals(obj_eval, space, depsgraph, names)
        return [g.effector(bone) for g, bone in zip(goals, self.layout.effectors, strict=True)]

    # Frame by frame.

    def _read(self, obj_eval, space, state) -> tuple:
        solved = {n: state.state_q[n] for n in self.above if n in state.state_q}
        fk = PoseFK(obj_eval, solved) if solved else None
        skeleton, local, names, _ = self.rig.read(self.obj, obj_eval, space, fk)
        return skeleton, local, names, self.tolerance(space, skeleton, names)

    def step(self, state, k: int, frame, obj_eval, depsgraph, space) -> None:
        """Frame `k`, evaluated: read, solve continuing frame k-1, keep its channel values."""
        if self.alone:
            return self._step_alone(state, k, obj_eval, depsgraph, space)
        if k and not self.stretched:  # a stretching unit's read checks its unstretched pose
            check_rigid_at(obj_eval, self.names, frame)
        skeleton, local, names, tolerance = self._read(obj_eval, space, state)
        effectors = self.frame_effectors(obj_eval, space, depsgraph, names)
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
        if solution.root_shift is not None:  # armature space, as the frame was read
            shift = np.asarray(solution.root_shift, dtype=float)
            location = root_location.location_values(self.obj, obj_eval, self.rig.root, shift, self.lead.influence)
            self._root(k, obj_eval, location, bool(np.any(shift)))
        self.previous, self.previous_input = solution.local, local
        seconds = time.perf_counter() - start
        self._note(solution.reason, names)
        self._write(state, k, names, local, solution.local)
        goals = np.array([e.position for e in solvers.skeleton.resolve_pins(skeleton, local, effectors)])
        scale = space.uniform_scale()
        scales = None if scale is None else np.array([scale])
        to_world = lambda f, point: space.to_world(point)  # noqa: E731
        self._errors(
            state, [k], skeleton, solution.local[None], solution.error[None], goals[None], seconds, scales, to_world,
            None if solution.root_shift is None else np.asarray(solution.root_shift, dtype=float)[None],
        )  # fmt: skip

    def _step_alone(self, state, k: int, obj_eval, depsgraph, space) -> None:
        """Frame `k` of a chain alone with IK stretch, as Solve reads it (app.solve.read_alone): read
        unstretched at the last frame's solution (a pole chain: at its input pose), stretched
        straight to this frame's target (rig.unit.stretch_branch), solved by `solvers.solve_skeleton`
        and written by `rig.tree_write.unit_pose`."""
        spec, pose = self.lead, obj_eval.pose.bones
        start = state.state_q
        if spec.pole is not None:  # a pole chain starts every frame from its own bones as evaluated
            start = {n: q for n, q in start.items() if n not in self.names}
        read = read_alone(self.obj, obj_eval, space, spec, depsgraph, False, start)
        unit = read.unit
        for name, y in rig.stretch.blend(pose, read.stretched, spec.influence)[0].items():
            state.solved.scales[name][k] = y
        t0 = time.perf_counter()
        try:
            solution = solvers.solve_skeleton(
                read.skeleton, unit.local, read.effectors, pose=read.pose,
                **spec.solver_arguments(read.tolerance), **spec.root_arguments(),
            )  # fmt: skip
        except ValueError as exc:  # the core names bones by index
            raise ValueError(named_bones(str(exc), unit.names)) from None
        self._note(solution.reason, unit.names)
        # Influence blends from the rotations animated at this frame; continuity with the last frame.
        starts = [modes.current_quaternion(pose[n]) for n in unit.names] if spec.influence < 1.0 else None
        write = tree_write.unit_pose(self.obj, unit, solution, spec.influence, spec.use_locks, starts, state.state_v)
        self._keep(state, k, write)
        state.solved.seconds[spec.tip] += time.perf_counter() - t0
        if solution.branch is not None:  # the chain kernel's own tip
            tip = solution.branch[1].rows()[0][-1]
        else:
            tip = read.skeleton.forward(solution.local)[2][read.effectors[0].bone]
        error = space.world_distance(tip, read.target_world)
        state.solved.worst[spec.tip] = max(state.solved.worst[spec.tip], float(error))

    def _root(self, k: int, obj_eval, location, moved: bool) -> None:
        """Frame k's location channel of a movable root (its input location where it stayed), and
        its head before the bake (world)."""
        self.locations[k] = location
        self.heads_in[k] = root_location.head_world(obj_eval, self.rig.root)
        self.moved = self.moved or moved

    def _note(self, reason: str, names) -> None:
        reason = named_bones(reason, names)
        if reason and reason not in self.reason:
            self.reason = "; ".join(filter(None, (self.reason, f"solver: {reason}")))

    def _write(self, state, k: int, names, local, solved) -> None:
        """Channel values as Solve writes them (influence, locks, continuity with the last frame)."""
        lead = self.lead
        write = tree_write.tree_pose(self.obj, names, local, solved, lead.influence, lead.use_locks, state.state_v)
        self._keep(state, k, write)

    def _keep(self, state, k: int, write) -> None:
        """A frame's written channel values into the bake's shared state."""
        lead, pose = self.lead, self.obj.pose.bones
        for name, vals in write.values.items():
            state.state_v[name] = vals
            q = state.state_q[name] = modes.to_quaternion(pose[name].rotation_mode, vals)
            state.quats[name][k] = q[:]
            state.locks[name] = modes.locks(pose[name]) if lead.use_locks else modes.NO_LOCKS
        if k == 0:
            state.solved.locked.update(write.locked)
            state.solved.constrained.update(write.constrained)

    # Carried in the top bone's parent space.

    def carry(self, obj_eval, frame: int, depsgraph) -> None:
        """Read the unit once (the first frame, evaluated) in its top bone's parent space."""
        top = obj_eval.pose.bones[self.roots[0]]
        self.carried = unit = sequence.UnitSpace(top.parent.name if top.parent else "", self.names[-1])
        space = unit.space(obj_eval, frame)
        chains = [(s.tip, s.chain_length, s.use_tail) for s in self.specs]
        skeleton, local, names, pose = tree.read_tree_pose(self.obj, obj_eval, chains, self.layout, unit.view(obj_eval))
        if not self.lead.use_limits and skeleton.limits is not None:
            skeleton = dataclasses.replace(skeleton, limits=None)
        self.reading = skeleton, local, names, pose
        m, k = self.count, len(self.specs)
        self.positions = np.full((m, k, 3), np.nan)  # a pin's rows stay NaN (held where its input has it)
        # An aim has no pole and no tip orientation (app.solve.goals).
        self.poles = np.full((m, k, 3), np.nan) if any(s.pole is not None and not s.aims for s in self.specs) else None
        rotation = [s.use_rotation and s.rotation_weight > 0.0 and not s.pin and not s.aims for s in self.specs]
        self.orientations = np.full((m, k, 4), np.nan) if any(rotation) else None
        self.to_world = np.empty((m, 4, 4))
        self.tolerances: list = [None] * m
        # The first frame's effectors: every frame's positions, poles and orientations come from the rows.
        self.template = self.frame_effectors(obj_eval, space, depsgraph, names)
        # Move Root: the root's location channel for a head move in the unit's space (its parent
        # does not move with it; the root's own location is not animated: sequence.unsuitable).
        self.root_map = None
        if self.lead.move_root:
            self.root_map = root_location.shift_map(self.obj, obj_eval, self.rig.root, unit.parent)

    def sample(self, k: int, frame, obj_eval, depsgraph) -> None:
        """Frame k's goals (evaluated) in the unit's space, and that space's map to world."""
        if k:
            check_rigid_at(obj_eval, self.names, frame)
        skeleton, _, names, _ = self.reading
        space = self.carried.space(obj_eval, int(frame))
        for j, goal in enumerate(self.frame_goals(obj_eval, space, depsgraph, names)):
            if goal.position is None:  # a pin: held where its input pose has it
                continue
            self.positions[k, j] = goal.position
            if goal.pole is not None:
                self.poles[k, j] = goal.pole
            if goal.orientation is not None:
                self.orientations[k, j] = goal.orientation
        self.to_world[k] = space.matrix
        if self.root_map is not None:
            self.heads_in[k] = root_location.head_world(obj_eval, self.rig.root)
        # A tolerance set in world units follows the space's scale; the default is the unit's share.
        self.tolerances[k] = self.tolerance(space, skeleton, names) if self.lead.tolerance > 0.0 or not k else None
        if k and self.tolerances[k] is None:
            self.tolerances[k] = self.tolerances[0]

    def sample_curves(self, frames: np.ndarray, obj_eval) -> None:
        """Every frame's goals at once, the targets and poles read from their curves (the unit's
        space does not move: rig.sampling.armature_static_reason)."""
        skeleton, _, names, _ = self.reading
        space = self.carried.space(obj_eval, int(frames[0]))
        inverse = np.array(space.inverse)
        for j, spec in enumerate(self.specs):
            if not spec.pin:
                self.positions[:, j] = _to_local(
                    inverse, sampling.target_positions(spec.target, frames), "target", frames
                )
            if spec.pole is not None and not spec.aims:
                self.poles[:, j] = _to_local(
                    inverse, sampling.target_positions(spec.pole, frames), "pole target", frames
                )
        # One matrix seen as every frame's: no per-frame copies on long bakes.
        self.to_world = np.broadcast_to(np.array(space.matrix), (self.count, 4, 4))
        self.tolerances = [self.tolerance(space, skeleton, names)]
        if self.root_map is not None:
            self.heads_in[:] = np.asarray(root_location.head_world(obj_eval, self.rig.root))

    def solve_carried(self, state, chunk: int, report=None):
        """Every frame in `solve_skeleton_sequence` calls of `chunk` frames (a modal bake yields
        between them), each chunk continuing the last one's solution; the solved rotations go
        straight to the key conversion (no locks, influence 1 here: `carry_reason`)."""
        skeleton, local, names, pose = self.reading
        tolerance = self.tolerances[0]
        if any(t != tolerance for t in self.tolerances):  # the parent's scale moves: one per frame
            tolerance = np.array(self.tolerances, dtype=float)
        settings = self.lead.solver_arguments(None)
        solved = np.empty((self.count, len(names), 4))
        errors = np.empty((self.count, len(self.specs)))
        shifts = np.zeros((self.count, 3)) if self.root_map is not None else None
        seconds, previous = 0.0, None
        for start in range(0, self.count, chunk):
            stop = min(start + chunk, self.count)
            settings["tolerance"] = tolerance if np.ndim(tolerance) == 0 else tolerance[start:stop]
            t0 = time.perf_counter()
            try:
                batch = solvers.solve_skeleton_sequence(
                    skeleton,
                    local,
                    self.template,
                    self.positions[start:stop],
                    poles=None if self.poles is None else self.poles[start:stop],
                    orientations=None if self.orientations is None else self.orientations[start:stop],
                    previous=previous,
                    pose=pose,
                    progress=None if report is None else (lambda f, start=start: report(start + f)),
                    **settings,
                    **self.lead.root_arguments(),
                )
            except ValueError as exc:  # the core names bones by index
                raise ValueError(named_bones(str(exc), names)) from None
            seconds += time.perf_counter() - t0
            if shifts is not None and batch.root_shift is not None:
                shifts[start:stop] = batch.root_shift
            self._note(batch.reason, names)
            self.carried_reason = self.carried_reason or named_bones(batch.reason, names)
            solved[start:stop], errors[start:stop] = batch.local, batch.error
            previous = batch.local[-1]
            yield
        for i, name in enumerate(names):
            state.quats[name][:] = solved[:, i]
            state.locks[name] = modes.NO_LOCKS
        goals = self.positions.copy()
        for j, e in enumerate(solvers.skeleton.resolve_pins(skeleton, local, self.template)):
            if e.pin:
                goals[:, j] = e.position
        if shifts is not None:  # Move Root: the location channel where the root moved (its input's elsewhere)
            current, to_channel = self.root_map
            self.locations[:] = current + shifts @ to_channel.T
            if not np.all(np.isfinite(self.locations)):
                root = self.rig.root
                raise ValueError(f"the root's solved location on bone '{root}' is not finite; nothing was keyed")
            self.moved = bool(np.any(shifts))
        maps = self.to_world
        scales = _uniform_scales(maps)
        self._errors(
            state, range(self.count), skeleton, solved, errors, goals, seconds, scales,
            lambda f, p: _apply(maps[f], p), shifts,
        )  # fmt: skip

    def _errors(
        self, state, ks, skeleton, solved, errors, goals, seconds: float, scales, to_world, shifts=None
    ) -> None:
        """Each tip's world error as solved at frames `ks` (`solved` (m, n, 4), `errors` (m, k),
        `goals` (m, k, 3) in the unit's space; `scales`: per frame the uniform scale of the unit's
        space to world, None when not uniform; `to_world(f, point)`; `shifts` (m, 3): Move Root's
        move of the root per frame, or None); pins' held points for the report's playback pass.
        An aim's error is its ray's miss (solvers.common.aim_goals)."""
        # The solver's own errors, scaled; soft IK's are to the softened goals: measure to the targets.
        if scales is not None and not any(s.softness for s in self.specs):
            world = np.asarray(errors) * scales[:, None]
        else:
            root = self.names.index(self.rig.root) if shifts is not None else None
            world = np.empty((len(solved), len(self.specs)))
            for f, q in enumerate(solved):
                moved = skeleton if shifts is None else root_move.shifted(skeleton, root, shifts[f])
                posed = moved.forward(q)
                for j, (spec, bone) in enumerate(zip(self.specs, self.layout.effectors, strict=True)):
                    world[f, j] = _world_error(spec, posed, bone, goals[f, j], lambda p, f=f: to_world(f, p))
        result = state.solved
        for j, spec in enumerate(self.specs):
            result.seconds[spec.tip] += seconds / len(self.specs)
            if spec.pin:
                held = self.held[spec.label]
                for f, k in enumerate(ks):
                    held[k] = to_world(f, goals[f, j])
            result.worst[spec.tip] = max(result.worst[spec.tip], float(np.max(world[:, j])))


def _world_error(spec: ChainSpec, posed, bone: int, goal, to_world) -> float:
    """An effector's world error on the pose `posed` (Skeleton.forward's frames, heads, ends): its
    tip's distance to `goal`, or for an aim the world ray's miss (app.solve.result.aim_figures);
    `to_world(point)` maps the unit's space to world (lines stay lines under it)."""
    frames, heads, ends = posed
    target = np.asarray(to_world(goal), dtype=float)
    if not spec.aims:
        return float(np.linalg.norm(np.asarray(to_world(ends[bone])) - target))
    head = np.asarray(to_world(heads[bone]), dtype=float)
    axis = np.asarray(to_world(heads[bone] + quat.rotate(frames[bone], axis_vector(spec.aim_axis))), dtype=float) - head
    to_target = target - head
    angle = math.atan2(float(np.linalg.norm(np.cross(axis, to_target))), float(axis @ to_target))
    return aim_miss(angle, float(np.linalg.norm(to_target)))


# A parent bone's pose matrix is float32: its axes are orthogonal and alike in length to ~1e-7.
UNIFORM = 1e-5


def _uniform_scales(maps: np.ndarray) -> np.ndarray | None:
    """Per map (m, 4, 4) its uniform scale (world distance per unit-space distance); None unless
    every one scales all directions alike, within float32 rounding (UNIFORM)."""
    one = maps.strides[0] == 0  # one matrix seen as every frame's
    m3 = maps[:1, :3, :3] if one else maps[:, :3, :3]
    product = np.einsum("kji,kjl->kil", m3, m3)  # s^2 I for a uniform scale s
    s2 = np.trace(product, axis1=1, axis2=2) / 3.0
    off = np.abs(product - s2[:, None, None] * np.eye(3)).max(axis=(1, 2))
    if not np.all(off <= UNIFORM * s2):
        return None
    s = np.sqrt(s2)
    return np.full(len(maps), s[0]) if one else s


def _apply(m: np.ndarray, point) -> np.ndarray:
    return m[:3, :3] @ np.asarray(point, dtype=float) + m[:3, 3]


def _to_local(inverse: np.ndarray, points: np.ndarray, what: str, frames) -> np.ndarray:
    """World points (m, 3) in the unit's space (`inverse`: its inverse map, 4x4)."""
    if not np.all(np.isfinite(points)):
        bad = int(np.flatnonzero(~np.all(np.isfinite(points), axis=1))[0])
        raise ValueError(f"the {what} is at a non-finite location at frame {int(frames[bad])}")
    return points @ inverse[:3, :3].T + inverse[:3, 3]
