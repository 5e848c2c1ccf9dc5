"""A unit's layout (rig.tree.TreeLayout: bone order, parents, rests, limits) kept from one read to
the next, so Solve, Live and a bake do not rebuild it per call (for a lone chain it cost as much
as the solve itself).

`unit_layout(obj, chains, hinges)` hands out the layout built last for the same object, chains
and `hinges` while its fingerprint still holds, else builds it again (rig.tree.tree_layout). The
fingerprint is everything the layout is built from, re-read on the original object per call:
- each chain's bones (rig.tree.chain_bones: the walk from the tip, which a renamed, re-parented or
  deleted bone, or a different chain length, changes);
- per bone its rest (Bone.matrix_local, which any rest edit in Edit Mode, a roll or Apply Pose as
  Rest changes; a root's Blender parent's too, as Bone.matrix is relative to it), its Blender
  parent's name, Inherit Rotation, and its IK settings (locks, limits, stiffness: the joint limits);
- several chains: the armature's bone order (the tree's depth-first order follows it) and the
  bones above each chain's top (a top hanging from another chain through bones of none is refused).
Each hand-out is a copy with its own empty `last` (no skeleton carried from another read: a
Solve reads its skeleton afresh, as without the cache; a bake carries it within its own copy).
"""

from __future__ import annotations

from collections import OrderedDict
from operator import attrgetter

from .tree import TreeLayout, chain_bones, tree_layout

# The IK settings rig.ik_settings.read_limits reads (one C-level getter for all of them).
_IK_SETTINGS = attrgetter(
    "lock_ik_x", "lock_ik_y", "lock_ik_z", "use_ik_limit_x", "use_ik_limit_y", "use_ik_limit_z",
    "ik_min_x", "ik_min_y", "ik_min_z", "ik_max_x", "ik_max_y", "ik_max_z",
    "ik_stiffness_x", "ik_stiffness_y", "ik_stiffness_z",
)  # fmt: skip

# Layouts kept (oldest dropped first): a few rigs x a few units each.
KEPT = 64

_layouts: OrderedDict = OrderedDict()


def unit_layout(obj, chains, hinges: bool = True) -> TreeLayout:
    """`rig.tree.tree_layout(obj, chains, hinges)`, from the last build while its fingerprint holds
    (module docstring); errors as tree_layout's."""
    chains = tuple((tip, int(count), bool(use_tail)) for tip, count, use_tail in chains)
    now = fingerprint(obj, chains)  # first: its walk raises tree_layout's errors on a bad chain
    key = (obj.as_pointer(), chains, bool(hinges))
    kept = _layouts.get(key)
    if kept is not None and kept[0] == now:
        _layouts.move_to_end(key)
        return _handed_out(kept[1])
    layout = tree_layout(obj, chains, hinges)
    _layouts[key] = (now, layout)
    while len(_layouts) > KEPT:
        _layouts.popitem(last=False)
    return _handed_out(layout)


def fingerprint(obj, chains) -> tuple:
    """What `tree_layout(obj, chains)` is built from (module docstring), read from `obj`."""
    walks, tops, members = [], [], {}
    for tip, count, use_tail in chains:
        walk, _ = chain_bones(obj, tip, count, use_tail)
        names = tuple([b.name for b in walk])
        walks.append(names)
        parent = walk[0].bone.parent  # inside a walk each bone's parent is the one before it
        tops.append(None if parent is None else (parent.name, parent.matrix_local.copy()))
        if len(chains) > 1:  # a top may hang from another chain's bone through bones of none
            tops.append(tuple(b.name for b in _ancestors(parent)))
        members.update(zip(names, walk, strict=True))
    rests = []
    for pb in members.values():
        bone = pb.bone
        # A copy: the Matrix Blender gives reads the bone again on every use (and it may be freed).
        # The B-Bone size too: the mass weighting's capsule radii (rig.capsules) are read from it.
        size = (bone.bbone_x, bone.bbone_z)
        rests.append((bone.matrix_local.copy(), bone.use_inherit_rotation, _IK_SETTINGS(pb), size))
    order = tuple(obj.pose.bones.keys()) if len(chains) > 1 else ()
    return tuple(walks), tuple(tops), tuple(rests), order


def _handed_out(layout: TreeLayout) -> TreeLayout:
    """A copy of `layout` with its own empty `last` (the rest shared: never changed in place)."""
    out = object.__new__(TreeLayout)  # not copy.copy: its reduce protocol costs more than the rest
    out.__dict__.update(layout.__dict__, last=[])
    return out


def _ancestors(bone):
    while bone is not None:
        yield bone
        bone = bone.parent


def forget() -> None:
    """Drop every kept layout (tests: a read from scratch; nothing else needs it, the fingerprint decides)."""
    _layouts.clear()
