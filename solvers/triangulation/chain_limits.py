"""Triangulation with joint limits (the paper's §3.1.3), one pass root to tip:

- b is the span of the rest of the chain in its rest pose (the straight
  rest of the paper when the rest pose is straight); where that triangle
  would bend the next joint past its limit, b is the rest fully collapsed;
- each bone's turn is clamped into its limits (the paper's "checking theta
  before rotating");
- the bend plane comes from the limits, not only from the bone's current
  direction: a bone whose child is a hinge twists, within its own twist
  limit, so the child's plane holds the target (twist.align_child), and
  where the child still could not point the rest at the target, the
  triangle is turned about the target line to the plane whose rest lands
  nearest (for a hinge child, the plane where it holds the target).

A target the pass misses within reach gets further passes from the pose
the last one left, b then each rest's current span (MAX_PASSES in all).
"""

from __future__ import annotations

import math

import numpy as np

from .. import quat
from ..common import constrained, twist
from ..model.chain import Chain
from ..model.result import BatchSolution, batch_result
from ..quat import AXIS_EPS
from .chain_numpy import cross3, desired, to_target
from .checks import BAND, fold_params

# A missed target is solved again from the pass's own result, at most this
# many passes in all (measured on tests/solvers/test_limits.py's random limited
# chains: 17/40 reached after one pass, 25 after three, 27 after four).
MAX_PASSES = 4
# Bend planes tried around the target line where the paper's plane misses,
# and regula falsi steps toward the plane where a hinge child holds the target.
SWIVELS = 12
REFINE_STEPS = 8


def largest_bends(chain: Chain) -> np.ndarray:
    """Per bone, the largest swing its limits allow, radians (n,)."""
    lim = chain.limits
    lo = np.abs(np.where(lim.lock[:, [0, 2]], 0.0, lim.minimum[:, [0, 2]]))
    hi = np.abs(np.where(lim.lock[:, [0, 2]], 0.0, lim.maximum[:, [0, 2]]))
    return np.minimum(np.maximum(lo, hi).max(axis=1), lim.cone)


def collapsed_reach(chain: Chain) -> np.ndarray:
    """Per bone i, the distance from its tail to the tip when the bones after
    it curl as far as their limits allow, all in one plane and one sense
    (§3.1.3's 'length of the chain when fully collapsed'; a planar estimate)."""
    bend = largest_bends(chain)
    out = np.zeros(chain.n_bones)
    for i in range(chain.n_bones - 1):
        heading = np.concatenate(([0.0], np.cumsum(bend[i + 2 :])))
        links = chain.lengths[i + 1 :]
        out[i] = math.hypot(float(np.sum(links * np.cos(heading))), float(np.sum(links * np.sin(heading))))
    return out


def rest_span(chain: Chain) -> np.ndarray:
    """Per bone i, the distance from its tail to the tip with the bones after
    it in their rest pose (every local rotation zero)."""
    n = chain.n_bones
    out = np.zeros(n)
    if n >= 2:
        out[n - 2] = chain.lengths[n - 1]
    if n >= 3:  # a longer rest may be bent at rest
        rest = np.zeros((1, n, 4))
        rest[..., 0] = 1.0
        points = constrained.forward(chain, rest)[1][0]
        out[: n - 2] = np.linalg.norm(points[-1] - points[1 : n - 1], axis=1)
    return out


def solve_limited(
    chain: Chain, targets: np.ndarray, tolerance: float, fold_angle: float = 180.0, smooth_fold: float = 0.0
) -> BatchSolution:
    """Limited passes (see one_pass) from the input pose; a target missed
    within reach is solved again from the previous pass's pose, the rest of
    the chain now taken as it lies (b = its current span, so the next pass
    turns it as a whole where the limits allow), up to MAX_PASSES passes; the
    best pass is kept. `iterations` counts the passes."""
    fold = fold_params(fold_angle)
    m, n = targets.shape[0], chain.n_bones
    local = constrained.start_locals(chain, m)
    points = np.empty((m, n + 1, 3))
    frames = np.empty((m, n, 4))
    best = np.full(m, np.inf)
    passes = np.zeros(m, dtype=np.int64)
    todo = np.arange(m)
    start, spans = local, np.broadcast_to(rest_span(chain), (m, n))
    within = np.linalg.norm(targets - chain.root, axis=1) < chain.total_length
    for k in range(MAX_PASSES):
        got_local, got_points, got_frames = one_pass(
            chain, targets[todo], start[todo], fold, tolerance, spans[todo], smooth_fold
        )
        passes[todo] += 1
        error = np.linalg.norm(got_points[:, -1] - targets[todo], axis=1)
        # Better by a margin: passes that tie (a pose free to turn without
        # moving the tip) must not be told apart by rounding.
        better = error < best[todo] - 1e-12 * chain.total_length
        rows = todo[better]
        best[rows] = error[better]
        local[rows], points[rows], frames[rows] = got_local[better], got_points[better], got_frames[better]
        keep = (error > tolerance) & within[todo]
        if not np.any(keep) or k + 1 == MAX_PASSES:
            break
        # The next pass starts where this one ended.
        start = np.array(local)
        start[todo], todo = got_local, todo[keep]
        spans = np.zeros((m, n))
        spans[todo] = np.linalg.norm(got_points[keep][:, -1:] - got_points[keep][:, 1:], axis=-1)
    rotations = constrained.rotations(chain, frames)
    return batch_result(chain, points, targets, passes, tolerance, "triangulation", rotations)


def smooth_widths(chain: Chain, i: int, b: np.ndarray, smooth: float) -> np.ndarray | float:
    """Bone i's smooth-fold width per target for rest spans `b` (m,): chain_floats.fold_blend's
    rule with b in place of the straight reach, so the triangle (a, blended b, c) exists."""
    if smooth <= 0.0:
        return 0.0
    a, r = chain.lengths[i], chain.inner_after[i]
    width = smooth * 0.8 * np.minimum(np.minimum(a, b - a), b - r)
    return np.where((b > a) & (b > r), width, 0.0)


def one_pass(
    chain: Chain,
    targets: np.ndarray,
    local: np.ndarray,
    fold: tuple,
    tolerance: float,
    spans: np.ndarray,
    smooth_fold: float = 0.0,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One pass from the pose `local` (m, n, 4), bone i's rest spanning
    spans[:, i]: each joint's triangle as in the paper, turned within the
    limits (see _place). Returns (locals, points, frames)."""
    m, n = targets.shape[0], chain.n_bones
    band = BAND * chain.total_length
    collapsed = collapsed_reach(chain)
    bends = largest_bends(chain)
    t = np.ascontiguousarray(targets.T)
    local = local.copy()
    points = np.empty((m, n + 1, 3))
    points[:, 0] = chain.root
    frames = np.empty((m, n, 4))
    parent = np.broadcast_to(chain.base_frame, (m, 4))
    axis = np.zeros((3, m))
    has_axis = np.zeros(m, dtype=bool)
    side = constrained.sides(chain)
    last = None
    for i in range(n):
        if last is not None:  # the last bone was aimed already, by the look-ahead
            parent, local[:, i] = last
            frames[:, i] = parent
            points[:, i + 1] = points[:, i] + chain.lengths[i] * quat.rotate(parent, chain.link_local[i])
            break
        p = np.ascontiguousarray(points[:, i].T)
        c, chat = to_target(t, p, band)
        inherited = quat.multiply(quat.multiply(parent, chain.reference[i]), local[:, i])
        cur = quat.rotate(inherited, np.broadcast_to(chain.link_local[i], (m, 3))).T
        fb = quat.rotate(inherited, np.broadcast_to(side[i], (m, 3))).T
        a, b = chain.lengths[i], spans[:, i]
        new = desired(chain, i, b, c, chat, cur, fb, axis, has_axis, fold, smooth_widths(chain, i, b, smooth_fold))
        # §3.1.3: where the triangle with the straight rest would make the
        # next joint bend past its limit, use the rest fully collapsed.
        short = np.zeros(m, dtype=bool)
        if i + 1 < n and np.any(collapsed[i] < b):
            ahead = t - (p + a * new)
            ahead_n = np.sqrt(np.einsum("ij,ij->j", ahead, ahead))
            cos_bend = np.einsum("ij,ij->j", new, ahead) / np.where(ahead_n > 0.0, ahead_n, 1.0)
            short = (cos_bend < math.cos(bends[i + 1]) - 1e-12) & (c < a + collapsed[i]) & (collapsed[i] < b)
        if np.any(short):
            k = np.flatnonzero(short)
            new[:, k] = desired(
                chain, i, collapsed[i], c[k], chat[:, k], cur[:, k], fb[:, k], axis[:, k], has_axis[k], fold
            )
        if i + 1 < n:
            # The rest's length the triangle assumed (stretched toward a far target).
            rod = np.where(short, collapsed[i], np.where(c >= a + b, np.minimum(c - a, chain.reach_after[i]), b))
            parent, local[:, i], child = _place(
                chain, i, parent, local, new.T, chat.T, points[:, i], targets, rod, tolerance
            )
            last = child if i + 2 == n else None
        else:
            parent, local[:, i] = constrained.aim(chain, i, parent, local[:, i], new.T)
        frames[:, i] = parent
        actual = quat.rotate(parent, np.broadcast_to(chain.link_local[i], (m, 3)))
        cross = cross3(cur, actual.T)
        cn = np.sqrt(np.einsum("ij,ij->j", cross, cross))
        moved = cn > AXIS_EPS
        axis = np.where(moved, cross / np.where(moved, cn, 1.0), axis)
        has_axis |= moved
        points[:, i + 1] = points[:, i] + a * actual
    return local, points, frames


def _place(
    chain: Chain,
    i: int,
    parent: np.ndarray,
    local: np.ndarray,
    new: np.ndarray,
    chat: np.ndarray,
    head: np.ndarray,
    targets: np.ndarray,
    b: np.ndarray,
    tolerance: float,
) -> tuple[np.ndarray, np.ndarray, tuple[np.ndarray, np.ndarray]]:
    """Bone i (not the last) aimed along `new` within its limits and twisted
    for a hinge child. Where the rest, taken as a rod of length b along the
    child aimed at the target within the child's limits, would then miss (a
    hinge or an asymmetric range off the paper's plane, or bone i clamped off
    its triangle), the triangle turned about the target line (SWIVELS planes)
    is tried too and the plane whose rest lands nearest kept: the bend plane
    chosen from the limits. A hinge child's plane holds the target only at
    isolated planes (when bone i cannot twist onto it), so there the planes
    where it crosses the target are found by regula falsi. Returns (frame,
    local, the child's (frame, local) as aimed by the look-ahead)."""
    swivel = _Swivel(chain, i, parent, local[:, i], local[:, i + 1], new, chat, head, targets, b, tolerance)
    frame, own, child, miss, side = swivel.at(np.arange(len(b)), np.zeros(len(b)))
    # A target beyond the stretched rest is missed in every plane.
    far = np.linalg.norm(targets - head, axis=-1) >= chain.lengths[i] + chain.reach_after[i]
    if swivel.hinge is not None:
        frame, own, child, miss, side = _hinge_plane(swivel, np.flatnonzero(~far), (frame, own, child, miss, side))
    bad = np.flatnonzero((miss > tolerance) & ~far)
    if bad.size == 0:
        return frame, own, child
    k = bad.size
    angles = np.linspace(0.0, 2.0 * math.pi, SWIVELS, endpoint=False)
    rows = np.tile(bad, SWIVELS - 1)
    phis = np.repeat(angles[1:], k)
    m2, s2 = swivel.at(rows, phis)[3:]
    grid_miss = np.concatenate((miss[bad][None], m2.reshape(SWIVELS - 1, k)))
    grid_side = np.concatenate((side[bad][None], s2.reshape(SWIVELS - 1, k)))
    cols = np.arange(k)
    # Of the planes within the tolerance of the best, the one least turned from the start's: near a
    # straight chain every plane ties but for rounding, which would pick one far off (a spin per
    # frame in a bake); and batch and single solves must not pick different planes over a last bit.
    eps = 1e-12 * chain.total_length
    tie = 0.5 * tolerance
    near = grid_miss <= grid_miss.min(axis=0) + tie
    order = np.minimum(angles, 2.0 * math.pi - angles)
    best = np.argmin(np.where(near, order[:, None], np.inf), axis=0)
    best_miss, best_phi = grid_miss[best, cols], angles[best]
    if swivel.hinge is not None and i + 2 == chain.n_bones:
        # Bracket: the neighbouring planes around the best with a sign change.
        nxt = (best + 1) % SWIVELS
        prv = (best - 1) % SWIVELS
        up = np.sign(grid_side[best, cols]) != np.sign(grid_side[nxt, cols])
        lo_k = np.where(up, best, prv)
        hi_k = np.where(up, nxt, best)
        lo_phi = angles[lo_k]
        hi_phi = np.where(hi_k == 0, 2.0 * math.pi, angles[hi_k])
        lo_s, hi_s = grid_side[lo_k, cols], grid_side[hi_k, cols]
        ok = np.sign(lo_s) != np.sign(hi_s)
        if np.any(ok):
            sub = np.flatnonzero(ok)
            phi = _regula_falsi(swivel, bad[sub], lo_phi[sub], hi_phi[sub], lo_s[sub], hi_s[sub])
            mi = swivel.at(bad[sub], phi)[3]
            better = mi < best_miss[sub] - eps
            take = sub[better]
            best_miss[take], best_phi[take] = mi[better], phi[better]
    wins = best_miss < miss[bad] - np.maximum(eps, tie)
    rows = bad[wins]
    if rows.size:
        fr, ow, ch, _, _ = swivel.at(rows, best_phi[wins])
        frame, own = frame.copy(), own.copy()
        child = (child[0].copy(), child[1].copy())
        frame[rows], own[rows] = fr, ow
        child[0][rows], child[1][rows] = ch
    return frame, own, child


def _hinge_plane(swivel: _Swivel, rows: np.ndarray, got: tuple) -> tuple:
    """`got` (the paper's plane, swivel.at's five arrays) where a plane turned about the target
    line into the hinge child's own bend plane reaches as well and turns the joints less.

    Why: the paper's plane holds bone i's current direction and the target; near a straight chain
    that direction lies on the target line within rounding (a bake's frame after one past reach:
    1.4e-7 rad on Rigify's arm), so the plane is rounding's, and twisting bone i until the hinge
    bends in it turned the upper arm 56 degrees in one frame where Blender's IK turns 7. The
    hinge's plane (its axis square to the target line, either sense) needs no twist. A candidate
    must reach within the tolerance of the best; of those, the least joint turn from the start
    (bone i's rotation plus the child's) wins, ties (within what moves the rest's end by the
    tolerance) going to the child nearer its rest bend (as Blender's IK, from the rest each
    evaluation): the paper's plane is kept unless another beats it so."""
    phi = swivel.hinge_planes(rows)
    rows = rows[np.isfinite(phi)]
    if rows.size == 0:
        return got
    phi = phi[np.isfinite(phi)]
    k = rows.size
    frame, own, child, miss, side = got
    chain, i = swivel.chain, swivel.i
    cand = swivel.at(np.tile(rows, 2), np.concatenate((phi, phi + math.pi)))
    miss3 = np.stack((miss[rows], cand[3][:k], cand[3][k:]))
    own3 = np.stack((own[rows], cand[1][:k], cand[1][k:]))
    child3 = np.stack((child[1][rows], cand[2][1][:k], cand[2][1][k:]))
    turn = quat.angle_between(own3, swivel.own[rows][None]) + quat.angle_between(child3, swivel.child_local[rows][None])
    rest = quat.angle(child3)
    tie_miss = 0.5 * swivel.tolerance
    tie_turn = swivel.tolerance / (chain.lengths[i] + swivel.b[rows])
    reach = miss3 <= miss3.min(axis=0) + tie_miss
    cost = np.where(reach, turn, np.inf)
    least = cost <= cost.min(axis=0) + tie_turn
    pick = np.argmin(np.where(least, rest, np.inf), axis=0)
    cols = np.arange(k)
    # The paper's plane stays unless the pick beats it: by a turn, or by its rest within a tied turn.
    beats = reach[pick, cols] & (
        (turn[pick, cols] < turn[0] - tie_turn)
        | ((turn[pick, cols] <= turn[0] + tie_turn) & (rest[pick, cols] < rest[0] - tie_turn))
        | ~reach[0]
    )
    take = np.flatnonzero(beats & (pick > 0))
    if take.size == 0:
        return got
    src = np.where(pick[take] == 1, take, take + k)
    at = rows[take]
    frame, own, miss, side = frame.copy(), own.copy(), miss.copy(), side.copy()
    child = (child[0].copy(), child[1].copy())
    frame[at], own[at], miss[at], side[at] = cand[0][src], cand[1][src], cand[3][src], cand[4][src]
    child[0][at], child[1][at] = cand[2][0][src], cand[2][1][src]
    return frame, own, child, miss, side


def _regula_falsi(
    swivel: _Swivel, rows: np.ndarray, lo: np.ndarray, hi: np.ndarray, f_lo: np.ndarray, f_hi: np.ndarray
) -> np.ndarray:
    """Planes in [lo, hi] where the hinge child's plane holds the target
    (Illinois variant: the retained end's value halves, so it converges
    superlinearly instead of stalling on one side)."""
    side = np.zeros(len(rows))
    best, best_f = np.where(np.abs(f_lo) < np.abs(f_hi), lo, hi), np.minimum(np.abs(f_lo), np.abs(f_hi))
    for _ in range(REFINE_STEPS):
        split = f_hi != f_lo
        mid = np.where(split, (lo * f_hi - hi * f_lo) / np.where(split, f_hi - f_lo, 1.0), 0.5 * (lo + hi))
        mid = np.clip(mid, np.minimum(lo, hi), np.maximum(lo, hi))
        f_mid = swivel.at(rows, mid)[4]
        closer = np.abs(f_mid) < best_f
        best, best_f = np.where(closer, mid, best), np.where(closer, np.abs(f_mid), best_f)
        if np.all(best_f <= 1e-14):  # the plane holds the target to rounding
            break
        left = np.sign(f_mid) == np.sign(f_lo)
        lo, f_lo, hi, f_hi = (
            np.where(left, mid, lo),
            np.where(left, f_mid, f_lo),
            np.where(left, hi, mid),
            np.where(left, f_hi, f_mid),
        )
        # Illinois: halve the value at the end that stayed twice in a row.
        f_hi = np.where(left & (side == 1), 0.5 * f_hi, f_hi)
        f_lo = np.where(~left & (side == -1), 0.5 * f_lo, f_lo)
        side = np.where(left, 1, -1)
    return best


class _Swivel:
    """Bone i's candidates: the triangle's direction `new` turned by phi about
    the target line, aimed within the limits, twisted for a hinge child, and
    judged by the look-ahead."""

    def __init__(
        self,
        chain: Chain,
        i: int,
        parent: np.ndarray,
        own: np.ndarray,
        child_local: np.ndarray,
        new: np.ndarray,
        chat: np.ndarray,
        head: np.ndarray,
        targets: np.ndarray,
        b: np.ndarray,
        tolerance: float,
    ) -> None:
        self.chain, self.i = chain, i
        # A twist that moves the rest's end by less than the tolerance gains nothing (twist.align_child's
        # `still`): a straight chain keeps the start's twist instead of one rounding picks.
        self.still = tolerance / np.maximum(b, 1e-12 * chain.total_length)
        self.parent = np.broadcast_to(parent, own.shape)
        self.own, self.child_local, self.new, self.chat = own, child_local, new, chat
        self.head, self.targets, self.b, self.tolerance = head, targets, b, tolerance
        hinge = twist.hinge(chain, i + 1)
        self.hinge = None if hinge is None else quat.rotate(chain.reference[i + 1], hinge[0])

    def hinge_planes(self, rows: np.ndarray) -> np.ndarray:
        """Per target of `rows`, the swivel (about the target line, from the paper's plane) onto the
        plane square to the hinge child's axis as bone i starts (one sense; the other is + pi);
        nan where that plane or the paper's is undefined (the axis or `new` on the target line)."""
        chain, i = self.chain, self.i
        u, v = self.chat[rows], self.new[rows]
        inherited = quat.multiply(quat.multiply(self.parent[rows], chain.reference[i]), self.own[rows])
        h = quat.rotate(inherited, np.broadcast_to(self.hinge, u.shape))
        h = h - np.sum(h * u, axis=-1, keepdims=True) * u
        p0 = v - np.sum(v * u, axis=-1, keepdims=True) * u
        hn, pn = np.linalg.norm(h, axis=-1), np.linalg.norm(p0, axis=-1)
        ok = (hn > 1e-6) & (pn > 1e-6)
        p = quat.cross(u, h)  # a bend direction in the hinge's plane (the plane holds u and p)
        phi = np.arctan2(np.sum(quat.cross(p0, p) * u, axis=-1), np.sum(p0 * p, axis=-1))
        return np.where(ok, phi, np.nan)

    def at(self, rows: np.ndarray, phi: np.ndarray):
        """(frame, local, child (frame, local), miss, side) at planes phi for targets rows;
        side: the target's offset from a hinge child's plane (0 without a hinge)."""
        chain, i = self.chain, self.i
        u, v = self.chat[rows], self.new[rows]
        c, s = np.cos(phi)[:, None], np.sin(phi)[:, None]
        turned = c * v + s * quat.cross(u, v) + (1.0 - c) * np.sum(u * v, axis=-1, keepdims=True) * u
        head, targets = self.head[rows], self.targets[rows]
        frame, own = _candidate(chain, i, self.parent[rows], self.own[rows], turned, head, targets, self.still[rows])
        tail = head + chain.lengths[i] * quat.rotate(frame, chain.link_local[i])
        ahead = targets - tail
        child = constrained.aim(chain, i + 1, frame, self.child_local[rows], ahead)
        d = quat.rotate(child[0], chain.link_local[i + 1])
        miss = np.linalg.norm(ahead - self.b[rows][:, None] * d, axis=-1)
        side = np.zeros(len(rows))
        if self.hinge is not None:
            side = np.sum(quat.rotate(frame, self.hinge) * quat.normalize(ahead), axis=-1)
        return frame, own, child, miss, side


def _candidate(
    chain: Chain,
    i: int,
    parent: np.ndarray,
    local: np.ndarray,
    new: np.ndarray,
    head: np.ndarray,
    targets: np.ndarray,
    still: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """Bone i aimed along `new` within its limits, then twisted so a hinge
    child's plane holds the target (twist.align_child, gaining at least `still`): (frame, local)."""
    frame, own = constrained.aim(chain, i, parent, local, new)
    ahead = targets - (head + chain.lengths[i] * quat.rotate(frame, chain.link_local[i]))
    return twist.align_child(chain, i, frame, own, ahead, still)
