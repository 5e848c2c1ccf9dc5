"""FABRIK's line placement (fabrik.chain_numpy, placement="line") on float tuples."""

from __future__ import annotations

import math

from ..common.float_loop import Solve, iterated


def declines(options: dict, kernel: str) -> str | None:
    """Why FABRIK's float (or block) kernel cannot serve these checked options (None: it can)."""
    if options["placement"] != "line":
        return f"FABRIK sphere placement has no {kernel}"
    return None


def solver(tolerance: float, cap: int, options: dict) -> Solve:
    """FABRIK's float solve (the registry's float kernel; options as `declines` accepts)."""
    return iterated(lambda t, target: make_step(t.rows[0], t.lengths, t.dirs, target), tolerance, cap)


def make_step(root: tuple, lengths: tuple, dirs: tuple, target: tuple):
    """One backward and forward pass toward `target`, as `fabrik.make_step(chain)`."""
    n = len(lengths)
    back = range(n - 1, 0, -1)  # joint 0 would be placed and then reset to the root: skipped

    def step(points: list) -> list:
        p = list(points)
        p[n] = target
        ax, ay, az = target
        for i in back:  # tip to root: joint i on the line from its new child to its old self
            bx, by, bz = p[i]
            dx, dy, dz = bx - ax, by - ay, bz - az
            r = math.sqrt(dx * dx + dy * dy + dz * dz)
            length = lengths[i]
            if r > 1e-300:
                ax, ay, az = ax + length * (dx / r), ay + length * (dy / r), az + length * (dz / r)
            else:
                fx, fy, fz = dirs[i]
                ax, ay, az = ax + length * -fx, ay + length * -fy, az + length * -fz
            p[i] = (ax, ay, az)
        ax, ay, az = root
        p[0] = root
        for i in range(n):  # root to tip: joint i+1 on the line from its new parent to its old self
            bx, by, bz = p[i + 1]
            dx, dy, dz = bx - ax, by - ay, bz - az
            r = math.sqrt(dx * dx + dy * dy + dz * dz)
            length = lengths[i]
            if r > 1e-300:
                ax, ay, az = ax + length * (dx / r), ay + length * (dy / r), az + length * (dz / r)
            else:
                fx, fy, fz = dirs[i]
                ax, ay, az = ax + length * fx, ay + length * fy, az + length * fz
            p[i + 1] = (ax, ay, az)
        return p

    return step
