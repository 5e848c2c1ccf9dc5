"""Vector and quaternion helpers on plain float tuples (one frame), mirroring solvers.quat term by term.

The same names as solvers.quat (numpy arrays) and solvers.maths.lanes (many frames at once):
rotate, multiply, conjugate, swing, slerp, perpendicular, sphere_point, best_rotation, ...
Points and vectors are (x, y, z) tuples, quaternions (w, x, y, z) tuples.
"""

from __future__ import annotations

import math

import numpy as np

from ..quat import AXIS_EPS

IDENTITY = (1.0, 0.0, 0.0, 0.0)
X_AXIS = (1.0, 0.0, 0.0)
# Wahba: a pull toward no rotation this small (relative to the pairs' weight x size) picks,
# among equally good rotations (pairs all on one line), the smallest, and changes a well
# determined answer by about as little.
NEAREST = 1e-9


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


def conjugate(q: tuple) -> tuple:
    return (q[0], -q[1], -q[2], -q[3])


def perpendicular(d: tuple) -> tuple:
    """Unit vector perpendicular to unit `d`, as quat.any_perpendicular."""
    k = min(range(3), key=lambda j: abs(d[j]))
    e = [0.0, 0.0, 0.0]
    e[k] = 1.0
    x, y, z = d[1] * e[2] - d[2] * e[1], d[2] * e[0] - d[0] * e[2], d[0] * e[1] - d[1] * e[0]
    r = math.sqrt(x * x + y * y + z * z)
    return (x / r, y / r, z / r)


def side(frame: tuple, direction: tuple) -> tuple:
    """The frame's X axis made perpendicular to unit `direction` (a swing's tie-breaker
    axis, as Chain.fallback_axes), else any perpendicular."""
    ax, ay, az = rotate(frame, X_AXIS)
    dx, dy, dz = direction
    along = ax * dx + ay * dy + az * dz
    v = unit((ax - along * dx, ay - along * dy, az - along * dz))
    if v == (0.0, 0.0, 0.0) or abs(along) > 1.0 - 1e-12:
        return perpendicular(direction)
    return v


def slerp(a: tuple, b: tuple, t: float) -> tuple:
    """Spherical interpolation of unit quaternions from a to b (the shorter way) by t."""
    dot = a[0] * b[0] + a[1] * b[1] + a[2] * b[2] + a[3] * b[3]
    if dot < 0.0:
        b, dot = (-b[0], -b[1], -b[2], -b[3]), -dot
    if t >= 1.0:
        return b
    if dot > 1.0 - 1e-12:
        s, u = 1.0 - t, t
    else:
        angle = math.acos(dot)
        sin = math.sin(angle)
        s, u = math.sin((1.0 - t) * angle) / sin, math.sin(t * angle) / sin
    return normalize4(tuple(s * x + u * y for x, y in zip(a, b, strict=True)))


def scaled(q: tuple, scale: float) -> tuple:
    """The rotation q scaled in angle (stiffness, as chain FABRIK and CCD)."""
    w, x, y, z = q if q[0] >= 0.0 else (-q[0], -q[1], -q[2], -q[3])
    s = math.sqrt(x * x + y * y + z * z)
    if s <= 1e-300:
        return IDENTITY
    angle = 2.0 * math.atan2(s, w) * scale / s
    return from_rotation_vector(x * angle, y * angle, z * angle)


def sphere_point(a: tuple, b: tuple, ra: float, rb: float, near: tuple, tie) -> tuple:
    """solvers.quat.sphere_point on floats: the point at `ra` from `a` best keeping `rb` from `b`,
    nearest `near` on the circle where the spheres meet (their touching point where they
    do not); with `near` on the line a-b, off it along tie x (b - a). `a` on `b`: the point
    at `ra` from `a` toward `near`. `tie`: the axis, or a function giving it (called only there,
    as solvers.maths.lanes.sphere_point)."""
    ux, uy, uz = b[0] - a[0], b[1] - a[1], b[2] - a[2]
    d = math.sqrt(ux * ux + uy * uy + uz * uz)
    if d <= 0.0:
        vx, vy, vz = unit((near[0] - a[0], near[1] - a[1], near[2] - a[2]))
        return (a[0] + ra * vx, a[1] + ra * vy, a[2] + ra * vz)
    ux, uy, uz = ux / d, uy / d, uz / d
    along = (d * d + ra * ra - rb * rb) / (2.0 * d)
    h = math.sqrt(max(ra * ra - along * along, 0.0))
    vx, vy, vz = near[0] - a[0], near[1] - a[1], near[2] - a[2]
    t = vx * ux + vy * uy + vz * uz
    vx, vy, vz = vx - t * ux, vy - t * uy, vz - t * uz
    off = math.sqrt(vx * vx + vy * vy + vz * vz)
    if off <= 1e-12 * (ra + rb):
        tx, ty, tz = tie() if callable(tie) else tie
        vx, vy, vz = unit((ty * uz - tz * uy, tz * ux - tx * uz, tx * uy - ty * ux))
        if (vx, vy, vz) == (0.0, 0.0, 0.0):
            vx, vy, vz = perpendicular((ux, uy, uz))
        off = 1.0
    along = min(max(along, -ra), ra)
    return (a[0] + along * ux + h * vx / off, a[1] + along * uy + h * vy / off, a[2] + along * uz + h * vz / off)


def best_rotation(a: list[tuple], b: list[tuple], w: list[float]) -> tuple:
    """The unit quaternion R minimizing sum w_k |R a_k - b_k|^2 (equivalently maximizing
    sum w_k b_k . R a_k): one pair is the minimal swing of a onto b; several are Horn's
    eigenvector of the 4 x 4 profile matrix, with a pull of NEAREST (x the lightest weight's share)
    toward no rotation so that pairs along one line give the minimal swing too (no twist about
    that line)."""
    if len(a) == 1:
        ua, ub = unit(a[0]), unit(b[0])
        if ua == (0.0, 0.0, 0.0) or ub == (0.0, 0.0, 0.0):
            return IDENTITY
        return swing(ua, ub, perpendicular(ua))
    sxx = sxy = sxz = syx = syy = syz = szx = szy = szz = 0.0
    size = 0.0
    for (ax, ay, az), (bx, by, bz), wk in zip(a, b, w, strict=True):
        sxx += wk * ax * bx
        sxy += wk * ax * by
        sxz += wk * ax * bz
        syx += wk * ay * bx
        syy += wk * ay * by
        syz += wk * ay * bz
        szx += wk * az * bx
        szy += wk * az * by
        szz += wk * az * bz
        size += wk * math.sqrt((ax * ax + ay * ay + az * az) * (bx * bx + by * by + bz * bz))
    return profile_rotation((sxx, sxy, sxz, syx, syy, syz, szx, szy, szz), size, min(w), max(w), lapack=True)


def profile_rotation(sums: tuple, size: float, lightest: float, heaviest: float, lapack: bool = False) -> tuple:
    """best_rotation from its pairs' sums (for a kernel that sums them itself): `sums` (sxx, sxy,
    ..., szz) of w_k a_k b_k^T, `size` the sum of w_k |a_k||b_k|, the lightest and heaviest w_k.
    The eigenvector on floats (_top_eigenvector; CCD's tree sweep), or with `lapack` LAPACK's alone
    (best_rotation: FABRIK's tree kernels match their lanes, solvers.maths.lanes, to ~1e-15 with it)."""
    sxx, sxy, sxz, syx, syy, syz, szx, szy, szz = sums
    if not size > 0.0:
        return IDENTITY
    # Relative to the lightest pair: with ranked weights (solvers.skeleton.LEVEL) a pull scaled by
    # the heaviest would outweigh a lower level's pairs and freeze what a higher level leaves free.
    mu = NEAREST * size * lightest / heaviest
    sxx, syy, szz = sxx + mu, syy + mu, szz + mu
    k = (
        (sxx + syy + szz, syz - szy, szx - sxz, sxy - syx),
        (syz - szy, sxx - syy - szz, sxy + syx, szx + sxz),
        (szx - sxz, sxy + syx, syy - sxx - szz, syz + szy),
        (sxy - syx, szx + sxz, syz + szy, szz - sxx - syy),
    )
    q = None if lapack else _top_eigenvector(k, size + 3.0 * mu)
    if q is None:  # the top eigenvalue (nearly) repeated: LAPACK's symmetric solver
        q = np.linalg.eigh(np.array(k))[1][:, 3].tolist()
    if q[0] < 0.0:
        q = [-c for c in q]
    return normalize4(tuple(q))


# _top_eigenvector declines (LAPACK serves) where the adjugate's best row is below this share of
# the scale cubed: its relative precision is about 1e-16 over that share, where LAPACK's is ~1e-16 (a near-repeated top
# eigenvalue, as pairs on one line held only by the NEAREST pull).
ADJUGATE_FLOOR = 1e-3


def _top_eigenvector(k: tuple, bound: float) -> list | None:
    """The eigenvector of the largest eigenvalue of Horn's symmetric traceless 4 x 4 `k` (rows of
    floats), unnormalised; `bound` >= that eigenvalue (the pairs' sum w|a||b| plus the pull's 3 mu).

    As Theobald's QCP (Acta Cryst. A61, 2005): the eigenvalue by Newton's method on the
    characteristic polynomial from the bound down (monotone: no root lies above it), the vector a
    row of the adjugate of k - lambda I. LAPACK's eigh through numpy costs ~10-25 us a call on a
    4 x 4; this is a few µs of float arithmetic. None where the top eigenvalue is (nearly)
    repeated (the vector is then ill-determined by this route)."""
    (k00, k01, k02, k03), (_, k11, k12, k13), (_, _, k22, k23), (_, _, _, k33) = k
    # lambda^4 + c2 lambda^2 + c1 lambda + c0 (trace 0): c2 = -tr(k^2)/2, c1 = -(the principal
    # 3 x 3 minors' sum), c0 = det k.
    c2 = -0.5 * (k00 * k00 + k11 * k11 + k22 * k22 + k33 * k33) - (
        k01 * k01 + k02 * k02 + k03 * k03 + k12 * k12 + k13 * k13 + k23 * k23
    )
    # 2 x 2 minors of rows (2, 3), then of rows (0, 1), by column pairs
    d01, d02, d03 = k02 * k13 - k12 * k03, k02 * k23 - k22 * k03, k02 * k33 - k23 * k03
    d12, d13, d23 = k12 * k23 - k22 * k13, k12 * k33 - k23 * k13, k22 * k33 - k23 * k23
    e01, e02, e03 = k00 * k11 - k01 * k01, k00 * k12 - k02 * k01, k00 * k13 - k03 * k01
    e12, e13, e23 = k01 * k12 - k02 * k11, k01 * k13 - k03 * k11, k02 * k13 - k03 * k12
    c0 = e01 * d23 - e02 * d13 + e03 * d12 + e12 * d03 - e13 * d02 + e23 * d01
    m0 = k11 * d23 - k12 * d13 + k13 * d12  # principal minors (drop row/column i)
    m1 = k00 * d23 - k02 * d03 + k03 * d02
    m2 = k00 * (k11 * k33 - k13 * k13) - k01 * (k01 * k33 - k13 * k03) + k03 * (k01 * k13 - k11 * k03)
    m3 = k00 * (k11 * k22 - k12 * k12) - k01 * (k01 * k22 - k12 * k02) + k02 * (k01 * k12 - k11 * k02)
    c1 = -(m0 + m1 + m2 + m3)
    lam = bound
    for _ in range(60):
        l2 = lam * lam
        p = (l2 + c2) * l2 + c1 * lam + c0
        dp = (4.0 * l2 + 2.0 * c2) * lam + c1
        if not dp > 0.0:
            break
        step = p / dp
        lam -= step
        if abs(step) <= 1e-15 * bound:
            break
    a00, a11, a22, a33 = k00 - lam, k11 - lam, k22 - lam, k33 - lam
    # Rows of adj(a) (a symmetric): each is (its eigenvector) x (a scalar vanishing where lam repeats).
    f01, f02, f03 = k02 * k13 - k12 * k03, k02 * k23 - a22 * k03, k02 * a33 - k23 * k03
    f12, f13, f23 = k12 * k23 - a22 * k13, k12 * a33 - k23 * k13, a22 * a33 - k23 * k23
    rows = (
        (a11 * f23 - k12 * f13 + k13 * f12, -(k01 * f23 - k12 * f03 + k13 * f02),
         k01 * f13 - a11 * f03 + k13 * f01, -(k01 * f12 - a11 * f02 + k12 * f01)),
        (-(k01 * f23 - k02 * f13 + k03 * f12), a00 * f23 - k02 * f03 + k03 * f02,
         -(a00 * f13 - k01 * f03 + k03 * f01), a00 * f12 - k01 * f02 + k02 * f01),
    )  # fmt: skip
    best, norm = None, 0.0
    for row in rows:
        n = row[0] * row[0] + row[1] * row[1] + row[2] * row[2] + row[3] * row[3]
        if n > norm:
            best, norm = row, n
    scale = bound * bound * bound
    if not norm > (ADJUGATE_FLOOR * scale) ** 2:
        return None
    return list(best)
