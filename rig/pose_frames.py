"""The evaluated pose over frames: one `frame_set` per frame for the whole armature, read with
`foreach_get` over all pose bones (one call per attribute and frame: a few bones read one by one
would cost more than the frame itself). The one per-frame sampler behind the planted bake's legs
(rig.plant_read) and the contact detection's feet (rig.contacts).
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from dataclasses import dataclass

import numpy as np

from ..solvers import quat


@dataclass
class PoseFrames:
    """Every pose bone over the sampled frames (armature space, but `world`)."""

    order: dict[str, int]  # pose bone name -> its index in the arrays
    world: np.ndarray  # (F, 4, 4) the armature's world matrix
    matrices: np.ndarray | None  # (F, B, 4, 4) pose matrices (None: not asked for)
    basis: np.ndarray | None  # (F, B, 4, 4) local (basis) matrices, when asked for
    heads: np.ndarray  # (F, B, 3)
    tails: np.ndarray  # (F, B, 3)
    channels: dict[str, np.ndarray]  # rotation property -> (F, B, width) its values as played
    parent_rows: tuple[int, ...]  # per bone, its parent's index (-1: none)

    def to_world(self, points: np.ndarray) -> np.ndarray:
        """(F, ..., 3) armature-space points in world space."""
        m = self.world.reshape(len(self.world), *([1] * (points.ndim - 2)), 4, 4)
        return np.einsum("...ij,...j->...i", m[..., :3, :3], points) + m[..., :3, 3]

    def rotations(self, names, relative: bool = False) -> np.ndarray:
        """(F, n, 4) unit quaternions of bones `names`: their armature-space rotations, or with
        `relative` each relative to its parent (its pose matrix in the parent's; the rest offset
        included), scale off."""
        rows = [self.order[n] for n in names]
        three = self.matrices[:, rows, :3, :3]
        if relative:
            for j, row in enumerate(rows):
                parent = self.parent_rows[row]
                if parent >= 0:
                    three[:, j] = inverse3(self.matrices[:, parent, :3, :3]) @ three[:, j]
        return matrix_rotations(three)


def matrix_rotations(matrices: np.ndarray) -> np.ndarray:
    """Unit quaternions of (..., 3, 3) matrices (or (..., 4, 4) ones' 3x3 parts), their columns
    normalised (scale off)."""
    three = matrices[..., :3, :3]
    # The columns' lengths as np.linalg.norm(three, axis=-2) sums them (row after row), at a third
    # of its cost on a few thousand matrices (a reduction across rows is a strided one).
    square = three * three
    return quat.from_matrix(three / np.sqrt(square[..., 0:1, :] + square[..., 1:2, :] + square[..., 2:3, :]))


def inverse3(m: np.ndarray) -> np.ndarray:
    """(..., 3, 3) inverses of (..., 3, 3) matrices by their adjugate: np.linalg.inv loops LAPACK
    over a batch, some 50x slower on a few hundred 3x3s. Singular matrices give inf or NaN."""
    a, b, c = m[..., 0, 0], m[..., 0, 1], m[..., 0, 2]
    d, e, f = m[..., 1, 0], m[..., 1, 1], m[..., 1, 2]
    g, h, i = m[..., 2, 0], m[..., 2, 1], m[..., 2, 2]
    entries = (
        (e * i - f * h, c * h - b * i, b * f - c * e),
        (f * g - d * i, a * i - c * g, c * d - a * f),
        (d * h - e * g, b * g - a * h, a * e - b * d),
    )
    # Written entry by entry (np.stack's table without its nested calls' copies).
    co = np.empty(np.shape(a) + (3, 3), dtype=np.result_type(*entries[0]))
    for r, row in enumerate(entries):
        for k, entry in enumerate(row):
            co[..., r, k] = entry
    det = a * co[..., 0, 0] + b * co[..., 1, 0] + c * co[..., 2, 0]
    with np.errstate(divide="ignore", invalid="ignore"):
        return co / det[..., None, None]


def det3(m: np.ndarray) -> np.ndarray:
    """(...,) determinants of (..., 3, 3) matrices (np.linalg.det loops LAPACK over a batch)."""
    return np.sum(m[..., 0, :] * quat.cross(m[..., 1, :], m[..., 2, :]), axis=-1)


def pose_in_steps(
    context,
    obj,
    frames: np.ndarray,
    progress: Callable | None = None,
    basis: bool = False,
    channels: tuple[tuple[str, int], ...] = (),
    matrices: bool = True,
    restore: bool = True,
) -> Generator[None, None, PoseFrames]:
    """The evaluated pose of `obj` at every scene frame of `frames`, yielding after each (a modal
    bake reads Esc between them; closed, it puts the frame back). `basis`: the local matrices too;
    `channels`: (property, width) rotation channels to read as played; without `matrices`, the
    heads and tails alone (PoseFrames.matrices None: a check of where the joints are). Without
    `restore` (a caller that sets the frame itself next, e.g. a bake once its keys are written) the
    scene is left at the last frame read when all went well, and a first frame that is the scene's
    current one is read as evaluated, without a frame_set (each evaluates the whole scene)."""
    scene = context.scene
    pose = obj.pose.bones
    order = {b.name: i for i, b in enumerate(pose)}
    parent_rows = tuple(order[b.parent.name] if b.parent is not None else -1 for b in pose)
    count, m = len(pose), len(frames)
    heads, tails = (np.empty((m, count * 3), dtype=np.float32) for _ in range(2))
    pose_matrices = np.empty((m, count * 16), dtype=np.float32) if matrices else None
    local = np.empty((m, count * 16), dtype=np.float32) if basis else None
    values = {path: np.empty((m, count * width), dtype=np.float32) for path, width in channels}
    world = np.empty((m, 4, 4))
    frame0, subframe0 = scene.frame_current, scene.frame_subframe
    last = None  # the frame the scene was last set to here
    done = False
    try:
        for k, frame in enumerate(frames.tolist()):
            last = None
            if restore or k or (int(frame), 0.0) != (frame0, subframe0):
                scene.frame_set(int(frame))
            obj_eval = obj.evaluated_get(context.evaluated_depsgraph_get())
            bones = obj_eval.pose.bones
            world[k] = obj_eval.matrix_world
            if pose_matrices is not None:
                bones.foreach_get("matrix", pose_matrices[k])
            if local is not None:
                bones.foreach_get("matrix_basis", local[k])
            bones.foreach_get("head", heads[k])
            bones.foreach_get("tail", tails[k])
            for path, array in values.items():
                bones.foreach_get(path, array[k])
            last = int(frame)
            if progress is not None:
                progress((k + 1) / m, int(frame))
            yield
        done = True
    finally:
        # Put the frame back, unless the last frame read is it (frame_set evaluates the whole scene:
        # a caller reading its current frame last saves one) or the caller sets it next.
        at_start = last == frame0 and subframe0 == 0.0 and scene.frame_current == frame0
        if not at_start and (restore or not done):
            scene.frame_set(frame0, subframe=subframe0)
    # foreach_get gives matrices column by column.
    widths = dict(channels)
    return PoseFrames(
        order,
        world,
        None if pose_matrices is None else pose_matrices.reshape(m, count, 4, 4).transpose(0, 1, 3, 2).astype(float),
        None if local is None else local.reshape(m, count, 4, 4).transpose(0, 1, 3, 2).astype(float),
        heads.reshape(m, count, 3).astype(float),
        tails.reshape(m, count, 3).astype(float),
        {path: array.reshape(m, count, widths[path]).astype(float) for path, array in values.items()},
        parent_rows,
    )
