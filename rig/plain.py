"""The Solve path for a plain chain: read, convert and check with mathutils and plain floats.

`read.read_chain` and `write.compute_pose` handle every chain, and for a short
one spend most of a Solve building numpy-backed objects (the solver's Chain,
joint frames, a Solution) and re-deriving each bone's local rotation through
`convert_local_to_pose`. A plain chain (below) needs none of that: each bone's
new local rotation is a product of three unit quaternions,

    basis' = (inherited')^-1 @ R_i @ F_i,  inherited' = P' @ rest_i  (or rest_i alone),

with F_i the bone's evaluated armature-space rotation, R_i the solver's
rotation of it, P' its parent's new rotation and rest_i its rest rotation in
the parent (Bone.matrix; Bone.matrix_local for a root bone or one that does not
inherit its parent's rotation). That is exactly what `convert_local_to_pose`
computes when every matrix involved is a rotation times a uniform scale.

Nothing is cached between solves: the chain's bones, parents, rest rotations,
rotation modes, locks, IK settings and constraints are read again on every call,
so no edit (edit mode, renamed or re-parented bones, a changed rotation mode,
limit or constraint) can leave stale data behind. Validating a cache of them
would take the same reads.

`read_plain` and `plain_pose` return None for anything outside the plain case,
and the caller takes the generic path, which raises any error with its own
message: a chain that cannot be formed, a chain bone with constraints, IK
settings in use, a pose that is not finite, or a matrix at a chain bone or its
parent that is not a similarity within `SIMILAR` (the generic rigidity check then
decides), or a scale outside `SCALE_RANGE`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from mathutils import Matrix, Quaternion

from . import modes
from .ik_settings import has_settings
from .read import RigChain, shared_heads
from .write import PoseWrite

# A pose matrix counts as a similarity (rotation x uniform scale) when its unit axes are
# orthogonal within this (cosine) and its axis lengths agree within this fraction. Then the
# Gram matrix of any rotation of it deviates from c*I by < 5e-5 c (Frobenius), so the generic
# rigidity check (read.RIGID_TOLERANCE = 1e-3, max entry) could not refuse a bone inheriting it.
SIMILAR = 1e-5
# Axis lengths allowed at every chain bone and its parent: a bone's own scale then stays within
# 1e-2..1e2, far from the generic check's zero-scale threshold (|det| < 1e-12).
SCALE_RANGE = (0.1, 10.0)


@dataclass(slots=True)
class PlainChain:
    """A plain chain as read for one solve (root first); plain values only, no bpy references."""

    names: tuple[str, ...]
    tip: str
    use_tail: bool
    rows: list  # heads of the chain bones, then the reaching point (armature space)
    frames: list  # evaluated armature-space rotation per bone (unit Quaternion)
    rests: list  # per bone: rest rotation its inherited rotation starts from (Quaternion)
    inherits: list  # per bone: its rest rotation follows the parent's pose rotation
    parent_frame: Quaternion | None  # the root's parent's pose rotation (None: no parent)
    matrices: tuple  # copies of the evaluated pose matrices (for `rig_chain`)
    parent_matrix: Matrix | None
    modes: list  # rotation_mode per bone (original object)
    values: list  # current channel values per bone (original object)
    locks: list  # modes.locks per bone (original object)

    def rig_chain(self) -> RigChain:
        """The generic path's RigChain of this read (built on request only)."""
        from ..solvers import Chain

        chain = Chain(self.rows, [q[:] for q in self.frames])
        return RigChain(self.names, self.tip, self.use_tail, self.matrices, self.parent_matrix, chain, ())


def _similar(m3: Matrix) -> bool:
    """A rotation times a uniform scale within SIMILAR, with axis lengths in SCALE_RANGE."""
    lo, _, hi = sorted(m3.to_scale())
    return (
        SCALE_RANGE[0] <= lo
        and hi <= SCALE_RANGE[1]
        and hi - lo <= SIMILAR * hi
        and not m3.is_negative
        and m3.normalized().is_orthogonal_axis_vectors  # |unit axis dot| <= 1e-5 (mathutils)
    )


def read_plain(obj, obj_eval, tip: str, length: int, use_tail: bool, use_limits: bool) -> PlainChain | None:
    """The chain ending at `tip` (see read.read_chain), or None when it is not plain."""
    if obj_eval.type != "ARMATURE" or not tip or length < 1:
        return None
    end = obj_eval.pose.bones.get(tip)
    if end is None:
        return None
    pbone = end if use_tail else end.parent
    walk = []
    while pbone is not None and len(walk) < length:
        walk.append(pbone)
        pbone = pbone.parent
    if len(walk) < length:
        return None
    walk.reverse()
    if shared_heads(walk):
        return None  # the generic read leaves those bones out
    parent_matrix = parent_frame = None
    if pbone is not None:  # the root's parent, read by the walk's last step
        parent_matrix = pbone.matrix.copy()
        m3 = parent_matrix.to_3x3()
        if not _similar(m3):
            return None
        parent_frame = m3.to_quaternion()
    originals = obj.pose.bones
    names, rows, frames, rests, inherits, mats, mode_list, value_list, lock_list = ([] for _ in range(9))
    has_parent = parent_frame is not None
    for pb in walk:
        if pb.constraints or (use_limits and has_settings(pb)):
            return None
        m = pb.matrix.copy()  # the wrapped matrix would re-read the bone on every access
        m3 = m.to_3x3()
        if not _similar(m3):
            return None
        name = pb.name
        bone = pb.bone
        inherit = has_parent and bone.use_inherit_rotation
        rests.append((bone.matrix if inherit else bone.matrix_local).to_quaternion())
        inherits.append(inherit)
        has_parent = True
        names.append(name)
        mats.append(m)
        rows.append(m.translation[:])
        frames.append(m.to_quaternion().normalized())  # as read.read_chain
        opb = originals.get(name)
        if opb is None:
            return None
        mode = opb.rotation_mode
        mode_list.append(mode)
        value_list.append(modes.channel_values(opb, mode))
        lock_list.append(modes.locks(opb))
    rows.append((end.tail if use_tail else end.head)[:])
    if not math.isfinite(sum(map(sum, rows))):
        return None
    return PlainChain(
        tuple(names),
        tip,
        use_tail,
        rows,
        frames,
        rests,
        inherits,
        parent_frame,
        tuple(mats),
        parent_matrix,
        mode_list,
        value_list,
        lock_list,
    )


def plain_pose(chain: PlainChain, rotations, influence: float = 1.0, use_locks: bool = True) -> PoseWrite | None:
    """`write.compute_pose` for a plain chain and the solver's (w, x, y, z) rotations, or None
    where it would raise (or the result is not finite)."""
    if not (0.0 <= influence <= 1.0) or len(rotations) != len(chain.names):
        return None
    if not math.isfinite(sum(map(sum, rotations))):
        return None
    values: dict[str, tuple[float, ...]] = {}
    before: dict[str, tuple[float, ...]] = {}
    locked = []
    parent = chain.parent_frame
    for i, name in enumerate(chain.names):
        new = Quaternion(rotations[i]).normalized() @ chain.frames[i]
        inherited = parent @ chain.rests[i] if chain.inherits[i] else chain.rests[i]
        q = inherited.conjugated() @ new
        mode, current = chain.modes[i], chain.values[i]
        before[name] = current
        if influence < 1.0:
            q = modes.to_quaternion(mode, current).slerp(q, influence)
        lock, four, lock_w = chain.locks[i] if use_locks else modes.NO_LOCKS
        vals = modes.values_in_mode(mode, q, current, lock, four, lock_w)
        if not math.isfinite(sum(vals)):
            return None
        values[name] = vals
        if lock[0] or lock[1] or lock[2] or lock_w:
            locked.append(name)
        parent = new
    return PoseWrite(values, tuple(locked), (), before)
