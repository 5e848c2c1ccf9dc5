"""Legs over time for a bake that plants feet: every frame's input pose of the leg chains (thigh,
shin, foot) read in one pass, one `frame_set` per frame for all of them, and the planted legs'
local rotations turned into channel values and keys.

Per frame, from the evaluated armature: its world matrix, and for each chain's three bones their
armature-space rotation (normalised), head, the foot's tail, and their local rotation (basis) as
a quaternion and as the bone's own channel values. `foreach_get` over all pose bones (one call per
attribute and frame): a leg's bones read per attribute would cost more than the frame itself.
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from dataclasses import dataclass, field

import numpy as np

from ..solvers import quat
from . import keys, modes
from .steps import run_to_end

CHANNELS = {"QUATERNION": ("rotation_quaternion", 4), "AXIS_ANGLE": ("rotation_axis_angle", 4)}


@dataclass
class LegFrames:
    """One leg chain (thigh, shin, foot) over the sampled frames."""

    names: tuple[str, str, str]
    modes: tuple[str, str, str]  # each bone's rotation mode
    world: np.ndarray  # (F, 4, 4) the armature's world matrix
    heads: np.ndarray  # (F, 3, 3) armature space: the heads of thigh, shin, foot
    toe: np.ndarray  # (F, 3) armature space: the foot's tail
    rotations: np.ndarray  # (F, 3, 4) armature-space rotations of the three bones
    basis: np.ndarray  # (F, 3, 4) their local (basis) rotations
    values: list[np.ndarray]  # per bone (F, channels): its rotation channels as played
    _inverse: np.ndarray | None = field(default=None, repr=False)

    def to_world(self, points: np.ndarray) -> np.ndarray:
        """(F, 3) armature-space points, one per frame, in world space."""
        return np.einsum("fij,fj->fi", self.world[:, :3, :3], points) + self.world[:, :3, 3]

    def to_local(self, points: np.ndarray) -> np.ndarray:
        """(F, 3) world points, one per frame, in armature space."""
        if self._inverse is None:
            # Read from the curves the armature stands still: one inverse serves every frame.
            still = np.all(self.world == self.world[:1])
            self._inverse = (
                np.broadcast_to(np.linalg.inv(self.world[0]), self.world.shape) if still else np.linalg.inv(self.world)
            )
        inverse = self._inverse
        return np.einsum("fij,fj->fi", inverse[:, :3, :3], points) + inverse[:, :3, 3]

    def world_rotations(self, bone: int) -> np.ndarray:
        """(F, 4) bone `bone`'s world rotation (the armature's rotation, scale off, times its own)."""
        three = self.world[:, :3, :3] / np.linalg.norm(self.world[:, :3, :3], axis=-2, keepdims=True)
        return quat.normalize(quat.multiply(quat.from_matrix(three), self.rotations[:, bone]))

    @property
    def heel_world(self) -> np.ndarray:
        return self.to_world(self.heads[:, 2])

    @property
    def toe_world(self) -> np.ndarray:
        return self.to_world(self.toe)


def rotation_channels(mode: str) -> tuple[str, int]:
    """(the pose bone's rotation property in `mode`, its channels)."""
    return CHANNELS.get(mode, ("rotation_euler", 3))


def check_leg(obj, names) -> None:
    """Refuse (ValueError) a leg chain this reading cannot carry: three bones, each the parent
    of the next."""
    pose = obj.pose.bones
    if len(names) != 3:
        raise ValueError(
            f"a chain with contacts must be a leg of three bones (thigh, shin, foot; Chain Length 3, Use Tail on),"
            f" got {len(names)} bone(s) ending at '{names[-1]}'"
        )
    for parent, child in zip(names, names[1:], strict=False):
        if pose[child].parent is None or pose[child].parent.name != parent:
            raise ValueError(f"bone '{child}' must be the child of '{parent}' in a leg chain with contacts")


def sample_legs(
    context, obj, legs: list[tuple[str, str, str]], frames: np.ndarray, progress: Callable | None = None
) -> list[LegFrames]:
    """Each leg's input pose at every frame of `frames` (scene frames); the frame is put back."""
    return run_to_end(legs_in_steps(context, obj, legs, frames, progress))


def legs_in_steps(
    context, obj, legs: list[tuple[str, str, str]], frames: np.ndarray, progress: Callable | None = None
) -> Generator[None, None, list[LegFrames]]:
    """`sample_legs` yielding after every frame (a modal bake reads Esc between them; closed, it
    puts the frame back)."""
    scene = context.scene
    pose = obj.pose.bones
    order = {b.name: i for i, b in enumerate(pose)}
    count, m = len(pose), len(frames)
    mode_of = {name: pose[name].rotation_mode for leg in legs for name in leg}
    wanted = {rotation_channels(mode) for mode in mode_of.values()}
    matrices, heads, tails = (np.empty((m, count * k), dtype=np.float32) for k in (16, 3, 3))
    basis = np.empty((m, count * 16), dtype=np.float32)
    channels = {path: np.empty((m, count * width), dtype=np.float32) for path, width in wanted}
    world = np.empty((m, 4, 4))
    frame0, subframe0 = scene.frame_current, scene.frame_subframe
    try:
        for k, frame in enumerate(frames.tolist()):
            scene.frame_set(int(frame))
            obj_eval = obj.evaluated_get(context.evaluated_depsgraph_get())
            bones = obj_eval.pose.bones
            world[k] = obj_eval.matrix_world
            bones.foreach_get("matrix", matrices[k])
            bones.foreach_get("matrix_basis", basis[k])
            bones.foreach_get("head", heads[k])
            bones.foreach_get("tail", tails[k])
            for path, array in channels.items():
                bones.foreach_get(path, array[k])
            if progress is not None:
                progress((k + 1) / m, int(frame))
            yield
    finally:
        scene.frame_set(frame0, subframe=subframe0)
    # foreach_get gives matrices column by column.
    matrices = matrices.reshape(m, count, 4, 4).transpose(0, 1, 3, 2).astype(float)
    basis = basis.reshape(m, count, 4, 4).transpose(0, 1, 3, 2).astype(float)
    heads, tails = heads.reshape(m, count, 3).astype(float), tails.reshape(m, count, 3).astype(float)
    out = []
    for leg in legs:
        rows = [order[n] for n in leg]
        values = []
        for name in leg:
            path, width = rotation_channels(mode_of[name])
            values.append(channels[path].reshape(m, count, width)[:, order[name]].astype(float))
        out.append(
            LegFrames(
                tuple(leg),
                tuple(mode_of[n] for n in leg),
                world,
                heads[:, rows],
                tails[:, rows[-1]],
                _rotations(matrices[:, rows]),
                _rotations(basis[:, rows]),
                values,
            )
        )
    return out


def _rotations(matrices: np.ndarray) -> np.ndarray:
    """Unit quaternions of (..., 4, 4) matrices' 3x3 parts, their columns normalised (scale off)."""
    three = matrices[..., :3, :3]
    three = three / np.linalg.norm(three, axis=-2, keepdims=True)
    return quat.from_matrix(three)


def channel_values(obj, leg: LegFrames, bone: int, quats: np.ndarray, first: np.ndarray) -> np.ndarray:
    """(k, channels) values of local rotations `quats` (k, 4) in bone `bone`'s rotation mode,
    continuous from the input's channel values `first` (the frame before them)."""
    pbone = obj.pose.bones[leg.names[bone]]
    return modes.series_values(leg.modes[bone], quats, tuple(first.tolist()), modes.locks(pbone))


def rotation_path(obj, name: str) -> str:
    return keys.data_path(name, keys.rotation_property(obj.pose.bones[name]))
