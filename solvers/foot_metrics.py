"""Figures of a foot's motion over time: slide during contacts, skating, ground penetration, joint
angular speed, and agreement of two contact sequences (numpy only).

Positions are world space, z up, one row per frame at `fps` frames per second; speeds and
slides are measured over 1/30 s (`contacts.SPEED_WINDOW`), not per frame, so 120 fps capture
jitter does not dominate them. Bad input raises ValueError naming it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import quat
from .contacts import SPEED_WINDOW, check_fps, check_points, ground_heights, same_sums, window_frames

# The Guided Motion Diffusion skating metric (Karunratanakul et al. 2023, as its evaluation code
# computes it): at 20 fps, a foot within 5 cm of the ground whose horizontal speed is above
# 0.5 m/s on that step and on average over 5 steps around it skates. Metres.
SKATING_FPS = 20.0
SKATING_HEIGHT = 0.05
SKATING_SPEED = 0.5
SKATING_AVERAGE = 5


@dataclass(frozen=True)
class Slide:
    mean: float  # world distance the planted end moves per `window` seconds, on average over the contacts
    median: float
    largest: float
    samples: int  # spans measured (0: no contact as long as the window; the figures are then 0)


def _contacts(planted, frames: int) -> np.ndarray:
    flags = np.asarray(planted)
    if flags.shape != (frames,):
        raise ValueError(f"contacts must be one flag per frame ({frames}), got shape {flags.shape}")
    return flags.astype(bool)


def foot_slide(heel, toe, planted, fps: float, window: float = SPEED_WINDOW) -> Slide:
    """How far the foot's planted end moves during contacts: over each span of `window` seconds
    that lies inside one contact, the smaller of the two ends' displacements (a heel rise moves
    the heel, not the planted toe); their mean, median and largest."""
    heel, toe = check_points(heel, "heel positions"), check_points(toe, "toe positions")
    if len(heel) != len(toe):
        raise ValueError(f"heel and toe positions must have the same frames, got {len(heel)} and {len(toe)}")
    planted = _contacts(planted, len(heel))
    k = window_frames(check_fps(fps), window)
    if len(heel) <= k:
        return Slide(0.0, 0.0, 0.0, 0)
    # A span [i, i + k] inside a contact: every frame of it planted.
    counts = np.convolve(planted.astype(int), np.ones(k + 1, dtype=int), mode="valid")
    inside = counts == k + 1
    if not inside.any():
        return Slide(0.0, 0.0, 0.0, 0)
    start = np.flatnonzero(inside)
    moved = np.minimum(
        np.linalg.norm(heel[start + k] - heel[start], axis=1), np.linalg.norm(toe[start + k] - toe[start], axis=1)
    )
    return Slide(float(moved.mean()), float(np.median(moved)), float(moved.max()), len(start))


def resample(points, fps: float, new_fps: float) -> np.ndarray:
    """Positions (m, ...) at `fps` linearly interpolated at `new_fps`, from the first frame on."""
    points = np.asarray(points, dtype=float)
    duration = (len(points) - 1) / fps
    times = np.arange(0.0, duration + 1e-9, 1.0 / new_fps)
    flat = points.reshape(len(points), -1)
    source = np.arange(len(points)) / fps
    out = np.stack([np.interp(times, source, flat[:, j]) for j in range(flat.shape[1])], axis=1)
    return out.reshape((len(times), *points.shape[1:]))


def skating_ratio(feet, fps: float, ground=None) -> float:
    """Share of 20 fps steps on which any of the feet skates (the Guided Motion Diffusion metric;
    metres): `feet` (m, 3) or (m, k, 3) foot positions (its toe joint), `ground` as for
    `contacts.detect_contacts` (None: z = 0; a plane height; (m,) or (m, k) heights under them)."""
    feet = np.asarray(feet, dtype=float)
    if feet.ndim == 2:
        feet = feet[:, None, :]
    for j in range(feet.shape[1]):
        check_points(feet[:, j], "foot positions")
    fps = check_fps(fps)
    heights = feet[..., 2] - ground_heights(ground, len(feet), feet.shape[1])
    track = resample(np.concatenate((feet[..., :2], heights[..., None]), axis=-1), fps, SKATING_FPS)
    if len(track) < 2:
        return 0.0
    step = np.linalg.norm(np.diff(track[..., :2], axis=0), axis=-1) * SKATING_FPS  # (n-1, k)
    kernel = np.ones(SKATING_AVERAGE) / SKATING_AVERAGE  # zero beyond the ends, as the original's filter
    average = np.stack([same_sums(step[:, j], kernel) for j in range(step.shape[1])], axis=1)
    low = track[..., 2] < SKATING_HEIGHT
    touching = low[:-1] & low[1:]
    skating = touching & (step > SKATING_SPEED) & (average > SKATING_SPEED)
    return float(skating.any(axis=1).mean())


def lowest_height(heel, toe, ground=None) -> float:
    """The lowest height either end of the foot reaches above the ground (negative: below it)."""
    heel, toe = check_points(heel, "heel positions"), check_points(toe, "toe positions")
    if len(heel) != len(toe):
        raise ValueError(f"heel and toe positions must have the same frames, got {len(heel)} and {len(toe)}")
    heights = np.stack((heel[:, 2], toe[:, 2]), axis=1) - ground_heights(ground, len(heel))
    return float(heights.min())


def largest_angular_speed(rotations, fps: float, window: float = SPEED_WINDOW) -> float:
    """Largest joint angular speed in radians per second: `rotations` (m, n, 4) local rotations
    (w, x, y, z) of n joints per frame, each turn measured over `window` seconds."""
    return largest_angular_speeds([rotations], fps, window)[0]


def largest_angular_speeds(rotations: list, fps: float, window: float = SPEED_WINDOW) -> list[float]:
    """`largest_angular_speed` of several legs' rotations (each (m, n, 4), the same n) in one pass:
    each leg's turns over its own frames (every figure as the leg's alone)."""
    qs = [np.asarray(r, dtype=float) for r in rotations]
    for q in qs:
        if q.ndim != 3 or q.shape[2] != 4 or len(q) == 0:
            raise ValueError(f"rotations must be a (frames, joints, 4) array with frames, got shape {q.shape}")
    q = qs[0] if len(qs) == 1 else np.concatenate(qs)
    if not np.all(np.isfinite(q)):
        raise ValueError("rotations are not finite")
    norms = quat.norm(q)  # np.linalg.norm(q, axis=-1) to the bit, without its short-axis reduce
    if np.any(np.abs(norms - 1.0) > 1e-3):
        raise ValueError("rotations must be unit quaternions")
    fps = check_fps(fps)
    k = window_frames(fps, window)
    starts = np.cumsum([0] + [len(one) for one in qs[:-1]])
    spans = [(int(a), int(a) + len(one) - k) for a, one in zip(starts, qs, strict=True)]
    rows = np.concatenate([np.arange(a, b) for a, b in spans if b > a] or [np.zeros(0, dtype=int)])
    if not len(rows):
        return [0.0] * len(qs)
    turned = quat.angle_between(q[rows] / norms[rows, :, None], q[rows + k] / norms[rows + k, :, None])
    out, at = [], 0
    for a, b in spans:
        if b <= a:
            out.append(0.0)
            continue
        out.append(float(turned[at : at + b - a].max() * fps / k))
        at += b - a
    return out


def contact_f1(found, reference) -> float:
    """Frame-wise F1 score of contact flags `found` against `reference` (1 when both have none)."""
    a, b = np.asarray(found, dtype=bool), np.asarray(reference, dtype=bool)
    if a.shape != b.shape or a.ndim != 1:
        raise ValueError(f"contact sequences must be one flag per frame, alike, got shapes {a.shape} and {b.shape}")
    total = int(a.sum() + b.sum())
    return 1.0 if total == 0 else 2.0 * int((a & b).sum()) / total
