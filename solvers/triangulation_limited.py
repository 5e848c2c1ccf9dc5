"""Triangulation with joint limits (the paper's §3.1.3).

Each joint's turn is clamped into its limits (the paper's "checking theta
before rotating"); where the straight rest of the chain would bend the next
joint past its limit, b becomes the length of the rest fully collapsed. A
bone whose child is a hinge also twists, within its own twist limit, so the
child's hinge plane holds the target (see twist.align_child): the paper's
bend plane is the plane of the bone and the target, which a hinge ignores.
"""

from __future__ import annotations

import math

import numpy as np

from . import constrained, quat, twist
from .chain import Chain
from .quat import AXIS_EPS
from .result import BatchSolution, batch_result
from .triangulation import BAND, _cross, _desired, _fold_params, _to_target

# A missed target is solved again from the pass's own result, at most this
# many passes in all (measured on random limited chains: 16/40 reached after
# one pass, 27/40 after four, 28/40 after eight).
MAX_PASSES = 4
# Bend planes tried around the target line where the paper's plane misses.
SWIVELS = 12


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


def solve_limited(chain: Chain, targets: np.ndarray, tolerance: float, fold_angle: float = 180.0) -> BatchSolution:
    """Limited passes (see one_pass) from the input pose; a target missed
    within reach is solved again from the previous pass's pose, the rest of
    the chain now taken as it lies (b = its current span, so the next pass
    turns it as a whole where the limits allow), up to MAX_PASSES passes.
    `iterations` counts the passes."""
    fold = _fold_params(fold_angle)
    m, n = targets.shape[0], chain.n_bones
    local = constrained.start_locals(chain, m)
    points = np.empty((m, n + 1, 3))
    frames = np.empty((m, n, 4))
    passes = np.zeros(m, dtype=np.int64)
    todo = np.arange(m)
    spans = np.broadcast_to(rest_span(chain), (m, n))
    within = np.linalg.norm(targets - chain.root, axis=1) < chain.total_length
    for k in range(MAX_PASSES):
        local[todo], points[todo], frames[todo] = one_pass(
            chain, targets[todo], local[todo], fold, tolerance, spans[todo]
        )
        passes[todo] += 1
        error = np.linalg.norm(points[todo, -1] - targets[todo], axis=1)
        todo = todo[(error > tolerance) & within[todo]]
        if todo.size == 0 or k + 1 == MAX_PASSES:
            break
        spans = np.linalg.norm(points[:, -1:] - points[:, 1:], axis=-1)
    rotations = constrained.rotations(chain, frames)
    return batch_result(chain, points, targets, passes, tolerance, "triangulation", rotations)


def one_pass(
    chain: Chain, targets: np.ndarray, local: np.ndarray, fold: tuple, tolerance: float, spans: np.ndarray
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
        c, chat = _to_target(t, p, band)
        inherited = quat.multiply(quat.multiply(parent, chain.reference[i]), local[:, i])
        cur = quat.rotate(inherited, np.broadcast_to(chain.link_local[i], (m, 3))).T
        fb = quat.rotate(inherited, np.broadcast_to(side[i], (m, 3))).T
        a, b = chain.lengths[i], spans[:, i]
        new = _desired(chain, i, b, c, chat, cur, fb, axis, has_axis, fold)
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
            new[:, k] = _desired(
                chain, i, collapsed[i], c[k], chat[:, k], cur[:, k], fb[:, k], axis[:, k], has_axis[k], fold
            )
        if i + 1 < n:
            parent, local[:, i], child = _place(
                chain, i, parent, local, new.T, chat.T, points[:, i], targets, b, tolerance
            )
            last = child if i + 2 == n else None
        else:
            parent, local[:, i] = constrained.aim(chain, i, parent, local[:, i], new.T)
        frames[:, i] = parent
        actual = quat.rotate(parent, np.broadcast_to(chain.link_local[i], (m, 3)))
        cross = _cross(cur, actual.T)
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
    chosen from the limits. Returns (frame, local, the child's (frame, local)
    as aimed by the look-ahead)."""
    frame, own = _candidate(chain, i, parent, local[:, i], new, head, targets)
    miss, child = _lookahead(chain, i, frame, local[:, i + 1], head, targets, b)
    bad = np.flatnonzero(miss > tolerance)
    if bad.size == 0:
        return frame, own, child
    k, rep = bad.size, SWIVELS - 1
    angles = np.linspace(0.0, 2.0 * math.pi, SWIVELS, endpoint=False)[1:]
    cos, sin = np.cos(angles)[:, None, None], np.sin(angles)[:, None, None]
    u, v = chat[bad], new[bad]
    turned = cos * v + sin * quat.cross(u, v) + (1.0 - cos) * np.sum(u * v, axis=-1, keepdims=True) * u

    def tile(x: np.ndarray) -> np.ndarray:
        x = np.broadcast_to(x, (len(miss),) + x.shape[1:])[bad]
        return np.broadcast_to(x, (rep,) + x.shape).reshape((rep * k,) + x.shape[1:])

    heads, goals = tile(head), tile(targets)
    f2, o2 = _candidate(chain, i, tile(parent), tile(local[:, i]), turned.reshape(rep * k, 3), heads, goals)
    m2, child2 = _lookahead(chain, i, f2, tile(local[:, i + 1]), heads, goals, tile(b))
    m2 = m2.reshape(rep, k)
    # The first plane within rounding of the best: batch and single solves
    # must not pick different planes over a last-bit difference.
    best = np.argmax(m2 <= m2.min(axis=0) + 1e-12 * chain.total_length, axis=0)
    wins = m2[best, np.arange(k)] < miss[bad] - 1e-12 * chain.total_length
    rows, pick = bad[wins], (best * k + np.arange(k))[wins]
    frame, own = frame.copy(), own.copy()
    child = (child[0].copy(), child[1].copy())
    frame[rows], own[rows] = f2[pick], o2[pick]
    child[0][rows], child[1][rows] = child2[0][pick], child2[1][pick]
    return frame, own, child


def _candidate(
    chain: Chain, i: int, parent: np.ndarray, local: np.ndarray, new: np.ndarray, head: np.ndarray, targets: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Bone i aimed along `new` within its limits, then twisted so a hinge
    child's plane holds the target (twist.align_child): (frame, local)."""
    frame, own = constrained.aim(chain, i, parent, local, new)
    ahead = targets - (head + chain.lengths[i] * quat.rotate(frame, chain.link_local[i]))
    return twist.align_child(chain, i, frame, own, ahead)


def _lookahead(
    chain: Chain,
    i: int,
    frame: np.ndarray,
    child_local: np.ndarray,
    head: np.ndarray,
    targets: np.ndarray,
    b: np.ndarray,
) -> tuple[np.ndarray, tuple[np.ndarray, np.ndarray]]:
    """With bone i at `frame`: the child aimed at the target within its
    limits, and how far the rest (a rod of length b along it) ends from the
    target. Returns (miss, the child's (frame, local))."""
    tail = head + chain.lengths[i] * quat.rotate(frame, chain.link_local[i])
    child = constrained.aim(chain, i + 1, frame, child_local, targets - tail)
    d = quat.rotate(child[0], chain.link_local[i + 1])
    return np.linalg.norm(targets - tail - b[:, None] * d, axis=-1), child
