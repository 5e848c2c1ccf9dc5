"""Where a pinned chain's tip holds: the point the user's pose gave it, not the last solve's.

A pin holds its tip where "the pose has it". Solve and Live start from the current pose, which
after a solve is that solve's own result: a pin read there carries each solve's slack (within the
tolerance) into the next, and under Live, which solves again on every change, it creeps (FABRIK:
about 1.6e-6 per update). So a group's solve remembers each pin's point and frame and the channel
values it computed for the group's bones; the next solve of the same group holds the remembered
point while every bone from the group's root down to the pinned bone still holds what was
written (nobody turned it since), carried along by whatever moved the root (the bones above the
group), and reads the point from the pose as it is otherwise (the user posed the leg, an undo, a
key): then the pin holds where the user put it.
"""

from __future__ import annotations

import numpy as np

from ... import solvers
from ...rig import modes
from ...solvers import quat

# (armature, the group's bones) -> ({pinned bone: (point, frame, its root's frame, its root's head)},
# the channel values written per bone)
_REMEMBERED: dict[tuple, tuple[dict, dict]] = {}
_CAPACITY = 64


def held_points(obj, names: tuple[str, ...], skeleton, local: np.ndarray, bones: list[int]) -> dict:
    """{pinned bone index: (point (3,), frame (4,))} in the skeleton's (armature) space for the
    group `names` of `obj` (the original object) read as `skeleton`, `local`: each pin's
    remembered point while its branch is as the last solve of the group wrote it, else the
    pose's."""
    remembered, written = _REMEMBERED.get((obj.name_full, tuple(names)), ({}, {}))
    frames, _, ends = skeleton.forward(local)
    pose = obj.pose.bones
    out = {}
    for bone in bones:
        branch = skeleton.branch(bone)
        held = remembered.get(names[bone])
        untouched = all(names[i] in written and modes.holds(pose[names[i]], written[names[i]]) for i in branch)
        if held is not None and untouched:
            point, frame, root_frame, root_head = held
            # The root (and all below it) as the bones above the group carry it now.
            root = branch[0]
            turn = quat.multiply(_root_frame(skeleton, root), quat.conjugate(root_frame))
            out[bone] = (skeleton.offsets[root] + quat.rotate(turn, point - root_head), quat.multiply(turn, frame))
        else:
            out[bone] = (ends[bone].copy(), frames[bone].copy())
    return out


def remember(obj, names: tuple[str, ...], skeleton, held: dict, written: dict) -> None:
    """After a solve of the group `names`: the points its pins held (`held_points`) and the channel
    values (bone -> values) it computed for the write."""
    if len(_REMEMBERED) >= _CAPACITY:
        _REMEMBERED.clear()
    points = {}
    for bone, (point, frame) in held.items():
        root = skeleton.branch(bone)[0]
        points[names[bone]] = (point, frame, _root_frame(skeleton, root), skeleton.offsets[root].copy())
    _REMEMBERED[(obj.name_full, tuple(names))] = (points, dict(written))


def _root_frame(skeleton: solvers.Skeleton, root: int) -> np.ndarray:
    """The frame a root bone hangs from, with its rest: what the bones above the group decide."""
    return quat.multiply(skeleton.base_frame, skeleton.reference[root])
