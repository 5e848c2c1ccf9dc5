"""A unit carried in its top bone's parent space: the bake's fast way through many frames.

When no bone of a unit (one chain, or chains sharing bones) has constraints, locked rotations
or animated location/scale, and every one inherits its parent's rotation and scale in full
(`unsuitable`), the unit seen from its top bone's parent (that bone's pose space, or armature
space for an armature root) is a function of the unit's own local rotations alone. The
solution of frame k-1, kept in that space, is then *exactly* the unit's pose at frame k before
solving, whatever the parent and the armature object do between frames: only the goals move
into that space. So the unit is read once (`UnitSpace.view`: rig.tree reads it there), each
frame only maps its target, pole and tip goal orientation into that space (`UnitSpace.space`,
an `ObjectSpace` app.solve.goals places goals with), and every frame is solved in one
`solvers.solve_skeleton_sequence` call. The keys of all frames are then converted in chunks
(`channel_values`: `rig.modes.series_values`, with sign and Euler continuity across chunks).
"""

from __future__ import annotations

import math

import numpy as np
from mathutils import Matrix

from . import modes
from .keys import data_path
from .space import MIN_RELATIVE_SCALE, ObjectSpace

# Frames per chunk when turning solved rotations into channel values (bounded temporaries).
CHUNK = 4096


def unsuitable(obj, names, animated_paths: set[str]) -> str:
    """Why these bones cannot be carried in their top bone's parent space ('' when they can)."""
    for name in names:
        pbone = obj.pose.bones[name]
        if any(c.enabled and c.influence > 0.0 for c in pbone.constraints):
            return f"bone '{name}' has constraints"
        if modes.is_locked(pbone):
            return f"bone '{name}' has locked rotation channels"
        if not pbone.bone.use_inherit_rotation:
            return f"bone '{name}' does not inherit rotation"
        if pbone.bone.inherit_scale != "FULL":
            # Its shape in the unit's space would change whenever a parent's scale does.
            return f"bone '{name}' does not fully inherit scale"
        prefix = data_path(name, "")
        if any(p.startswith(prefix) and not p.startswith(prefix + "rotation") for p in animated_paths):
            return f"bone '{name}' has animated channels other than rotation"
    return ""


class UnitSpace:
    """The space a unit is carried in: its top bone's parent's pose space (`parent`), or the
    armature's space for an armature root (`parent` '')."""

    def __init__(self, parent: str, last: str) -> None:
        self.parent = parent
        self.last = last  # the unit's last bone, for messages

    def space(self, obj_eval, frame: int) -> ObjectSpace:
        """The unit's space at the evaluated frame: its map to world, checked invertible."""
        m = obj_eval.matrix_world
        m = m @ obj_eval.pose.bones[self.parent].matrix if self.parent else m.copy()
        m3 = m.to_3x3()
        stretch = math.sqrt(sum(x * x for row in m3 for x in row))
        if not stretch or not math.isfinite(stretch) or abs(m3.determinant()) <= MIN_RELATIVE_SCALE * stretch**3:
            raise ValueError(f"the chain ending at '{self.last}' is scaled to zero at frame {frame}")
        return ObjectSpace(m, m.inverted(), stretch)

    def view(self, obj_eval) -> SpaceView | None:
        """What rig.tree reads the unit through (its `fk`): the pose seen from the parent; None
        for an armature root (armature space is the pose's own)."""
        return SpaceView(obj_eval, self.parent) if self.parent else None


class SpaceView:
    """The evaluated pose matrices seen from bone `parent`'s pose space (the parent itself: exactly
    the identity), in rig.fk.PoseFK's shape for rig.tree.read_tree's `fk`."""

    def __init__(self, obj_eval, parent: str) -> None:
        self.obj, self.parent = obj_eval, parent
        self.to_parent = obj_eval.pose.bones[parent].matrix.inverted()
        self.scales: dict = {}  # nothing read unstretched (rig.tree checks the evaluated pose)
        self.rotations: dict = {}  # no rotation replaced: the local rotations are the evaluated ones

    def matrix(self, name: str) -> Matrix:
        if name == self.parent:
            return Matrix.Identity(4)
        return self.to_parent @ self.obj.pose.bones[name].matrix


def channel_values(mode: str, quats: np.ndarray, first: tuple, locks: tuple = modes.NO_LOCKS) -> np.ndarray:
    """(frames, channels) values of one bone's local rotations `quats` (frames, 4) in `mode`,
    continuous from its values before the bake `first` (`modes.series_values`), in chunks of
    CHUNK frames so the temporaries stay bounded on long bakes; continuity carries across chunks."""
    count = len(quats)
    out = np.empty((count, 3 if mode in modes.EULER_ORDERS else 4))
    for start in range(0, count, CHUNK):
        stop = min(start + CHUNK, count)
        previous = first if start == 0 else tuple(out[start - 1])
        out[start:stop] = modes.series_values(mode, quats[start:stop], previous, locks)
    return out
