"""`iterate.run` and `result.swing_rotations` for one target on float tuples."""

from __future__ import annotations

import math
from collections.abc import Callable

from ..maths.floats import rotate, swing
from .iterate import STALL

# step(points) -> new points; points are n+1 (x, y, z) tuples.
Step = Callable[[list], list]
# solve(terms, target) -> (points, rotations, iterations): a method's position-only float solve
# (terms: a common.float_solve.Terms), made per solve by its registry entry's float kernel.
Solve = Callable[[object, tuple], tuple[list, list, int]]


def iterated(start: Callable[[object, tuple], Step], tolerance: float, cap: int) -> Solve:
    """The float solve of an iterative method: `start(terms, target)` makes its step, `run`
    iterates it, `swing_rotations` turns the points into rotations."""

    def solve(t, target: tuple):
        step = start(t, target)
        points, iterations = run(t.rows, t.lengths, t.dirs, t.total, target, tolerance, cap, step)
        carried = getattr(step, "carried", None)  # a step's own unit directions of the points it returned
        solved = carried[0] if carried is not None and carried[1] is points else None
        return points, swing_rotations(points, t.dirs, t.fallbacks, solved), iterations

    return solve


def straight(root: tuple, lengths: tuple, first_dir: tuple, target: tuple) -> list:
    """`iterate.straight_toward`: the chain stretched from the root toward the target."""
    rx, ry, rz = root
    dx, dy, dz = target[0] - rx, target[1] - ry, target[2] - rz
    r = math.sqrt(dx * dx + dy * dy + dz * dz)
    dx, dy, dz = (dx / r, dy / r, dz / r) if r > 0.0 else first_dir
    out, s = [root], 0.0
    for length in lengths:
        s += length
        out.append((rx + s * dx, ry + s * dy, rz + s * dz))
    return out


def run(
    rows: tuple, lengths: tuple, dirs: tuple, total: float, target: tuple, tolerance: float, cap: int, step: Step
) -> tuple[list, int]:
    """(points, iterations) as `iterate.run` gives them for one target on an unlimited chain."""
    root = rows[0]
    tx, ty, tz = target
    x, y, z = tx - root[0], ty - root[1], tz - root[2]
    if math.sqrt(x * x + y * y + z * z) >= total - tolerance:
        return straight(root, lengths, dirs[0], target), 1
    points = rows
    ex, ey, ez = points[-1]
    x, y, z = ex - tx, ey - ty, ez - tz
    if not math.sqrt(x * x + y * y + z * z) > tolerance:
        return list(points), 0
    stall = STALL * total
    iterations = 0
    sqrt = math.sqrt
    while iterations < cap:
        ox, oy, oz = ex, ey, ez
        points = step(points)
        iterations += 1
        ex, ey, ez = points[-1]
        x, y, z = ex - tx, ey - ty, ez - tz
        if not sqrt(x * x + y * y + z * z) > tolerance:
            break
        x, y, z = ex - ox, ey - oy, ez - oz
        if not sqrt(x * x + y * y + z * z) > stall:
            break
    return points, iterations


def swing_rotations(points: list, dirs: tuple, fallbacks: tuple, solved: list | None = None) -> list:
    """`result.swing_rotations` for one solve: each bone's world rotation, its parent's
    inherited and then the minimal swing onto its solved direction. Inlined (a solve's
    largest cost after the iterations): `rotate` and `swing` as in floats; the turned
    tie-breaker axis is only needed (and only computed) for a swing past 90 degrees.
    `solved`: the bones' unit directions in `points` where the step carried them (else
    normalised from the points, as numpy does)."""
    rots = []
    sqrt = math.sqrt
    qw, qx, qy, qz = 1.0, 0.0, 0.0, 0.0
    x0, y0, z0 = points[0]
    for i, (ux, uy, uz) in enumerate(dirs):
        if solved is None:
            x1, y1, z1 = points[i + 1]
            vx, vy, vz = x1 - x0, y1 - y0, z1 - z0
            x0, y0, z0 = x1, y1, z1
            r = sqrt(vx * vx + vy * vy + vz * vz)
            if r > 0.0:
                vx, vy, vz = vx / r, vy / r, vz / r
        else:
            vx, vy, vz = solved[i]
        turned = qx or qy or qz  # the inherited rotation turns the input direction
        if turned:
            tx, ty, tz = 2.0 * (qy * uz - qz * uy), 2.0 * (qz * ux - qx * uz), 2.0 * (qx * uy - qy * ux)
            ux, uy, uz = (
                ux + qw * tx + (qy * tz - qz * ty),
                uy + qw * ty + (qz * tx - qx * tz),
                uz + qw * tz + (qx * ty - qy * tx),
            )
        cx, cy, cz = uy * vz - uz * vy, uz * vx - ux * vz, ux * vy - uy * vx
        dot = ux * vx + uy * vy + uz * vz
        if dot >= 0.0:
            sw = 1.0 + dot
            n = sqrt(sw * sw + cx * cx + cy * cy + cz * cz)
            sw, sx, sy, sz = sw / n, cx / n, cy / n, cz / n
        else:
            axis = rotate((qw, qx, qy, qz), fallbacks[i]) if turned else fallbacks[i]
            sw, sx, sy, sz = swing((ux, uy, uz), (vx, vy, vz), axis)
        qw, qx, qy, qz = (
            sw * qw - sx * qx - sy * qy - sz * qz,
            sw * qx + sx * qw + sy * qz - sz * qy,
            sw * qy - sx * qz + sy * qw + sz * qx,
            sw * qz + sx * qy - sy * qx + sz * qw,
        )
        n = sqrt(qw * qw + qx * qx + qy * qy + qz * qz)
        qw, qx, qy, qz = qw / n, qx / n, qy / n, qz / n
        rots.append((qw, qx, qy, qz))
    return rots
