"""The pieces of turning solved armature-space rotations into bones' own channels (rig.tree_write
uses them), and writing channel values.

The solver returns, per bone, the armature-space rotation R_i taking the bone
from its current orientation to its solved one. The new pose matrix is
R_i @ old (about the bone's head; the old matrix's scale is kept), and the next
head follows rigidly (the link, gap included, is fixed in the parent's frame).
`Bone.convert_local_to_pose(invert=True)` then gives the local (basis) matrix
with the *new* parent matrix, root to tip, honouring the bone's inherit
rotation/scale and local location options, without any scene update.
Only the rotation is taken from it: location and scale stay untouched.

Everything is computed and checked (finite) before anything is written, so a
failure never leaves a half-written pose.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from mathutils import Matrix, Quaternion

from . import modes
from .read import PoseTerms


@dataclass(frozen=True)
class PoseWrite:
    """Channel values to write: bone name -> rotation values in its own mode."""

    values: dict[str, tuple[float, ...]]
    locked: tuple[str, ...]  # chain bones whose locked channels were kept
    constrained: tuple[str, ...]  # chain bones with active constraints (result may differ)
    # The bones' channel values when the pose was computed (a snapshot, for restoring).
    before: dict[str, tuple[float, ...]] = field(default_factory=dict, compare=False)
    # IK stretch (rig.stretch): Y scale channel per stretchable bone, and its value before.
    scales: dict[str, float] = field(default_factory=dict, compare=False)
    scales_before: dict[str, float] = field(default_factory=dict, compare=False)
    # A movable root (rig.root_location): location channel per moved root bone, and its value before.
    locations: dict[str, tuple[float, float, float]] = field(default_factory=dict, compare=False)
    locations_before: dict[str, tuple[float, float, float]] = field(default_factory=dict, compare=False)


def turned_matrices(olds, parents, rows: list) -> list[Matrix]:
    """New armature-space pose matrices of bones posed at `olds` (parents first; `parents`: each
    one's index, -1 for a root) turned by the rows of floats `rows` (w, x, y, z) about their
    heads, each head carried by its parent's turn (the link is rigid in the parent's frame)."""
    out: list[Matrix] = []
    turns = []
    for old, p, row in zip(olds, parents, rows, strict=True):
        r = Quaternion(row).normalized().to_matrix()
        new = (r @ old.to_3x3()).to_4x4()
        new.translation = (
            old.translation.copy()
            if p == -1
            else out[p].translation + turns[p] @ (old.translation - olds[p].translation)
        )
        out.append(new)
        turns.append(r)
    return out


def turned_locals(terms: PoseTerms, rows: list) -> list[Quaternion]:
    """Each bone's new local rotation from quaternions alone (the kernel for similarities; see
    read.PoseTerms), the bones turned by `rows` (w, x, y, z floats, armature space): what
    Bone.convert_local_to_pose gives there, without a call per bone."""
    out, news = [], []
    parents = terms.parents or range(-1, len(rows) - 1)
    root_frames = terms.root_frames or (terms.parent_frame,)
    for row, frame, rest, inherit, p in zip(rows, terms.frames, terms.rests, terms.inherits, parents, strict=True):
        new = Quaternion(row).normalized() @ frame
        parent = root_frames[len(news)] if p == -1 else news[p]
        inherited = parent @ rest if inherit else rest
        out.append(inherited.conjugated() @ new)
        news.append(new)
    return out


def converted_locals(pose_bones, names, parents, root_parents: tuple, matrices: list[Matrix]) -> list[Quaternion]:
    """Each bone's new local rotation through Bone.convert_local_to_pose (any bone settings and
    scales), parents first with the new parent matrix. `parents`: each bone's index, -1 for a
    root; `root_parents`: per root in order, its Blender parent's pose matrix (or None)."""
    out = []
    roots = iter(root_parents)
    for name, pose, p in zip(names, matrices, parents, strict=True):
        bone = pose_bones[name].bone
        local = bone.matrix_local
        parent_pose = next(roots) if p == -1 else matrices[p]
        parent_local = None if bone.parent is None else bone.parent.matrix_local
        if parent_local is not None and parent_pose is not None:
            basis = bone.convert_local_to_pose(
                pose, local, parent_matrix=parent_pose, parent_matrix_local=parent_local, invert=True
            )
        else:
            basis = bone.convert_local_to_pose(pose, local, invert=True)
        out.append(basis.to_quaternion())
    return out


def snapshot(obj, names) -> dict[str, tuple[float, ...]]:
    """Current rotation channels of `names`, for restoring after a failure."""
    return {n: modes.current_values(obj.pose.bones[n]) for n in names}


def apply(obj, values: dict[str, tuple[float, ...]]) -> None:
    """Write channel values (a PoseWrite's, or a snapshot) to the original object's bones."""
    pose_bones = obj.pose.bones
    for name, vals in values.items():
        modes.set_values(pose_bones[name], vals)


# Every transform channel of a pose bone (the rotation in each mode: a mode switch keeps the others).
CHANNELS = ("location", "rotation_quaternion", "rotation_euler", "rotation_axis_angle", "scale")


def snapshot_channels(obj, names=None) -> dict[str, tuple[tuple[float, ...], ...]]:
    """Every transform channel (`CHANNELS`) of bones `names` (default: all) as stored, to put
    back exactly after a refusal (not through a matrix: Euler turns past 180°, a quaternion's
    length and sign survive)."""
    pose = obj.pose.bones
    names = pose.keys() if names is None else names
    return {n: tuple(getattr(pose[n], p)[:] for p in CHANNELS) for n in names}


def apply_channels(obj, saved: dict[str, tuple[tuple[float, ...], ...]]) -> None:
    """Put back what `snapshot_channels` read; a channel that still holds it is not written."""
    pose = obj.pose.bones
    for name, values in saved.items():
        pbone = pose[name]
        for prop, value in zip(CHANNELS, values, strict=True):
            if getattr(pbone, prop)[:] != value:
                setattr(pbone, prop, value)
