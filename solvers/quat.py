"""Vectorised quaternion helpers, (..., 4) arrays in (w, x, y, z) order.

Blender's mathutils uses the same order, so `rig/` passes them through unchanged.
"""

from __future__ import annotations

import numpy as np

# |u x v| (unit vectors) below this does not define an axis: far above the
# rounding noise of nearly (anti)parallel vectors, so the choice is stable.
AXIS_EPS = 1e-10


def cross(u: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Cross products along the last axis (np.cross costs ~10x more on small arrays), each
    component written into one array (no np.stack: the same figures, fewer copies)."""
    u0, u1, u2 = u[..., 0], u[..., 1], u[..., 2]
    v0, v1, v2 = v[..., 0], v[..., 1], v[..., 2]
    first = u1 * v2
    first -= u2 * v1
    out = np.empty(np.shape(first) + (3,), dtype=np.result_type(first))
    out[..., 0] = first
    second = u2 * v0
    second -= u0 * v2
    out[..., 1] = second
    third = u0 * v1
    third -= u1 * v0
    out[..., 2] = third
    return out


def norm(v: np.ndarray, keepdims: bool = False) -> np.ndarray:
    """Euclidean norms along the last axis: np.linalg.norm(v, axis=-1) of a real array to the bit
    (the same sqrt of the sum of v * v, `dots`) without its wrappers, a few microseconds a call."""
    v = np.asarray(v)
    out = np.sqrt(dots(v, v))
    return out[..., None] if keepdims else out


_add_reduce = np.add.reduce
# Below this many components numpy's reduce is the cheaper call; above it, component sums.
_SUMMED_FROM = 48


def dots(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Sums of a * b along the last axis (3 or 4 components; any other width by np.add.reduce):
    np.add.reduce's sum to the bit (it adds a short axis's products one after the other, left to
    right, as this does) without a reduction over a short inner axis, a third of its time on a
    few hundred vectors."""
    a, b = np.asarray(a), np.asarray(b)
    width = a.shape[-1] if a.ndim else 0
    if width not in (3, 4) or not b.ndim or width != b.shape[-1] or a.size + b.size < _SUMMED_FROM:
        return _add_reduce(a * b, axis=-1)
    if a.shape == b.shape:
        # Alike: every product in one call (the same products), then the sums on its columns.
        products = a * b
        out = products[..., 0] + products[..., 1]
        out += products[..., 2]
        if width == 4:
            out += products[..., 3]
        return out
    out = a[..., 0] * b[..., 0]  # broadcast: a whole product table would cost more than its columns
    out += a[..., 1] * b[..., 1]
    out += a[..., 2] * b[..., 2]
    if width == 4:
        out += a[..., 3] * b[..., 3]
    return out


def normalize(v: np.ndarray) -> np.ndarray:
    """Unit vectors along the last axis; zero vectors stay zero."""
    v = np.asarray(v)
    n = norm(v)[..., None]
    if v.dtype.kind == "f" and n.min(initial=np.inf) > 0.0:
        # No zero (nor NaN) length: the same quotients without the masked divide (half its time).
        return np.divide(v, n, out=np.empty(v.shape, dtype=v.dtype))
    return np.divide(v, n, out=np.zeros(v.shape, dtype=v.dtype), where=n > 0.0)


def any_perpendicular(v: np.ndarray) -> np.ndarray:
    """A deterministic unit vector perpendicular to each unit vector in `v`."""
    v = np.asarray(v, dtype=float)
    # Cross with the world axis least aligned with v: never degenerate.
    idx = np.argmin(np.abs(v), axis=-1)
    basis = np.eye(3)[idx]
    return normalize(cross(v, basis))


def conjugate(q: np.ndarray) -> np.ndarray:
    """Inverse of unit quaternions."""
    q = np.asarray(q, dtype=float)
    # x * -1 is -x and x * 1 is x (signed zeros too): one negation and a column copied, where a
    # product with a (4,) row is a 4-wide inner loop per quaternion (10x the time on a few hundred).
    out = np.negative(q)
    out[..., 0] = q[..., 0]
    return out


def multiply(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Hamilton product a*b (apply b first, then a)."""
    a, b = np.asarray(a), np.asarray(b)  # components by indexing: np.moveaxis costs more than the sums
    aw, ax, ay, az = a[..., 0], a[..., 1], a[..., 2], a[..., 3]
    bw, bx, by, bz = b[..., 0], b[..., 1], b[..., 2], b[..., 3]
    # Each sum left to right in place (the same roundings as written out in one expression), the
    # four into one array: no np.stack copy, fewer temporaries.
    w = aw * bw
    w -= ax * bx
    w -= ay * by
    w -= az * bz
    out = np.empty(np.shape(w) + (4,), dtype=np.result_type(w))
    out[..., 0] = w
    x = aw * bx
    x += ax * bw
    x += ay * bz
    x -= az * by
    out[..., 1] = x
    y = aw * by
    y -= ax * bz
    y += ay * bw
    y += az * bx
    out[..., 2] = y
    z = aw * bz
    z += ax * by
    z -= ay * bx
    z += az * bw
    out[..., 3] = z
    return out


def cumulative(q: np.ndarray) -> np.ndarray:
    """Running products along axis 0: out[k] = q[k] q[k-1] ... q[0].

    A parallel prefix scan (log2 of the length vectorised products) instead of
    one small product per step, on contiguous component arrays."""
    q = np.asarray(q, dtype=float)
    w, x, y, z = (np.array(q[..., i]) for i in range(4))
    shift = 1
    while shift < len(w):
        aw, ax, ay, az = w[shift:], x[shift:], y[shift:], z[shift:]
        bw, bx, by, bz = w[:-shift], x[:-shift], y[:-shift], z[:-shift]
        # Right sides are evaluated before the slices are overwritten.
        w[shift:], x[shift:], y[shift:], z[shift:] = (
            aw * bw - ax * bx - ay * by - az * bz,
            aw * bx + ax * bw + ay * bz - az * by,
            aw * by - ax * bz + ay * bw + az * bx,
            aw * bz + ax * by - ay * bx + az * bw,
        )
        shift *= 2
    return np.stack((w, x, y, z), axis=-1)


def rotate(q: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Rotate vectors `v` (..., 3) by unit quaternions `q` (..., 4)."""
    w = q[..., :1]
    u = q[..., 1:]
    t = 2.0 * cross(u, v)
    return v + w * t + cross(u, t)


def from_axis_angle(axis: np.ndarray, angle: np.ndarray) -> np.ndarray:
    """Quaternions for rotations by `angle` (radians) about unit `axis`."""
    half = 0.5 * np.asarray(angle, dtype=float)[..., None]
    return np.concatenate((np.cos(half), np.sin(half) * axis), axis=-1)


def from_rotation_vector(rv: np.ndarray) -> np.ndarray:
    """Quaternions from rotation vectors (axis * angle)."""
    angle = norm(rv)
    half = 0.5 * angle
    # sin(x/2)/x -> 1/2 as x -> 0; keeps tiny Jacobian steps exact.
    scale = np.where(angle > 1e-12, np.sin(half) / np.where(angle > 1e-12, angle, 1.0), 0.5)
    return np.concatenate((np.cos(half)[..., None], rv * scale[..., None]), axis=-1)


def to_rotation_vector(q: np.ndarray) -> np.ndarray:
    """Axis x angle (angle in [0, pi]) of unit quaternions (..., 4)."""
    q = np.where(q[..., :1] < 0.0, -q, q)
    vec = q[..., 1:]
    s = norm(vec, keepdims=True)
    angle = 2.0 * np.arctan2(s, q[..., :1])
    return np.where(s > 1e-300, vec * (angle / np.where(s > 1e-300, s, 1.0)), 0.0)


def swing(u: np.ndarray, v: np.ndarray, fallback_axis: np.ndarray, dot: np.ndarray | None = None) -> np.ndarray:
    """Shortest-arc rotation taking unit `u` onto unit `v` (no twist about `u`).

    Exact to rounding at every angle: (1 + u.v, u x v) where u.v >= 0; past
    90°, where 1 + u.v cancels, the angle from atan2 and the axis
    re-orthogonalised to `u`; and near a half turn, where u x v is noise,
    a half turn about `fallback_axis` (unit, perpendicular to `u`) followed
    by the small swing from -u onto `v`. `dot`: dots(u, v) where the caller has it.
    """
    uxv = cross(u, v)
    if dot is None:
        dot = dots(u, v)
    q = np.concatenate(((1.0 + dot)[..., None], uxv), axis=-1)
    obtuse = dot < 0.0
    if obtuse.any():
        s = norm(uxv)  # read past 90° only
        defined = s > AXIS_EPS
        axis = uxv / np.where(defined, s, 1.0)[..., None]
        axis = normalize(axis - np.sum(axis * u, axis=-1, keepdims=True) * u)
        half = 0.5 * np.arctan2(s, dot)
        wide = np.concatenate((np.cos(half)[..., None], np.sin(half)[..., None] * axis), axis=-1)
        flip = np.concatenate((np.zeros_like(dot)[..., None], fallback_axis), axis=-1)
        rest = np.concatenate(((1.0 - dot)[..., None], cross(-u, v)), axis=-1)
        turned = multiply(normalize(rest), flip)
        q = np.where(obtuse[..., None], np.where(defined[..., None], wide, turned), q)
    return normalize(q)


def from_matrix(m: np.ndarray) -> np.ndarray:
    """Unit quaternions (w >= 0) from rotation matrices (..., 3, 3)."""
    m = np.asarray(m, dtype=float)
    m00, m01, m02 = m[..., 0, 0], m[..., 0, 1], m[..., 0, 2]
    m10, m11, m12 = m[..., 1, 0], m[..., 1, 1], m[..., 1, 2]
    m20, m21, m22 = m[..., 2, 0], m[..., 2, 1], m[..., 2, 2]
    # Four candidate formulas (each a multiple of q), their pivots on the diagonal; use the largest.
    # Their six off-diagonal terms computed once each (a sum is the same either way round).
    d0, d1, d2 = m21 - m12, m02 - m20, m10 - m01
    s0, s1, s2 = m01 + m10, m02 + m20, m12 + m21
    cand = np.stack(
        (
            *(1 + m00 + m11 + m22, d0, d1, d2),
            *(d0, 1 + m00 - m11 - m22, s0, s1),
            *(d1, s0, 1 - m00 + m11 - m22, s2),
            *(d2, s1, s2, 1 - m00 - m11 + m22),
        ),
        -1,
    ).reshape(m.shape[:-2] + (4, 4))
    best = np.argmax(cand.reshape(m.shape[:-2] + (16,))[..., ::5], axis=-1)
    q = normalize(np.take_along_axis(cand, best[..., None, None], axis=-2)[..., 0, :])
    return np.where(q[..., :1] < 0.0, -q, q)


def to_matrix(q: np.ndarray) -> np.ndarray:
    """Rotation matrices (..., 3, 3) from unit quaternions."""
    w, x, y, z = np.moveaxis(np.asarray(q, dtype=float), -1, 0)
    return np.stack(
        (
            np.stack((1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)), -1),
            np.stack((2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)), -1),
            np.stack((2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)), -1),
        ),
        axis=-2,
    )


def angle(q: np.ndarray) -> np.ndarray:
    """Rotation angle in radians (0..pi) of unit quaternions."""
    w = np.clip(np.abs(q[..., 0]), 0.0, 1.0)
    vec = norm(q[..., 1:])
    return 2.0 * np.arctan2(vec, w)


def angle_between(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Angle in radians (0..pi) of the rotation from unit quaternions `a` to `b` (either sign of
    each is the same rotation). From the relative rotation with atan2, exact near 0, where
    2 acos |a.b| keeps half the digits (float64: 3e-8 rad; float32: 7e-4 rad, 0.04 degrees)."""
    return angle(multiply(conjugate(a), b))


def angles_between_cheaply(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """`angle_between` as 2 acos |a.b|: a few numpy calls fewer, and half the digits near 0 (3e-8
    rad in float64), for turns and speeds compared with thresholds far above that."""
    dot = np.abs(dots(a, b))
    return 2.0 * np.arccos(np.minimum(dot, 1.0))


def sphere_point(
    a: np.ndarray, b: np.ndarray, ra: float, rb: float, near: np.ndarray, tie: np.ndarray, scale: float
) -> tuple[np.ndarray, np.ndarray]:
    """The point at `ra` from `a` (all (k, 3)) best keeping `rb` from `b`:
    where the spheres about `a` and `b` of radii `ra` and `rb` meet in a
    circle, its point nearest `near` (the CGA step); where they only touch
    or miss, the point of the first sphere nearest the second, on the line
    through `a` and `b` (the point the circle shrinks to as the spheres part,
    so the placement is continuous). With `near` on that line (within 1e-12
    x `scale`) every circle point is as near: the circle is left in the
    direction tie x (b - a), `tie` being the bone's tie-breaker axis. Also
    returns a mask of where it is defined: `a` and `b` apart."""
    ab = b - a
    d = np.linalg.norm(ab, axis=1)
    apart = d > 0.0
    safe_d = np.where(apart, d, 1.0)
    u = ab / safe_d[:, None]
    along = (d * d + ra * ra - rb * rb) / (2.0 * safe_d)  # from a to the circle's plane
    h = np.sqrt(np.maximum(ra * ra - along * along, 0.0))  # the circle's radius (0: touch or miss)
    v = near - a
    v = v - np.sum(v * u, axis=1, keepdims=True) * u  # from the line ab to `near`
    off = np.linalg.norm(v, axis=1)
    if np.any(off <= 1e-12 * scale):
        w = np.cross(tie, u)
        wn = np.linalg.norm(w, axis=1)
        w = np.where((wn > 1e-6)[:, None], w / np.where(wn > 1e-6, wn, 1.0)[:, None], any_perpendicular(u))
        v = np.where((off > 1e-12 * scale)[:, None], v, w)
        off = np.where(off > 1e-12 * scale, off, 1.0)
    point = a + np.clip(along, -ra, ra)[:, None] * u + (h / off)[:, None] * v
    return point, apart
