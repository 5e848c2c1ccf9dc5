"""Read a bone tree (several IK chains sharing bones) as a solvers.Skeleton, and write its solution.

Chains are given as Blender's IK constraint defines them: (tip bone, chain_count, use_tail),
chain_count 0 reaching up to the root; the same bones per chain as `read.chain_pose_bones`
(so root-end bones sharing their head with their child are left out, as in a chain solve).
The skeleton is the union of the chains' bones in depth-first order (parents first).

Spaces and frames (see solvers.skeleton and ik_settings): bone i's armature-space frame is
F_i = F_parent R_i L_i, with R_i = Bone.matrix (rest in the parent) and L_i the rotation its
channels hold. A root of the union hangs from its Blender parent's evaluated pose P (identity
for an armature root or a bone not inheriting rotation, whose R is then Bone.matrix_local).
The skeleton has one `base_frame`: when every root hangs from the same P it is that P; when
roots hang from different parents (two arms without the spine), base_frame is the identity
and each root's P is folded into its reference (R_root = P R), which leaves L unchanged.
Heads, ends and bone frames are read from the evaluated pose; L from the evaluated rotation
channels. Bones with active constraints are posed by them, not by their channels alone: there
forward(local) and Blender differ by what the constraint does.
"""

from __future__ import annotations

import math

import numpy as np
from mathutils import Quaternion

from ..solvers import quat
from ..solvers.skeleton import Skeleton
from . import ik_settings, modes
from .read import ZERO_LINK, chain_pose_bones, check_rigid_bones

IDENTITY = (1.0, 0.0, 0.0, 0.0)


def _depth(bone) -> int:
    k = 0
    while bone is not None:
        k, bone = k + 1, bone.parent
    return k


def chain_bones(obj, tip: str, chain_count: int, use_tail: bool = True) -> tuple[list, str]:
    """(the pose bones one IK chain rotates, root first; the name of the bone whose end reaches)."""
    if int(chain_count) < 0:
        raise ValueError(f"chain_count must be 0 (to the root) or more, got {chain_count}")
    length = int(chain_count)
    if length == 0:
        end = obj.pose.bones.get(tip) if obj is not None and obj.type == "ARMATURE" else None
        length = max(1, _depth(end if use_tail else end.parent)) if end is not None else 1
    bones, _ = chain_pose_bones(obj, tip, length, use_tail)
    return bones, bones[-1].name


def end_bones(obj, chains) -> tuple[str, ...]:
    """Per chain (tip, chain_count, use_tail): the bone whose end point reaches (the effector's bone)."""
    return tuple(chain_bones(obj, *c)[1] for c in chains)


def _union(obj, chains) -> tuple[list, dict[str, list[tuple[str, bool]]]]:
    """(pose bones of the union in depth-first order; end bone name -> its chains' (tip, use_tail))."""
    if not chains:
        raise ValueError("no chains to read")
    members: dict[str, object] = {}
    ends: dict[str, list[tuple[str, bool]]] = {}
    for tip, count, use_tail in chains:
        bones, end = chain_bones(obj, tip, count, use_tail)
        members.update((b.name, b) for b in bones)
        ends.setdefault(end, []).append((tip, bool(use_tail)))
    index = {b.name: i for i, b in enumerate(obj.pose.bones)}

    def path(pb) -> tuple[int, ...]:
        out = []
        while pb is not None:
            out.append(index[pb.name])
            pb = pb.parent
        return tuple(reversed(out))

    return sorted(members.values(), key=path), ends


def read_tree(obj, obj_eval, chains) -> tuple[Skeleton, np.ndarray, tuple[str, ...]]:
    """(the skeleton of the chains' bones, their local rotations (n, 4), their names) from the
    evaluated object; `obj` (the original) gives the bone structure.

    chains: [(tip bone name, chain_count, use_tail)]. Each chain's effector bone is its last
    bone (`end_bones`); its end point is the tip's tail (use_tail) or the tip's head."""
    bones, ends = _union(obj, chains)
    names = tuple(b.name for b in bones)
    where = {n: i for i, n in enumerate(names)}
    pose = obj_eval.pose.bones
    pbs = [pose[n] for n in names]
    check_rigid_bones(obj_eval, names)
    parents = []
    for pb in pbs:
        parent = pb.parent
        p = -1 if parent is None else where.get(parent.name, -1)
        if p == -1 and parent is not None:
            above = parent.parent
            while above is not None and above.name not in where:
                above = above.parent
            if above is not None:
                raise ValueError(
                    f"bone '{pb.name}' hangs from '{above.name}' through '{parent.name}', which no chain includes:"
                    " lengthen a chain to join them, or solve them apart"
                )
        elif p != -1 and not pb.bone.use_inherit_rotation:
            raise ValueError(
                f"bone '{pb.name}' does not inherit its parent's rotation, so it cannot be inside a tree"
                " (turn its Inherit Rotation on, or end the chain above it)"
            )
        parents.append(p)
    frames = np.array([pb.matrix.to_quaternion().normalized()[:] for pb in pbs])
    heads = np.array([pb.matrix.translation[:] for pb in pbs])
    ends_at = []
    for pb in pbs:
        # A bone's end point is its tail, or the tip's head for chains without Use Tail; chains
        # ending on one bone must agree on it (one effector point per bone).
        points = [np.array(pb.tail[:] if use_tail else pose[tip].head[:]) for tip, use_tail in ends.get(pb.name, [])]
        end = points[0] if points else np.array(pb.tail[:])
        for other in points[1:]:
            if np.linalg.norm(other - end) > ZERO_LINK * (pb.length + 1.0):
                tips = " and ".join(f"'{tip}'" for tip, _ in ends[pb.name])
                raise ValueError(f"the chains of {tips} reach from different points of bone '{pb.name}'")
        ends_at.append(end)
    ends_at = np.array(ends_at)
    if not (np.all(np.isfinite(frames)) and np.all(np.isfinite(heads)) and np.all(np.isfinite(ends_at))):
        raise ValueError("the pose of the tree is not finite")
    axis = ends_at - heads
    lengths = np.linalg.norm(axis, axis=1)
    for i, length in enumerate(lengths):
        if not length > ZERO_LINK * max(1.0, float(np.max(lengths))):
            raise ValueError(f"bone '{names[i]}' reaches a point at its own head (zero length)")
    links = quat.rotate(quat.conjugate(frames), axis / lengths[:, None])
    reference = np.array([pb.bone.matrix.to_quaternion().normalized()[:] for pb in pbs])
    offsets = np.empty((len(names), 3))
    roots = {}  # root index -> (parent frame, rest orientation)
    for i, (pb, p) in enumerate(zip(pbs, parents, strict=True)):
        if p != -1:
            offsets[i] = quat.rotate(quat.conjugate(frames[p]), heads[i] - heads[p])
            continue
        offsets[i] = heads[i]
        if pb.parent is None or not pb.bone.use_inherit_rotation:
            roots[i] = (None, pb.bone.matrix_local.to_quaternion().normalized()[:])
        else:
            roots[i] = (pb.parent.name, reference[i])
    sources = {source for source, _ in roots.values()}
    if len(sources) == 1:
        (source,) = sources
        base = np.array(IDENTITY if source is None else pose[source].matrix.to_quaternion().normalized()[:])
        for i, (_, rest) in roots.items():
            reference[i] = rest
    else:
        # Roots under different parents: one shared identity base, each parent folded into its root's rest.
        base = np.array(IDENTITY)
        for i, (source, rest) in roots.items():
            parent = IDENTITY if source is None else pose[source].matrix.to_quaternion().normalized()[:]
            reference[i] = quat.multiply(np.array(parent), np.asarray(rest))
    local = np.array([modes.current_quaternion(pb)[:] for pb in pbs])
    limits = ik_settings.read_limits(pbs)
    skeleton = Skeleton(tuple(parents), offsets, links, lengths, reference, base, limits)
    return skeleton, local, names


def tree_values(
    obj, names, local, previous: dict[str, tuple[float, ...]] | None = None, use_locks: bool = False
) -> dict[str, tuple[float, ...]]:
    """Channel values (bone name -> values in its own rotation mode) for local rotations (n, 4),
    continuous with `previous` (a bake's previous frame; default: the current channels). A bone
    whose rotation is exactly what its channels hold keeps them unchanged. `use_locks` keeps
    locked channels (off by default: Blender's IK turns through rotation locks)."""
    rows = np.asarray(local, dtype=float)
    if rows.shape != (len(names), 4):
        raise ValueError(f"local rotations must have shape ({len(names)}, 4), got {rows.shape}")
    if not np.all(np.isfinite(rows)):
        raise ValueError("the local rotations are not finite; pose left unchanged")
    pose = obj.pose.bones
    values = {}
    for name, q in zip(names, rows.tolist(), strict=True):
        pb = pose[name]
        mode = pb.rotation_mode
        current = modes.channel_values(pb, mode)
        old = current if previous is None else tuple(previous[name])
        if previous is None and list(modes.to_quaternion(mode, current)) == q:
            values[name] = tuple(current)
            continue
        lock, four, lock_w = modes.locks(pb) if use_locks else modes.NO_LOCKS
        vals = modes.values_in_mode(mode, Quaternion(q), old, lock, four, lock_w)
        if not all(map(math.isfinite, vals)):
            raise ValueError(f"the solved rotation of bone '{name}' is not finite; pose left unchanged")
        values[name] = vals
    return values


def write_tree(obj, names, local, use_locks: bool = False) -> dict[str, tuple[float, ...]]:
    """Write local rotations (n, 4) into `names`' rotation channels (the original object's), each in
    its own rotation mode; everything is computed and checked before anything is written.
    Returns the values written."""
    values = tree_values(obj, names, local, use_locks=use_locks)
    pose = obj.pose.bones
    for name, vals in values.items():
        modes.set_values(pose[name], vals)
    return values
