"""The triangulation pass on plain floats: one solve, root to tip (see chain_numpy.py for the method).

Shared by `common.float_solve` and `chain_steps.solve_steps`, which carries the
solved directions from frame to frame without building a Chain per frame.
"""

from __future__ import annotations

import math
from itertools import accumulate

import numpy as np

from .. import quat
from ..maths import floats
from ..quat import AXIS_EPS
from .chain_span import least_turn_span


def fold_terms(fold_angle: float) -> tuple[float, float]:
    """cos and sin of the fold angle in degrees (already checked to lie in 90..180)."""
    if fold_angle == 180.0:
        return -1.0, 0.0
    fold = math.radians(fold_angle)
    return math.cos(fold), math.sin(fold)


def law_of_cosines(a, b, c, sqrt):
    """cos and sin of the angle between sides a and c of a triangle (a, b, c),
    eq. 5, for floats or arrays. Computed from the factored 1 + cos and 1 - cos
    so a nearly flat triangle keeps its accuracy; clipped to a valid angle
    when no triangle exists."""
    two_ac = 2.0 * a * c
    plus = (a + c - b) * (a + c + b) / two_ac  # 1 + cos
    minus = (b - a + c) * (b + a - c) / two_ac  # 1 - cos
    plus, minus = plus * (plus > 0.0), minus * (minus > 0.0)  # x * (x > 0): max(x, 0) for both
    cos = 0.5 * (plus - minus)
    cos = cos / (0.5 * (plus + minus))  # normalise: plus + minus = 2 exactly in exact arithmetic
    return cos, sqrt(plus * minus) / (0.5 * (plus + minus))


def fold_blend(lengths, reach, inner, smooth: float) -> tuple | None:
    """Per bone, the width of the smooth fold (None when `smooth` is 0).

    The paper folds a bone straight back while the target is closer than
    b - a, and forms the triangle beyond: the bone's angle then moves as the
    square root of the target's distance past b - a, a pop along a smooth
    path. The smooth fold replaces the sharp switch between the next joint's
    distance a + c (folded) and b (triangle) by a quadratic soft minimum of
    width w, so every angle moves at a bounded rate. w is kept small enough
    that the triangle (a, distance, c) exists and the rest of the chain can
    still reach that distance (outside its hole), so reach is unchanged."""
    if smooth <= 0.0:
        return None
    return tuple(
        smooth * 0.8 * min(a, b - a, b - r) if b > a and b > r else 0.0
        for a, b, r in zip(lengths, reach, inner, strict=True)
    )


def blended_reach(a, b, c, width):
    """The next joint's distance from the target in the smooth fold: the soft
    minimum of a + c and b (floats or arrays)."""
    x = a + c - b
    h = (width - abs(x)) / width
    return (b + x * (x < 0.0)) - 0.25 * h * h * width


def one_pass(
    root: tuple,
    lengths: tuple,
    dirs: tuple,
    reach: tuple,
    guard: tuple,
    fallbacks,
    target: tuple,
    band: float,
    fold_angle: float,
    fold: tuple[float, float],
    blend: tuple | None = None,
    carry: bool = False,
    keep: tuple | None = None,
    chords: tuple | None = None,
) -> tuple[list, list, list]:
    """(points, rotations, new directions) as lists of tuples (the directions with `carry` only).

    `dirs` are the bones' current unit directions, `reach` the straight reach
    after each bone (the paper's b), `guard` the fold guard radii, `fallbacks[i]`
    bone i's tie-breaker axis (perpendicular to it; indexed lazily), `fold` the
    cos and sin of `fold_angle`, `blend` the smooth-fold widths (see
    fold_blend) or None for the paper's sharp fold. The accumulated
    quaternion q after joint i is bone i's output rotation: inherited from the
    parents, then the minimal swing onto its new direction.

    `carry` (solving a sequence): bones that end up collinear with their
    parent, straight at the target or folded away from it, share the parent's
    direction tuple. When the next pass finds a bone sharing its parent's
    direction and the parent straight or folded again, the bone's current
    direction is the parent's new one, so it needs no swing while it does the
    same: a long chain costs O(1) per such bone instead of the full step.

    `keep` (a tree's segments, solvers.triangulation.tree; not with `carry`): per bone, its
    start's shape (`start_shape`), or None. Where the paper's triangle takes the rest of the
    chain at its full length b (or the smooth fold's blended b, or a + c for the 180° fold), the
    rest takes the extent between its inner hole and b that changes this joint's angle to the
    target line and the next joint's bend least (`least_turn_span`): a chain already at its
    target stays, one near it moves little, and a straight rest stays straight (the paper's).

    `chords` (with `keep`): per bone, the start's vector from its joint to the tip (None for the
    last bone). Where the joint bends by the law of cosines, it first turns the rest as it is
    (carried by the joints above) by the shortest arc taking that chord onto the target line, then
    bends from there in the plane of that turned bone and the target: the rest keeps its shape and
    its own joints turn only for the change in its extent. The paper's minimal swing of the bone
    alone leaves the rest's bend plane wherever it swung, and each joint below turns again to fix
    it: on a lone arm (bench: the metarig's, random FK targets) the shape-keeping pass turned
    1.28x the Jacobian's total angle without the chords and 0.99x with them.
    """
    cos_fold, sin_fold = fold
    tx, ty, tz = target
    px, py, pz = root
    out = [root]
    new_dirs = []
    rots = []
    qw, qx, qy, qz = 1.0, 0.0, 0.0, 0.0  # rotation inherited from the parents
    axis = None  # last joint's rotation axis (§3.1.1)
    straight = False
    kind, shared = 0, None  # with carry: the parent went straight (1) or folded (2) along `shared`
    c = folds = 0.0
    for i, a in enumerate(lengths):
        b = reach[i]
        if kind == 1 and dirs[i] is dirs[i - 1] and dirs[-1] is dirs[i]:
            # The rest of the chain was one straight run last pass (a run's tuple
            # is made once, so the last bone sharing it means all between do).
            rest = len(lengths) - i
            rots += [rots[-1]] * rest
            new_dirs += [shared] * rest
            sx, sy, sz = shared
            out += [(px + s * sx, py + s * sy, pz + s * sz) for s in accumulate(lengths[i:])]
            px, py, pz = out[-1]
            break
        if kind and dirs[i] is dirs[i - 1]:
            if kind == 2:  # the parent folded straight away from the target
                c += lengths[i - 1]
                wb = 0.0 if blend is None else blend[i]
                folds = b > a and ((a + c - b <= -wb) if wb > 0.0 else (c <= b - a + band))
            if kind == 1 or folds:
                rots.append(rots[-1])
                new_dirs.append(shared)
                px, py, pz = px + a * shared[0], py + a * shared[1], pz + a * shared[2]
                out.append((px, py, pz))
                continue
        # Current direction of bone i: its input direction turned by its parents.
        ax, ay, az = dirs[i]
        if qx or qy or qz:  # q is exactly the identity until a joint turns (the root's parents never do)
            ux, uy, uz = 2.0 * (qy * az - qz * ay), 2.0 * (qz * ax - qx * az), 2.0 * (qx * ay - qy * ax)
            ax, ay, az = (
                ax + qw * ux + qy * uz - qz * uy,
                ay + qw * uy + qz * ux - qx * uz,
                az + qw * uz + qx * uy - qy * ux,
            )
        if not straight:
            cx, cy, cz = tx - px, ty - py, tz - pz
            c = math.sqrt(cx * cx + cy * cy + cz * cz)
            # Full triangle formed, or out of reach: this bone and all after it
            # point straight at the target (§3.1.2, §3.1.3).
            straight = c >= a + b - band
            if c > band:
                cx, cy, cz = cx / c, cy / c, cz / c
        folded = False
        if straight:
            nx, ny, nz = shared if kind == 1 else (cx, cy, cz)
        elif c <= band:
            nx, ny, nz = ax, ay, az  # target on this joint: any direction serves
        elif c <= abs(a - b) + band and a > b:
            nx, ny, nz = cx, cy, cz  # too close and unreachable: point at it
        else:
            wb = 0.0 if blend is None else blend[i]
            if wb > 0.0 and -wb < a + c - b < wb:
                side = blended_reach(a, b, c, wb)
                cos_d, sin_d = law_of_cosines(a, side, c, math.sqrt)
            elif (a + c - b <= -wb) if wb > 0.0 else (c <= abs(a - b) + band):
                # Fold (paper: delta_b = 180°). A smaller fold angle must still
                # leave the next joint outside the rest's unreachable hole.
                cos_d, sin_d = cos_fold, sin_fold
                folded = fold_angle == 180.0
                side = a + c if folded else -1.0  # (a narrower fold keeps the paper's angle)
                if fold_angle != 180.0:
                    cos_r, sin_r = law_of_cosines(a, guard[i], c, math.sqrt)
                    if cos_r < cos_d:
                        cos_d, sin_d = cos_r, sin_r
            else:
                side = b
                cos_d, sin_d = law_of_cosines(a, b, c, math.sqrt)  # eq. 5
            if keep is not None and keep[i] is not None and side > 0.0:
                # The rest's extent that turns this joint and the next least, up to the paper's
                # side (the search's top, so the two agree where the case changes: no pop).
                span = least_turn_span(a, c, max(abs(a - c), keep[i][1]), side, keep[i])
                if span < side:
                    cos_d, sin_d = law_of_cosines(a, span, c, math.sqrt)
                    folded = False
            q = (qw, qx, qy, qz)
            nx, ny, nz = _bent((ax, ay, az), (cx, cy, cz), cos_d, sin_d, axis, fallbacks, i, q)
            if chords is not None and i + 1 < len(chords) and c > band:
                led = _led(
                    q, (ax, ay, az), (nx, ny, nz), chords, i, (px, py, pz), a, target, (cx, cy, cz), cos_d, sin_d
                )
                if led is not None:
                    lead, (ax, ay, az), (nx, ny, nz) = led
                    qw, qx, qy, qz = floats.multiply(lead, q)
            if folded and kind == 2:
                nx, ny, nz = shared  # folded after a folded parent: exactly its direction
        # Children inherit the swing a -> n (eq. 7's axis a x c), composed onto q.
        sx, sy, sz = ay * nz - az * ny, az * nx - ax * nz, ax * ny - ay * nx
        dot = ax * nx + ay * ny + az * nz
        sn = math.sqrt(sx * sx + sy * sy + sz * sz)
        if sn > AXIS_EPS:
            axis = (sx / sn, sy / sn, sz / sn)
        if dot >= 0.0:  # (1 + a.n, a x n) is accurate here
            sw = 1.0 + dot
            norm = math.sqrt(sw * sw + sn * sn)
            sw, sx, sy, sz = sw / norm, sx / norm, sy / norm, sz / norm
        else:
            q = (qw, qx, qy, qz)
            sw, sx, sy, sz = _obtuse_swing((ax, ay, az), (nx, ny, nz), (sx, sy, sz), sn, dot, q, fallbacks, i)
        qw, qx, qy, qz = (
            sw * qw - sx * qx - sy * qy - sz * qz,
            sw * qx + sx * qw + sy * qz - sz * qy,
            sw * qy - sx * qz + sy * qw + sz * qx,
            sw * qz + sx * qy - sy * qx + sz * qw,
        )
        rots.append((qw, qx, qy, qz))
        px, py, pz = px + a * nx, py + a * ny, pz + a * nz
        out.append((px, py, pz))
        if carry:  # (one solve has no use for the new directions)
            if kind == 1 or (kind == 2 and folded):
                new_dirs.append(shared)  # the parent's own tuple: see `carry`
            else:
                new_dirs.append((nx, ny, nz))
            kind = 1 if straight else 2 if folded else 0
            shared = new_dirs[-1] if kind else None
    return out, rots, new_dirs


def _bent(a: tuple, c: tuple, cos_d: float, sin_d: float, axis, fallbacks, i: int, q: tuple) -> tuple:
    """Bone i's new unit direction at angle (cos_d, sin_d) from the unit target line `c`, in the
    plane of c and its current direction `a` (on a's side)."""
    ax, ay, az = a
    cx, cy, cz = c
    # Unit vector in the bend plane, perpendicular to c, on a's side.
    dot = ax * cx + ay * cy + az * cz
    wx, wy, wz = ax - dot * cx, ay - dot * cy, az - dot * cz
    # Project twice: with a nearly (anti)parallel to c the first pass
    # leaves rounding noise along c that is large next to |w|.
    dot = wx * cx + wy * cy + wz * cz
    wx, wy, wz = wx - dot * cx, wy - dot * cy, wz - dot * cz
    wn = math.sqrt(wx * wx + wy * wy + wz * wz)
    if wn <= 1e-9:
        wx, wy, wz = _undefined_plane(axis, fallbacks, i, q, c)
        wn = 1.0
    nx, ny, nz = cos_d * cx + sin_d * wx / wn, cos_d * cy + sin_d * wy / wn, cos_d * cz + sin_d * wz / wn
    # w comes from nearly parallel vectors when a is close to c:
    # renormalise so the bone length stays exact.
    nn = math.sqrt(nx * nx + ny * ny + nz * nz)
    return nx / nn, ny / nn, nz / nn


def _led(q: tuple, a: tuple, n: tuple, chords: tuple, i: int, joint: tuple, length: float, target, c, cos_d, sin_d):
    """(the lead, the bone's led direction, its new direction) where bending after the lead turns
    less than bending alone; None where it does not. The lead is the shortest arc taking the rest's
    chord (joint to tip, carried by q) onto the target line `c`: the rest keeps its shape. Each way
    is costed as one_pass's measure would (eq. 3): the joint's whole turn plus the turn still left
    to the rest (its next joint's chord against the line from there to the target).
    (The shortest arcs, rotations and products written out: a bake's frame calls this about twice,
    and the small helpers' calls were half its time.)"""
    turned = q[1] or q[2] or q[3]
    hx, hy, hz = _rotate(q, chords[i]) if turned else chords[i]
    hn = math.sqrt(hx * hx + hy * hy + hz * hz)
    hx, hy, hz = hx / hn, hy / hn, hz / hn
    cx, cy, cz = c
    dot = hx * cx + hy * cy + hz * cz  # lead = _swing(chord / |chord|, c)
    if dot <= -0.999:
        return None
    w, x, y, z = 1.0 + dot, hy * cz - hz * cy, hz * cx - hx * cz, hx * cy - hy * cx
    norm = math.sqrt(w * w + x * x + y * y + z * z)
    lw, lx, ly, lz = w / norm, x / norm, y / norm, z / norm
    ax, ay, az = a  # led = _rotate(lead, a)
    ux, uy, uz = 2.0 * (ly * az - lz * ay), 2.0 * (lz * ax - lx * az), 2.0 * (lx * ay - ly * ax)
    ex, ey, ez = ax + lw * ux + ly * uz - lz * uy, ay + lw * uy + lz * ux - lx * uz, az + lw * uz + lx * uy - ly * ux
    dot = ex * cx + ey * cy + ez * cz  # _off_line(led, c)
    wx, wy, wz = ex - dot * cx, ey - dot * cy, ez - dot * cz
    if not wx * wx + wy * wy + wz * wz > 1e-18:
        return None
    led = (ex, ey, ez)
    bent = bx, by, bz = _bent(led, c, cos_d, sin_d, None, None, i, q)
    nx, ny, nz = n
    dot = ax * nx + ay * ny + az * nz  # plain = _swing(a, n)
    if dot <= -0.999:
        return None
    w, x, y, z = 1.0 + dot, ay * nz - az * ny, az * nx - ax * nz, ax * ny - ay * nx
    norm = math.sqrt(w * w + x * x + y * y + z * z)
    pw, px, py, pz = w / norm, x / norm, y / norm, z / norm
    dot = ex * bx + ey * by + ez * bz  # turn = _swing(led, bent)
    if dot <= -0.999:
        return None
    w, x, y, z = 1.0 + dot, ey * bz - ez * by, ez * bx - ex * bz, ex * by - ey * bx
    norm = math.sqrt(w * w + x * x + y * y + z * z)
    tw, tx, ty, tz = w / norm, x / norm, y / norm, z / norm
    # both = floats.multiply(turn, lead)
    ow = tw * lw - tx * lx - ty * ly - tz * lz
    ox = tw * lx + tx * lw + ty * lz - tz * ly
    oy = tw * ly - tx * lz + ty * lw + tz * lx
    oz = tw * lz + tx * ly - ty * lx + tz * lw
    rest = _rotate(q, chords[i + 1]) if turned else chords[i + 1]
    atan2, sqrt = math.atan2, math.sqrt  # each way's turn angle, then what it leaves the rest
    both = 2.0 * atan2(sqrt(ox * ox + oy * oy + oz * oz), abs(ow))
    both += _left((ow, ox, oy, oz), rest, joint, length, bent, target)
    alone = 2.0 * atan2(sqrt(px * px + py * py + pz * pz), abs(pw))
    alone += _left((pw, px, py, pz), rest, joint, length, n, target)
    if both < alone:
        return (lw, lx, ly, lz), led, bent
    return None


def _left(turn: tuple, rest: tuple, joint: tuple, length: float, n: tuple, target: tuple) -> float:
    """_led's turn still left to the rest: the angle between its chord `rest` turned by `turn` and
    the line from its joint (`length` along unit `n` from `joint`) to the target."""
    qw, qx, qy, qz = turn  # (_rotate(turn, rest) written out)
    rx, ry, rz = rest
    ux, uy, uz = 2.0 * (qy * rz - qz * ry), 2.0 * (qz * rx - qx * rz), 2.0 * (qx * ry - qy * rx)
    ux, uy, uz = rx + qw * ux + qy * uz - qz * uy, ry + qw * uy + qz * ux - qx * uz, rz + qw * uz + qx * uy - qy * ux
    vx = target[0] - (joint[0] + length * n[0])
    vy = target[1] - (joint[1] + length * n[1])
    vz = target[2] - (joint[2] + length * n[2])
    dot = ux * vx + uy * vy + uz * vz
    nu = math.sqrt((ux * ux + uy * uy + uz * uz) * (vx * vx + vy * vy + vz * vz))
    if not nu > 0.0:
        return 0.0
    cos = dot / nu
    return math.acos(-1.0 if cos < -1.0 else 1.0 if cos > 1.0 else cos)


def _rotate(q: tuple, v: tuple) -> tuple:
    qw, qx, qy, qz = q
    vx, vy, vz = v
    ux, uy, uz = 2.0 * (qy * vz - qz * vy), 2.0 * (qz * vx - qx * vz), 2.0 * (qx * vy - qy * vx)
    return (vx + qw * ux + qy * uz - qz * uy, vy + qw * uy + qz * ux - qx * uz, vz + qw * uz + qx * uy - qy * ux)


def _obtuse_swing(a: tuple, n: tuple, cross: tuple, sn: float, dot: float, q: tuple, fallbacks, i: int) -> tuple:
    """Swing quaternion a -> n past 90°, exact to rounding (see quat.swing).
    `fallbacks[i]` (bone i's tie-breaker axis, turned by q) is read only for a half turn."""
    ax, ay, az = a
    if sn > AXIS_EPS:
        # 1 + a.n cancels here: the angle from atan2, the axis kept normal to a.
        rx, ry, rz = cross[0] / sn, cross[1] / sn, cross[2] / sn
        along = rx * ax + ry * ay + rz * az
        rx, ry, rz = rx - along * ax, ry - along * ay, rz - along * az
        half = 0.5 * math.atan2(sn, dot)
        s = math.sin(half) / math.sqrt(rx * rx + ry * ry + rz * rz)
        return math.cos(half), s * rx, s * ry, s * rz
    # Nearly a half turn: a x n is noise. Turn half way round the bone's own
    # X axis (fallback), then the small swing from -a onto n.
    nx, ny, nz = n
    hw, hx, hy, hz = 1.0 - dot, az * ny - ay * nz, ax * nz - az * nx, ay * nx - ax * ny
    norm = math.sqrt(hw * hw + hx * hx + hy * hy + hz * hz)
    hw, hx, hy, hz = hw / norm, hx / norm, hy / norm, hz / norm
    fx, fy, fz = _rotate(q, fallbacks[i])
    return (
        -hx * fx - hy * fy - hz * fz,
        hw * fx + hy * fz - hz * fy,
        hw * fy - hx * fz + hz * fx,
        hw * fz + hx * fy - hy * fx,
    )


def _undefined_plane(axis: tuple | None, fallbacks, i: int, q: tuple, c: tuple) -> tuple:
    """§3.1.1: bone and target vector are parallel, so a x c is undefined.
    Turn about the last joint's axis, else bone i's own (inherited) frame X
    axis `fallbacks[i]` (read only then); returns the unit bend direction
    r x c, perpendicular to c. (Written out: a pole's pre-turn puts every
    target on a straight chain's line, so a pole solve comes here.)"""
    cx, cy, cz = c
    if axis is not None:
        rx, ry, rz = axis
        wx, wy, wz = ry * cz - rz * cy, rz * cx - rx * cz, rx * cy - ry * cx
        wn = math.sqrt(wx * wx + wy * wy + wz * wz)
        if wn > 1e-9:
            return wx / wn, wy / wn, wz / wn
    fallback = fallbacks[i]
    for rx, ry, rz in (_rotate(q, fallback), fallback):
        wx, wy, wz = ry * cz - rz * cy, rz * cx - rx * cz, rx * cy - ry * cx
        wn = math.sqrt(wx * wx + wy * wy + wz * wz)
        if wn > 1e-9:
            return wx / wn, wy / wn, wz / wn
    (px, py, pz) = quat.any_perpendicular(np.array(c)).tolist()
    return px, py, pz
