"""A tree solve's pose as channel values (a `PoseWrite`, as one chain's): influence, locks,
continuity with the current channels, and which bones have constraints that may override it."""

from __future__ import annotations

import math

import numpy as np
from mathutils import Quaternion

from . import modes
from .write import PoseWrite


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
    pose = obj.pose.bones
    values, before, locked, constrained = {}, {}, [], []
    for name, q, q0 in zip(names, rows.tolist(), np.asarray(local_in, dtype=float).tolist(), strict=True):
        pb = pose[name]
        mode = pb.rotation_mode
        current = before[name] = modes.channel_values(pb, mode)
        quat = Quaternion(q)
        if influence < 1.0:
            quat = Quaternion(q0).slerp(quat, influence)
        lock, four, lock_w = modes.locks(pb) if use_locks else modes.NO_LOCKS
        old = current if previous is None else tuple(previous[name])
        vals = modes.values_in_mode(mode, quat, old, lock, four, lock_w)
        if not all(map(math.isfinite, vals)):
            raise ValueError(f"the solved rotation of bone '{name}' is not finite; pose left unchanged")
        values[name] = vals
        if lock[0] or lock[1] or lock[2] or lock_w:
            locked.append(name)
        if any(c.enabled and c.influence > 0.0 for c in pb.constraints):
            constrained.append(name)
    return PoseWrite(values, tuple(locked), tuple(constrained), before)
