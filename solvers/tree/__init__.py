"""Shared helpers of the tree kernels (several effectors on one `Skeleton`, see solvers.skeleton).

Plain Python floats (tuples) throughout: a character's tree is 10-40 bones, where numpy's
per-call cost on (4,) arrays dominates. The kernels (`fabrik`, `ccd`, and the Jacobian's)
work on world frames and heads; `to_locals` turns solved frames back into local rotations.

- `moved_bones`: the bones some effector's branch holds (the others keep their input rotation).
- `forward`: world frames and heads of local rotations (Skeleton.forward on floats).
- `to_locals`: local rotations of solved world frames, the inverse of `forward`; a bone whose
  twist no goal decides takes only its solved direction, as the minimal swing from its input
  local rotation under its solved parent (what chain solvers give: no invented twist).
- `slerp`: between two orientations (orientation goals with a rotation weight).
- `best_rotation`: the rotation taking vectors a_k onto b_k best in weighted least squares
  (Wahba's problem), the nearest to no rotation where that is not unique.
"""

from __future__ import annotations

import math

import numpy as np

from ..chain import perpendicular
from ..kernels.floats import multiply, normalize4, rotate, swing, unit

IDENTITY = (1.0, 0.0, 0.0, 0.0)
X_AXIS = (1.0, 0.0, 0.0)
# Wahba: a pull toward no rotation this small (relative to the pairs' weight x size) picks,
# among equally good rotations (pairs all on one line), the smallest, and changes a well
# determined answer by about as little.
NEAREST = 1e-9


def conjugate(q: tuple) -> tuple:
    return (q[0], -q[1], -q[2], -q[3])


def moved_bones(skeleton, bones) -> list[int]:
    """Ascending: every bone on a branch from a root down to one of `bones`."""
    moved: set[int] = set()
    parents = skeleton.parents
    for b in bones:
        while b != -1 and b not in moved:
            moved.add(b)
            b = parents[b]
    return sorted(moved)


def rows(array: np.ndarray) -> list[tuple]:
    return [tuple(r) for r in np.asarray(array, dtype=float).tolist()]


def forward(skeleton, local: list[tuple], bones: list[int] | None = None, frames=None, heads=None):
    """(world frames, heads) as lists of tuples for local rotations `local` (tuples).

    With `bones` (ascending, each one's parent among them or in `frames`/`heads` already)
    only those are recomputed, in the given lists."""
    n = skeleton.n_bones
    frames = [None] * n if frames is None else frames
    heads = [None] * n if heads is None else heads
    parents, reference, offsets = skeleton.parents, _rows(skeleton, "reference"), _rows(skeleton, "offsets")
    base = tuple(skeleton.base_frame.tolist())
    for i in range(n) if bones is None else bones:
        p = parents[i]
        if p == -1:
            frames[i] = multiply(multiply(base, reference[i]), local[i])
            heads[i] = offsets[i]
        else:
            fp = frames[p]
            frames[i] = multiply(multiply(fp, reference[i]), local[i])
            hx, hy, hz = heads[p]
            ox, oy, oz = rotate(fp, offsets[i])
            heads[i] = (hx + ox, hy + oy, hz + oz)
    return frames, heads


def end_point(skeleton, frames: list[tuple], heads: list[tuple], bone: int) -> tuple:
    """Bone `bone`'s end point (head + length x its link)."""
    x, y, z = rotate(frames[bone], _rows(skeleton, "reach")[bone])
    hx, hy, hz = heads[bone]
    return (hx + x, hy + y, hz + z)


def to_locals(
    skeleton, local: np.ndarray, frames: list[tuple], bones: list[int], swing_only: set[int] | frozenset = frozenset()
) -> np.ndarray:
    """Local rotations (n, 4): `local` (the input) with the bones `bones` (ascending) given
    their solved world `frames` (a list over all bones; only `bones`' entries are read).

    A bone in `swing_only` keeps only its solved link direction: its frame is the minimal
    swing from its input local rotation under its solved parent onto that direction (pass the
    bones whose twist moves nothing a goal sees: every moved child head on the link, no
    orientation goal)."""
    out = np.array(local, dtype=float)
    n = skeleton.n_bones
    inputs = rows(local)
    parents, reference, links = skeleton.parents, _rows(skeleton, "reference"), _rows(skeleton, "links")
    base = tuple(skeleton.base_frame.tolist())
    solved = [None] * n
    wanted = set(bones)
    for i in range(n):
        p = parents[i]
        rest = multiply(base if p == -1 else solved[p], reference[i])
        if i not in wanted:
            solved[i] = multiply(rest, inputs[i])
            continue
        frame = frames[i]
        if i in swing_only:
            inherited = multiply(rest, inputs[i])
            have, want = rotate(inherited, links[i]), rotate(frame, links[i])
            frame = normalize4(multiply(swing(have, want, side(inherited, have)), inherited))
        solved[i] = frame
        out[i] = normalize4(multiply(conjugate(rest), frame))
    return out


def slerp(a: tuple, b: tuple, t: float) -> tuple:
    """Spherical interpolation of unit quaternions from a to b (the shorter way) by t."""
    dot = a[0] * b[0] + a[1] * b[1] + a[2] * b[2] + a[3] * b[3]
    if dot < 0.0:
        b, dot = (-b[0], -b[1], -b[2], -b[3]), -dot
    if t >= 1.0:
        return b
    if dot > 1.0 - 1e-12:
        s, u = 1.0 - t, t
    else:
        angle = math.acos(dot)
        sin = math.sin(angle)
        s, u = math.sin((1.0 - t) * angle) / sin, math.sin(t * angle) / sin
    return normalize4(tuple(s * x + u * y for x, y in zip(a, b, strict=True)))


def side(frame: tuple, direction: tuple) -> tuple:
    """The frame's X axis made perpendicular to unit `direction` (a swing's tie-breaker
    axis, as Chain.fallback_axes), else any perpendicular."""
    ax, ay, az = rotate(frame, X_AXIS)
    dx, dy, dz = direction
    along = ax * dx + ay * dy + az * dz
    v = unit((ax - along * dx, ay - along * dy, az - along * dz))
    if v == (0.0, 0.0, 0.0) or abs(along) > 1.0 - 1e-12:
        return perpendicular(direction)
    return v


def best_rotation(a: list[tuple], b: list[tuple], w: list[float]) -> tuple:
    """The unit quaternion R minimizing sum w_k |R a_k - b_k|^2 (equivalently maximizing
    sum w_k b_k . R a_k): one pair is the minimal swing of a onto b; several are Horn's
    eigenvector of the 4 x 4 profile matrix, with a pull of NEAREST (x the lightest weight's share)
    toward no rotation so that pairs along one line give the minimal swing too (no twist about
    that line)."""
    if len(a) == 1:
        ua, ub = unit(a[0]), unit(b[0])
        if ua == (0.0, 0.0, 0.0) or ub == (0.0, 0.0, 0.0):
            return IDENTITY
        return swing(ua, ub, perpendicular(ua))
    sxx = sxy = sxz = syx = syy = syz = szx = szy = szz = 0.0
    size = 0.0
    for (ax, ay, az), (bx, by, bz), wk in zip(a, b, w, strict=True):
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
    if not size > 0.0:
        return IDENTITY
    # Relative to the lightest pair: with ranked weights (solvers.skeleton.LEVEL) a pull scaled by
    # the heaviest would outweigh a lower level's pairs and freeze what a higher level leaves free.
    mu = NEAREST * size * min(w) / max(w)
    sxx, syy, szz = sxx + mu, syy + mu, szz + mu
    k = np.array(
        (
            (sxx + syy + szz, syz - szy, szx - sxz, sxy - syx),
            (syz - szy, sxx - syy - szz, sxy + syx, szx + sxz),
            (szx - sxz, sxy + syx, syy - sxx - szz, syz + szy),
            (sxy - syx, szx + sxz, syz + szy, szz - sxx - syy),
        )
    )
    q = np.linalg.eigh(k)[1][:, 3].tolist()
    if q[0] < 0.0:
        q = [-c for c in q]
    return normalize4(tuple(q))



def _rows(skeleton, name: str) -> list[tuple]:
    """The skeleton's arrays as lists of tuples, built once per skeleton (it is frozen)."""
    cache = skeleton.__dict__.get("_tree_rows")
    if cache is None:
        cache = {
            "reference": rows(skeleton.reference),
            "offsets": rows(skeleton.offsets),
            "links": rows(skeleton.links),
            "reach": rows(skeleton.lengths[:, None] * skeleton.links),
        }
        object.__setattr__(skeleton, "_tree_rows", cache)
    return cache[name]
