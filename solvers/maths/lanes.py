"""The float helpers of solvers.skeleton_floats and solvers.maths.floats on *lanes*: many frames at once.

A lane vector is a tuple of 3 numpy arrays (m,), a lane quaternion a tuple of 4, one entry per
frame; plain floats stand in for values every frame shares (a bone's offset, a pin's target).
`multiply` and `rotate` of solvers.maths.floats serve lanes as they are (arithmetic only); the
helpers here are those with a branch, taken per frame with np.where. Each mirrors its float
version term by term, so a batch kernel built on them computes what the float kernel does,
frame by frame (up to the last bit of numpy's and math's transcendental functions).

Call them under np.errstate(divide="ignore", invalid="ignore"): the branches not taken may divide
by zero, and np.where drops them.
"""

from __future__ import annotations

import functools
import math

import numpy as np

from ..quat import AXIS_EPS

# Arithmetic only, so they serve lanes as they are: the same names on every layout.
from .floats import IDENTITY, NEAREST, X_AXIS, conjugate, multiply  # noqa: F401


def rotate(q: tuple, v: tuple) -> tuple:
    """maths.floats.rotate on lanes, 2x as x + x (the same number, without a Python float operand)."""
    qw, qx, qy, qz = q
    vx, vy, vz = v
    tx, ty, tz = qy * vz - qz * vy, qz * vx - qx * vz, qx * vy - qy * vx
    tx, ty, tz = tx + tx, ty + ty, tz + tz
    return (
        vx + qw * tx + (qy * tz - qz * ty),
        vy + qw * ty + (qz * tx - qx * tz),
        vz + qw * tz + (qx * ty - qy * tx),
    )


def where(mask, a: tuple, b: tuple) -> tuple:
    """Per frame: a where `mask`, else b (mask None: a everywhere)."""
    if mask is None or a is b or mask.all():
        return a
    if not mask.any():
        return b
    return tuple(np.where(mask, x, y) for x, y in zip(a, b, strict=True))


def take(value, idx: np.ndarray):
    """`value` (arrays, floats, and lists, tuples and dicts of them) at frames `idx`."""
    if isinstance(value, np.ndarray):
        return value[idx]
    if isinstance(value, tuple):
        return tuple(take(v, idx) for v in value)
    if isinstance(value, list):
        return [take(v, idx) for v in value]
    if isinstance(value, dict):
        return {k: take(v, idx) for k, v in value.items()}
    return value


_CONSTANTS: dict = {}


def const(row: tuple, m: int) -> tuple:
    """A float tuple as lanes of m frames, shared (read only): numpy multiplies two arrays about
    twice as fast as an array and a Python float, with the same result."""
    key = (row, m)
    hit = _CONSTANTS.get(key)
    if hit is None:
        if len(_CONSTANTS) > 4096:
            _CONSTANTS.clear()
        hit = _CONSTANTS[key] = tuple(np.full(m, float(x)) for x in row)
    return hit


def lanes(row: tuple, m: int) -> tuple:
    """A float tuple as lanes of m frames."""
    return tuple(np.full(m, float(x)) for x in row)


def dist(a: tuple, b: tuple):
    dx, dy, dz = a[0] - b[0], a[1] - b[1], a[2] - b[2]
    return np.sqrt(dx * dx + dy * dy + dz * dz)


def unit(v: tuple) -> tuple:
    x, y, z = v
    n = np.sqrt(x * x + y * y + z * z)
    ok = n > 0.0
    if np.all(ok):
        return (x / n, y / n, z / n)
    return (np.where(ok, x / n, 0.0), np.where(ok, y / n, 0.0), np.where(ok, z / n, 0.0))


def normalize4(q: tuple) -> tuple:
    w, x, y, z = q
    n = np.sqrt(w * w + x * x + y * y + z * z)
    ok = n > 0.0
    if np.all(ok):
        return (w / n, x / n, y / n, z / n)
    return tuple(np.where(ok, c / n, 0.0) for c in (w, x, y, z))


def is_zero(v: tuple):
    return (v[0] == 0.0) & (v[1] == 0.0) & (v[2] == 0.0)


def perpendicular(d: tuple) -> tuple:
    """solvers.maths.floats.perpendicular per frame: crossed with the axis of d's smallest component."""
    dx, dy, dz = (np.asarray(c, dtype=float) for c in d)
    k = np.argmin(np.stack((np.abs(dx), np.abs(dy), np.abs(dz))), axis=0)
    # d x e_k for e_k the unit axis k
    x = np.where(k == 0, 0.0, np.where(k == 1, -dz, dy))
    y = np.where(k == 0, dz, np.where(k == 1, 0.0, -dx))
    z = np.where(k == 0, -dy, np.where(k == 1, dx, 0.0))
    r = np.sqrt(x * x + y * y + z * z)
    return (x / r, y / r, z / r)


def swing(u: tuple, v: tuple, fallback) -> tuple:
    """maths.floats.swing per frame (`fallback`: lanes, or a callable giving them, only
    called when some frame is near a half turn)."""
    ux, uy, uz = u
    vx, vy, vz = v
    cx, cy, cz = uy * vz - uz * vy, uz * vx - ux * vz, ux * vy - uy * vx
    dot = ux * vx + uy * vy + uz * vz
    near = normalize4((1.0 + dot, cx, cy, cz))
    back = dot < 0.0
    if not np.any(back):
        return near
    s = np.sqrt(cx * cx + cy * cy + cz * cz)
    ax, ay, az = cx / s, cy / s, cz / s
    along = ax * ux + ay * uy + az * uz
    ax, ay, az = unit((ax - along * ux, ay - along * uy, az - along * uz))
    # math's atan2, sin and cos on the frames turning back (few), as the float kernel: numpy's
    # may differ in the last bit, which the tree's iterations can amplify
    idx = np.flatnonzero(back)
    halves = [0.5 * math.atan2(a, b) for a, b in zip(s[idx].tolist(), dot[idx].tolist(), strict=True)]
    sh, ch = np.zeros(back.shape), np.ones(back.shape)
    sh[idx] = [math.sin(h) for h in halves]
    ch[idx] = [math.cos(h) for h in halves]
    far = normalize4((ch, sh * ax, sh * ay, sh * az))
    if np.any(back & ~(s > AXIS_EPS)):
        if callable(fallback):
            fallback = fallback()
        rest = normalize4((1.0 - dot, -uy * vz + uz * vy, -uz * vx + ux * vz, -ux * vy + uy * vx))
        far = where(s > AXIS_EPS, far, normalize4(multiply(rest, (0.0, *fallback))))
    return where(back, far, near)


def side(frame: tuple, direction: tuple) -> tuple:
    """solvers.maths.floats.side per frame."""
    ax, ay, az = rotate(frame, X_AXIS)
    dx, dy, dz = direction
    along = ax * dx + ay * dy + az * dz
    v = unit((ax - along * dx, ay - along * dy, az - along * dz))
    bad = is_zero(v) | (np.abs(along) > 1.0 - 1e-12)
    return where(bad, perpendicular(direction), v) if np.any(bad) else v


def toward(a: tuple, wanted: tuple) -> tuple:
    """solvers.maths.floats.slerp(a, wanted, 1): `wanted` on a's side (the same rotation)."""
    dot = a[0] * wanted[0] + a[1] * wanted[1] + a[2] * wanted[2] + a[3] * wanted[3]
    flip = dot < 0.0
    return tuple(np.where(flip, -c, c) for c in wanted)


def slerp(a: tuple, b: tuple, t: float) -> tuple:
    """solvers.maths.floats.slerp per frame (t the same for every frame)."""
    if t >= 1.0:
        return toward(a, b)
    dot = a[0] * b[0] + a[1] * b[1] + a[2] * b[2] + a[3] * b[3]
    flip = dot < 0.0
    b = tuple(np.where(flip, -c, c) for c in b)
    dot = np.where(flip, -dot, dot)
    close = dot > 1.0 - 1e-12
    # math's acos and sin, not numpy's: acos near 1 turns a last-bit difference into ~1e-8
    angle = np.array([math.acos(min(x, 1.0)) for x in dot.tolist()])
    sin = np.array([math.sin(x) for x in angle.tolist()])
    s = np.where(close, 1.0 - t, np.array([math.sin((1.0 - t) * x) for x in angle.tolist()]) / sin)
    u = np.where(close, t, np.array([math.sin(t * x) for x in angle.tolist()]) / sin)
    return normalize4(tuple(s * x + u * y for x, y in zip(a, b, strict=True)))


def sphere_point(a: tuple, b: tuple, ra: float, rb: float, near: tuple, tie: tuple) -> tuple:
    """solvers.maths.floats.sphere_point per frame."""
    ux, uy, uz = b[0] - a[0], b[1] - a[1], b[2] - a[2]
    d = np.sqrt(ux * ux + uy * uy + uz * uz)
    ux, uy, uz = ux / d, uy / d, uz / d
    along = (d * d + ra * ra - rb * rb) / (2.0 * d)
    h = np.sqrt(np.maximum(ra * ra - along * along, 0.0))
    vx, vy, vz = near[0] - a[0], near[1] - a[1], near[2] - a[2]
    t = vx * ux + vy * uy + vz * uz
    vx, vy, vz = vx - t * ux, vy - t * uy, vz - t * uz
    off = np.sqrt(vx * vx + vy * vy + vz * vz)
    flat = off <= 1e-12 * (ra + rb)
    if np.any(flat):
        tx, ty, tz = tie() if callable(tie) else tie
        cross = unit((ty * uz - tz * uy, tz * ux - tx * uz, tx * uy - ty * ux))
        zero = is_zero(cross)
        if np.any(zero):
            cross = where(zero, perpendicular((ux, uy, uz)), cross)
        vx, vy, vz = where(flat, cross, (vx, vy, vz))
        off = np.where(flat, 1.0, off)
    along = np.minimum(np.maximum(along, -ra), ra)
    out = (a[0] + along * ux + h * vx / off, a[1] + along * uy + h * vy / off, a[2] + along * uz + h * vz / off)
    apart = d <= 0.0
    if not np.any(apart):
        return out
    vx, vy, vz = unit((near[0] - a[0], near[1] - a[1], near[2] - a[2]))
    return where(apart, (a[0] + ra * vx, a[1] + ra * vy, a[2] + ra * vz), out)


def best_rotation(a: list[tuple], b: list[tuple], w: list) -> tuple:
    """solvers.maths.floats.best_rotation of several pairs per frame (Horn's eigenvector, batched)."""
    sxx = sxy = sxz = syx = syy = syz = szx = szy = szz = 0.0
    size = 0.0
    for (ax, ay, az), (bx, by, bz), wk in zip(a, b, w, strict=True):
        sxx = sxx + wk * ax * bx
        sxy = sxy + wk * ax * by
        sxz = sxz + wk * ax * bz
        syx = syx + wk * ay * bx
        syy = syy + wk * ay * by
        syz = syz + wk * ay * bz
        szx = szx + wk * az * bx
        szy = szy + wk * az * by
        szz = szz + wk * az * bz
        size = size + wk * np.sqrt((ax * ax + ay * ay + az * az) * (bx * bx + by * by + bz * bz))
    # as solvers.maths.floats.best_rotation (the lightest and heaviest per frame: a weight may be a lane)
    mu = NEAREST * size * functools.reduce(np.minimum, w) / functools.reduce(np.maximum, w)
    sxx, syy, szz = sxx + mu, syy + mu, szz + mu
    rows = (
        (sxx + syy + szz, syz - szy, szx - sxz, sxy - syx),
        (syz - szy, sxx - syy - szz, sxy + syx, szx + sxz),
        (szx - sxz, sxy + syx, syy - sxx - szz, syz + szy),
        (sxy - syx, szx + sxz, syz + szy, szz - sxx - syy),
    )
    k = np.stack([np.stack(np.broadcast_arrays(*r), axis=-1) for r in rows], axis=-2)
    q = np.linalg.eigh(k)[1][..., :, 3]
    q = np.where(q[..., :1] < 0.0, -q, q)
    q = normalize4(tuple(q[..., c] for c in range(4)))
    return where(size > 0.0, q, IDENTITY)


def scaled(q: tuple, scale: float) -> tuple:
    """solvers.maths.floats.scaled per frame: the rotation q scaled in angle (stiffness)."""
    flip = q[0] < 0.0
    w, x, y, z = (np.where(flip, -c, c) for c in q)
    s = np.sqrt(x * x + y * y + z * z)
    angle = 2.0 * np.arctan2(s, w) * scale / s
    rx, ry, rz = x * angle, y * angle, z * angle
    size = np.sqrt(rx * rx + ry * ry + rz * rz)  # maths.floats.from_rotation_vector
    half = 0.5 * size
    factor = np.where(size > 1e-12, np.sin(half) / size, 0.5)
    out = (np.cos(half), rx * factor, ry * factor, rz * factor)
    return where(s <= 1e-300, IDENTITY, out)
