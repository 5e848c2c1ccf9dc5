"""`iterate.run` and `result.swing_rotations` on (n+1, 3, w) blocks for unlimited chains.

Each iteration steps every target in the working set from buffer `old` into buffer `new` (no
copies); targets that stop (reached, stalled) are copied out with their iteration count and
stay in the set, stepped for nothing, until a compaction drops them (when an eighth of the set
is done), so no mask is applied per iteration."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from ..maths import blocks as vec
from ..model.chain import Chain
from .iterate import STALL

# step(old (n+1, 3, w), new (n+1, 3, w), targets (3, w)): one iteration, written into `new`.
Step = Callable[[np.ndarray, np.ndarray, np.ndarray], None]
# general(points (k, n+1, 3), None, targets (k, 3)) -> (points, None): the general numpy step,
# for the rare targets the block step leaves undefined (a tip, target and joint coinciding).
General = Callable

COMPACT = 0.6  # compact the working set when fewer than this share of it is still iterating


def distance(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """|a - b| for (3, w) blocks, as `loop._distance` (x*x + y*y + z*z, then the root)."""
    d = a - b
    d *= d
    r = d[0] + d[1]
    r += d[2]
    return np.sqrt(r, out=r)


def square_bound(t: float) -> float | None:
    """The largest x with sqrt(x) <= t (so |d| > t exactly when |d|^2 > it, no root needed),
    or None where t * t is far from it (under- or overflow)."""
    if not 1e-150 < t < 1e150:
        return None
    x = t * t
    for _ in range(4):
        if math.sqrt(x) > t:
            x = math.nextafter(x, 0.0)
        elif math.sqrt(math.nextafter(x, math.inf)) <= t:
            x = math.nextafter(x, math.inf)
        else:
            return x
    return None


def squared(a: np.ndarray, b: np.ndarray, d: np.ndarray | None = None) -> np.ndarray:
    """|a - b|^2 for (3, w) blocks (x*x + y*y + z*z, as `loop._distance` sums them); `d` a
    (3, w) work array."""
    d = np.subtract(a, b, out=d)
    d *= d
    r = d[0] + d[1]
    r += d[2]
    return r


def above(r: np.ndarray, t: float, bound: float | None) -> np.ndarray:
    """sqrt(r) > t, exactly, without the root where `bound` (`square_bound(t)`) is known."""
    return r > bound if bound is not None else np.sqrt(r) > t


def straight(chain: Chain, targets: np.ndarray) -> np.ndarray:
    """`loop.straight` for (3, k) targets: (n+1, 3, k)."""
    root = chain.root[:, None]
    d = targets - root
    r = distance(targets, root)
    ok = r > 0.0
    d = np.where(ok, d / np.where(ok, r, 1.0), chain.directions[0][:, None])
    out = np.empty((chain.n_bones + 1,) + d.shape)
    out[0] = root
    s = 0.0
    for i, length in enumerate(chain.lengths.tolist()):
        s += length
        out[i + 1] = root + s * d
    return out


def run(
    chain: Chain, targets: np.ndarray, tolerance: float, cap: int, step: Step, general: General
) -> tuple[np.ndarray, np.ndarray]:
    """(points (n+1, 3, m), iterations (m,)) as `iterate.run` gives them on an unlimited chain."""
    m, n = targets.shape[0], chain.n_bones
    tt = np.ascontiguousarray(targets.T)  # (3, m)
    out = np.empty((n + 1, 3, m))
    out[...] = chain.points[:, :, None]
    iterations = np.zeros(m, dtype=np.int64)
    far = distance(tt, chain.root[:, None]) >= chain.total_length - tolerance
    if np.any(far):
        out[:, :, far] = straight(chain, tt[:, far])
        iterations[far] = 1
    active = ~far & (distance(chain.points[-1][:, None], tt) > tolerance)
    idx = np.flatnonzero(active)
    if idx.size == 0 or cap < 1:
        return out, iterations
    stall = STALL * chain.total_length
    tol2, stall2 = square_bound(tolerance), square_bound(stall)
    old = np.empty((n + 1, 3, idx.size))
    old[...] = chain.points[:, :, None]
    new = old.copy()  # row 0 (the root) is never written: both buffers hold it
    tg = np.take(tt, idx, axis=1)
    live = np.ones(idx.size, dtype=bool)
    flat_out = out.reshape(3 * (n + 1), m)
    buf = vec.Buffers()
    for it in range(1, cap + 1):
        step(old, new, tg)
        work = buf("work", tg.shape)
        err2 = squared(new[n], tg, work)
        keep = above(err2, tolerance, tol2)
        keep &= above(squared(new[n], old[n], work), stall, stall2)
        stop = live & ~keep
        if np.any(stop):
            cols = np.flatnonzero(stop)
            if not np.isfinite(np.sum(err2)):  # NaN: a step undefined in the block kernel
                cols = _redo(cols, err2, old, new, tg, general, tolerance, tol2, stall, stall2)
            flat_out[:, idx[cols]] = np.take(new.reshape(3 * (n + 1), -1), cols, axis=1)
            iterations[idx[cols]] = it
            live[cols] = False
        old, new = new, old
        count = np.count_nonzero(live)
        if count == 0:
            return out, iterations
        if count < COMPACT * live.size:
            cols = np.flatnonzero(live)
            old, tg, idx = np.take(old, cols, axis=2), np.take(tg, cols, axis=1), idx[cols]
            new = np.empty_like(old)
            new[0] = old[0]
            live = np.ones(cols.size, dtype=bool)
    out[:, :, idx[live]] = old[:, :, live]
    iterations[idx[live]] = cap
    return out, iterations


def _redo(cols, err2, old, new, tg, general, tolerance, tol2, stall, stall2) -> np.ndarray:
    """Targets among `cols` (stopped) whose block step was undefined (NaN: a tip, target and
    joint coinciding) take the general step instead, whose fallbacks decide (`kernels`' too);
    returns the columns that really stop."""
    bad = cols[~np.isfinite(err2[cols])]
    if bad.size == 0:
        return cols
    n = new.shape[0] - 1
    fixed, _ = general(old[:, :, bad].transpose(2, 0, 1), None, tg[:, bad].T)
    new[:, :, bad] = fixed.transpose(1, 2, 0)
    tip = new[n][:, bad]
    going = above(squared(tip, tg[:, bad]), tolerance, tol2) & above(squared(tip, old[n][:, bad]), stall, stall2)
    return np.setdiff1d(cols, bad[going], assume_unique=True)


def swing_rotations(chain: Chain, points: np.ndarray) -> np.ndarray:
    """`loop.swing_rotations` for points (n+1, 3, m): world rotations (m, n, 4)."""
    n, m = chain.n_bones, points.shape[2]
    rots = np.empty((n, 4, m))
    q = (np.ones(m), np.zeros(m), np.zeros(m), np.zeros(m))
    links = points[1:] - points[:-1]
    sq = links * links
    r = np.sqrt(sq[:, 0] + sq[:, 1] + sq[:, 2])  # (n, m)
    ok = r > 0.0
    links /= np.where(ok, r, 1.0)[:, None, :]
    for i in range(n):
        v = tuple(links[i])
        if i == 0:  # the identity turns nothing (exactly, as the float kernel skips it)
            cur, axis = tuple(chain.directions[0].tolist()), tuple(chain.fallback_axes[0].tolist())
        else:
            cur = vec.rotate(q, chain.directions[i])

            def axis(rows, q=q, i=i):  # only the rows past 90° need the turned tie-breaker
                return vec.rotate(tuple(c[rows] for c in q), chain.fallback_axes[i])

        sw_, sx, sy, sz = vec.swing(cur, v, axis)
        qw, qx, qy, qz = q
        q = vec.normalize4(
            sw_ * qw - sx * qx - sy * qy - sz * qz,
            sw_ * qx + sx * qw + sy * qz - sz * qy,
            sw_ * qy - sx * qz + sy * qw + sz * qx,
            sw_ * qz + sx * qy - sy * qx + sz * qw,
        )
        for k in range(4):
            rots[i, k] = q[k]
    return np.ascontiguousarray(rots.transpose(2, 0, 1))
