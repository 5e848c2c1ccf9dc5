"""Triangulation IK (Mueller-Cajar & Mukundan 2007): one pass, root to tip.

At joint i with bone length a, remaining straight reach b and target distance
c, the law of cosines (eq. 5) gives the angle delta between the bone and the
joint->target vector that closes the triangle (a, b, c); the bone turns in the
plane of itself and that vector (eq. 6-7). Special cases of §3.1:
  c >= a + b      the bone points at the target (and so do all after it);
  c <= |a - b|    b > a: fold, delta = 180° (or the paper's proposed 90°);
                  a > b: unreachable, the bone points at the target;
  a parallel to c the axis is undefined: reuse the last joint's axis, else
                  the bone's own frame X axis (§3.1.1).
Children follow their parent's rotation (the paper's relative storage), kept
as one accumulated quaternion so a solve stays O(n).

The boundaries c == a + b and c == |a - b| are compared with a band of
BAND x chain length: rounding there must not switch branch. Without it the
last bone (b = 0, so |a - b| = a) of a chain that reached exactly would see
c = a - 1ulp and fold back, landing the tip a whole bone from the target.
"""

from __future__ import annotations

import numpy as np

from .. import quat
from ..model.chain import Chain
from ..model.result import BatchSolution, batch_result
from ..quat import AXIS_EPS
from .chain_floats import blended_reach, fold_blend, law_of_cosines
from .checks import BAND, fold_params


def cross3(u: np.ndarray, v: np.ndarray) -> np.ndarray:
    return np.stack((u[1] * v[2] - u[2] * v[1], u[2] * v[0] - u[0] * v[2], u[0] * v[1] - u[1] * v[0]))


def _qrotate(q: np.ndarray, v: np.ndarray) -> np.ndarray:
    t = 2.0 * cross3(q[1:], v)
    return v + q[0] * t + cross3(q[1:], t)


def desired(
    chain: Chain,
    i: int,
    b: float,
    c: np.ndarray,
    chat: np.ndarray,
    cur: np.ndarray,
    fallback: np.ndarray,
    axis: np.ndarray,
    has_axis: np.ndarray,
    fold: tuple,
    blend_width: float | np.ndarray = 0.0,
) -> np.ndarray:
    """Bone i's new direction (3, m), vectorised §3 (see chain_floats.one_pass): straight,
    toward, fold or the eq. 5 triangle, in the plane of `cur` and the target.
    `fallback` is the bone's turned frame X axis (§3.1.1)."""
    cos_fold, sin_fold, fold_angle = fold
    m = c.shape[0]
    a = chain.lengths[i]
    band = BAND * chain.total_length
    straight = c >= a + b - band
    safe_c = np.where(c > 0, c, 1.0)
    if np.any(blend_width > 0.0):  # smooth fold (see chain_floats.fold_blend); a width per target or one for all
        width = np.broadcast_to(blend_width, c.shape)
        smooth = width > 0.0
        x = a + c - b
        close = ~straight & np.where(smooth, x <= -width, c <= abs(a - b) + band)
        mid = smooth & ~straight & ~close & (x < width)
        reach = np.where(mid, blended_reach(a, b, c, np.where(mid, width, 1.0)), b)
        cos_d, sin_d = law_of_cosines(a, reach, safe_c, np.sqrt)
    else:
        close = ~straight & (c <= abs(a - b) + band)
        cos_d, sin_d = law_of_cosines(a, b, safe_c, np.sqrt)
    if np.any(close):
        fold_cos, fold_sin = np.full(m, cos_fold), np.full(m, sin_fold)
        if fold_angle != 180.0:  # stay out of the rest's unreachable hole
            cos_r, sin_r = law_of_cosines(a, chain.fold_guard[i], safe_c, np.sqrt)
            wider = cos_r < fold_cos
            fold_cos, fold_sin = np.where(wider, cos_r, fold_cos), np.where(wider, sin_r, fold_sin)
        cos_d, sin_d = np.where(close, fold_cos, cos_d), np.where(close, fold_sin, sin_d)
    perp = cur - np.einsum("ij,ij->j", cur, chat) * chat
    perp -= np.einsum("ij,ij->j", perp, chat) * chat  # twice: see chain_floats.one_pass
    pn = np.sqrt(np.einsum("ij,ij->j", perp, perp))
    undefined = pn <= 1e-9
    if np.any(undefined):
        # §3.1.1: the last joint's axis, else the bone's (turned) frame X.
        k = np.flatnonzero(undefined)
        ck = chat[:, k]
        r = np.where(has_axis[k], axis[:, k], fallback[:, k])
        w = cross3(r, ck)
        wn = np.sqrt(np.einsum("ij,ij->j", w, w))
        bad = wn <= 1e-9
        if np.any(bad):
            w[:, bad] = cross3(np.broadcast_to(chain.fallback_axes[i][:, None], (3, int(bad.sum()))), ck[:, bad])
            wn = np.sqrt(np.einsum("ij,ij->j", w, w))
            bad = wn <= 1e-9
            if np.any(bad):
                w[:, bad] = quat.any_perpendicular(ck[:, bad].T).T
                wn[bad] = 1.0
        perp[:, k] = w
        pn[k] = wn
    new = cos_d * chat + sin_d * (perp / np.where(pn > 0, pn, 1.0))
    nn = np.sqrt(np.einsum("ij,ij->j", new, new))
    new /= np.where(nn > 0.0, nn, 1.0)  # exact bone length (see chain_floats.one_pass)
    new = np.where(straight | (close & (a > b)), chat, new)
    return np.where(~straight & (c <= band), cur, new)


def to_target(t: np.ndarray, p: np.ndarray, band: float) -> tuple[np.ndarray, np.ndarray]:
    cvec = t - p
    c = np.sqrt(cvec[0] * cvec[0] + cvec[1] * cvec[1] + cvec[2] * cvec[2])  # as solve_one, to the bit
    return c, cvec / np.where(c > band, c, 1.0)


def solve_many(
    chain: Chain, targets: np.ndarray, tolerance: float, fold_angle: float = 180.0, smooth_fold: float = 0.0
) -> BatchSolution:
    """The same pass vectorised over targets (m, 3): a loop over joints only.

    Vectors are stored component-major, (3, m), so every operation is a
    plain elementwise ufunc over m values (no small-axis reductions)."""
    fold = fold_params(fold_angle)
    _, lengths, _, reach, inner, _ = chain.scalar_terms
    blend = fold_blend(lengths, reach, inner, smooth_fold)
    m, n = targets.shape[0], chain.n_bones
    band = BAND * chain.total_length
    t = np.ascontiguousarray(targets.T)
    points = np.empty((n + 1, 3, m))
    p = points[0]
    p[:] = chain.root[:, None]
    q = np.zeros((4, m))
    q[0] = 1.0
    rots = np.empty((n, 4, m))
    axis = np.zeros((3, m))
    has_axis = np.zeros(m, dtype=bool)
    for i in range(n):
        c, chat = to_target(t, p, band)
        cur = _qrotate(q, np.broadcast_to(chain.directions[i][:, None], (3, m)))
        fb = _qrotate(q, np.broadcast_to(chain.fallback_axes[i][:, None], (3, m)))
        width = 0.0 if blend is None else blend[i]
        new = desired(chain, i, chain.reach_after[i], c, chat, cur, fb, axis, has_axis, fold, width)
        # Children inherit the swing cur -> new (axis cur x new), composed onto q.
        cross = cross3(cur, new)
        cn = np.sqrt(np.einsum("ij,ij->j", cross, cross))
        moved = cn > AXIS_EPS
        axis = np.where(moved, cross / np.where(moved, cn, 1.0), axis)
        has_axis |= moved
        dot = np.einsum("ij,ij->j", cur, new)
        s = np.concatenate(((1.0 + dot)[None], cross))
        obtuse = dot < 0.0
        if np.any(obtuse):  # 1 + cur.new cancels: see quat.swing
            k = np.flatnonzero(obtuse)
            s[:, k] = quat.swing(cur[:, k].T, new[:, k].T, fb[:, k].T).T
        s /= np.sqrt(np.einsum("ij,ij->j", s, s))
        q = np.stack(
            (
                s[0] * q[0] - s[1] * q[1] - s[2] * q[2] - s[3] * q[3],
                s[0] * q[1] + s[1] * q[0] + s[2] * q[3] - s[3] * q[2],
                s[0] * q[2] - s[1] * q[3] + s[2] * q[0] + s[3] * q[1],
                s[0] * q[3] + s[1] * q[2] - s[2] * q[1] + s[3] * q[0],
            )
        )
        rots[i] = q
        p = p + chain.lengths[i] * new
        points[i + 1] = p
    return batch_result(
        chain,
        points.transpose(2, 0, 1),
        targets,
        np.ones(m, dtype=np.int64),
        tolerance,
        "triangulation",
        rots.transpose(2, 0, 1),
    )
