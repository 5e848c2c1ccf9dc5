"""Tree FABRIK's placements written out on plain floats (solvers.fabrik.tree): the sphere point of
its backward pass, and the turn of a bone with several goal points (a sub-base) in its forward pass.
The helpers' calls cost more than their arithmetic on a character's few bones."""

from __future__ import annotations

import math

from ..maths.floats import profile_rotation


def on_spheres(
    ax: float, ay: float, az: float, b: tuple, ra: float, rb: float, nx: float, ny: float, nz: float
) -> tuple | None:
    """floats.sphere_point(a, b, ra, rb, near, tie) written out, term by term in its order (the
    same bits), where it reads no tie: None where it would (a on b, or near on the line a-b)."""
    bx, by, bz = b
    ux, uy, uz = bx - ax, by - ay, bz - az
    d = math.sqrt(ux * ux + uy * uy + uz * uz)
    if d <= 0.0:
        return None
    ux, uy, uz = ux / d, uy / d, uz / d
    along = (d * d + ra * ra - rb * rb) / (2.0 * d)
    h2 = ra * ra - along * along
    h = math.sqrt(0.0 if 0.0 > h2 else h2)  # max(h2, 0.0)
    vx, vy, vz = nx - ax, ny - ay, nz - az
    t = vx * ux + vy * uy + vz * uz
    vx, vy, vz = vx - t * ux, vy - t * uy, vz - t * uz
    off = math.sqrt(vx * vx + vy * vy + vz * vz)
    if off <= 1e-12 * (ra + rb):
        return None
    low = -ra
    along = low if low > along else along  # min(max(along, -ra), ra)
    along = ra if ra < along else along
    return (ax + along * ux + h * vx / off, ay + along * uy + h * vy / off, az + along * uz + h * vz / off)


def pairs_turn(
    pairs: list, inherited: tuple, head: tuple, targets: list, new_heads: dict, held: set, hold: float
) -> tuple:
    """floats.best_rotation(have, want, weights) of a bone's goal points `pairs` ((link vector,
    effector, child, weight): have = inherited's turn of the vector, want = the point's target
    less the head; a child in `held` weighs `hold` x its weight), its sums taken in its order,
    with the eigenvector on floats (floats.profile_rotation, LAPACK only where the top eigenvalue
    is nearly repeated: LAPACK's call cost more than the rest of a sub-base's placement)."""
    qw, qx, qy, qz = inherited
    hx, hy, hz = head
    sxx = sxy = sxz = syx = syy = syz = szx = szy = szz = 0.0
    size = 0.0
    lightest, heaviest = math.inf, -math.inf
    for (vx, vy, vz), effector, child, wk in pairs:
        if child in held:
            wk *= hold
        # floats.rotate(inherited, vec), term by term
        tx, ty, tz = 2.0 * (qy * vz - qz * vy), 2.0 * (qz * vx - qx * vz), 2.0 * (qx * vy - qy * vx)
        ax = vx + qw * tx + (qy * tz - qz * ty)
        ay = vy + qw * ty + (qz * tx - qx * tz)
        az = vz + qw * tz + (qx * ty - qy * tx)
        bx, by, bz = targets[effector] if child == -1 else new_heads[child]
        bx, by, bz = bx - hx, by - hy, bz - hz
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
        lightest = wk if wk < lightest else lightest
        heaviest = wk if wk > heaviest else heaviest
    return profile_rotation((sxx, sxy, sxz, syx, syy, syz, szx, szy, szz), size, lightest, heaviest)
