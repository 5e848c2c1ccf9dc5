"""Quaternions to Euler channel values, each continuous with the one before, as mathutils'
`Quaternion.to_euler(order, euler_compat)` gives them frame after frame, on whole columns.

A planted bake keys thousands of frames: one mathutils call each (~1 us) was a good part of its
time. mathutils works in 32-bit floats: the quaternion normalised, its matrix figured in doubles and
rounded, the C library's `atan2f` and `hypotf`, then the compatibility step (each angle wrapped
near the frame before's) and the choice between the two Euler solutions. numpy's float32 arithmetic
is the same IEEE arithmetic and its float32 `arctan2` and `hypot` call the C library's where numpy
has no vector code of its own for them: `reason` compares the two on this machine once (the callers
convert frame by frame where they differ).

Each frame's angles depend on the frame before's. A smooth series (every frame within a quarter
turn of the one before, on one of the two solutions: a capture's legs) is its solution's angles
unwrapped, proved by one pass of the compatibility step (`_smooth`); any other is the fixed point of
the whole recurrence, reached from a guess by whole-column passes until a pass changes no bit (a
pass makes exact at least the first row it changed, so the fixed point is the frame-by-frame
result; `_settled`). A series not settled after `PASSES` (a chaotic one) is left to the caller.
"""

from __future__ import annotations

import numpy as np

# Blender's rotation order table: the axes (i, j, k) and whether the permutation is odd.
AXES = {
    "XYZ": (0, 1, 2, 0),
    "XZY": (0, 2, 1, 1),
    "YXZ": (1, 0, 2, 1),
    "YZX": (1, 2, 0, 0),
    "ZXY": (2, 0, 1, 0),
    "ZYX": (2, 1, 0, 1),
}
PASSES = 8

_F = np.float32
_PI = _F(np.pi)  # float(M_PI)
_TWO_PI = _F(2.0) * _F(np.pi)  # 2.0f * float(M_PI)
_HYPOT_EPSILON = _F(0.0000375)  # EULER_HYPOT_EPSILON, compared as a float
_SQRT2 = 2.0**0.5  # M_SQRT2


def _solutions(mode: str, quats: np.ndarray, which: tuple[int, ...] = (0, 1)) -> np.ndarray:
    """(len(which), 3, n) float32: the Euler solutions `which` (0 the first, 1 the second) of each
    quaternion (normalize_qt_qt, quat_to_mat3, mat3_normalized_to_eulo2), every operation in
    Blender's order and precision. (Arrays here are
    component by row, frames along it: numpy is slow on short last axes.)"""
    q = quats.T.astype(_F)  # (4, n)
    dot = q[0] * q[0]
    dot += q[1] * q[1]
    dot += q[2] * q[2]
    dot += q[3] * q[3]
    length = np.sqrt(dot)
    zero = length == 0.0
    q *= _F(1.0) / np.where(zero, _F(1.0), length)
    if zero.any():  # normalize_qt's unit for a zero quaternion: (0, 1, 0, 0)
        q[:, zero] = np.array([[0.0], [1.0], [0.0], [0.0]], dtype=_F)
    d = q.astype(float) * _SQRT2

    def entry(row: int, col: int) -> np.ndarray:  # quat_to_mat3's m[row][col], as a float
        if row == col:
            a, b = ((2, 3), (1, 3), (1, 2))[row]
            return ((1.0 - d[a] * d[a]) - d[b] * d[b]).astype(_F)
        lo, hi = min(row, col), max(row, col)
        w = d[0] * d[4 - lo - hi]  # qdc for (0, 1), qdb for (0, 2), qda for (1, 2)
        p = d[lo + 1] * d[hi + 1]  # qab, qac, qbc
        # m[0][1] = qdc + qab, m[1][2] = qda + qbc, m[2][0] = qdb + qac; the others -w + p
        return (w + p if (row, col) in ((0, 1), (1, 2), (2, 0)) else -w + p).astype(_F)

    i, j, k, parity = AXES[mode]
    ii, ij, ik, jk, kk = entry(i, i), entry(i, j), entry(i, k), entry(j, k), entry(k, k)
    cy = np.hypot(ii, ij)
    ik = -ik  # (both solutions' middle angle is atan2f(-m[i][k], +-cy))
    y = np.stack([row for w in which for row in ((jk, ik, ij), (-jk, ik, -ij))[w]])
    x = np.stack([row for w in which for row in ((kk, cy, ii), (-kk, -cy, -ii))[w]])
    angles = np.arctan2(y, x)  # (3 per solution, n): angles i, j, k of each solution asked for
    count = len(which)
    small = ~(cy > _HYPOT_EPSILON)
    if small.any():  # near gimbal lock: one solution, its last angle 0
        angles[0, small] = np.arctan2(-entry(k, j)[small], entry(j, j)[small])
        angles[1, small] = np.arctan2(ik[small], cy[small])
        angles[2, small] = 0.0
        for w in range(3, 3 * count, 3):  # the second solution: the first's
            angles[w : w + 3, small] = angles[:3, small]
    out = np.empty((count, 3, len(dot)), _F)
    out[:, (i, j, k)] = angles.reshape(count, 3, -1)
    if parity:
        np.negative(out, out=out)
    return out


def _wrapped(eul: np.ndarray, old: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """compatible_eul's first step: each angle of `eul` more than half a turn from `old`'s wrapped by
    whole turns toward it; (the angles, their difference from `old`)."""
    deul = eul - old
    up, down = deul > _PI, deul < -_PI
    if up.any() or down.any():
        eul = eul.copy()
        np.copyto(eul, eul - np.floor(deul / _TWO_PI + _F(0.5)) * _TWO_PI, where=up)
        np.copyto(eul, eul + np.floor(-deul / _TWO_PI + _F(0.5)) * _TWO_PI, where=down)
        deul = eul - old  # (unchanged angles: the same bits as before)
    return eul, deul


def _nearest(solutions: np.ndarray, old: np.ndarray) -> np.ndarray:
    """(3, n) the solution mat3_normalized_to_compatible_eulO gives against `old` (3, n): both made
    compatible with it (compatible_eul), the nearer taken (the first on a tie)."""
    eul, deul = _wrapped(solutions, old)
    size = np.abs(deul).astype(float)  # compared with the double M_PI and M_PI_2
    big, small = size > np.pi, size < np.pi / 2
    flip = np.empty_like(big)  # angle i beyond half a turn, j and k within a quarter
    flip[:, 0] = big[:, 0] & small[:, 1] & small[:, 2]
    flip[:, 1] = big[:, 1] & small[:, 2] & small[:, 0]
    flip[:, 2] = big[:, 2] & small[:, 0] & small[:, 1]
    if flip.any():
        eul = eul.copy()
        ahead = deul > 0.0
        np.copyto(eul, eul - _TWO_PI, where=flip & ahead)
        np.copyto(eul, eul + _TWO_PI, where=flip & ~ahead)
    gap = np.abs(eul - old)
    apart = (gap[:, 0] + gap[:, 1]) + gap[:, 2]  # (2, n)
    out = eul[0].copy()
    np.copyto(out, eul[1], where=apart[0] > apart[1])
    return out


def _guess(solutions: np.ndarray, firsts: np.ndarray, starts: np.ndarray, series_of: np.ndarray) -> np.ndarray:
    """(3, n) float32: a guess of the series, often its exact figures: which solution each row takes
    after each of the row before's (the nearer, every angle within half a turn: a two-state
    recurrence solved by counting), then the whole turns each row's angles are from the row before's."""
    wide = solutions.astype(float)
    before = np.empty_like(wide)
    before[..., 1:] = wide[..., :-1]
    before[..., starts] = firsts
    gap = wide[:, None] - before[None]  # (this row's solution, the row before's, 3, n)
    gap -= 2.0 * np.pi * np.round(gap / (2.0 * np.pi))
    np.abs(gap, out=gap)
    apart = (gap[:, :, 0] + gap[:, :, 1]) + gap[:, :, 2]
    after = apart[0] > apart[1]  # (2, n): the second taken, after the row before's first, second
    # Per row: the same solution after either (every series' first row), the same as the row
    # before's, or the other (the middle angle through +-90 degrees).
    same = after[0] == after[1]
    swaps = np.cumsum(after[0] & ~after[1])
    last = np.maximum.accumulate(np.where(same, np.arange(len(same)), 0))
    takes = after[0, last] ^ ((swaps - swaps[last]) % 2 == 1)
    chosen = solutions[0].copy()
    np.copyto(chosen, solutions[1], where=takes)
    previous = np.empty_like(wide[0])
    previous[:, 1:] = chosen[:, :-1]
    previous[:, starts] = firsts
    turns = np.round((chosen - previous) / (2.0 * np.pi))
    total = np.cumsum(turns, axis=1)
    total -= (total[:, starts] - turns[:, starts])[:, series_of]  # each series' own turns from its start
    return chosen - total.astype(_F) * _TWO_PI  # compatible_eul's own arithmetic: one wrap of n turns


def _smooth(one: np.ndarray, first: np.ndarray, starts: np.ndarray, series_of: np.ndarray) -> np.ndarray | None:
    """(3, n) float32 the series where every frame takes solution `one` (either), at most a quarter
    turn (summed over its angles) from the frame before's: there the other solution is more than
    three quarters of a turn away (it is each angle's half turn, or pi minus the middle one; near
    gimbal lock the same figures) and no angle is flipped, so compatible_eul's wraps of `one` are
    the whole answer. None where a frame is not such (the whole recurrence is then solved:
    `_settled`)."""
    wide = one.astype(float)
    previous = np.empty_like(wide)
    previous[:, 1:] = wide[:, :-1]
    previous[:, starts] = first
    turns = np.round((wide - previous) / (2.0 * np.pi))
    total = np.cumsum(turns, axis=1)
    total -= (total[:, starts] - turns[:, starts])[:, series_of]  # each series' own turns from its start
    values = one - total.astype(_F) * _TWO_PI  # compatible_eul's own arithmetic: one wrap of n turns
    # One pass of compatible_eul's wraps against the guess's frame before: the same bits, and each
    # frame near it, prove the guess the frame-by-frame result.
    old = np.empty_like(values)
    old[:, 1:] = values[:, :-1]
    old[:, starts] = first
    eul, deul = _wrapped(one, old)
    gap = np.abs(deul)
    near = (gap[0] + gap[1]) + gap[2] < _F(np.pi / 2)
    if not near.all() or not np.array_equal(eul.view(np.int32), values.view(np.int32)):
        return None
    return values


def _settled(mode: str, quats: np.ndarray, first: np.ndarray, starts: np.ndarray, series_of) -> np.ndarray | None:
    """(3, n) float32 the series by the fixed point of the whole recurrence (both solutions)."""
    solutions = _solutions(mode, quats)
    values = _guess(solutions, first, starts, series_of)
    old = np.empty_like(values)
    for _ in range(PASSES):
        old[:, 1:] = values[:, :-1]
        old[:, starts] = first
        new = _nearest(solutions, old)
        if np.array_equal(new.view(np.int32), values.view(np.int32)):
            return new
        values = new
    return None


def series(mode: str, quats: np.ndarray, firsts: np.ndarray, starts: np.ndarray) -> np.ndarray | None:
    """(n, 3) float64 Euler values in `mode` of quaternions `quats` (n, 4), in series: the rows from
    each of `starts` (ascending, the first 0) to the next are one series, its first row compatible
    with its row of `firsts` (s, 3), each other with the row before. None where a value is not
    finite or the series has not settled after `PASSES` passes (the caller converts frame by frame)."""
    quats = np.asarray(quats, dtype=float)
    if not len(quats) or not np.all(np.isfinite(quats)):
        return None  # (NaN's figures left to mathutils)
    starts = np.asarray(starts)
    first = np.asarray(firsts, dtype=float).T.astype(_F)  # (3, s)
    head = np.zeros(len(quats), dtype=bool)
    head[starts] = True
    series_of = np.cumsum(head) - 1
    values = None
    with np.errstate(all="ignore"):  # (huge or non-finite `firsts`: not settled, or not finite: None)
        for which in (0, 1):  # (a smooth series on either solution: its three arctangents alone)
            values = _smooth(_solutions(mode, quats, (which,))[0], first, starts, series_of)
            if values is not None:
                break
        if values is None:
            values = _settled(mode, quats, first, starts, series_of)
    if values is None or not np.all(np.isfinite(values)):
        return None
    return values.T.astype(float)


_REASON: list[str] = []  # the machine's answer to `reason`, found once


def reason() -> str:
    """Why `series` cannot stand in for mathutils on this machine ('' when it can): it is compared
    with `Quaternion.to_euler` once, on every order, over smooth, spinning, near-gimbal and random
    quaternions (numpy's float32 arctan2 is its own vector code on some processors: not the C
    library's `atan2f` that mathutils calls)."""
    if not _REASON:
        _REASON.append(_compare())
    return _REASON[0]


def _compare() -> str:
    from mathutils import Euler, Quaternion

    rng = np.random.default_rng(0)
    n = 240
    turns = np.cumsum(rng.normal(0.0, 0.3, (n, 3)), axis=0)
    turns[n // 2 : n // 2 + 40, 1] = np.pi / 2 + rng.normal(0.0, 1e-4, 40)  # near gimbal lock
    for mode in AXES:
        quats = np.array([Euler(t, mode).to_quaternion()[:] for t in turns.tolist()])
        quats[: n // 4] = rng.normal(size=(n // 4, 4))  # any rotation
        first = rng.normal(0.0, 4.0, 3)
        want, prev = [], Euler(first.tolist(), mode)
        for q in quats.tolist():
            prev = Quaternion(q).to_euler(mode, prev)
            want.append(prev[:])
        got = series(mode, quats, first[None], np.array([0]))
        if got is None or not np.array_equal(got, np.array(want)):
            return f"numpy's float32 conversion differs from mathutils' here (order {mode})"
    return ""
