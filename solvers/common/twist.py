"""Twisting a bone so that its child's hinge can reach: limited solvers aim
each bone with a minimal swing, which leaves its twist (and so the plane its
hinge child bends in) wherever it was. Here bone i turns about its own axis,
within its twist limit, until the child's hinge plane holds the direction the
child must take, on the side its angle range allows.

A hinge is a joint whose swing has one free axis (X or Z; the other locked).
Bones whose link does not lie along their Y axis are left alone: turning
them about Y would move them (Blender's float32 bones sit within ALONG_Y).
"""

from __future__ import annotations

import math

import numpy as np

from .. import limits as joint_limits
from .. import quat
from ..model.chain import Chain

Y = np.array([0.0, 1.0, 0.0])
ALONG_Y = 1e-5
# What a twist must gain by default (radians of the child's direction): a few float32 ulps. A pose
# read from Blender carries ~1e-7 of rounding, so a child's direction within this of bone i's axis
# says nothing about which plane it bends in (a straight chain): rounding would pick one far off
# (FABRIK from a straight bake frame: a 113 degree twist of Rigify's upper arm in one frame).
STILL = 1e-6


def _along_y(link: np.ndarray) -> bool:
    return bool(abs(link[0]) < ALONG_Y and abs(link[2]) < ALONG_Y and link[1] > 0.0)


def hinge(chain: Chain, j: int) -> tuple[np.ndarray, float, float] | None:
    """Bone j's hinge as (local axis, lowest, highest angle), or None when its
    swing is not a hinge (or it cannot be treated as one)."""
    lim = chain.limits
    if lim is None or lim.lock[j, 0] == lim.lock[j, 2] or not _along_y(chain.link_local[j]):
        return None
    k = 0 if not lim.lock[j, 0] else 2
    lo, hi = joint_limits.swing_bounds(lim)
    # Swing components are sin(angle / 2) (limits module doc).
    lo_a, hi_a = 2.0 * math.asin(lo[j, k // 2]), 2.0 * math.asin(hi[j, k // 2])
    cone = float(lim.cone[j])
    lo_a, hi_a = max(lo_a, -cone), min(hi_a, cone)
    axis = np.zeros(3)
    axis[k] = 1.0
    return axis, lo_a, hi_a


def twist_range(chain: Chain, i: int) -> tuple[float, float]:
    """Bone i's allowed twist (about its Y axis), radians."""
    lim = chain.limits
    if lim.lock[i, 1]:
        return 0.0, 0.0
    if lim.use_limit[i, 1]:
        return float(lim.minimum[i, 1]), float(lim.maximum[i, 1])
    return -math.pi, math.pi


def _turn_y(v: np.ndarray, c: np.ndarray, s: np.ndarray) -> np.ndarray:
    """v (3,) turned about Y by the angles with cosines c and sines s (m,): (m, 3)."""
    return np.stack((v[0] * c + v[2] * s, np.full_like(c, v[1]), -v[0] * s + v[2] * c), axis=-1)


def _miss(h: np.ndarray, g: np.ndarray, e: np.ndarray, lo: float, hi: float) -> np.ndarray:
    """How far (radians, roughly) unit e is from the arc g turned about h by lo..hi."""
    off = np.arcsin(np.clip(np.abs(np.sum(h * e, axis=-1)), 0.0, 1.0))
    angle = np.arctan2(np.sum(quat.cross(g, e) * h, axis=-1), np.sum(g * e, axis=-1))
    return off + np.maximum(0.0, np.maximum(lo - angle, angle - hi))


def align_child(
    chain: Chain, i: int, frame: np.ndarray, local: np.ndarray, want: np.ndarray, still: np.ndarray | float = STILL
) -> tuple[np.ndarray, np.ndarray]:
    """Bone i (world frame `frame` (m, 4), local rotation `local`) twisted
    about its own axis, within its twist limit, so that its hinge child can
    point along `want` (m, 3, world); unchanged where nothing is gained, or
    less than `still` (radians of the child's direction, per row or one).
    Why `still`: with `want` along bone i (a straight chain) every twist
    ties, and rounding alone would pick one far from the start (a spin).
    Returns (frame, local)."""
    if i + 1 >= chain.n_bones or not _along_y(chain.link_local[i]):
        return frame, local
    child = hinge(chain, i + 1)
    if child is None:
        return frame, local
    axis, lo, hi = child
    tlo, thi = twist_range(chain, i)
    if tlo == thi == 0.0:
        return frame, local
    h0 = quat.rotate(chain.reference[i + 1], axis)
    g0 = quat.rotate(chain.reference[i + 1], Y)
    e = quat.normalize(quat.rotate(quat.conjugate(frame), want))
    # h0 turned by psi about Y is perpendicular to e where
    # A cos(psi) + B sin(psi) = -C: two solutions around atan2(B, A).
    a = h0[0] * e[:, 0] + h0[2] * e[:, 2]
    b = h0[2] * e[:, 0] - h0[0] * e[:, 2]
    c = h0[1] * e[:, 1]
    r = np.hypot(a, b)
    base = np.arctan2(b, a)
    spread = np.arccos(np.clip(-c / np.where(r > 0.0, r, 1.0), -1.0, 1.0))
    tau = joint_limits.twist_swing(local)[0]
    best_psi = np.zeros_like(tau)
    best = _miss(h0, g0, e, lo, hi)
    keep = best - np.maximum(still, 1e-12)  # what a twist must beat
    for psi in (base + spread, base - spread):
        # Keep the resulting twist within the bone's range.
        turned = np.clip(np.angle(np.exp(1j * (tau + psi))), tlo, thi)
        psi = turned - tau
        cs, sn = np.cos(psi), np.sin(psi)
        miss = _miss(_turn_y(h0, cs, sn), _turn_y(g0, cs, sn), e, lo, hi)
        better = (miss < best - 1e-12) & (miss < keep)
        best_psi = np.where(better, psi, best_psi)
        best = np.where(better, miss, best)
    half = 0.5 * best_psi
    spin = np.stack((np.cos(half), np.zeros_like(half), np.sin(half), np.zeros_like(half)), axis=-1)
    # e was taken in bone i's frame; a turn about Y there is frame * spin.
    return quat.multiply(frame, spin), quat.multiply(local, spin)
