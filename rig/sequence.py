"""Fast baking of a chain whose shape in its parent's frame depends on its rotations only.

When no chain bone has constraints, locked rotations or animated
location/scale, and every chain bone inherits its parent's rotation, the chain
seen from the root's parent (the parent's pose space, or armature space for a
root bone) is a function of the chain bones' local rotations alone. The
solution of frame k-1, kept in that space, is then *exactly* the chain's pose
at frame k before solving, whatever the parent and the armature object do
between frames: only the target moves into that space. So the per-frame work
is: evaluate the frame and map the target (a first pass through Blender),
then solve from the previous frame's solution (a second pass, numpy only).
The local rotations and each bone's channel values for all frames are
computed afterwards in one vectorised pass, instead of per frame through
`convert_local_to_pose` (`rig.fk` + `rig.write`, the general path).

Goals and limits ride along: a pole target (and the tip bone's goal
orientation) is sampled per frame into the same space, and the bones' IK
limits keep their joint model (reference pose, base frame seen from the
parent), so `solvers.solve_sequence` gets exactly what `solvers.solve` gets
frame by frame.
"""

from __future__ import annotations

import math
from collections.abc import Generator
from types import SimpleNamespace

import numpy as np
from mathutils import Matrix, Vector

from ..solvers import Chain, quat, solve_sequence
from . import ik_settings, modes
from .keys import data_path
from .read import read_chain
from .space import MIN_RELATIVE_SCALE

# Frames per chunk when turning solved orientations into channel values (bounded temporaries).
CHUNK = 4096


def unsuitable(obj, names, animated_paths: set[str]) -> str:
    """Why the fast path cannot bake these chain bones ('' when it can)."""
    for name in names:
        pbone = obj.pose.bones[name]
        if any(c.enabled and c.influence > 0.0 for c in pbone.constraints):
            return f"bone '{name}' has constraints"
        if modes.is_locked(pbone):
            return f"bone '{name}' has locked rotation channels"
        if not pbone.bone.use_inherit_rotation:
            return f"bone '{name}' does not inherit rotation"
        if pbone.bone.inherit_scale != "FULL":
            # Its shape in the chain's space would change whenever a parent's scale does.
            return f"bone '{name}' does not fully inherit scale"
        prefix = data_path(name, "")
        if any(p.startswith(prefix) and not p.startswith(prefix + "rotation") for p in animated_paths):
            return f"bone '{name}' has animated channels other than rotation"
    return ""


def _quats(matrices) -> np.ndarray:
    return np.array([m.to_quaternion().normalized()[:] for m in matrices], dtype=float)


class ChainTrack:
    """One chain's state across frames, in the root parent's space."""

    def __init__(
        self,
        obj_eval,
        tip: str,
        length: int,
        use_tail: bool,
        frames: int,
        use_limits: bool = False,
        pole: bool = False,
        rotation: bool = False,
    ) -> None:
        """`pole`, `rotation`: the chain has a pole target / a tip goal orientation, sampled per
        frame (`sample(..., pole_world=, rotation_world=)`)."""
        # Checks (rigid, finite), the first pose and, with use_limits, the joint model.
        start = read_chain(obj_eval, tip, length, use_tail, use_limits)
        self.names = start.names
        self.tip, self.use_tail = tip, use_tail
        root = obj_eval.pose.bones[self.names[0]]
        self.parent = root.parent.name if root.parent is not None else ""
        to_parent = start.parent_matrix.inverted() if start.parent_matrix is not None else Matrix.Identity(4)
        mats = [to_parent @ m for m in start.pose_matrices]
        reach = to_parent @ Vector(start.chain.points[-1].tolist())
        points = [m.translation[:] for m in mats] + [reach[:]]
        joints = {}
        if start.chain.limits is not None:
            # The base frame (the root's parent, armature space) seen from the parent: the limits
            # apply to the same local rotations (unsuitable() leaves only inheriting bones here).
            turn = to_parent.to_3x3().normalized().to_quaternion()
            base = quat.multiply(np.array(turn[:]), start.chain.base_frame)
            joints = {"limits": start.chain.limits, "reference": start.chain.reference, "base_frame": base}
        self.chain = Chain(points, _quats(mats), **joints)
        # Rest orientation of each chain bone in its parent's rest frame.
        rel = []
        for name in self.names:
            bone = obj_eval.pose.bones[name].bone
            rest = bone.matrix_local if bone.parent is None else bone.parent.matrix_local.inverted() @ bone.matrix_local
            rel.append(rest.to_quaternion().normalized()[:])
        self.rest_relative = np.array(rel)
        self.first_values = {n: modes.current_values(obj_eval.pose.bones[n]) for n in self.names}
        self.frames: np.ndarray | None = None  # (frames, bones, 4) solved bone orientations, after solve()
        self.targets = np.empty((frames, 3))  # in this chain's space
        self.count = frames
        self.to_world: np.ndarray | None = None  # (frames, 4, 4); one shared matrix when it cannot move
        self.stretch = np.empty(frames)
        self.poles = np.empty((frames, 3)) if pole else None  # in this chain's space
        self.rotations = np.empty((frames, 4)) if rotation else None  # the tip's goal frame, this space
        self.reason = ""  # why solve_sequence's faster kernel did not serve, after solve()

    def space_to_world(self, obj_eval) -> Matrix:
        """The map from this chain's space to world space, at the evaluated frame."""
        m = obj_eval.matrix_world
        return m @ obj_eval.pose.bones[self.parent].matrix if self.parent else m.copy()

    def _stretch(self, to_world: Matrix, frame: int) -> float:
        m3 = to_world.to_3x3()
        stretch = math.sqrt(sum(x * x for row in m3 for x in row))
        if not stretch or abs(m3.determinant()) <= MIN_RELATIVE_SCALE * stretch**3:
            raise ValueError(f"the chain ending at '{self.names[-1]}' is scaled to zero at frame {frame}")
        return stretch

    def sample(
        self,
        k: int,
        to_world: Matrix,
        target_world: np.ndarray,
        frame: int,
        obj_eval=None,
        pole_world=None,
        rotation_world: Matrix | None = None,
    ) -> None:
        """Frame k's target (and pole, tip goal orientation: world location, world matrix) in this
        chain's space, and the map back to world space (for errors). `obj_eval`, evaluated at
        this frame, is needed with a tip goal orientation."""
        stretch = self._stretch(to_world, frame)
        if self.to_world is None:
            self.to_world = np.empty((self.count, 4, 4))
        inverse = to_world.inverted()
        self.targets[k] = inverse @ Vector(target_world.tolist())
        self.to_world[k] = to_world
        self.stretch[k] = stretch
        if self.poles is not None:
            self.poles[k] = inverse @ Vector(np.asarray(pole_world, dtype=float).tolist())
        if self.rotations is not None:
            # As Solve (ik_settings.tip_goal_rotation), with this space's inverse for the armature's.
            last = SimpleNamespace(
                use_tail=self.use_tail, tip=self.tip, pose_matrices=(obj_eval.pose.bones[self.names[-1]].matrix,)
            )
            self.rotations[k] = ik_settings.tip_goal_rotation(obj_eval, inverse, rotation_world, last)

    def sample_all(self, to_world: Matrix, targets_world: np.ndarray, frames, poles_world=None) -> None:
        """Every frame at once, for a chain space that does not move (see rig.sampling)."""
        self.stretch[:] = self._stretch(to_world, int(frames[0]))
        inverse = np.array(to_world.inverted())
        for what, world in (("target", targets_world), ("pole target", poles_world)):
            if world is not None and not np.all(np.isfinite(world)):
                bad = int(np.flatnonzero(~np.all(np.isfinite(world), axis=1))[0])
                raise ValueError(f"the {what} is at a non-finite location at frame {int(frames[bad])}")
        self.targets[:] = targets_world @ inverse[:3, :3].T + inverse[:3, 3]
        if self.poles is not None:
            self.poles[:] = poles_world @ inverse[:3, :3].T + inverse[:3, 3]
        # One matrix seen as every frame's: no per-frame copies on long bakes.
        self.to_world = np.broadcast_to(np.array(to_world), (self.count, 4, 4))

    def solve(self, spec, report=None) -> float:
        """Solve every sampled frame from the previous frame's solution; the worst world tip error.

        `spec`: method, tolerance (world distance, 0: default), max_iterations, options, goals."""
        steps = self.solve_in_chunks(spec, report, self.count)
        while True:
            try:
                next(steps)
            except StopIteration as done:
                return done.value

    def solve_in_chunks(self, spec, report=None, chunk: int = 64) -> Generator[None, None, float]:
        """`solve` as a generator, one `solve_sequence` call of `chunk` frames between two yields
        (a modal bake stays responsive). Each chunk starts from the last one's solution, as the
        steps inside a call do (a pole chain: from the input pose, as every step)."""
        tolerance = spec.tolerance / self.stretch if spec.tolerance > 0.0 else None
        self.frames = np.empty((self.count, self.chain.n_bones, 4))
        tips = np.empty((self.count, 3))
        self.reason = ""
        start_chain = self.chain
        for start in range(0, self.count, chunk):
            stop = min(start + chunk, self.count)
            goals = {"softness": float(spec.softness)} if spec.softness else {}  # as app.solve.goals
            if self.poles is not None:
                goals.update(pole=self.poles[start:stop], pole_angle=float(spec.pole_angle))
            if self.rotations is not None:
                goals.update(target_rotation=self.rotations[start:stop], rotation_weight=float(spec.rotation_weight))
            steps = solve_sequence(
                start_chain,
                self.targets[start:stop],
                method=spec.method,
                tolerance=None if tolerance is None else tolerance[start:stop],
                max_iterations=spec.max_iterations or None,
                progress=None if report is None else (lambda k, start=start: report(start + k)),
                keep_points=stop < self.count,  # the next chunk starts from the last points
                **goals,
                **spec.options,
            )
            self.reason = self.reason or steps.reason
            self.frames[start:stop] = steps.frames
            tips[start:stop] = steps.tips
            if stop < self.count and self.poles is None:
                c = self.chain
                joints = {}
                if c.limits is not None:
                    joints = {"limits": c.limits, "reference": c.reference, "base_frame": c.base_frame}
                start_chain = Chain(steps.points[-1], steps.frames[-1], **joints)
            yield
        world = np.einsum("kij,kj->ki", self.to_world[:, :3, :3], tips) + self.to_world[:, :3, 3]
        return float(np.max(np.linalg.norm(world - self.targets_world(), axis=1)))

    def targets_world(self) -> np.ndarray:
        return np.einsum("kij,kj->ki", self.to_world[:, :3, :3], self.targets) + self.to_world[:, :3, 3]

    def local_rotations(self, start: int = 0, stop: int | None = None) -> np.ndarray:
        """(frames, bones, 4) local (basis) rotations of frames start:stop:
        W_i = W_{i-1} R_i B_i, so B_i = R_i^-1 W_{i-1}^-1 W_i."""
        w = self.frames[start:stop]
        parent = np.concatenate((np.broadcast_to([1.0, 0.0, 0.0, 0.0], w[:, :1].shape), w[:, :-1]), axis=1)
        local = quat.multiply(quat.conjugate(self.rest_relative), quat.multiply(quat.conjugate(parent), w))
        return local / np.linalg.norm(local, axis=-1, keepdims=True)

    def channel_values(self, obj) -> dict[str, np.ndarray]:
        """Bone -> (frames, channels) values in its rotation mode, continuous from its first-frame
        values (`modes.series_values`, as the per-frame bake's keys).

        In chunks of CHUNK frames, so the temporaries stay bounded on long bakes; the sign
        and Euler continuity carries across chunks."""
        modes_ = [obj.pose.bones[name].rotation_mode for name in self.names]
        out = {
            name: np.empty((self.count, 3 if mode in modes.EULER_ORDERS else 4))
            for name, mode in zip(self.names, modes_, strict=True)
        }
        for start in range(0, self.count, CHUNK):
            stop = min(start + CHUNK, self.count)
            local = self.local_rotations(start, stop)
            for i, (name, mode) in enumerate(zip(self.names, modes_, strict=True)):
                previous = self.first_values[name] if start == 0 else tuple(out[name][start - 1])
                out[name][start:stop] = modes.series_values(mode, local[:, i], previous)
        return out
