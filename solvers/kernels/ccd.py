"""Cyclic coordinate descent (solvers.ccd, unlimited chains) on float tuples."""

from __future__ import annotations

from .floats import swing, unit


def make_step(lengths: tuple, fallbacks: tuple, target: tuple):
    """One sweep tip to root toward `target`, as `ccd.make_step(chain)`."""
    n = len(lengths)
    tx, ty, tz = target

    def step(points: list) -> list:
        p = list(points)
        for j in range(n - 1, -1, -1):
            ox, oy, oz = p[j]
            ex, ey, ez = p[n]
            e = unit((ex - ox, ey - oy, ez - oz))
            t = unit((tx - ox, ty - oy, tz - oz))
            if e == (0.0, 0.0, 0.0) or t == (0.0, 0.0, 0.0):
                continue  # tip or target on the pivot: the turn is undefined
            qw, qx, qy, qz = swing(e, t, fallbacks[j])
            for k in range(j + 1, n + 1):
                x, y, z = p[k]
                vx, vy, vz = x - ox, y - oy, z - oz
                ux, uy, uz = 2.0 * (qy * vz - qz * vy), 2.0 * (qz * vx - qx * vz), 2.0 * (qx * vy - qy * vx)
                p[k] = (
                    ox + (vx + qw * ux + (qy * uz - qz * uy)),
                    oy + (vy + qw * uy + (qz * ux - qx * uz)),
                    oz + (vz + qw * uz + (qx * uy - qy * ux)),
                )
        return p

    return step
