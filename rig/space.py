"""Object-level transforms: the armature object's matrix, and targets in armature space.

The solver works in armature (pose) space. The map from armature space to world
space is the object's affine matrix_world, so a point reached in armature space is
reached in world space too, for any invertible object matrix: non-uniform and
negative scale are handled, not refused. Only distances change, so a world-space
tolerance is converted with the largest stretch of the matrix (a conservative bound).
A singular (zero-scale) or non-finite object matrix is refused.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from mathutils import Matrix, Vector

# A 3x3 part whose determinant is below this fraction of (Frobenius norm)^3 has
# an axis scaled to (nearly) zero and cannot be inverted reliably.
MIN_RELATIVE_SCALE = 1e-9
# Blender stores an infinite location as the largest float32 (3.4e38): a coordinate this large is
# taken for the infinity a user typed, not a place to reach.
HUGE = 1e30


@dataclass(frozen=True)
class ObjectSpace:
    """An armature object's transform, checked once per solve (mathutils: cheap for one matrix)."""

    matrix: Matrix  # matrix_world
    inverse: Matrix
    stretch: float  # Frobenius norm of the 3x3 part: >= its largest singular value

    def to_local(self, point_world) -> np.ndarray:
        return np.array(self.to_local_point(point_world), dtype=float)

    def to_local_point(self, point_world) -> tuple[float, float, float]:
        """`to_local` as plain floats (ValueError if not finite)."""
        try:
            x, y, z = (float(c) for c in point_world)
            finite = abs(x) < HUGE and abs(y) < HUGE and abs(z) < HUGE  # False for NaN too
        except (TypeError, ValueError):
            finite = False
        if not finite:
            raise ValueError(f"target location is not finite (or beyond {HUGE:g}): {np.asarray(point_world).tolist()}")
        return (self.inverse @ Vector((x, y, z)))[:]

    def to_world(self, point) -> np.ndarray:
        return np.array(self.matrix @ Vector([float(x) for x in point]), dtype=float)

    def world_distance(self, point, point_world) -> float:
        """World distance from armature-space `point` to world-space `point_world`."""
        return math.dist(self.matrix @ Vector([float(x) for x in point]), point_world)

    def uniform_scale(self) -> float | None:
        """The scale when the transform scales every direction alike (no shear or non-uniform
        scale): armature distances times it are world distances. None otherwise."""
        m3 = self.matrix.to_3x3()
        product = m3.transposed() @ m3  # s^2 I for a uniform scale s
        s2 = (product[0][0] + product[1][1] + product[2][2]) / 3.0
        off = max(abs(product[r][col] - (s2 if r == col else 0.0)) for r in range(3) for col in range(3))
        return math.sqrt(s2) if off <= 1e-9 * s2 else None

    def distance_to_local(self, distance: float) -> float:
        """An armature-space distance that is at most `distance` in world space in any direction."""
        return float(distance) / self.stretch


def object_space(obj) -> ObjectSpace:
    """The object's transform, or ValueError if it cannot be inverted (zero scale, non-finite)."""
    m = obj.matrix_world.copy()
    m3 = m.to_3x3()
    (a, b, c), (d, e, f), (g, h, i) = m3
    fro2 = a * a + b * b + c * c + d * d + e * e + f * f + g * g + h * h + i * i
    # A finite sum of squares means a finite 3x3 part; otherwise check element by element.
    if not (math.isfinite(fro2) and all(map(math.isfinite, m.col[3]))) and not is_finite_matrix(m):
        raise ValueError(f"object '{obj.name}' has a non-finite transform")
    fro = math.sqrt(fro2)
    # |det| is the product of the singular values: tiny against fro^3 means some axis is ~0.
    if fro == 0.0 or abs(m3.determinant()) <= MIN_RELATIVE_SCALE * fro**3:
        raise ValueError(f"object '{obj.name}' has zero scale on some axis; it cannot be posed by IK")
    return ObjectSpace(m, m.inverted(), fro)


def check_object_matrix(obj) -> np.ndarray:
    """The object's matrix_world as (4, 4) numpy, or ValueError if unusable."""
    return np.array(object_space(obj).matrix, dtype=float)


def world_to_armature(obj, point_world) -> np.ndarray:
    """A world-space point in the armature object's space (ValueError if not finite)."""
    return object_space(obj).to_local(point_world)


def armature_to_world(obj, point) -> np.ndarray:
    return object_space(obj).to_world(point)


def target_world_location(target, subtarget: str = "") -> np.ndarray:
    """World location of the target object, or of its bone's head when `subtarget` names one.

    Pass evaluated objects (obj.evaluated_get(depsgraph)) so animation and
    constraints at the current frame are included.
    """
    return np.array(target_world_point(target, subtarget), dtype=float)


def target_world_point(target, subtarget: str = "") -> tuple[float, float, float]:
    """`target_world_location` as plain floats."""
    if target is None:
        raise ValueError("no target object set")
    if subtarget:
        if target.type != "ARMATURE":
            raise ValueError(f"target '{target.name}' is not an armature, so it has no bone '{subtarget}'")
        pbone = target.pose.bones.get(subtarget)
        if pbone is None:
            raise ValueError(f"target armature '{target.name}' has no bone '{subtarget}'")
        point = target.matrix_world @ pbone.head
    else:
        point = target.matrix_world.translation
    x, y, z = point
    if not (abs(x) < HUGE and abs(y) < HUGE and abs(z) < HUGE):  # NaN fails too
        raise ValueError(f"target '{target.name}' is at a non-finite location {[x, y, z]} (or beyond {HUGE:g})")
    return (x, y, z)


def vector(p) -> Vector:
    return Vector([float(x) for x in p])


def is_finite_matrix(m: Matrix) -> bool:
    return all(math.isfinite(x) for row in m for x in row)
