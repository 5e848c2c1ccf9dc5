"""The one writer of a solve: a unit's solution (rig.unit, solvers.solve_skeleton) as channel values
(a `PoseWrite`): influence, locks, continuity with the current channels, and which bones have
constraints that may override it. Computed and checked in full before anything is written.

Each bone's new local rotation comes from the kernel that solved it:
- the chain kernel (one effector: `SkeletonSolution.branch`) turns each bone in armature space;
  the turned frames become local rotations by quaternion products (`rig.write.turned_locals`,
  when every pose matrix is a similarity: `UnitRead.terms`), else through
  Bone.convert_local_to_pose (`rig.write.converted_locals`; the terms say why);
- a tree kernel gives the local rotations themselves (the skeleton's own, Bone.matrix's rest in
  the parent), written as they are; a bone not inheriting rotation takes its solved world frame
  through its armature-space rest.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
from mathutils import Quaternion

from ..solvers import quat as q64
from . import modes
from .read import PoseTerms, is_constrained
from .write import PoseWrite, converted_locals, turned_locals, turned_matrices


def tree_pose(
    obj, names, local_in, solved, influence: float = 1.0, use_locks: bool = True, previous: dict | None = None
) -> PoseWrite:
    """Channel values putting `names` (bones of `obj`, the original) in the local rotations `solved`
    (n, 4); `influence` blends each from `local_in` (its rotation before the solve), as a
    constraint's influence. `previous`: channel values to stay continuous with (a bake's previous
    frame; default the current channels). Computed and checked in full before anything is written."""
    if not (0.0 <= influence <= 1.0):
        raise ValueError(f"influence must be within 0..1, got {influence}")
    rows = np.asarray(solved, dtype=float)
    if rows.shape != (len(names), 4) or not np.all(np.isfinite(rows)):
        raise ValueError("the solved rotations are not finite; pose left unchanged")
    starts = [Quaternion(q0) for q0 in np.asarray(local_in, dtype=float).tolist()]
    return _channels(obj, names, [Quaternion(q) for q in rows.tolist()], starts, influence, use_locks, previous)


def unit_pose(
    obj, unit, solution, influence: float = 1.0, use_locks: bool = True, starts=None, previous: dict | None = None
) -> PoseWrite:
    """Channel values putting `unit`'s bones (a rig.unit.UnitRead of `obj`, the original) in the pose
    of `solution` (solvers.solve_skeleton's), blended by `influence` from the current channels (a
    bake: from `starts`, per bone its input Quaternion, continuous with `previous` channel values)."""
    if not (0.0 <= influence <= 1.0):
        raise ValueError(f"influence must be within 0..1, got {influence}")
    if solution.branch is not None:
        quats = _turned(obj, unit, solution.branch)
        return _channels(obj, unit.names, quats, starts, influence, use_locks, previous, unit.constrained)
    rows = np.asarray(solution.local, dtype=float)
    if rows.shape != (len(unit.names), 4) or not np.isfinite(rows).all():
        raise ValueError("the solved rotations are not finite; pose left unchanged")
    hinges = unit.layout.hinges
    if hinges:  # the solved world frame through the bone's own (armature-space) rest
        frames = unit.skeleton.forward(rows)[0]
        rows = rows.copy()
        rows[list(hinges)] = q64.multiply(q64.conjugate(unit.layout.rests[list(hinges)]), frames[list(hinges)])
    quats = [Quaternion(q) for q in rows.tolist()]
    return _channels(obj, unit.names, quats, starts, influence, use_locks, previous, unit.constrained)


def _turned(obj, unit, branch) -> list[Quaternion]:
    """New local rotations from the chain kernel's world turns of the frames as read."""
    _, solved, bones = branch
    _, turns = solved.rows()  # floats: no array round trip
    rows = turns
    if list(bones) != list(range(len(unit.names))):
        rows = [[1.0, 0.0, 0.0, 0.0]] * len(unit.names)
        for i, row in zip(bones, turns, strict=True):
            rows[i] = row
    try:
        finite = len(rows) == len(unit.names) and all(map(math.isfinite, itertools.chain.from_iterable(rows)))
    except TypeError:
        finite = False
    if not finite:
        raise ValueError("the solver returned invalid rotations")
    if isinstance(unit.terms, PoseTerms):
        return turned_locals(unit.terms, rows)
    matrices = turned_matrices(unit.matrices, unit.parents, rows)
    return converted_locals(obj.pose.bones, unit.names, unit.parents, unit.root_parents, matrices)


def _channels(
    obj, names, quats, starts, influence: float, use_locks: bool, previous: dict | None = None, constrained=None
) -> PoseWrite:
    """Channel values per bone of `names` for its new local rotation in `quats`, blended by
    `influence` from `starts` (default: its current channels). `constrained`: the bones with
    active constraints as read (rig.unit.UnitRead.constrained), else looked up here."""
    pose = obj.pose.bones
    given, constrained = constrained, []
    values, before, locked = {}, {}, []
    for k, (name, q) in enumerate(zip(names, quats, strict=True)):
        pb = pose[name]
        mode = pb.rotation_mode
        current = before[name] = modes.channel_values(pb, mode)
        if influence < 1.0:
            start = modes.to_quaternion(mode, current) if starts is None else starts[k]
            q = start.slerp(q, influence)
        lock, four, lock_w = modes.locks(pb) if use_locks else modes.NO_LOCKS
        old = current if previous is None else tuple(previous[name])
        vals = modes.values_in_mode(mode, q, old, lock, four, lock_w)
        if not all(map(math.isfinite, vals)):
            raise ValueError(f"the solved rotation of bone '{name}' is not finite; pose left unchanged")
        values[name] = vals
        if lock[0] or lock[1] or lock[2] or lock_w:
            locked.append(name)
        if given is None and is_constrained(pb):
            constrained.append(name)
    return PoseWrite(values, tuple(locked), tuple(constrained) if given is None else tuple(given), before)
