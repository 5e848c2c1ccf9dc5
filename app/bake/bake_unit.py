"""The bake's kernel for one unit (app.spec.groups: chains sharing bones, or a chain alone: a unit
of one): read by `rig.tree`, its effectors built by `app.solve.goals` (`frame_effectors`), solved
by the skeleton entry points, its solved local rotations written into the bake's shared state
(`app.bake.bake_frames.FrameUnits`), keyed by one conversion (`rig.modes.series_values`).

Two ways through it (app.bake.bake_solve decides, and the bake's report says which):
- frame by frame (`step`): at each evaluated frame the unit is read (its layout once per bake;
  bones above it solved earlier in the frame through `rig.fk.PoseFK`) and solved with
  `solvers.solve_skeleton_next`, continuing the frame before it;
- carried (`carry`, then `solve_carried`: app.bake.bake_carried): when the unit's shape seen from
  its top bone's parent depends on its own rotations only (app.bake.bake_paths.carry_reason), it
  is read once, in that parent's space, and every frame solved in one
  `solvers.solve_skeleton_sequence` call (a chain alone: `solvers.solve_sequence`'s kernels
  inside it).
The same poses either way.
"""

from __future__ import annotations

import math
import time

import numpy as np

from ... import rig, solvers
from ...rig import modes, root_location, sequence, tree_write
from ...rig.fk import PoseFK
from ...solvers import quat
from ...solvers.chain_sequence import keep_own
from ...solvers.common import root_move
from ...solvers.common.aim_goals import aim_miss
from ...solvers.model.aim_axis import axis_vector
from ...solvers.skeleton_effectors import resolve_pins
from ...solvers.skeleton_sequence import chain_restarts
from ..solve import read_alone
from ..solve.goals import Goals, chain_goals
from ..solve.group_solve import group_notes, group_rig, group_tolerance, named_bones
from ..spec import ChainSpec
from ..spec.groups import group_label
from .bake_carried import Carried
from .bake_paths import carry_reason, check_rigid_at, stretch_weights


class UnitFrames(Carried):
    """One unit's frames, written into the bake's shared state (`state`: app.bake.bake_frames.FrameUnits)."""

    def __init__(
        self, obj, specs: list[ChainSpec], members: tuple[int, ...], frames: int, chains: list | None = None
    ) -> None:
        """The unit of `specs[i]` for i in `members` (app.spec.groups.Unit.members); `chains`: every
        spec's bones (root first) when known."""
        self.members = members
        self.obj, self.count = obj, frames
        self.specs = specs = [specs[i] for i in members]
        self.lead = specs[0]
        self.rig = group_rig(obj, specs, chains=None if chains is None else tuple(chains[i] for i in members))
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
        goals = np.array([e.position for e in resolve_pins(skeleton, local, effectors)])
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
        own = {n: q for n, q in start.items() if n not in self.names}  # the chain's bones as evaluated
        if spec.pole is not None:  # a pole chain starts every frame from its own bones as evaluated
            start = own
        read = read_alone(self.obj, obj_eval, space, spec, depsgraph, False, start)
        t0 = time.perf_counter()
        solution = self._solve_alone(read)
        if k and start is not own and chain_restarts(
            read.skeleton, read.unit.local, read.effectors[0], solution, read.tolerance
        ):  # fmt: skip
            # The last frame's pose was straight (or the solve from it missed): this frame is also
            # solved from its own input pose, as Solve would be, and that kept unless it pops
            # (solvers.skeleton_sequence.chain_restarts, solvers.chain_sequence.keep_own).
            again = read_alone(self.obj, obj_eval, space, spec, depsgraph, False, own)
            retry = self._solve_alone(again)
            ours = (solution.reached, float(np.max(solution.error)))
            theirs = (retry.reached, float(np.max(retry.error)))
            if keep_own(read.unit.local, solution.local, ours, retry.local, theirs, read.tolerance):
                read, solution = again, retry
        unit = read.unit
        for name, y in rig.stretch.blend(pose, read.stretched, spec.influence)[0].items():
            state.solved.scales[name][k] = y
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

    def _solve_alone(self, read):
        """`_step_alone`'s solve of a reading (app.solve.read_alone)."""
        spec = self.lead
        try:
            solution = solvers.solve_skeleton(
                read.skeleton, read.unit.local, read.effectors, pose=read.pose,
                **spec.solver_arguments(read.tolerance), **spec.root_arguments(),
            )  # fmt: skip
        except ValueError as exc:  # the core names bones by index
            raise ValueError(named_bones(str(exc), read.unit.names)) from None
        self._note(solution.reason, read.unit.names)
        return solution

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
