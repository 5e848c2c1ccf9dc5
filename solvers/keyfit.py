"""Key reduction by Bezier fitting: the fewest keys (and their handles) that reproduce
sampled values within a tolerance at every sampled frame.

A kept key keeps its sampled value; its slope is fitted. Between two kept keys the
curve is the Bezier segment Blender draws with handles a third of the way along the
interval in time (so the value is a cubic Hermite polynomial of the frame), and
both handles of a key lie on one line (ALIGNED: the motion stays smooth).

Fitting: start from the first and last keys; solve the slopes by least squares over
every sample; where a segment misses a sample by more than the tolerance, key its
worst sample; repeat (keying every sample fits exactly, so this ends). Then try to
drop each key again, refitting only its neighbours' slopes (the refit Blender's
curve_fit_nd does after its splits). The tolerance is checked at every sample.

Tolerances in the units animators use (an angle per joint, a distance at the tip)
become per-channel tolerances with `channel_tolerances` and `tip_angle_budget`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from . import quat

# Relative weight of the slope prior (finite differences) that keeps a slope with no
# sample to decide it (two adjacent keys) defined; small enough not to bias a fit.
_PRIOR = 1e-9
# Keys refitted on each side when a key is tried for removal (the rest keep their slopes).
_WINDOW = 3
# Lawson reweighting rounds when trying to drop a key.
_LAWSON = 1


@dataclass
class BezierKeys:
    index: np.ndarray  # indices of the kept samples (first and last always)
    slopes: np.ndarray  # value per frame at each kept key (both handles on this line)

    def handles(self, frames: np.ndarray, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(left, right) handle points, (k, 2) each: a third of the neighbouring interval in time
        (the end keys mirror their one interval)."""
        t = np.asarray(frames, dtype=float)[self.index]
        v = np.asarray(values, dtype=float)[self.index]
        gaps = np.diff(t) / 3.0
        before = np.concatenate(([gaps[0] if len(gaps) else 1.0], gaps))
        after = np.concatenate((gaps, [gaps[-1] if len(gaps) else 1.0]))
        left = np.column_stack((t - before, v - self.slopes * before))
        right = np.column_stack((t + after, v + self.slopes * after))
        return left, right


def _basis(frames: np.ndarray, index: np.ndarray):
    """Per sample: its segment k (keys k, k+1) and the Hermite weights of v_k, m_k, v_k+1, m_k+1."""
    t = frames
    seg = np.clip(np.searchsorted(t[index], t, side="right") - 1, 0, len(index) - 2)
    t0, t1 = t[index[seg]], t[index[seg + 1]]
    dt = t1 - t0
    s = (t - t0) / dt
    s2, s3 = s * s, s * s * s
    return seg, (2 * s3 - 3 * s2 + 1, (s3 - 2 * s2 + s) * dt, -2 * s3 + 3 * s2, (s3 - s2) * dt)


def evaluate(frames: np.ndarray, values: np.ndarray, fit: BezierKeys, at: np.ndarray | None = None) -> np.ndarray:
    """The fitted curve at `at` (default: every sampled frame), inside the fitted range."""
    t = np.asarray(frames, dtype=float)
    v = np.asarray(values, dtype=float)
    kt, kv = t[fit.index], v[fit.index]
    x = t if at is None else np.asarray(at, dtype=float)
    if len(fit.index) == 1:
        return np.full(x.shape, kv[0])
    seg = np.clip(np.searchsorted(kt, x, side="right") - 1, 0, len(kt) - 2)
    dt = kt[seg + 1] - kt[seg]
    s = (x - kt[seg]) / dt
    s2, s3 = s * s, s * s * s
    return (
        (2 * s3 - 3 * s2 + 1) * kv[seg]
        + (s3 - 2 * s2 + s) * dt * fit.slopes[seg]
        + (-2 * s3 + 3 * s2) * kv[seg + 1]
        + (s3 - s2) * dt * fit.slopes[seg + 1]
    )


def _prior_slopes(t: np.ndarray, v: np.ndarray, index: np.ndarray) -> np.ndarray:
    return np.gradient(v, t)[index] if len(t) > 1 else np.zeros(len(index))


def _solve_slopes(t, v, index, fixed: dict[int, float] | None = None, weights=None) -> np.ndarray:
    """Least-squares slopes at `index` (samples t, v, optional sample weights), with the keys in
    `fixed` (position -> slope) held."""
    k = len(index)
    seg, (h00, h10, h01, h11) = _basis(t, index)
    rhs_base = v - h00 * v[index[seg]] - h01 * v[index[seg + 1]]
    if weights is not None:
        root = np.sqrt(weights)
        h10, h11, rhs_base = h10 * root, h11 * root, rhs_base * root
    # Each sample weighs on the slopes of its segment's two keys: a tridiagonal normal matrix.
    diag = np.bincount(seg, h10 * h10, k) + np.bincount(seg + 1, h11 * h11, k)
    off = np.bincount(seg, h10 * h11, k - 1)[: k - 1]
    rhs = np.bincount(seg, h10 * rhs_base, k) + np.bincount(seg + 1, h11 * rhs_base, k)
    prior = _prior_slopes(t, v, index)
    scale = _PRIOR * (float(np.max(diag)) + 1.0)
    diag = diag + scale
    rhs = rhs + scale * prior
    for i, m in (fixed or {}).items():
        # Held: the row becomes m_i = m, its coupling moves to the neighbours' right-hand sides.
        if i > 0:
            rhs[i - 1] -= off[i - 1] * m
            off[i - 1] = 0.0
        if i < k - 1:
            rhs[i + 1] -= off[i] * m
            off[i] = 0.0
        diag[i], rhs[i] = 1.0, m
    return _tridiagonal(off.tolist(), diag.tolist(), rhs.tolist())


def _tridiagonal(off: list, diag: list, rhs: list) -> np.ndarray:
    """Solve the symmetric tridiagonal system (Thomas; the normal matrix is positive definite).
    Plain floats: for the few keys of a window, numpy's per-call overhead would dominate."""
    k = len(diag)
    c, d = [0.0] * k, [0.0] * k
    c[0] = off[0] / diag[0] if k > 1 else 0.0
    d[0] = rhs[0] / diag[0]
    for i in range(1, k):
        denom = diag[i] - off[i - 1] * c[i - 1]
        c[i] = off[i] / denom if i < k - 1 else 0.0
        d[i] = (rhs[i] - off[i - 1] * d[i - 1]) / denom
    for i in range(k - 2, -1, -1):
        d[i] -= c[i] * d[i + 1]
    return np.array(d)


def _residual(t, v, index, slopes) -> np.ndarray:
    return np.abs(evaluate(t, v, BezierKeys(index, slopes)) - v)


def fit_bezier(frames: np.ndarray, values: np.ndarray, tolerance: float) -> BezierKeys:
    """Kept keys and their slopes: the curve misses no sample by more than `tolerance`."""
    t = np.asarray(frames, dtype=float)
    v = np.asarray(values, dtype=float)
    n = len(t)
    if t.ndim != 1 or v.shape != t.shape:
        raise ValueError(f"frames and values must be 1-D of one length, got {t.shape} and {v.shape}")
    if not (np.all(np.isfinite(t)) and np.all(np.isfinite(v))):
        raise ValueError("frames and values must be finite")
    if n > 1 and np.any(np.diff(t) <= 0):
        raise ValueError("frames must increase")
    if not (tolerance >= 0.0 and math.isfinite(tolerance)):
        raise ValueError(f"tolerance must be finite and >= 0, got {tolerance}")
    if n <= 2:
        return BezierKeys(np.arange(n), _prior_slopes(t, v, np.arange(n)))
    index = np.array([0, n - 1])
    while True:
        slopes = _solve_slopes(t, v, index)
        miss = _residual(t, v, index, slopes) - tolerance
        if np.all(miss <= 0.0):
            break
        seg = np.clip(np.searchsorted(index, np.arange(n), side="right") - 1, 0, len(index) - 2)
        worst = np.full(len(index) - 1, -1)
        best = np.full(len(index) - 1, 0.0)
        for j in np.flatnonzero(miss > 0.0):
            if miss[j] > best[seg[j]]:
                best[seg[j]], worst[seg[j]] = miss[j], j
        index = np.union1d(index, worst[worst >= 0])
    return _drop_keys(t, v, index, slopes, tolerance)


def _minimax_slopes(t, v, index, held, tolerance) -> np.ndarray | None:
    """Slopes whose worst sample is within `tolerance`, or None: least squares, then Lawson's
    reweighting toward the minimax fit (the tolerance is a bound on the worst sample, which
    least squares alone does not minimise)."""
    weights = np.ones(len(t))
    for _ in range(_LAWSON):
        slopes = _solve_slopes(t, v, index, held, weights)
        residual = _residual(t, v, index, slopes)
        worst = float(residual.max(initial=0.0))
        if worst <= tolerance:
            return slopes
        weights = weights * residual
        weights = weights / weights.sum() + 1e-12
    return None


def _drop_keys(t, v, index, slopes, tolerance) -> BezierKeys:
    """Drop each interior key whose neighbours' slopes can be refitted to keep every sample in tolerance.

    Only the keys within _WINDOW of it are refitted; the window's end keys keep their slopes
    unless they end the curve, so no sample outside the window changes."""
    keep = index.tolist()
    slope = dict(zip(keep, slopes.tolist(), strict=True))
    pos = 1
    while pos < len(keep) - 1:
        lo, hi = max(0, pos - _WINDOW), min(len(keep) - 1, pos + _WINDOW)
        window = np.array(keep[lo:pos] + keep[pos + 1 : hi + 1])
        held = {}
        if lo > 0:
            held[0] = slope[keep[lo]]
        if hi < len(keep) - 1:
            held[len(window) - 1] = slope[keep[hi]]
        span = slice(window[0], window[-1] + 1)
        local = window - window[0]
        if len(held) < len(window):
            trial = _minimax_slopes(t[span], v[span], local, held, tolerance)
        else:
            trial = np.array([held[i] for i in range(len(window))])
        if trial is not None and np.all(_residual(t[span], v[span], local, trial) <= tolerance):
            slope.pop(keep.pop(pos))
            slope.update(zip(window.tolist(), trial.tolist(), strict=True))
        else:
            pos += 1
    return BezierKeys(np.array(keep), np.array([slope[k] for k in keep]))


def channel_tolerances(rotation_mode: str, table: np.ndarray, angle: float) -> np.ndarray:
    """Per channel of a bone's rotation values `table` (frames, channels): the value tolerance
    that keeps the bone's rotation within `angle` (radians) of the sampled one, whatever the
    other channels do within theirs.

    Euler: the rotation distance of a product is at most the sum of its factors' (three
    angles, a third each). Quaternion: a change d of the 4-vector q turns the normalised
    rotation by at most 2 asin(|d| / |q|), and |d| <= 2 per-component bounds. Axis-angle:
    half the budget to the angle, half to the axis direction (its tilt turns by at most 2x)."""
    if not angle > 0.0:
        raise ValueError(f"angle tolerance must be > 0, got {angle}")
    table = np.asarray(table, dtype=float)
    half = math.sin(min(angle, math.pi) / 2.0)
    if rotation_mode == "QUATERNION":
        norm = float(np.min(np.linalg.norm(table, axis=1))) if len(table) else 1.0
        return np.full(4, norm * half / 2.0)
    if rotation_mode == "AXIS_ANGLE":
        norm = float(np.min(np.linalg.norm(table[:, 1:], axis=1))) if len(table) else 1.0
        # Tilt phi turns the rotation by <= 2 phi: phi <= angle/4; |d axis| <= sqrt(3) eps,
        # phi <= asin(|d| / (|a| - |d|)) ~ kept under it with a factor 1/2.
        axis = 0.5 * norm * math.sin(angle / 4.0) / math.sqrt(3.0)
        return np.array([angle / 2.0, axis, axis, axis])
    return np.full(3, angle / 3.0)


def tip_angle_budget(lever_arms: np.ndarray, distance: float) -> np.ndarray:
    """Per joint: a rotation tolerance (radians) so the tip moves at most `distance` in all.

    Turning joint i by a moves everything beyond it by at most a * r_i (r_i: the joint's
    lever arm to the tip, e.g. the sum of the bone lengths down to it); the moves add up.
    The shares grow as r^(-2/3) toward the tip: joints near the tip get looser tolerances,
    which (keys ~ tolerance^(-1/2) for cubic segments) minimises the total keys for the sum."""
    r = np.asarray(lever_arms, dtype=float)
    if not distance > 0.0:
        raise ValueError(f"tip distance tolerance must be > 0, got {distance}")
    if np.any(r < 0.0) or not np.all(np.isfinite(r)):
        raise ValueError("lever arms must be finite and >= 0")
    arms = np.maximum(r, 1e-12 * max(float(np.max(r, initial=0.0)), 1e-12))
    weights = arms ** (-2.0 / 3.0)
    return np.minimum(distance * weights / float(np.sum(weights * arms)), math.pi)


def channel_quaternions(rotation_mode: str, table: np.ndarray) -> np.ndarray:
    """(frames, 4) unit quaternions of a bone's rotation channels (frames, channels), as Blender
    reads them: quaternions normalised, axis-angle about the normalised axis, Euler 'XYZ' = X first."""
    table = np.asarray(table, dtype=float)
    if rotation_mode == "QUATERNION":
        return quat.normalize(table)
    if rotation_mode == "AXIS_ANGLE":
        return quat.from_axis_angle(quat.normalize(table[:, 1:]), table[:, 0])
    if len(rotation_mode) != 3 or set(rotation_mode) != set("XYZ"):
        raise ValueError(f"unknown rotation mode '{rotation_mode}'")
    q = np.tile([1.0, 0.0, 0.0, 0.0], (len(table), 1))
    for axis in rotation_mode:
        i = "XYZ".index(axis)
        q = quat.multiply(quat.from_axis_angle(np.eye(3)[i], table[:, i]), q)
    return q


def reduce_keys(frames: np.ndarray, values: np.ndarray, tolerance: float) -> np.ndarray:
    """Indices of the keys to keep so that linear interpolation between kept keys
    reproduces every dropped value within `tolerance` (greedy, first and last kept).

    O(n): from the last kept key (the anchor) every later key i allows the segment's slope
    the interval [(v_i - v_a - tol) / (t_i - t_a), (v_i - v_a + tol) / (t_i - t_a)]; their
    intersection is kept as the segment grows, and a key whose own slope leaves it ends the
    segment at the key before (which is kept and becomes the anchor)."""
    n = len(frames)
    if n <= 2 or tolerance <= 0.0:
        return np.arange(n)
    t, v = np.asarray(frames, dtype=float).tolist(), np.asarray(values, dtype=float).tolist()
    keep = [0]
    anchor, lo, hi = 0, -math.inf, math.inf
    j = 1
    while j < n:
        dt = t[j] - t[anchor]
        slope = (v[j] - v[anchor]) / dt
        if j > anchor + 1 and not lo <= slope <= hi:
            anchor = j - 1  # the segment anchor -> j would miss a key in between
            keep.append(anchor)
            lo, hi = -math.inf, math.inf
            continue  # key j again, from the new anchor
        lo = max(lo, (v[j] - v[anchor] - tolerance) / dt)
        hi = min(hi, (v[j] - v[anchor] + tolerance) / dt)
        j += 1
    keep.append(n - 1)
    return np.array(keep)
