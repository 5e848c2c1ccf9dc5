"""Cyclic coordinate descent (ccd.chain_numpy, unlimited chains) on float tuples."""

from __future__ import annotations

from math import sqrt

from ..common.float_loop import Solve, iterated
from ..maths.floats import swing

# Below this |u||v| the unnormalised quaternion's squares leave float64's normal range (their
# norm loses precision, then underflows to 0): the unit offsets' swing serves instead.
TINY_PRODUCT = 1e-140


def solver(tolerance: float, cap: int, options: dict) -> Solve:
    """CCD's float solve (the registry's float kernel; CCD has no options)."""
    return iterated(lambda t, target: make_step(t.lengths, t.fallbacks, target), tolerance, cap)


def make_step(lengths: tuple, fallbacks: tuple, target: tuple):
    """One sweep tip to root toward `target`, as `ccd.make_step(chain)`.

    The numpy step turns every point past each joint, O(n^2) per sweep. Joint j's turn
    only needs its pivot, which the turns of the joints after it never move, and the tip,
    which the turn puts on the pivot-target line at its distance from the pivot: so the
    sweep moves the tip alone and keeps each joint's turn; then each bone's new link is its
    old one turned by the product of the turns of its joint and those before it (each point
    turns about its ancestors' pivots), summed from the root: O(n). The same points as the
    numpy step to rounding."""
    n = len(lengths)
    tx, ty, tz = target
    joints = range(n - 1, -1, -1)

    def step(points: list) -> list:
        ex, ey, ez = points[n]
        turns = [None] * n
        for j in joints:
            ox, oy, oz = points[j]
            ux, uy, uz = ex - ox, ey - oy, ez - oz  # pivot to tip
            vx, vy, vz = tx - ox, ty - oy, tz - oz  # pivot to target
            uu = ux * ux + uy * uy + uz * uz
            vv = vx * vx + vy * vy + vz * vz
            if not (uu > 0.0 and vv > 0.0):
                continue  # tip or target on the pivot: the turn is undefined
            r, s = sqrt(uu), sqrt(vv)
            dot = ux * vx + uy * vy + uz * vz
            if dot >= 0.0 and r * s > TINY_PRODUCT:
                # floats.swing's common case (within 90 degrees) on the unnormalised offsets:
                # (|u||v| + u.v, u x v) is |u||v| times (1 + cos, sin axis).
                qw, qx, qy, qz = r * s + dot, uy * vz - uz * vy, uz * vx - ux * vz, ux * vy - uy * vx
                m = sqrt(qw * qw + qx * qx + qy * qy + qz * qz)
                turns[j] = (qw / m, qx / m, qy / m, qz / m)
            else:
                turns[j] = swing((ux / r, uy / r, uz / r), (vx / s, vy / s, vz / s), fallbacks[j])
            # The turn takes the tip onto the pivot-target line, at its distance from the pivot.
            k = r / s
            ex, ey, ez = ox + k * vx, oy + k * vy, oz + k * vz
        # The new links: bone i's turned by q_0 q_1 ... q_i (q_i first).
        root = points[0]
        out = [root]
        px, py, pz = root
        x0, y0, z0 = root
        qw, qx, qy, qz = 1.0, 0.0, 0.0, 0.0
        turned = False
        for i in range(n):
            x1, y1, z1 = points[i + 1]
            vx, vy, vz = x1 - x0, y1 - y0, z1 - z0
            x0, y0, z0 = x1, y1, z1
            turn = turns[i]
            if turn is not None:
                sw, sx, sy, sz = turn
                if turned:
                    qw, qx, qy, qz = (
                        qw * sw - qx * sx - qy * sy - qz * sz,
                        qw * sx + qx * sw + qy * sz - qz * sy,
                        qw * sy - qx * sz + qy * sw + qz * sx,
                        qw * sz + qx * sy - qy * sx + qz * sw,
                    )
                else:
                    qw, qx, qy, qz = turn
                    turned = True
            if turned:
                kx, ky, kz = 2.0 * (qy * vz - qz * vy), 2.0 * (qz * vx - qx * vz), 2.0 * (qx * vy - qy * vx)
                vx, vy, vz = (
                    vx + qw * kx + (qy * kz - qz * ky),
                    vy + qw * ky + (qz * kx - qx * kz),
                    vz + qw * kz + (qx * ky - qy * kx),
                )
            px, py, pz = px + vx, py + vy, pz + vz
            out.append((px, py, pz))
        return out

    return step
