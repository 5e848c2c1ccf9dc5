"""A planted foot's pitch at push-off (issue 21 item 5, no new pop), numpy + stdlib only.

A held tip with the foot's world pitch as captured fixes the ankle, so at push-off (the heel rising
while the tip stays down) the leg's whole configuration is set by where the hips are: where the
hold keeps the ankle farther from the hip than the capture has it (the retarget's float taken
out, the capture's tip rolling forward), the knee cannot flex as fast as the capture's and the
ankle, or the ease after the hold, turns faster than anything in the capture. The one freedom
left that moves neither the held tip nor the hips is the foot's pitch about the held tip.

`pitch_path` chooses it on a few knots over the hold's last frames: a pitch per knot from a grid
of angles, by dynamic programming over the knots, minimising the largest joint angular speed
between consecutive knots (from the knot before, at the captured pitch, to the frames the ease
after the hold covers), and among the paths that stay under `cap`, the one that deviates least
from the capture (the summed |angle|). Bounded by the grid; the caller interpolates between knots.
"""

from __future__ import annotations

import numpy as np

from . import quat


def largest_joint(values: np.ndarray) -> np.ndarray:
    """(...,) the largest of (..., n) over its last axis (n joints): np.max(axis=-1)'s values (a
    maximum is exact; NaN wins either way) by np.maximum joint after joint, where numpy's
    reduction over a short inner axis costs several times more."""
    values = np.asarray(values)
    if values.shape[-1] == 0:
        raise ValueError("largest_joint: no joints")
    out = values[..., 0].copy()
    for j in range(1, values.shape[-1]):
        np.maximum(out, values[..., j], out=out)
    return out


def _speeds(a: np.ndarray, b: np.ndarray, seconds: float) -> np.ndarray:
    """Largest angle between rotations `a` (..., n, 4) and `b` (..., n, 4) over their n joints,
    divided by `seconds`."""
    return largest_joint(quat.angles_between_cheaply(a, b)) / seconds


def pitch_path(
    candidates: np.ndarray,
    before: np.ndarray,
    after: np.ndarray,
    angles: np.ndarray,
    seconds: float,
    cap: float,
    allowed: np.ndarray | None = None,
    stride: int = 1,
) -> tuple[np.ndarray, float]:
    """(the index into `angles` per knot (K,), the path's largest joint speed, no lower than `cap`).

    `candidates` (G, K, n, 4): the leg's n local rotations (unit quaternions) at K knots for each
    of the G pitch `angles`; `before` (n, 4): at the knot before the first (the captured pitch);
    `after` (G, P, n, 4): on P frames after the last knot, given the last knot's angle (the ease
    after the hold), P may be 0, measured over every `stride` frames (the knots' spacing);
    `seconds`: the time between knots; `cap`: the joint speed (radians per
    second) below which speeds are not traded for deviation; `allowed` (G, K) bool: candidates
    that may be used (e.g. the heel above the ground)."""
    return pitch_paths([(candidates, before, after, cap, allowed)], angles, seconds, stride)[0]


def pitch_paths(
    jobs: list[tuple], angles: np.ndarray, seconds: float, stride: int = 1
) -> list[tuple[np.ndarray, float]]:
    """`pitch_path` of several holds, each job (candidates, before, after, cap, allowed) as its
    arguments (the angles, `seconds` and `stride` shared): the holds with as many knots searched
    in one pass (each hold's figures its own: the same paths as one by one, for one call's fixed
    cost)."""
    angles = np.asarray(angles, dtype=float)
    out: list = [None] * len(jobs)
    groups: dict[tuple, list[int]] = {}
    for j, (candidates, *_) in enumerate(jobs):
        shape = np.shape(candidates)
        count, knots = shape[:2]
        if angles.shape != (count,) or knots == 0:
            raise ValueError(f"pitch angles must be one per candidate ({count}), with knots, got {angles.shape}")
        groups.setdefault(shape, []).append(j)
    for members in groups.values():
        for j, result in zip(members, _paths([jobs[j] for j in members], angles, seconds, stride), strict=True):
            out[j] = result
    return out


def _paths(jobs: list[tuple], angles: np.ndarray, seconds: float, stride: int) -> list[tuple[np.ndarray, float]]:
    """pitch_paths of holds alike in shape (H of them, G candidates, K knots, n joints)."""
    candidates = np.stack([np.asarray(job[0], dtype=float) for job in jobs])  # (H, G, K, n, 4)
    holds, count, knots = candidates.shape[:3]
    before = np.stack([np.asarray(job[1], dtype=float) for job in jobs])  # (H, n, 4)
    cap = np.array([float(job[3]) for job in jobs])[:, None]  # (H, 1)
    deviation = np.abs(angles)
    banned = np.zeros((holds, count, knots), dtype=bool)
    for h, job in enumerate(jobs):
        if job[4] is not None:
            banned[h] = ~np.asarray(job[4], dtype=bool)
    # Primary: the largest speed so far (never below cap); secondary: the summed deviation.
    worst = np.maximum(_speeds(before[:, None], candidates[:, :, 0], seconds), cap)  # (H, G)
    worst[banned[:, :, 0]] = np.inf
    spent = np.broadcast_to(deviation, (holds, count)).copy()
    back = np.empty((knots, holds, count), dtype=int)
    rows = np.arange(holds)[:, None]
    # Every step's speeds at once, (hold, from, to, knot - 1): the same figures as knot by knot.
    steps = _speeds(candidates[:, :, None, :-1], candidates[:, None, :, 1:], seconds)
    for k in range(1, knots):
        step = steps[..., k - 1]
        total = np.maximum(np.maximum(worst[:, :, None], step), cap[:, :, None])
        best = total.min(axis=1)
        # Among the predecessors as good as the best (exact ties: all under cap are cap), the least deviation.
        tied = np.where(total <= best[:, None, :], spent[:, :, None], np.inf)
        back[k] = tied.argmin(axis=1)
        worst = best
        worst[banned[:, :, k]] = np.inf
        spent = spent[rows, back[k]] + deviation
    # The ease after each hold's last knot (P frames, P >= stride): its steps, every hold's at once.
    pairs, spans = [], []
    for h, job in enumerate(jobs):
        after = np.asarray(job[2], dtype=float)
        if after.shape[1] >= stride:
            chain = np.concatenate([candidates[h, :, -1:], after], axis=1)
            pairs.append((chain[:, :-stride], chain[:, stride:]))
            spans.append((h, after.shape[1] + 1 - stride))
    if pairs:
        speeds = _speeds(
            np.concatenate([a for a, _ in pairs], axis=1), np.concatenate([b for _, b in pairs], axis=1), seconds
        )
        starts = np.cumsum([0] + [n for _, n in spans[:-1]])
        tails = np.maximum.reduceat(speeds, starts, axis=1)  # (G, holds with an ease)
        eased = [h for h, _ in spans]
        worst[eased] = np.maximum(worst[eased], tails.T)
    final = np.maximum(worst, cap)
    last = np.where(final <= final.min(axis=1, keepdims=True), spent, np.inf).argmin(axis=1)  # (H,)
    path = np.empty((holds, knots), dtype=int)
    path[:, -1] = last
    for k in range(knots - 1, 0, -1):
        path[:, k - 1] = back[k][np.arange(holds), path[:, k]]
    picked = worst[np.arange(holds), last]
    return [(path[h], float(picked[h])) for h in range(holds)]


def pitch_turns(axes: np.ndarray, angles: np.ndarray) -> np.ndarray:
    """(F, 4) world turns by `angles` (F,) radians about unit `axes` (F, 3)."""
    return quat.from_rotation_vector(np.asarray(axes, dtype=float) * np.asarray(angles, dtype=float)[:, None])


def pitch_axes(heel: np.ndarray, tip: np.ndarray) -> np.ndarray:
    """(F, 3) the foot's pitch axis per frame (world, z up): across the foot, level, so that a
    positive angle lifts the heel about the tip (the identity's axis where the foot is vertical)."""
    foot = np.asarray(tip, dtype=float) - np.asarray(heel, dtype=float)
    axis = np.stack([-foot[:, 1], foot[:, 0], np.zeros(len(foot))], axis=1)  # up x foot
    length = np.linalg.norm(axis, axis=1, keepdims=True)
    return np.divide(axis, length, out=np.zeros_like(axis), where=length > 0.0)
