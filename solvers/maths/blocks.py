"""SoA vector and quaternion helpers: components are separate (w,) arrays, mirroring
solvers.maths.floats (and so solvers.quat) term by term."""

from __future__ import annotations

import numpy as np

from ..quat import AXIS_EPS


def normalize4(w, x, y, z):
    """`floats.normalize4` on component arrays: zero stays zero."""
    n = np.sqrt(w * w + x * x + y * y + z * z)
    ok = n > 0.0
    if not np.all(ok):
        n = np.where(ok, n, np.inf)  # x / inf = 0: the zero quaternion stays zero
    return w / n, x / n, y / n, z / n


def swing(u, v, fallback):
    """`floats.swing` for component tuples u, v (unit, each (w,) arrays) and `fallback` (3 floats,
    or a function of the row indices giving their 3 arrays: only rows past 90° need it): the
    shortest-arc rotation taking u onto v, as (w, x, y, z) arrays."""
    ux, uy, uz = u
    vx, vy, vz = v
    cx, cy, cz = uy * vz - uz * vy, uz * vx - ux * vz, ux * vy - uy * vx  # u may be floats, v arrays
    dot = ux * vx + uy * vy + uz * vz
    w = 1.0 + dot
    n = np.sqrt(w * w + cx * cx + cy * cy + cz * cz)
    q = [w / n, cx / n, cy / n, cz / n]
    obtuse = dot < 0.0
    if np.any(obtuse):
        rows = np.flatnonzero(obtuse)
        pick = [a[rows] if np.ndim(a) else a for a in (*u, *v)]
        axis = fallback(rows) if callable(fallback) else fallback
        wide = _obtuse(pick[:3], pick[3:], cx[rows], cy[rows], cz[rows], dot[rows], axis)
        for k in range(4):
            q[k][rows] = wide[k]
    return q


def rotate(q, v):
    """`floats.rotate` of a constant vector `v` (3 floats) by component quaternions `q`."""
    qw, qx, qy, qz = q
    vx, vy, vz = (float(c) for c in v)
    tx, ty, tz = 2.0 * (qy * vz - qz * vy), 2.0 * (qz * vx - qx * vz), 2.0 * (qx * vy - qy * vx)
    return (
        vx + qw * tx + (qy * tz - qz * ty),
        vy + qw * ty + (qz * tx - qx * tz),
        vz + qw * tz + (qx * ty - qy * tx),
    )


def _obtuse(u, v, cx, cy, cz, dot, fallback):
    """The dot < 0 branches of `floats.swing` (past 90°; near a half turn)."""
    ux, uy, uz = u
    vx, vy, vz = v
    s = np.sqrt(cx * cx + cy * cy + cz * cz)
    defined = s > AXIS_EPS
    safe = np.where(defined, s, 1.0)
    ax, ay, az = cx / safe, cy / safe, cz / safe
    along = ax * ux + ay * uy + az * uz
    ax, ay, az = ax - along * ux, ay - along * uy, az - along * uz
    an = np.sqrt(ax * ax + ay * ay + az * az)
    an = np.where(an > 0.0, an, np.inf)
    ax, ay, az = ax / an, ay / an, az / an
    half = 0.5 * np.arctan2(s, dot)
    sh = np.sin(half)
    wide = normalize4(np.cos(half), sh * ax, sh * ay, sh * az)
    if np.all(defined):
        return wide
    # Near a half turn: half way round the fallback axis, then the small swing -u -> v.
    rw, rx, ry, rz = normalize4(1.0 - dot, -uy * vz + uz * vy, -uz * vx + ux * vz, -ux * vy + uy * vx)
    fx, fy, fz = fallback
    turned = normalize4(
        -rx * fx - ry * fy - rz * fz,
        rw * fx + ry * fz - rz * fy,
        rw * fy - rx * fz + rz * fx,
        rw * fz + rx * fy - ry * fx,
    )
    return tuple(np.where(defined, a, b) for a, b in zip(wide, turned, strict=True))


class Buffers:
    """Work arrays kept from iteration to iteration (until the working width changes): numpy's fresh
    (n, 3, w) temporaries are memory-mapped and page-faulted in on every allocation, which cost
    more than the arithmetic (3 ns against 0.3 ns an element at w = 10,000)."""

    def __init__(self) -> None:
        self._arrays: dict = {}

    def __call__(self, name: str, shape: tuple, dtype=float) -> np.ndarray:
        a = self._arrays.get(name)
        if a is None or a.shape != shape:  # a new width only after a compaction
            a = self._arrays[name] = np.empty(shape, dtype=dtype)
        return a


def running(a: np.ndarray, op=np.add) -> np.ndarray:
    """Running sums (or `op`) along axis 0, in place and in order: np.cumsum along a leading axis
    is ~9x slower than these row operations."""
    for i in range(1, a.shape[0]):
        op(a[i - 1], a[i], out=a[i])
    return a
