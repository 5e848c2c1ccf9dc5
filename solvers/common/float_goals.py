"""A pole target and the tip bone's orientation (solvers.common.goals) on float tuples, for one target.

Mirrors `goals._posed`, `goals.pole_spin` and `goals._with_rotation` step by step for a
chain without joint limits; `solve` is the position-only float solve it wraps."""

from __future__ import annotations

import math
from collections.abc import Callable

from ..maths.floats import conjugate, from_rotation_vector, multiply, normalize4, rotate, unit
from .goals import POLE_FADE

# solve(terms, target) -> (points, rotations, iterations), as float tuples.
Solve = Callable[[object, tuple], tuple[list, list, int]]


def _dot(u: tuple, v: tuple) -> float:
    return u[0] * v[0] + u[1] * v[1] + u[2] * v[2]


def _length(v: tuple) -> float:
    return math.sqrt(v[0] * v[0] + v[1] * v[1] + v[2] * v[2])


def up_axis(frame: tuple, c: float, s: float) -> tuple:
    """`goals._up`: X cos + Z sin, the frame matrix's first and last columns."""
    w, x, y, z = frame
    return (
        c * (1.0 - 2.0 * (y * y + z * z)) + s * (2.0 * (x * z + w * y)),
        c * (2.0 * (x * y + w * z)) + s * (2.0 * (y * z - w * x)),
        c * (2.0 * (x * z - w * y)) + s * (1.0 - 2.0 * (x * x + y * y)),
    )


def _side(d: tuple, v: tuple) -> tuple:
    along = _dot(v, d)
    perp = (v[0] - along * d[0], v[1] - along * d[1], v[2] - along * d[2])
    n = _length(perp)
    if n > 1e-12 * max(_length(v), 1e-300):
        m = max(n, 1e-300)
        return (perp[0] / m, perp[1] / m, perp[2] / m)
    return (0.0, 0.0, 0.0)


def from_matrix(m: tuple) -> tuple:
    """`quat.from_matrix` of one 3x3 (rows): the same pivot (the first of equals, as np.argmax)."""
    (m00, m01, m02), (m10, m11, m12), (m20, m21, m22) = m
    p0, p1, p2, p3 = 1 + m00 + m11 + m22, 1 + m00 - m11 - m22, 1 - m00 + m11 - m22, 1 - m00 - m11 + m22
    if p0 >= p1 and p0 >= p2 and p0 >= p3:
        w, x, y, z = p0, m21 - m12, m02 - m20, m10 - m01
    elif p1 >= p2 and p1 >= p3:
        w, x, y, z = m21 - m12, p1, m01 + m10, m02 + m20
    elif p2 >= p3:
        w, x, y, z = m02 - m20, m01 + m10, p2, m12 + m21
    else:
        w, x, y, z = m10 - m01, m02 + m20, m12 + m21, p3
    n = math.sqrt(w * w + x * x + y * y + z * z)
    if not n > 0.0:
        return (0.0, 0.0, 0.0, 0.0)
    if w < 0.0:
        n = -n
    return (w / n, x / n, y / n, z / n)


def chain_frame(root: tuple, tip: tuple, up: tuple):
    """`goals._chain_frame` for one chain: look-at rows of its root-tip line with its root bone's
    `up` (`up_axis` of its frame), or None where the up is along the line."""
    rx, ry, rz = root
    dx, dy, dz = unit((tip[0] - rx, tip[1] - ry, tip[2] - rz))
    ux, uy, uz = up
    x, y, z = dy * uz - dz * uy, dz * ux - dx * uz, dx * uy - dy * ux
    n = math.sqrt(x * x + y * y + z * z)
    if not n > 1e-9:
        return None
    x, y, z = x / n, y / n, z / n
    return (x, y, z), (y * dz - z * dy, z * dx - x * dz, x * dy - y * dx), (-dx, -dy, -dz)


def goal_frame(root: tuple, target: tuple, pole: tuple, rest: tuple, c: float, s: float, direction: tuple):
    """`goals._goal_frame` for one target: look-at rows of the root-target line with the wanted
    side, or None where no side is wanted. (Written out: it runs once per solve.)"""
    rx, ry, rz = root
    gx, gy, gz = target[0] - rx, target[1] - ry, target[2] - rz
    n = math.sqrt(gx * gx + gy * gy + gz * gz)
    if n > 0.0:
        gx, gy, gz = gx / n, gy / n, gz / n
    else:
        gx, gy, gz = direction
    px, py, pz = pole[0] - rx, pole[1] - ry, pole[2] - rz
    pole_length = math.sqrt(px * px + py * py + pz * pz)
    # The pole's unit part perpendicular to the root-target line (`goals._side`).
    along = px * gx + py * gy + pz * gz
    wx, wy, wz = px - along * gx, py - along * gy, pz - along * gz
    n = math.sqrt(wx * wx + wy * wy + wz * wz)
    if n > 1e-12 * max(pole_length, 1e-300):
        n = max(n, 1e-300)
        wx, wy, wz = wx / n, wy / n, wz / n
    else:
        wx = wy = wz = 0.0
    cx, cy, cz = gy * pz - gz * py, gz * px - gx * pz, gx * py - gy * px
    off_line = math.sqrt(cx * cx + cy * cy + cz * cz) / max(pole_length, 1e-300)
    w = min(max(off_line / POLE_FADE, 0.0), 1.0)
    w = w * w * (3.0 - 2.0 * w)
    if w != 1.0:  # blend toward the rest side (at weight 1 it has none: the same numbers without it)
        v = 1.0 - w
        rx, ry, rz = _side((gx, gy, gz), up_axis(rest, c, s))
        wx, wy, wz = w * wx + v * rx, w * wy + v * ry, w * wz + v * rz
    if not math.sqrt(wx * wx + wy * wy + wz * wz) > 1e-9:
        return None
    x, y, z = unit((gy * wz - gz * wy, gz * wx - gx * wz, gx * wy - gy * wx))
    return (x, y, z), (y * gz - z * gy, z * gx - x * gz, x * gy - y * gx), (-gx, -gy, -gz)


def _product(a, b) -> tuple:
    """A^T B of two look-at row triples: the rotation matrix taking rows `b` onto `a`."""
    (a0x, a0y, a0z), (a1x, a1y, a1z), (a2x, a2y, a2z) = a
    (b0x, b0y, b0z), (b1x, b1y, b1z), (b2x, b2y, b2z) = b
    return (
        (a0x * b0x + a1x * b1x + a2x * b2x, a0x * b0y + a1x * b1y + a2x * b2y, a0x * b0z + a1x * b1z + a2x * b2z),
        (a0y * b0x + a1y * b1x + a2y * b2x, a0y * b0y + a1y * b1y + a2y * b2y, a0y * b0z + a1y * b1z + a2y * b2z),
        (a0z * b0x + a1z * b1x + a2z * b2x, a0z * b0y + a1z * b1y + a2z * b2y, a0z * b0z + a1z * b1z + a2z * b2z),
    )


def posed(terms, target: tuple, solve_plain: Solve, pole: tuple, c: float, s: float):
    """`goals._posed`: the position solve from the input pose pre-turned toward the pole (T), then
    the solved chain's look-at frame taken back onto the start's (P); the whole turn is T P.

    With look-at rows S (start), G (goal) and V (solved), T = G^T S and P = S^T V, so T P = G^T V
    and T^-1 = S^T G: the turns are matrix products of the rows, one quaternion at the end (for
    the bones' rotations). A missing G or V stands in as S (its turn is then the identity)."""
    root = rx, ry, rz = terms.rows[0]
    up, start = terms.pole_start(c, s)
    if start is None:  # no up off the root-tip line: no turn at all (T = P = identity)
        return solve_plain(terms, target)
    (s0x, s0y, s0z), (s1x, s1y, s1z), (s2x, s2y, s2z) = start
    goal = goal_frame(root, target, pole, terms.rest, c, s, (-s2x, -s2y, -s2z)) or start
    # T^-1 (target - root) = S^T (G (target - root)).
    vx, vy, vz = target[0] - rx, target[1] - ry, target[2] - rz
    (g0x, g0y, g0z), (g1x, g1y, g1z), (g2x, g2y, g2z) = goal
    u0, u1, u2 = g0x * vx + g0y * vy + g0z * vz, g1x * vx + g1y * vy + g1z * vz, g2x * vx + g2y * vy + g2z * vz
    local = (
        rx + u0 * s0x + u1 * s1x + u2 * s2x,
        ry + u0 * s0y + u1 * s1y + u2 * s2y,
        rz + u0 * s0z + u1 * s1z + u2 * s2z,
    )
    points, rotations, iterations = solve_plain(terms, local)
    solved = chain_frame(root, points[-1], rotate(rotations[0], up)) or start
    matrix = (m00, m01, m02), (m10, m11, m12), (m20, m21, m22) = _product(goal, solved)
    tw, tx, ty, tz = from_matrix(matrix)
    # The whole turn on every point and bone, written out (a call per bone would cost a solve's worth).
    out = [root]
    for x, y, z in points[1:]:
        x, y, z = x - rx, y - ry, z - rz
        out.append(
            (rx + m00 * x + m01 * y + m02 * z, ry + m10 * x + m11 * y + m12 * z, rz + m20 * x + m21 * y + m22 * z)
        )
    turned = [
        (
            tw * w - tx * x - ty * y - tz * z,
            tw * x + tx * w + ty * z - tz * y,
            tw * y - tx * z + ty * w + tz * x,
            tw * z + tx * y - ty * x + tz * w,
        )
        for w, x, y, z in rotations
    ]
    return out, turned, iterations


def _to_rotation_vector(q: tuple) -> tuple:
    if q[0] < 0.0:
        q = (-q[0], -q[1], -q[2], -q[3])
    s = _length(q[1:])
    if not s > 1e-300:
        return (0.0, 0.0, 0.0)
    k = 2.0 * math.atan2(s, q[0]) / s
    return (q[1] * k, q[2] * k, q[3] * k)


def slerp(a: tuple, b: tuple, t: float) -> tuple:
    """`goals._slerp` for one pair."""
    if a[0] * b[0] + a[1] * b[1] + a[2] * b[2] + a[3] * b[3] < 0.0:
        b = (-b[0], -b[1], -b[2], -b[3])
    x, y, z = _to_rotation_vector(multiply(b, conjugate(a)))
    return multiply(from_rotation_vector(t * x, t * y, t * z), a)


def solve(terms, target: tuple, solve_plain: Solve, pole, pole_angle: float, rotation, weight: float):
    """(points, rotations, iterations) of `goals.solve_with_goals` for one target."""
    c, s = math.cos(pole_angle), math.sin(pole_angle)
    if rotation is None:
        return posed(terms, target, solve_plain, pole, c, s)

    def position(t, target):
        if pole is None:
            return solve_plain(t, target)
        return posed(t, target, solve_plain, pole, c, s)

    tip_rest = terms.frames[-1]
    one_bone = len(terms.lengths) == 1
    if weight == 1.0:  # the target's orientation whatever the free one: no free solve to blend from
        wanted, iterations = normalize4(rotation), 0
        if one_bone:  # nothing else to solve: the plain solve gives the iterations
            iterations = position(terms, target)[2]
    else:
        points, rotations, iterations = position(terms, target)
        wanted = normalize4(slerp(multiply(rotations[-1], tip_rest), rotation, weight))
    x, y, z = rotate(wanted, terms.link)
    length = terms.lengths[-1]
    if one_bone:
        head_points, head_rotations = [terms.rows[0]], []
    else:
        wrist = (target[0] - length * x, target[1] - length * y, target[2] - length * z)
        head_points, head_rotations, more = position(terms.head(), wrist)
        iterations += more
    hx, hy, hz = head_points[-1]
    tip = (hx + length * x, hy + length * y, hz + length * z)
    return head_points + [tip], head_rotations + [multiply(wanted, conjugate(tip_rest))], iterations
