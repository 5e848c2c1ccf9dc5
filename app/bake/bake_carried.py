"""A bake unit carried in its top bone's parent space (app.bake.bake_paths.carry_reason): read
once there (`rig.sequence`), its goals placed in that space at every frame (`sample`: the frame
evaluated; `sample_curves`: read from the targets' curves), and every frame solved in
`solvers.solve_skeleton_sequence` calls (`solve_carried`). An animated parent or armature then
costs a target mapping per frame, not a read. `Carried` is app.bake.bake_unit.UnitFrames's half
that does it (the other: frame by frame)."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Iterator

import numpy as np

from ... import solvers
from ...rig import modes, root_location, sampling, sequence, tree
from ...solvers.skeleton_effectors import resolve_pins
from ..solve.group_solve import named_bones
from .bake_paths import check_rigid_at


class Carried:
    """UnitFrames's carried route (its attributes: app.bake.bake_unit.UnitFrames)."""

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
                    inverse, sampling.target_positions(spec.target, frames), f"target '{spec.target.name}'", frames
                )
            if spec.pole is not None and not spec.aims:
                self.poles[:, j] = _to_local(
                    inverse, sampling.target_positions(spec.pole, frames), f"pole target '{spec.pole.name}'", frames
                )
        # One matrix seen as every frame's: no per-frame copies on long bakes.
        self.to_world = np.broadcast_to(np.array(space.matrix), (self.count, 4, 4))
        self.tolerances = [self.tolerance(space, skeleton, names)]
        if self.root_map is not None:
            self.heads_in[:] = np.asarray(root_location.head_world(obj_eval, self.rig.root))

    def solve_carried(self, state, chunk: int, report=None) -> Iterator[None]:
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
        for j, e in enumerate(resolve_pins(skeleton, local, self.template)):
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
