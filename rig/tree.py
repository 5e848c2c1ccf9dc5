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

import itertools
import math
from dataclasses import dataclass, field

import numpy as np
from mathutils import Matrix, Quaternion, Vector

from ..solvers import quat
from ..solvers.limits import JointLimits
from ..solvers.skeleton import Skeleton
from . import capsules, ik_settings, modes
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


@dataclass(frozen=True)
class TreeLayout:
    """What a tree's reading needs that only the armature's structure decides (read once per bake)."""

    names: tuple[str, ...]  # the union's bones, depth-first (parents first)
    parents: tuple[int, ...]  # skeleton parent per bone, -1 for a root
    effectors: tuple[int, ...]  # per chain: the index of its end bone
    ends: tuple[tuple[tuple[str, bool], ...], ...]  # per bone: (tip, use_tail) of the chains ending on it
    rests: np.ndarray  # (n, 4) Bone.matrix per bone (a root not inheriting rotation: Bone.matrix_local)
    root_parents: tuple[tuple[int, str | None], ...]  # (root index, the Blender parent it hangs from or None)
    limits: JointLimits | None
    # Bones inside the tree not inheriting their parent's rotation (Inherit Rotation off; only
    # when `tree_layout(..., hinges=True)`): their rest is Bone.matrix_local (armature space).
    hinges: tuple[int, ...] = ()
    # The rests as Blender gives them (Bone.matrix's quaternion; a root not hanging from a parent's
    # rotation: Bone.matrix_local's), unit within float32, as rig.read's joint frames take them: a
    # chain alone's (rig.unit.as_chain), which its Chain normalises once in float64.
    rests_read: np.ndarray | None = field(default=None, compare=False, repr=False)
    # Per bone what the writer's quaternion kernel turns it through (rig.read.tree_terms `rests`):
    # its rest in the parent (Bone.matrix) where it follows a parent's rotation, else Bone.matrix_local.
    writer_rests: tuple = field(default=(), compare=False, repr=False)
    # (n,) each bone's capsule radius for the mass weighting (rig.capsules: its B-Bone size)
    radii: np.ndarray | None = field(default=None, compare=False, repr=False)
    # The skeleton read last through this layout: handed out again while the geometry stays the
    # same, so the tree kernels' per-skeleton plans (solvers.common.tree_plan) carry from frame to frame.
    last: list = field(default_factory=list, compare=False, repr=False)


def tree_layout(obj, chains, hinges: bool = False) -> TreeLayout:
    """The layout of the union of `chains` [(tip, chain_count, use_tail)], or ValueError.
    `hinges`: accept bones inside the tree with Inherit Rotation off (`TreeLayout.hinges`), for a
    writer that writes the solved world frames (rig.unit); else they are refused."""
    if not chains:
        raise ValueError("no chains to read")
    members: dict[str, object] = {}
    ends: dict[str, list[tuple[str, bool]]] = {}
    end_names = []
    for tip, count, use_tail in chains:
        bones, end = chain_bones(obj, tip, count, use_tail)
        members.update((b.name, b) for b in bones)
        ends.setdefault(end, []).append((tip, bool(use_tail)))
        end_names.append(end)

    if len(chains) == 1:  # one chain: its bones are a parent walk, root first (no armature-wide index)
        pbs = list(members.values())
    else:
        index = {name: i for i, name in enumerate(obj.pose.bones.keys())}  # one RNA call, not one per bone

        def path(pb) -> tuple[int, ...]:
            # Root-to-bone positions: sorting by them is a depth-first order.
            out = []
            while pb is not None:
                out.append(index[pb.name])
                pb = pb.parent
            return tuple(reversed(out))

        pbs = sorted(members.values(), key=path)
    names = tuple(pb.name for pb in pbs)
    where = {n: i for i, n in enumerate(names)}
    parents, roots, hinged = [], [], []
    for i, pb in enumerate(pbs):
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
        elif p != -1 and not pb.bone.use_inherit_rotation and hinges:
            hinged.append(i)
        elif p != -1 and not pb.bone.use_inherit_rotation:
            raise ValueError(
                f"bone '{pb.name}' does not inherit its parent's rotation, so it cannot be inside a tree"
                " (turn its Inherit Rotation on, or end the chain above it)"
            )
        if p == -1:
            inherits = parent is not None and pb.bone.use_inherit_rotation
            roots.append((i, parent.name if inherits else None))
        parents.append(p)
    rests = [pb.bone.matrix.to_quaternion() for pb in pbs]  # mathutils until the end: no array round trip
    for i in [i for i, source in roots if source is None]:
        # An armature root, or a root not inheriting rotation: its rest in armature space.
        rests[i] = pbs[i].bone.matrix_local.to_quaternion()
    read_rests = np.array([q[:] for q in rests])
    for i in hinged:  # its rest in armature space too (rig.tree_write.unit_pose writes it through it)
        rests[i] = pbs[i].bone.matrix_local.to_quaternion()
    # The tree kernels' rests: normalised in mathutils (float32), as ever. (Normalised in float64 as
    # a chain's are, every group record of the outcome corpus moved: docs/design.md, "Solve: one path".)
    rests = np.array([q.normalized()[:] for q in rests])
    writer = []
    for pb, p in zip(pbs, parents, strict=True):
        bone = pb.bone
        inherit = (p != -1 or pb.parent is not None) and bone.use_inherit_rotation
        writer.append(((bone.matrix if inherit else bone.matrix_local).to_quaternion(), inherit))
    return TreeLayout(
        names,
        tuple(parents),
        tuple(where[e] for e in end_names),
        tuple(tuple(ends.get(n, ())) for n in names),
        rests,
        tuple(roots),
        ik_settings.read_limits(pbs),
        tuple(hinged),
        read_rests,
        tuple(writer),
        radii=capsules.bone_radii(pbs),
    )


def read_tree(
    obj, obj_eval, chains, layout: TreeLayout | None = None, fk=None
) -> tuple[Skeleton, np.ndarray, tuple[str, ...]]:
    """(the skeleton of the chains' bones, their local rotations (n, 4), their names) from the
    evaluated object: `read_tree_pose` without the pose."""
    return read_tree_pose(obj, obj_eval, chains, layout, fk)[:3]


def read_tree_pose(
    obj, obj_eval, chains, layout: TreeLayout | None = None, fk=None
) -> tuple[Skeleton, np.ndarray, tuple[str, ...], tuple[list, list, list]]:
    """(the skeleton of the chains' bones, their local rotations (n, 4), their names, the pose as
    read in rows of floats: world frames (n of 4), heads (n of 3), end points (n of 3)) from the
    evaluated object; `obj`
    (the original) gives the bone structure. The pose is what `solvers.solve_skeleton` builds a
    one-effector branch's chain from (`pose=`): the numbers rig.read_chain reads for that chain.

    chains: [(tip bone name, chain_count, use_tail)]. Each chain's effector bone is its last
    bone (`end_bones`, `TreeLayout.effectors`); its end point is the tip's tail (use_tail) or the
    tip's head. `layout`: `tree_layout(obj, chains)` when reading the same tree frame after frame.
    `fk`: a `rig.fk.PoseFK` whose replaced rotations (bones above the tree, solved earlier this
    frame by a bake) pose the tree's bones, instead of the evaluated pose."""
    read = read_tree_read(obj, obj_eval, chains, layout, fk)
    return read.skeleton, read.local, read.names, read.pose


@dataclass(frozen=True)
class TreeRead:
    """A tree as read: the skeleton and its input, and the mathutils pose a writer turns."""

    skeleton: Skeleton
    local: np.ndarray  # (n, 4) each bone's local rotation (its channels, or `fk`'s replaced one)
    names: tuple[str, ...]
    pose: tuple[list, list, list]  # world frames, heads, end points as read (rows of floats)
    layout: TreeLayout
    matrices: tuple[Matrix, ...]  # each bone's armature-space pose matrix as read
    frames: tuple[Quaternion, ...]  # their rotations, normalised (mathutils)
    root_parents: tuple[Matrix | None, ...]  # per root in order: its Blender parent's pose matrix
    bones: tuple  # the pose bones (evaluated)


def read_tree_read(obj, obj_eval, chains, layout: TreeLayout | None = None, fk=None, check: bool = True) -> TreeRead:
    """`read_tree_pose`'s reading in full (`TreeRead`). `check`: run the rigidity check here (else
    the caller runs `check_rigid`)."""
    layout = tree_layout(obj, chains) if layout is None else layout
    names = layout.names
    pose = obj_eval.pose.bones
    pbs = [pose[n] for n in names]
    if check:
        check_rigid(obj_eval, names, fk)
    # mathutils bone by bone: for a few dozen bones ~10x cheaper than numpy calls on tiny arrays.
    frames, heads, ends, mats = [], [], [], []
    matrix = (lambda pb: pb.matrix.copy()) if fk is None else (lambda pb: fk.matrix(pb.name))
    tail = (lambda pb: pb.tail) if fk is None else (lambda pb: fk.matrix(pb.name) @ Vector((0.0, pb.bone.length, 0.0)))
    for pb, chains_here in zip(pbs, layout.ends, strict=True):
        m = pb.matrix.copy() if fk is None else fk.matrix(pb.name)  # `matrix(pb)`, without a call per bone
        mats.append(m)
        frames.append(m.to_quaternion().normalized())
        heads.append(m.translation)
        end = pb.tail if fk is None else tail(pb)
        if chains_here and not all(use_tail for _, use_tail in chains_here):
            # A bone's end point is its tail, or the tip's head for chains without Use Tail; chains
            # ending on one bone must agree on it (one effector point per bone).
            points = [tail(pb) if use_tail else matrix(pose[tip]).translation for tip, use_tail in chains_here]
            for other in points[1:]:
                if (other - points[0]).length > ZERO_LINK * (pb.length + 1.0):
                    tips = " and ".join(f"'{tip}'" for tip, _ in chains_here)
                    raise ValueError(f"the chains of {tips} reach from different points of bone '{pb.name}'")
            end = points[0]
        ends.append(end)
    axes = [end - head for head, end in zip(heads, ends, strict=True)]  # new Vectors: nothing read later
    lengths = [axis.length for axis in axes]
    frame_list, head_rows = [q[:] for q in frames], [h[:] for h in heads]
    # Plain floats: numpy's per-call cost on a few rows is more than these checks (a Solve reads per call).
    if not all(map(math.isfinite, itertools.chain(itertools.chain.from_iterable(frame_list + head_rows), lengths))):
        bad = next(
            i for i in range(len(names)) if not all(map(math.isfinite, (*frame_list[i], *head_rows[i], lengths[i])))
        )
        raise ValueError(f"the pose of bone '{names[bad]}' is not finite (its rotation, location or scale)")
    shortest = ZERO_LINK * max(1.0, max(lengths))
    short = [i for i, length in enumerate(lengths) if not length > shortest]
    if short:
        raise ValueError(f"bone '{names[short[0]]}' reaches a point at its own head (zero length)")
    # Each root's Blender parent's pose matrix, read once: the writer's terms and, where the root
    # hangs from its rotation (`source`, that parent's name), the base or the folded rest.
    above = [pbs[i].parent for i, _ in layout.root_parents]
    root_parents = tuple(None if parent is None else matrix(parent) for parent in above)
    sources = {source for _, source in layout.root_parents}
    folded = ()  # (root, its parent's rotation) folded into the root's rest: roots under different parents
    if len(sources) == 1:
        (source,) = sources
        base = IDENTITY if source is None else root_parents[0].to_quaternion().normalized()[:]
    else:  # one shared identity base, each parent folded into its root's rest
        base = IDENTITY
        folded = tuple(
            (i, m.to_quaternion().normalized()[:])
            for (i, source), m in zip(layout.root_parents, root_parents, strict=True)
            if source is not None
        )

    # What geometry() needs of the layout, bound here: a closure over `layout` would make a cycle
    # (layout.last -> skeleton -> geometry -> layout), left for the cyclic garbage collector, whose
    # collections Live's every update then paid for.
    parents, rests, hinges = layout.parents, layout.rests, layout.hinges

    def geometry() -> tuple:
        """The skeleton's numpy rows from what was read above (no Blender read: it may come later)."""
        links = [(frame.conjugated() @ axis.normalized())[:] for frame, axis in zip(frames, axes, strict=True)]
        offsets = [
            head_rows[i] if p == -1 else (frames[p].conjugated() @ (heads[i] - heads[p]))[:]
            for i, p in enumerate(parents)
        ]
        if not all(map(math.isfinite, itertools.chain.from_iterable(offsets))):  # heads far apart (float32)
            bad = next(i for i, row in enumerate(offsets) if not all(map(math.isfinite, row)))
            raise ValueError(f"the pose of bone '{names[bad]}' is not finite (its head is too far away)")
        reference = rests.copy()
        if hinges:  # its rest in armature space, seen from its parent as read (F = F_p ref L holds)
            frame_rows = np.array(frame_list)
            for i in hinges:
                reference[i] = quat.multiply(quat.conjugate(frame_rows[parents[i]]), reference[i])
        for i, parent in folded:
            reference[i] = quat.multiply(np.array(parent), reference[i])
        return np.array(offsets), np.array(links), np.array(lengths), reference, np.array(base)

    replaced = {} if fk is None else fk.rotations
    current = modes.current_quaternion
    if replaced:
        local = np.array([(replaced[pb.name] if pb.name in replaced else current(pb))[:] for pb in pbs])
    else:
        local = np.array([current(pb)[:] for pb in pbs])
    posed = (frame_list, head_rows, [e[:] for e in ends])  # rows of floats, as read
    parts = (layout, tuple(mats), tuple(frames), root_parents, tuple(pbs))
    rows = geometry() if layout.last else None
    if rows is not None and _same_geometry(layout.last[0], *rows):
        return TreeRead(layout.last[0], local, names, posed, *parts)
    # Checked above in plain floats but for the rests and base (Skeleton's own check names a bad one).
    if not math.isfinite(sum(layout.rests.ravel().tolist()) + sum(base) + sum(sum(q) for _, q in folded)):
        skeleton = Skeleton(layout.parents, *(rows or geometry()), layout.limits, layout.radii)
    elif rows is not None:
        skeleton = Skeleton.read(layout.parents, *rows, layout.limits, layout.radii)
    else:  # its numpy rows on first use: a lone chain's solve takes the pose as read (`posed`)
        skeleton = Skeleton.read_lazily(layout.parents, geometry, layout.limits, layout.radii)
    layout.last[:] = [skeleton]
    return TreeRead(skeleton, local, names, posed, *parts)


def check_rigid(obj_eval, names, fk=None) -> None:
    """The rigidity check (rig.read) on the pose a tree is read at; with IK stretch (`fk` with
    scales) on the pose with the bones' own stretch divided out."""
    if fk is not None and fk.scales:
        fk.check_rigid(names)
    else:
        check_rigid_bones(obj_eval, names)


# Geometry read from float32 pose data differs by rounding from frame to frame (~1e-7 of a bone's
# length); within this fraction of the longest bone it is the same skeleton.
SAME_GEOMETRY = 1e-6


def _same_geometry(skeleton: Skeleton, offsets, links, lengths, reference, base) -> bool:
    scale = SAME_GEOMETRY * max(1.0, float(np.max(lengths)))
    return bool(
        np.abs(skeleton.offsets - offsets).max() <= scale
        and np.abs(skeleton.lengths - lengths).max() <= scale
        and np.abs(skeleton.links - links).max() <= SAME_GEOMETRY
        and _same_rotations(skeleton.reference, reference)
        and _same_rotations(skeleton.base_frame[None], np.asarray(base)[None])
    )


def _same_rotations(a: np.ndarray, b: np.ndarray) -> bool:
    """Unit quaternions (n, 4) equal within SAME_GEOMETRY component-wise, q and -q alike."""
    return bool(np.minimum(np.abs(a - b).max(axis=1), np.abs(a + b).max(axis=1)).max() <= SAME_GEOMETRY)


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
