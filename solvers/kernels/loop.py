"""`iterate.run` and `result.swing_rotations` for one target on float tuples."""

from __future__ import annotations

import math
from collections.abc import Callable

from ..iterate import STALL
from .floats import rotate, swing

# step(points) -> new points; points are n+1 (x, y, z) tuples.
Step = Callable[[list], list]


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


def _distance(a: tuple, b: tuple) -> float:
    x, y, z = a[0] - b[0], a[1] - b[1], a[2] - b[2]
    return math.sqrt(x * x + y * y + z * z)


def run(
    rows: tuple, lengths: tuple, dirs: tuple, total: float, target: tuple, tolerance: float, cap: int, step: Step
) -> tuple[list, int]:
    """(points, iterations) as `iterate.run` gives them for one target on an unlimited chain."""
    root = rows[0]
    if _distance(target, root) >= total - tolerance:
        return straight(root, lengths, dirs[0], target), 1
    points = list(rows)
    if not _distance(points[-1], target) > tolerance:
        return points, 0
    stall = STALL * total
    iterations = 0
    while iterations < cap:
        old = points[-1]
        points = step(points)
        iterations += 1
        tip = points[-1]
        if not (_distance(tip, target) > tolerance and _distance(tip, old) > stall):
            break
    return points, iterations


def swing_rotations(points: list, dirs: tuple, fallbacks: tuple) -> list:
    """`result.swing_rotations` for one solve: each bone's world rotation, its parent's
    inherited and then the minimal swing onto its solved direction. Inlined (a solve's
    largest cost after the iterations): `rotate` twice and `swing`, as in floats."""
    rots = []
    qw, qx, qy, qz = 1.0, 0.0, 0.0, 0.0
    for i in range(len(dirs)):
        (x0, y0, z0), (x1, y1, z1) = points[i], points[i + 1]
        vx, vy, vz = x1 - x0, y1 - y0, z1 - z0
        r = math.sqrt(vx * vx + vy * vy + vz * vz)
        if r > 0.0:
            vx, vy, vz = vx / r, vy / r, vz / r
        if qx or qy or qz:  # the inherited rotation turns the input direction
            cur, axis = rotate((qw, qx, qy, qz), dirs[i]), rotate((qw, qx, qy, qz), fallbacks[i])
        else:
            cur, axis = dirs[i], fallbacks[i]
        ux, uy, uz = cur
        cx, cy, cz = uy * vz - uz * vy, uz * vx - ux * vz, ux * vy - uy * vx
        dot = ux * vx + uy * vy + uz * vz
        if dot >= 0.0:
            sw, sx, sy, sz = 1.0 + dot, cx, cy, cz
            n = math.sqrt(sw * sw + sx * sx + sy * sy + sz * sz)
            sw, sx, sy, sz = sw / n, sx / n, sy / n, sz / n
        else:
            sw, sx, sy, sz = swing(cur, (vx, vy, vz), axis)
        qw, qx, qy, qz = (
            sw * qw - sx * qx - sy * qy - sz * qz,
            sw * qx + sx * qw + sy * qz - sz * qy,
            sw * qy - sx * qz + sy * qw + sz * qx,
            sw * qz + sx * qy - sy * qx + sz * qw,
        )
        n = math.sqrt(qw * qw + qx * qx + qy * qy + qz * qz)
        qw, qx, qy, qz = qw / n, qx / n, qy / n, qz / n
        rots.append((qw, qx, qy, qz))
    return rots
