"""Vector and quaternion helpers on float tuples, mirroring solvers.quat term by term."""

from __future__ import annotations

import math

from ..quat import AXIS_EPS


def rotate(q: tuple, v: tuple) -> tuple:
    """`quat.rotate` for one quaternion and one vector."""
    qw, qx, qy, qz = q
    vx, vy, vz = v
    tx, ty, tz = 2.0 * (qy * vz - qz * vy), 2.0 * (qz * vx - qx * vz), 2.0 * (qx * vy - qy * vx)
    return (
        vx + qw * tx + (qy * tz - qz * ty),
        vy + qw * ty + (qz * tx - qx * tz),
        vz + qw * tz + (qx * ty - qy * tx),
    )


def multiply(a: tuple, b: tuple) -> tuple:
    """Hamilton product a*b (apply b first, then a)."""
    aw, ax, ay, az = a
    bw, bx, by, bz = b
    return (
        aw * bw - ax * bx - ay * by - az * bz,
        aw * bx + ax * bw + ay * bz - az * by,
        aw * by - ax * bz + ay * bw + az * bx,
        aw * bz + ax * by - ay * bx + az * bw,
    )


def normalize4(q: tuple) -> tuple:
    w, x, y, z = q
    n = math.sqrt(w * w + x * x + y * y + z * z)
    return (w / n, x / n, y / n, z / n) if n > 0.0 else (0.0, 0.0, 0.0, 0.0)


def unit(v: tuple) -> tuple:
    """`quat.normalize` of one 3-vector: zero stays zero."""
    x, y, z = v
    n = math.sqrt(x * x + y * y + z * z)
    return (x / n, y / n, z / n) if n > 0.0 else (0.0, 0.0, 0.0)


def swing(u: tuple, v: tuple, fallback: tuple) -> tuple:
    """`quat.swing`: the shortest-arc rotation taking unit u onto unit v."""
    ux, uy, uz = u
    vx, vy, vz = v
    cx, cy, cz = uy * vz - uz * vy, uz * vx - ux * vz, ux * vy - uy * vx
    dot = ux * vx + uy * vy + uz * vz
    if dot >= 0.0:
        return normalize4((1.0 + dot, cx, cy, cz))
    s = math.sqrt(cx * cx + cy * cy + cz * cz)
    if s > AXIS_EPS:
        ax, ay, az = cx / s, cy / s, cz / s
        along = ax * ux + ay * uy + az * uz
        ax, ay, az = unit((ax - along * ux, ay - along * uy, az - along * uz))
        half = 0.5 * math.atan2(s, dot)
        sh = math.sin(half)
        return normalize4((math.cos(half), sh * ax, sh * ay, sh * az))
    # Near a half turn: half way round the fallback axis, then the small swing -u -> v.
    rest = normalize4((1.0 - dot, -uy * vz + uz * vy, -uz * vx + ux * vz, -ux * vy + uy * vx))
    return normalize4(multiply(rest, (0.0,) + tuple(fallback)))


def from_rotation_vector(x: float, y: float, z: float) -> tuple:
    """`quat.from_rotation_vector` of one rotation vector."""
    angle = math.sqrt(x * x + y * y + z * z)
    half = 0.5 * angle
    scale = math.sin(half) / angle if angle > 1e-12 else 0.5
    return (math.cos(half), x * scale, y * scale, z * scale)
