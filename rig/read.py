"""Read a bone chain of a posed armature as solver input (armature space).

Conventions (documented for users in the README section on chains):
- `length` counts bones up from the tip, like Blender's IK `chain_count`.
- use_tail=True: the tip bone's tail reaches and the tip bone is the last
  bone of the chain. use_tail=False: the tip bone's head reaches; the chain is
  the `length` bones above it (the tip bone itself only follows its parent),
  as Blender's IK constraint does with "Use Tail" off.
- Disconnected bones (offset heads) are allowed: the gap from a bone's head to
  its child's head is part of that bone's link, so the link is rigid in the
  parent's frame and rotating the parent carries the child's head exactly.
  Root-end bones whose child sits at their head are left out (see shared_heads).
- A chain bone must turn rigidly in armature space. When it inherits a
  non-uniform scale (a parent's, or from outside the chain), its rotation
  shears it and changes its length: such chains are refused with a message
  naming the bone (fix: uniform scale, or Inherit Scale None/Aligned).
- Everything is read from the evaluated pose (constraints, drivers and
  animation at the current frame), in armature space, so the object's
  transform and parents outside the chain only enter through the root head.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field

import numpy as np
from mathutils import Matrix, Quaternion

from ..solvers import Chain
from . import ik_settings, scale_keys


@dataclass(frozen=True)
class RigChain:
    """A chain of pose bones, root first, with the solver's view of it."""

    names: tuple[str, ...]  # the bones the solve rotates, root first
    tip: str  # the bone whose tail (use_tail) or head reaches
    use_tail: bool
    pose_matrices: tuple[Matrix, ...]  # evaluated armature-space PoseBone.matrix per chain bone
    parent_matrix: Matrix | None  # evaluated pose matrix of the root's parent (outside the chain)
    chain: Chain  # points: heads of the chain bones, then the reaching point
    # Chain bones with active constraints, when the read looked (read_chain); None: not known.
    constrained: tuple[str, ...] | None = field(default=None, compare=False)
    # What the writer's quaternion kernel needs (read_chain, when every matrix is a similarity), or
    # why it cannot serve: then rig.write goes through Bone.convert_local_to_pose.
    pose_terms: PoseTerms | str = field(default="not read by rig.read_chain", compare=False)

    @property
    def n_bones(self) -> int:
        return len(self.names)


@dataclass(frozen=True, slots=True)
class PoseTerms:
    """Per bone, what its new local rotation is made of when every pose matrix involved is a
    rotation times a uniform scale (see rig.write): then basis' = (inherited')^-1 @ R_i @ F_i with
    inherited' = P' @ rest_i (or rest_i alone), as Bone.convert_local_to_pose computes."""

    frames: tuple[Quaternion, ...]  # F_i: evaluated armature-space rotation (unit)
    rests: tuple[Quaternion, ...]  # rest rotation in the parent (Bone.matrix), or Bone.matrix_local
    inherits: tuple[bool, ...]  # the rest rotation follows the parent's pose rotation
    parent_frame: Quaternion | None  # the (first) root's parent's pose rotation (None: no parent)
    # A tree (rig.unit): per bone its parent's index (-1: a root) and, for a root, its Blender
    # parent's pose rotation; () for a chain (each bone's parent the bone before).
    parents: tuple[int, ...] = ()
    root_frames: tuple[Quaternion | None, ...] = ()


# A pose matrix counts as a similarity (rotation x uniform scale) when its unit axes are
# orthogonal within this (cosine) and its axis lengths agree within this fraction. Then the
# Gram matrix of any rotation of it deviates from c*I by < 5e-5 c (Frobenius), so the rigidity
# check (RIGID_TOLERANCE = 1e-3, max entry) could not refuse a bone inheriting it.
SIMILAR = 1e-5
# Axis lengths allowed at every chain bone and its parent: a bone's own scale then stays within
# 1e-2..1e2, far from the rigidity check's zero-scale threshold (|det| < 1e-12).
SCALE_RANGE = (0.1, 10.0)


def _dissimilar(m3: Matrix) -> str:
    """Why `m3` is not a rotation times a uniform scale (within SIMILAR, axes in SCALE_RANGE); ''."""
    lo, _, hi = sorted(m3.to_scale()[:])  # a tuple sorts faster than the Vector
    if not (SCALE_RANGE[0] <= lo and hi <= SCALE_RANGE[1]):
        return "a scale outside 0.1..10"
    if hi - lo > SIMILAR * hi or m3.is_negative or not m3.normalized().is_orthogonal_axis_vectors:
        return "a non-uniform or negative scale"
    return ""


def pose_terms(bones, frames, mats, parent_matrix: Matrix | None) -> PoseTerms | str:
    """The writer's PoseTerms for chain `bones` posed at `mats` with unit `frames`, or why not."""
    return tree_terms(bones, frames, mats, tuple(range(-1, len(bones) - 1)), (parent_matrix,), chain=True)


def tree_terms(
    bones, frames, mats, parents: tuple[int, ...], root_parents: tuple, chain: bool = False, rests=None
) -> PoseTerms | str:
    """The writer's PoseTerms for `bones` (parents first; `parents`: each one's index, -1 for a
    root) posed at `mats` with unit `frames`, or why not. `root_parents`: per root in order, its
    Blender parent's pose matrix or None. `chain`: a chain's terms (no parent indices kept).
    `rests`: per bone (its rest Quaternion, whether it inherits) as read below, read once per
    layout (rig.tree.TreeLayout.writer_rests)."""
    roots = iter(root_parents)
    root_frames = []
    for p in parents:
        if p != -1:
            root_frames.append(None)
            continue
        parent_matrix = next(roots)
        if parent_matrix is None:
            root_frames.append(None)
            continue
        m3 = parent_matrix.to_3x3()
        why = _dissimilar(m3)
        if why:
            return f"the chain's parent bone has {why}"
        root_frames.append(m3.to_quaternion())
    if rests is not None:  # the same as read below: a root has a frame where it has a parent
        for pb, m in zip(bones, mats, strict=True):
            why = _dissimilar(m.to_3x3())
            if why:
                return f"bone '{pb.name}' has {why}"
        rests, inherits = zip(*rests, strict=True)
        parents_kept = () if chain else (tuple(parents), tuple(root_frames))
        return PoseTerms(tuple(frames), rests, inherits, root_frames[0], *parents_kept)
    rests, inherits = [], []
    for pb, m, p, root_frame in zip(bones, mats, parents, root_frames, strict=True):
        why = _dissimilar(m.to_3x3())
        if why:
            return f"bone '{pb.name}' has {why}"
        bone = pb.bone
        inherit = (p != -1 or root_frame is not None) and bone.use_inherit_rotation
        rests.append((bone.matrix if inherit else bone.matrix_local).to_quaternion())
        inherits.append(inherit)
    if chain:
        return PoseTerms(tuple(frames), tuple(rests), tuple(inherits), root_frames[0])
    return PoseTerms(tuple(frames), tuple(rests), tuple(inherits), root_frames[0], tuple(parents), tuple(root_frames))


def chain_pose_bones(obj, tip: str, length: int, use_tail: bool = True) -> tuple[list, object]:
    """(the pose bones a solve rotates, root first; the tip pose bone), or ValueError."""
    if obj is None or obj.type != "ARMATURE":
        raise ValueError("the active object is not an armature")
    if not tip:
        raise ValueError("no tip bone set")
    end = obj.pose.bones.get(tip)
    if end is None:
        raise ValueError(f"armature '{obj.name}' has no bone '{tip}'")
    if int(length) < 1:
        raise ValueError(f"chain length must be at least 1, got {length}")
    bone = end if use_tail else end.parent
    if bone is None:
        raise ValueError(f"bone '{tip}' has no parent, so its head cannot be moved (use its tail)")
    bones = []
    while bone is not None and len(bones) < length:
        bones.append(bone)
        bone = bone.parent
    if len(bones) < length:
        above = "" if use_tail else " above it"
        raise ValueError(
            f"chain length {length} is longer than the hierarchy: '{tip}' has only {len(bones)} bone(s){above}"
            " up to the root"
        )
    bones.reverse()
    return bones[shared_heads(bones) :], end


# A link this much shorter than its two bones is taken as zero (float32 pose heads).
ZERO_LINK = 1e-6


def shared_heads(bones) -> int:
    """How many bones at the root end share their head with their child's (disconnected children
    placed at their parent's head). There the parent's turn only turns its child about that point,
    which the child's own turn covers: Blender's IK solves such chains, so the solve leaves these
    parents out (the solver needs links of non-zero length). Never the whole chain."""
    k = 0
    while k + 1 < len(bones):
        a, b = bones[k], bones[k + 1]
        if (a.head - b.head).length > ZERO_LINK * (a.length + b.length):
            break
        k += 1
    return k


def chain_bone_names(obj, tip: str, length: int, use_tail: bool = True) -> tuple[str, ...]:
    """Names of the bones a solve rotates, root first, or ValueError."""
    return tuple(b.name for b in chain_pose_bones(obj, tip, length, use_tail)[0])


def read_chain(
    obj_eval, tip: str, length: int, use_tail: bool = True, use_limits: bool = False, walk: tuple | None = None
) -> RigChain:
    """The chain ending at `tip`, from an evaluated armature object.

    use_limits: the bones' own IK settings (locks, limits, stiffness) become the
    chain's joint limits (see ik_settings); bones without any keep the plain solve.
    `walk`: what `chain_pose_bones(obj_eval, tip, length, use_tail)` returned, when the caller
    has it already."""
    bones, end = chain_pose_bones(obj_eval, tip, length, use_tail) if walk is None else walk
    # One pass over the bones (each bpy read once): matrices copied, as the wrapped matrix would
    # re-read the bone on every access.
    names, mats, points, frames, constrained = [], [], [], [], []
    for b in bones:
        m = b.matrix.copy()
        names.append(b.name)
        mats.append(m)
        points.append(m.translation[:])
        frames.append(m.to_quaternion().normalized())
        if is_constrained(b):
            constrained.append(names[-1])
    points.append((end.tail if use_tail else end.head)[:])
    parent = bones[0].parent
    parent_matrix = None if parent is None else parent.matrix.copy()
    # Finite pose and the solver's chain first, then the rigidity check: the same order of errors as before.
    chain = _solver_chain(tip, bones, frames, points, parent_matrix, use_limits, floats=True)
    terms = pose_terms(bones, frames, mats, parent_matrix)
    if isinstance(terms, str):
        constrained = [b.name for b, m in zip(bones, mats, strict=True) if _check_rigid(b, m)]
    # else: similarities throughout: the rigidity check could not refuse any bone (see SIMILAR)
    return RigChain(tuple(names), tip, use_tail, tuple(mats), parent_matrix, chain, tuple(constrained), terms)


def _solver_chain(
    tip: str, bones, frames, points, parent_matrix: Matrix | None, use_limits: bool, floats: bool = False
) -> Chain:
    if isinstance(points, np.ndarray):
        finite = bool(np.all(np.isfinite(points)))
    else:
        finite = all(map(math.isfinite, itertools.chain.from_iterable(points)))
    if not finite:
        raise ValueError(f"the pose of chain '{tip}' is not finite")
    joints = {}
    limits = ik_settings.read_limits(bones) if use_limits else None
    if limits is not None:
        reference, base = ik_settings.joint_frames(bones, parent_matrix, limits)
        joints = {"limits": limits, "reference": reference, "base_frame": base}
    try:
        if floats:  # the rows this module read: tuples of Python floats (mathutils slices)
            return Chain.from_float_rows(points, [q[:] for q in frames], **joints)
        return Chain(points, [q[:] for q in frames], **joints)
    except ValueError as exc:
        raise ValueError(f"chain ending at '{tip}': {exc}") from exc


# Relative deviation from a similarity transform tolerated. Float32 pose data carries ~1e-6 of
# scale noise per bone, and it compounds down a chain (~2e-4 on the Gram matrix 100 bones down);
# a 1e-3 shear changes a bone's length by at most 0.05%, and the tip error reported is measured
# on the written pose anyway.
RIGID_TOLERANCE = 1e-3


def check_rigid_bones(obj_eval, names) -> None:
    """The rigidity check of `read_chain` on the evaluated pose of `names` (for a bake's later
    frames, where an animated parent scale can turn non-uniform part way through)."""
    bones = obj_eval.pose.bones
    for name in names:
        pbone = bones[name]
        _check_rigid(pbone, pbone.matrix)


def _check_rigid(pbone, pose: Matrix) -> bool:
    """Refuse a bone whose local rotation is sheared by an inherited non-uniform scale.

    Returns True for a bone with active constraints (not checked: the constraint's result is
    not a function of the basis alone; Solve warns instead), False for a checked bone."""
    return check_rigid_pose(pbone, pose, pbone.matrix_basis)


def is_constrained(pbone) -> bool:
    constraints = pbone.constraints
    return bool(constraints) and any(c.enabled and c.influence > 0.0 for c in constraints)


def check_rigid_pose(pbone, pose: Matrix, basis: Matrix) -> bool:
    """`_check_rigid` for the bone posed at `pose` by the local matrix `basis` (rig.stretch
    checks the chain with its own stretch divided out)."""
    if is_constrained(pbone):
        return True
    basis = basis.to_3x3()
    if abs(basis.determinant()) < 1e-12:
        raise ValueError(f"bone '{pbone.name}' has zero scale")
    # mathutils, not numpy: 3x3 products on single matrices are ~10x cheaper here.
    inherited = pose.to_3x3() @ basis.inverted()
    gram = inherited.transposed() @ inherited
    g00, g01, g02, g10, g11, g12, g20, g21, g22 = gram[0][:] + gram[1][:] + gram[2][:]  # cheapest flattening
    c = (g00 + g11 + g22) / 3.0
    deviation = max(
        abs(g00 - c), abs(g11 - c), abs(g22 - c), abs(g01), abs(g02), abs(g10), abs(g12), abs(g20), abs(g21)
    )
    if c <= 0.0 or deviation > RIGID_TOLERANCE * c:
        raise ValueError(
            f"bone '{pbone.name}' inherits a non-uniform scale, so rotating it would stretch it:"
            " use uniform scale on its parents, or set its Inherit Scale to None or Average" + scale_keys.note(pbone)
        )
    return False


def chain_limit_lines(obj, tip: str, length: int, use_tail: bool) -> list[str]:
    """ik_settings.limit_lines for a chain's settings (the panel's summary); [] when the chain is not valid yet."""
    try:
        names = chain_bone_names(obj, tip, length, use_tail)
    except ValueError:
        return []
    return ik_settings.limit_lines(obj, names)


def parent_relative_rotations(obj_eval, names) -> np.ndarray:
    """(n, 4) quaternions (w, x, y, z): each evaluated bone's rotation relative to its parent's
    pose (a root bone's: in armature space), for measuring how far joints turn between frames."""
    pose = obj_eval.pose.bones
    out = []
    for name in names:
        b = pose[name]
        m = b.matrix.to_3x3() if b.parent is None else b.parent.matrix.to_3x3().inverted_safe() @ b.matrix.to_3x3()
        out.append(m.to_quaternion()[:])
    return np.array(out, dtype=float)
