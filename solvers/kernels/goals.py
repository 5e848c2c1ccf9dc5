"""A pole target and the tip bone's orientation (solvers.goals) on float tuples, for one target.

Mirrors `goals._posed`, `goals.pole_spin` and `goals._with_rotation` step by step for a
chain without joint limits; `solve` is the position-only float solve it wraps."""

from __future__ import annotations

import math
from collections.abc import Callable

from ..goals import POLE_FADE
from .floats import from_rotation_vector, multiply, normalize4, rotate, unit

# solve(terms, target) -> (points, rotations, iterations), as float tuples.
Solve = Callable[[object, tuple], tuple[list, list, int]]
IDENTITY = (1.0, 0.0, 0.0, 0.0)


def _cross(u: tuple, v: tuple) -> tuple:
    return (u[1] * v[2] - u[2] * v[1], u[2] * v[0] - u[0] * v[2], u[0] * v[1] - u[1] * v[0])


def _dot(u: tuple, v: tuple) -> float:
    return u[0] * v[0] + u[1] * v[1] + u[2] * v[2]


def _length(v: tuple) -> float:
    return math.sqrt(v[0] * v[0] + v[1] * v[1] + v[2] * v[2])


def _conjugate(q: tuple) -> tuple:
    return (q[0], -q[1], -q[2], -q[3])


def _up(frame: tuple, c: float, s: float) -> tuple:
    x, z = rotate(frame, (1.0, 0.0, 0.0)), rotate(frame, (0.0, 0.0, 1.0))
    return (c * x[0] + s * z[0], c * x[1] + s * z[1], c * x[2] + s * z[2])


def _side(d: tuple, v: tuple) -> tuple:
    along = _dot(v, d)
    perp = (v[0] - along * d[0], v[1] - along * d[1], v[2] - along * d[2])
    n = _length(perp)
    if n > 1e-12 * max(_length(v), 1e-300):
        m = max(n, 1e-300)
        return (perp[0] / m, perp[1] / m, perp[2] / m)
    return (0.0, 0.0, 0.0)


def _look_at(d: tuple, up: tuple) -> tuple:
    side = unit(_cross(d, up))
    return (side, _cross(side, d), (-d[0], -d[1], -d[2]))


def from_matrix(m: tuple) -> tuple:
    """`quat.from_matrix` of one 3x3 (rows)."""
    (m00, m01, m02), (m10, m11, m12), (m20, m21, m22) = m
    pivots = (1 + m00 + m11 + m22, 1 + m00 - m11 - m22, 1 - m00 + m11 - m22, 1 - m00 - m11 + m22)
    best = max(range(4), key=pivots.__getitem__)  # the first of equals, as np.argmax
    q = (
        (pivots[0], m21 - m12, m02 - m20, m10 - m01),
        (m21 - m12, pivots[1], m01 + m10, m02 + m20),
        (m02 - m20, m01 + m10, pivots[2], m12 + m21),
        (m10 - m01, m02 + m20, m12 + m21, pivots[3]),
    )[best]
    q = normalize4(q)
    return (-q[0], -q[1], -q[2], -q[3]) if q[0] < 0.0 else q


def pole_spin(root, tip, target, pole, frame0: tuple, rest: tuple, c: float, s: float) -> tuple:
    """`goals.pole_spin` for one solve; `frame0` the root bone's frame, `rest` its rest frame."""
    direction = unit((tip[0] - root[0], tip[1] - root[1], tip[2] - root[2]))
    goal_dir = unit((target[0] - root[0], target[1] - root[1], target[2] - root[2]))
    if not _length(goal_dir) > 0.0:
        goal_dir = direction
    up = _up(frame0, c, s)
    rest_up = _side(goal_dir, _up(rest, c, s))
    to_pole = (pole[0] - root[0], pole[1] - root[1], pole[2] - root[2])
    pole_side = _side(goal_dir, to_pole)
    off_line = _length(_cross(goal_dir, to_pole)) / max(_length(to_pole), 1e-300)
    w = min(max(off_line / POLE_FADE, 0.0), 1.0)
    w = w * w * (3.0 - 2.0 * w)
    v = 1.0 - w
    wanted = (w * pole_side[0] + v * rest_up[0], w * pole_side[1] + v * rest_up[1], w * pole_side[2] + v * rest_up[2])
    if not (_length(_cross(direction, up)) > 1e-9 and _length(wanted) > 1e-9):
        return IDENTITY
    (a0, a1, a2), (b0, b1, b2) = _look_at(goal_dir, wanted), _look_at(direction, up)
    # A^T B, row by row (as the numpy einsum).
    return from_matrix(
        (
            (
                a0[0] * b0[0] + a1[0] * b1[0] + a2[0] * b2[0],
                a0[0] * b0[1] + a1[0] * b1[1] + a2[0] * b2[1],
                a0[0] * b0[2] + a1[0] * b1[2] + a2[0] * b2[2],
            ),
            (
                a0[1] * b0[0] + a1[1] * b1[0] + a2[1] * b2[0],
                a0[1] * b0[1] + a1[1] * b1[1] + a2[1] * b2[1],
                a0[1] * b0[2] + a1[1] * b1[2] + a2[1] * b2[2],
            ),
            (
                a0[2] * b0[0] + a1[2] * b1[0] + a2[2] * b2[0],
                a0[2] * b0[1] + a1[2] * b1[1] + a2[2] * b2[1],
                a0[2] * b0[2] + a1[2] * b1[2] + a2[2] * b2[2],
            ),
        )
    )


def posed(terms, target: tuple, solve_plain: Solve, pole: tuple, c: float, s: float):
    """`goals._posed`: the position solve from the input pose pre-turned toward the pole, then
    the turn made exact on the solved chain."""
    root = rx, ry, rz = terms.rows[0]
    frame0 = terms.frames[0]
    turn = pole_spin(root, terms.rows[-1], target, pole, frame0, terms.rest, c, s)
    lx, ly, lz = rotate(_conjugate(turn), (target[0] - rx, target[1] - ry, target[2] - rz))
    points, rotations, iterations = solve_plain(terms, (rx + lx, ry + ly, rz + lz))
    x, y, z = points[-1]
    tx, ty, tz = rotate(turn, (x - rx, y - ry, z - rz))
    frame = multiply(multiply(turn, rotations[0]), frame0)
    spin = pole_spin(root, (rx + tx, ry + ty, rz + tz), target, pole, frame, terms.rest, c, s)
    total = normalize4(multiply(spin, turn))
    out = [root]
    for x, y, z in points[1:]:
        vx, vy, vz = rotate(total, (x - rx, y - ry, z - rz))
        out.append((rx + vx, ry + vy, rz + vz))
    return out, [multiply(total, q) for q in rotations], iterations


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
    x, y, z = _to_rotation_vector(multiply(b, _conjugate(a)))
    return multiply(from_rotation_vector(t * x, t * y, t * z), a)


def solve(terms, target: tuple, solve_plain: Solve, pole, pole_angle: float, rotation, weight: float):
    """(points, rotations, iterations) of `goals.solve_with_goals` for one target."""
    c, s = math.cos(pole_angle), math.sin(pole_angle)

    def position(t, target):
        if pole is None:
            return solve_plain(t, target)
        return posed(t, target, solve_plain, pole, c, s)

    points, rotations, iterations = position(terms, target)
    if rotation is None:
        return points, rotations, iterations
    tip_rest = terms.frames[-1]
    wanted = normalize4(slerp(multiply(rotations[-1], tip_rest), rotation, weight))
    link = rotate(_conjugate(tip_rest), terms.dirs[-1])
    length = terms.lengths[-1]
    if len(terms.lengths) == 1:
        head_points, head_rotations = [terms.rows[0]], []
    else:
        x, y, z = rotate(wanted, link)
        wrist = (target[0] - length * x, target[1] - length * y, target[2] - length * z)
        head_points, head_rotations, more = position(terms.head(), wrist)
        iterations += more
    x, y, z = rotate(wanted, link)
    hx, hy, hz = head_points[-1]
    tip = (hx + length * x, hy + length * y, hz + length * z)
    return head_points + [tip], head_rotations + [multiply(wanted, _conjugate(tip_rest))], iterations
