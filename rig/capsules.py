"""Each bone's capsule radius for the Jacobian's mass weighting (issue 20 item 3, solvers.common.mass).

The radius is the bone's B-Bone display size (Bone Properties > Viewport Display > B-Bone:
`Bone.bbone_x`, `Bone.bbone_z`, the half-widths of the B-Bone box Blender draws, in armature space,
the rest values) as one circle: r = sqrt(bbone_x * bbone_z), the circle of the same area as the
box's elliptic section, so the capsule's mass per length is the B-Bone's. The B-Bone size over the
envelope radii (head_radius, tail_radius): it is per bone (a connected child shares its parent's
tail radius as its head radius), it scales with the bone when a rig is scaled in Edit Mode, and
rigs set it to their limbs' thickness (Rigify's metarig: 0.05 x each bone's length), where the
envelope radii are left at their defaults (0.1 / 0.05 whatever the bone: a finger 8x its length).
A bone whose B-Bone size is not positive (the fields accept 0 and negatives) falls back to the
core's default, DEFAULT_RADIUS_SHARE of its length (Blender's B-Bone size of a new 1-unit bone)."""

from __future__ import annotations

import math

import numpy as np

from ..solvers.common.mass import DEFAULT_RADIUS_SHARE


def bone_radius(bone) -> float:
    """The capsule radius of a `bpy.types.Bone` (module doc)."""
    x, z = float(bone.bbone_x), float(bone.bbone_z)
    if x > 0.0 and z > 0.0 and math.isfinite(x * z):
        return math.sqrt(x * z)
    return DEFAULT_RADIUS_SHARE * float(bone.length)


def bone_radii(pose_bones) -> np.ndarray:
    """(n,) the capsule radii of the pose bones' bones, in their order."""
    return np.array([bone_radius(pb.bone) for pb in pose_bones])
