"""`iterate.run` and `result.swing_rotations` for one target on float tuples."""

from __future__ import annotations

import math
from collections.abc import Callable

from ..iterate import STALL
from .floats import multiply, normalize4, rotate, swing, unit

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
    inherited and then the minimal swing onto its solved direction."""
    rots = []
    inherited = (1.0, 0.0, 0.0, 0.0)
    for i, (a, b) in enumerate(zip(points, points[1:], strict=False)):
        solved = unit((b[0] - a[0], b[1] - a[1], b[2] - a[2]))
        cur = rotate(inherited, dirs[i])
        axis = rotate(inherited, fallbacks[i])
        inherited = normalize4(multiply(swing(cur, solved, axis), inherited))
        rots.append(inherited)
    return rots
