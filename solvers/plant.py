"""Planted feet over time (issue 21 item 2): where a foot chain's tip goes on each frame of a bake
that honours its contacts (numpy + stdlib only).

Input, per frame of the bake: the tip's world position as the input pose plays it (`points`,
(F, 3), z up), the `contact` flags (`planted`, (F,) bool), the frame rate, `blend` frames
(`default_blend`: about 0.15 s), and optionally the ground: a plane height or the (F,) heights
under the input tip (a raycast), with the tip's `clearance` above it when the foot rests on it
(the planted end's rest offset: a scalar or (F,)). `plan` returns per frame the tip's `target`,
the hold's `weight` and the `floor` it never goes below, and the holds (one per contact run).

Rules (the issue's, and the choices they leave open):
- **Hold.** During a contact the target is constant: the point where the plan has the tip on the
  contact's first frame, which is the input's own position there (so touchdown adds no jump of
  its own), put onto the ground when there is one (height = ground + clearance on that frame).
  Without one, a caller may give the height each contact's hold takes (`rest`: where the tip
  settles, `settle_heights`), snapped to as onto a ground (the snap eased in before the contact).
- **Ease out.** On the `blend` frames after a contact the target eases from the held point back
  to the input: target = (1 - w) input + w held, with w = 1 - smoothstep(k / (blend + 1)) on the
  k-th frame after the contact's last (k = 1..), 0 from k = blend + 1 on. Smoothstep's slope is 0
  at both ends: the target leaves the hold at rest and joins the input at the input's velocity.
- **No anticipation.** Before a contact the horizontal target is the input's, bit for bit: easing
  in never pulls a swinging foot toward its landing spot. The one exception is height, and only
  with a ground: the snap onto the ground (`Hold.snap`: held height minus where the plan had the
  tip on the first frame; the retarget's float or sink, a few cm) is eased in over the free frames
  before the contact, n = min(blend, frames since the previous contact or the first frame), adding
  (1 - smoothstep(j / (n + 1))) * snap to the height j frames before the contact. So the foot
  lands where it landed, at the ground's height, without a vertical pop; never into an earlier
  contact's hold.
- **Adjacent contacts.** A contact that starts while the previous one still eases out holds where
  that ease has the tip on its first frame (a blend of the input and the previous hold), then
  snaps onto the ground as above: the target stays continuous, and a short unplant keeps the foot
  nearly where it stood instead of hopping to the input and back. The previous ease stops there.
- **Ground.** The target's height is clamped to `floor` = the ground under the target + clearance
  on every frame, contact or swing. Ground heights are given under the input tip; on a blended
  frame the ground under the target is taken as the same blend of the ground under the input and
  under the hold (exact on a plane, and for ground that is planar between the two points).
  During a contact the floor is the hold's (the clearance of its first frame), so the hold is
  constant and sits exactly on it.

Continuity (tested): with p the input, a and w the hold and weight governing frame i - 1 (w taken
along that hold's ease even where a later contact starts at i), s the snap of the next contact at
or after i and n its ease-in length, on every frame
    |t_i - t_{i-1}| <= |p_i - p_{i-1}| + 1.5 / (blend + 1) |p_{i-1} - a| + 1.5 / (n + 1) |s|
                       + |floor_i - floor_{i-1}|
(1.5 = smoothstep's steepest slope), the second term only near a hold, the third only on its
ease-in frames. With blend = 0 the return is immediate: the jump is then the input's distance
from the hold, as asked for.

Use on the Blender side: the chain's tip should reach `target` exactly on every frame where it
differs from the input (`PlantPlan.changed`): the ease is already in the target, so the IK is
applied at full strength there, not blended again by `weight`; elsewhere the input pose is kept
and nothing is keyed. The foot's pitch follows the input: `head_targets` gives where the foot
bone's head (the ankle) must go so that the foot keeps its input world rotation and its tip lands
on the target; the bones above the foot solve for that, the foot bone's world rotation is the
input's. Heel rise and toe roll (the foot pitching about its planted tip) stay as captured.

Which frames hold: the contact keys start at heel strike (either end of the foot plants), when
the tip (the ball) is still coming down, 3-12 cm up on the shared CMU walks; held from there and
put on the ground with the pitch kept, the ankle goes 5-31 mm below the ground. `tip_down` gives,
within each contact, the frames from where the tip itself lands: planned on those, the ankle
stays above the ground on the same clips (tests/blender/test_plant_mocap.py). Which flags the bake
plans on is the caller's choice; `plan` holds on whatever it is given.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from . import quat
from .contacts import (
    SPEED_WINDOW,
    ContactSettings,
    check_fps,
    check_points,
    checked_settings,
    contact_runs,
    ground_heights,
    window_speed,
)
from .foot_metrics import Slide, foot_slide, lowest_height

BLEND_SECONDS = 0.15
# Without a ground a hold takes the tip's median height over this long after it lands (settle_heights).
SETTLE_SECONDS = 0.2
STEEPEST = 1.5  # smoothstep's largest slope (at 1/2): no frame of an ease moves more than 1.5 / (n + 1) of it


@dataclass(frozen=True)
class Hold:
    """One contact run: frames start..end - 1 hold `point`."""

    start: int
    end: int
    point: np.ndarray  # (3,) the held tip position (ground-snapped when there is a ground)
    snap: float  # held height minus where the plan had the tip on the first frame (0 without ground)
    ease_in: int  # frames before `start` over which the snap is eased in


@dataclass(frozen=True)
class PlantPlan:
    target: np.ndarray  # (F, 3) where the tip goes, world space
    weight: np.ndarray  # (F,) the hold's share of the target: 1 in contacts, easing to 0 after, 0 in swing
    changed: np.ndarray  # (F,) bool: the target is not the input tip (hold, ease, snap or clamp)
    floor: np.ndarray  # (F,) the lowest height the target may have (-inf without ground)
    ground: np.ndarray | None  # (F,) the ground's height under the target (None without ground)
    holds: list[Hold]
    blend: float  # the ease-out frames used


@dataclass(frozen=True)
class PlantFigures:
    slide: Slide  # the point's world distance moved per 1/30 s within contacts
    lowest: float  # its lowest height above the ground (negative: below)


def default_blend(fps: float) -> int:
    """Ease-out frames of about 0.15 s at `fps` (at least 1): 18 at 120 fps, 4 at 24 or 25, 5 at 30."""
    return max(1, int(math.floor(BLEND_SECONDS * check_fps(fps) + 0.5)))


def smooth(t: np.ndarray) -> np.ndarray:
    """Smoothstep 3t^2 - 2t^3 on t clipped to [0, 1]: 0 -> 0, 1 -> 1, slope 0 at both ends."""
    t = np.asarray(t).clip(0.0, 1.0)
    return t * t * (3.0 - 2.0 * t)


def ease(k: np.ndarray, frames: float) -> np.ndarray:
    """Weight k frames away from a hold over an ease of `frames` frames: 1 at k = 0, easing to 0 at
    k = frames + 1 and beyond (frames 0: 0 from k = 1 on)."""
    return 1.0 - smooth(np.asarray(k, dtype=float) / (frames + 1.0))


def _check_blend(blend, fps: float) -> float:
    if blend is None:
        return float(default_blend(fps))
    if isinstance(blend, bool) or not isinstance(blend, (int, float, np.integer, np.floating)):
        raise ValueError(f"contact_blend must be a number of frames, got {blend!r}")
    if not (math.isfinite(blend) and blend >= 0.0):
        raise ValueError(f"contact_blend must be 0 or more frames, got {blend!r}")
    return float(blend)


def _check_planted(planted, frames: int) -> np.ndarray:
    flags = np.asarray(planted)
    if flags.shape != (frames,):
        raise ValueError(f"planted flags must be one per frame ({frames}), got shape {flags.shape}")
    if flags.dtype != bool and not np.isin(flags, (0, 1)).all():
        raise ValueError("planted flags must be booleans (or 0 and 1)")
    return flags.astype(bool)


def _check_clearance(clearance, frames: int) -> np.ndarray:
    array = np.asarray(clearance, dtype=float)
    if array.ndim == 0:
        array = np.full(frames, float(array))
    if array.shape != (frames,):
        raise ValueError(f"clearance must be a distance or one per frame ({frames}), got shape {array.shape}")
    if not np.all(np.isfinite(array)):
        raise ValueError("clearance is not finite")
    return array


def _check_rest(rest, frames: int) -> np.ndarray:
    array = np.asarray(rest, dtype=float)
    if array.shape != (frames,):
        raise ValueError(f"rest heights must be one per frame ({frames}), got shape {array.shape}")
    if not np.all(np.isfinite(array)):
        raise ValueError("rest heights are not finite")
    return array


def settle_heights(tip, planted, down, fps: float, seconds: float = SETTLE_SECONDS) -> np.ndarray:
    """(F,) for `plan`'s `rest` without a ground: on each contact run of `planted` (the contacts, or
    the flags the plan holds on: runs within them), the height the input tip (F, 3) settles at as
    it lands: the median of its heights on the run's frames where it is down (`down`, tip_down's
    flags) within `seconds` of the first (the run's first `seconds` where it is never down); the
    tip's own height outside runs (never read). Why not the height on the hold's first frame: the
    tip counts as down within the contact's Height of its lowest, and lands still coming down
    through it (a user trial, the CMU walk with legs x1.2: held at 52.8 mm for the whole stance,
    the capture's tip settled at 23-27 mm). Why not the whole contact's: a long contact of several
    placements (standing, pivots, a crouch) then holds its first one where a later one settles,
    the ankle far below the capture's."""
    tip = check_points(tip, "planted points")
    flags, down = _check_planted(planted, len(tip)), _check_planted(down, len(tip))
    span = max(1, int(round(check_fps(fps) * seconds)))
    out = tip[:, 2].copy()
    for start, end in contact_runs(flags):
        landed = np.flatnonzero(down[start:end])
        first = start + (int(landed[0]) if len(landed) else 0)
        rows = np.arange(first, min(end, first + span))
        if len(landed):
            rows = rows[down[rows]]
        out[start:end] = float(np.median(tip[rows, 2]))
    return out


def settled(down, tip, rest, tolerance: float) -> np.ndarray:
    """(F,) bool: `down` (tip_down's flags) from the first frame of each of its runs on which the tip
    (F, 3) is within `tolerance` above its `rest` height there (`settle_heights`) on: where the tip
    has landed, not where it is still coming down through the contact's Height (a run it never
    comes that near keeps its frames). For a plan without a ground: held from there, the frames
    before turn the foot about its heel (heel_first)."""
    tip = check_points(tip, "planted points")
    down = _check_planted(down, len(tip))
    rest = _check_rest(rest, len(tip))
    out = down.copy()
    for start, end in contact_runs(down):
        near = np.flatnonzero(tip[start:end, 2] <= rest[start:end] + tolerance)
        if len(near):
            out[start : start + int(near[0])] = False
    return out


def kept_above(rest, planted, ankle, offsets) -> np.ndarray:
    """(F,) `rest` (settle_heights) raised, run by run of `planted` (the flags the plan holds on), so
    that the held foot's ankle (the hold's height plus the z of `offsets` (F, 3): the ankle's offset
    from the held point per frame, the foot's pitch kept) is nowhere lower than the input's `ankle`
    (F, 3) at its lowest in that run: a tip held where it settles does not push the ankle below
    where the capture ever has it (a contact where the foot stands on its heel, toe up, would)."""
    rest = _check_rest(rest, len(rest))
    flags = _check_planted(planted, len(rest))
    ankle = check_points(ankle, "ankle positions")
    offsets = check_points(offsets, "ankle offsets")
    out = rest.copy()
    for start, end in contact_runs(flags):
        lowest = float(ankle[start:end, 2].min() - offsets[start:end, 2].min())
        out[start:end] = np.maximum(rest[start:end], lowest)
    return out


def unless_near(rest, planted, heights, tolerance: float) -> np.ndarray:
    """(F,) `rest` with each run of `planted` whose rest is not below `heights` (F,) on its first frame
    (where the plan would hold it: heel_first's points) by more than `tolerance` given that height
    instead: a tip that lands about where it settles (capture noise, a bobbing walk) keeps today's
    hold to the bit, no snap eased in before it, and a hold is only lowered (to where a tip still
    coming down settles), never raised above where it lands."""
    rest = _check_rest(rest, len(rest))
    flags = _check_planted(planted, len(rest))
    heights = _check_rest(heights, len(rest))
    out = rest.copy()
    for start, end in contact_runs(flags):
        if rest[start] >= heights[start] - tolerance:  # (above it: a hold is only ever lowered)
            out[start:end] = heights[start]
    return out


def plan(points, planted, fps: float, blend: float | None = None, ground=None, clearance=0.0, rest=None) -> PlantPlan:
    """The planted tip's target on each frame (module docstring): `points` (F, 3) the input tip,
    `planted` (F,) its contact flags, `fps` frames per second, `blend` ease-out frames (None:
    `default_blend(fps)`), `ground` None (no ground: no snap, no clamp), a plane height or (F,)
    heights under the input tip, `clearance` the tip's height above the ground when the foot rests
    on it (a distance or (F,); with a ground or `rest`). `rest` (F,), without a ground: the height
    a contact's hold takes (read on its first frame, plus `clearance` there; `settle_heights`),
    snapped to and eased in before the contact as onto a ground, with no floor; None: the height
    the plan has the tip at on that frame. ValueError names bad input."""
    points = check_points(points, "planted points")
    frames = len(points)
    flags = _check_planted(planted, frames)
    fps = check_fps(fps)
    blend = _check_blend(blend, fps)
    grounded = ground is not None
    resting = rest is not None
    if grounded and resting:
        raise ValueError("rest heights are for a plan without a ground (the ground gives the hold's height)")
    if grounded:
        under_input = ground_heights(ground, frames, 1)[:, 0]
        clear_input = _check_clearance(clearance, frames)
    else:
        if not resting and np.any(np.asarray(clearance, dtype=float) != 0.0):
            raise ValueError("clearance is a height above the ground: give a ground (or rest heights) with it")
        under_input = np.zeros(frames)
        clear_input = _check_clearance(clearance, frames) if resting else under_input
        if resting:
            rest = _check_rest(rest, frames)
    weight = np.zeros(frames)
    # Per frame, the governing hold's point, the ground under it and its clearance (the input's
    # where none governs; their weight is then 0).
    anchor, anchor_ground, anchor_clear = points.copy(), under_input.copy(), clear_input.copy()
    lift = np.zeros(frames)
    holds: list[Hold] = []
    runs = contact_runs(flags)
    for (start, end), (w, after, weights, ease_in, lifts) in zip(
        runs, _run_eases(runs, frames, blend, grounded or resting), strict=True
    ):
        # Where the plan has the tip on the first frame: the input, or the previous hold's ease there.
        held = (1.0 - w) * points[start] + w * anchor[start]
        held_ground = (1.0 - w) * under_input[start] + w * anchor_ground[start]
        held_clear = (1.0 - w) * clear_input[start] + w * anchor_clear[start]
        snap = 0.0
        if grounded:
            snap = float(held_ground + held_clear - held[2])
            held[2] = held_ground + held_clear
            ease_in = ease_in if snap else 0
        elif resting:  # the contact's own height (no ground under it to blend with a previous hold's)
            snap = float(rest[start] + clear_input[start] - held[2])
            held[2] = rest[start] + clear_input[start]
            ease_in = ease_in if snap else 0
        if ease_in:
            lift[start - np.arange(1, ease_in + 1)] += lifts * snap
        for ours, value in ((anchor, held), (anchor_ground, held_ground), (anchor_clear, held_clear)):
            ours[start:end] = ours[after] = value
        weight[start:end] = 1.0
        weight[after] = weights
        holds.append(Hold(start, end, held, snap, ease_in))
    w = weight[:, None]
    target = (1.0 - w) * points + w * anchor  # exact at w = 0 (the input) and w = 1 (the hold)
    target[:, 2] += lift
    if grounded:
        under = (1.0 - weight) * under_input + weight * anchor_ground
        floor = under + (1.0 - weight) * clear_input + weight * anchor_clear
        target[:, 2] = np.maximum(target[:, 2], floor)
    else:
        under, floor = None, np.full(frames, -np.inf)
    return PlantPlan(target, weight, np.any(target != points, axis=1), floor, under, holds, blend)


def _run_eases(runs: list[tuple[int, int]], frames: int, blend: float, grounded: bool) -> list[tuple]:
    """Per contact run of `plan`, what its loop reads of `ease`, every weight in one call (each its
    own figures, as one by one): (the previous hold's ease on its first frame (0.0 for the first),
    the frames of its ease-out, their weights, its snap's ease-in frames (where it snaps), their
    weights (j = 1.. frames before the run))."""
    if not runs:
        return []
    index = np.arange(frames)
    ks, overs, layout = [], [], []  # every weight's k and its ease's frames, run after run
    previous_end = 0
    for i, (start, end) in enumerate(runs):
        after = index[end : min(frames, end + int(math.ceil(blend + 1.0)))]
        ease_in = int(min(blend, start - previous_end)) if grounded else 0
        if i:
            ks.append(np.array([start - (previous_end - 1)], dtype=float))
            overs.append(np.full(1, blend))
        ks += [(after - (end - 1)).astype(float), np.arange(1, ease_in + 1, dtype=float)]
        overs += [np.full(len(after), blend), np.full(ease_in, float(ease_in))]
        layout.append((after, ease_in))
        previous_end = end
    k, over = np.concatenate(ks), np.concatenate(overs)
    weights = 1.0 - smooth(k / (over + 1.0))  # ease(k, over), weight by weight
    out, at = [], 0
    for i, (after, ease_in) in enumerate(layout):
        w = 0.0
        if i:
            w, at = float(weights[at]), at + 1
        outs = weights[at : at + len(after)]
        at += len(after)
        out.append((w, after, outs, ease_in, weights[at : at + ease_in]))
        at += ease_in
    return out


def tip_down(planted, tip, fps: float, settings: ContactSettings, ground=None, tip_speed=None) -> np.ndarray:
    """(F,) bool: within each contact of `planted`, the frames from the first to the last on which
    the tip itself is down: within `settings.height` of its lowest height in that contact (above
    `ground`, as `plan` takes it) and slower than `settings.speed` (over `settings.window`). A
    contact is keyed from either end of the foot, so it starts at heel strike, with the tip (the
    ball) still coming down, often several cm up: held from there and put on the ground, the tip
    would pull the ankle below the ground (the foot keeping its pitch). These flags hold the tip
    from where it lands instead. A contact on which the tip is never down (the heel alone carries
    it, or the foot is in the air: a contact keyed mid-swing) is dropped (`dropped_runs`: the bake
    names it and does not count it). `tip_speed` (F,): `tip_speeds(tip, fps, settings)` where the caller has it."""
    tip = check_points(tip, "planted points")
    flags = _check_planted(planted, len(tip))
    fps = check_fps(fps)
    settings = checked_settings(settings)
    heights = tip[:, 2] - ground_heights(ground, len(tip), 1)[:, 0]
    slow = _tip_speed(tip, fps, settings, tip_speed) <= settings.speed
    down = np.zeros(len(tip), dtype=bool)
    for start, end in contact_runs(flags):
        low = heights[start:end] - heights[start:end].min() <= settings.height
        frames = np.flatnonzero(low & slow[start:end])
        if len(frames):
            down[start + frames[0] : start + frames[-1] + 1] = True
    return down


def room_at_ends(planted, blend: float, start: bool, end: bool) -> np.ndarray:
    """(F,) bool: `planted` with no frame held within `blend` frames (rounded up) of a cut end of
    the range (`start`, `end`: the frame before the first, after the last, plays unbaked input).
    A hold there would meet the unbaked neighbour with a jump: the hold's own ground snap (eased in
    over the free frames before it, which the first frame has none of), the hips lowered for it,
    its ease back to the input (cut by the range's last frame). With that room, a contact running
    across the first frame is held from `blend` frames in (the frames before ease from the input,
    as before any contact), one running across the last frame eases back to the input by then, as
    at its own end. A contact that lies wholly within that room is not held (`dropped_runs`)."""
    flags = np.asarray(planted, dtype=bool).copy()
    room = int(math.ceil(_check_blend(blend, 1.0)))
    if start:
        flags[:room] = False
    if end and room:
        flags[max(0, len(flags) - room) :] = False
    return flags


def dropped_runs(planted, held) -> list[tuple[int, int]]:
    """The contact runs (start, end) of `planted` on which no frame is `held` (the bake dropped
    them: tip_down, room_at_ends)."""
    held = np.asarray(held, dtype=bool)
    return [(start, end) for start, end in contact_runs(np.asarray(planted, dtype=bool)) if not held[start:end].any()]


def tip_speeds(tip, fps: float, settings: ContactSettings) -> np.ndarray:
    """(F,) the tip's speed over `settings.window` (solvers.contacts.window_speed), as `tip_down` and
    `pivot_flags` read it: found once, given to both."""
    return window_speed(check_points(tip, "planted points"), check_fps(fps), checked_settings(settings).window)


def _tip_speed(tip: np.ndarray, fps: float, settings: ContactSettings, given) -> np.ndarray:
    if given is None:
        return window_speed(tip, fps, settings.window)
    given = np.asarray(given, dtype=float)
    if given.shape != (len(tip),):
        raise ValueError(f"tip speeds must be one per frame ({len(tip)}), got shape {given.shape}")
    return given


def pivot_flags(
    planted, down, heel, tip, fps: float, settings: ContactSettings, ground=None, tip_speed=None
) -> tuple[np.ndarray, np.ndarray]:
    """((F,) bool, (F,) bool) for `heel_first`: within each contact of `planted`, the frames on
    which the heel end (the foot bone's head) is down: within `settings.height_leave` of its lowest
    height in that contact (above `ground`, as `plan` takes it) and slower than
    `settings.speed_leave` (over `settings.window`), or within `settings.min_duration` before
    the tip lands (`down`, tip_down's flags: a heel that starts to rise as the ball lands is still
    a heel strike); and those on which the tip is slower than `settings.speed` (`tip_speed`: as
    tip_down's)."""
    heel, tip = check_points(heel, "heel positions"), check_points(tip, "planted points")
    flags, down = _check_planted(planted, len(heel)), _check_planted(down, len(heel))
    fps = check_fps(fps)
    settings = checked_settings(settings)
    heights = heel[:, 2] - ground_heights(ground, len(heel), 1)[:, 0]
    slow = window_speed(heel, fps, settings.window) <= settings.speed_leave
    grace = int(math.ceil(settings.min_duration * fps))
    heel_on = np.zeros(len(heel), dtype=bool)
    for start, end in contact_runs(flags):
        low = heights[start:end] - heights[start:end].min() <= settings.height_leave
        heel_on[start:end] = low & slow[start:end]
        landed = np.flatnonzero(down[start:end])
        if len(landed):
            heel_on[max(start, start + int(landed[0]) - grace) : start + int(landed[0])] = True
    return heel_on, flags & (_tip_speed(tip, fps, settings, tip_speed) <= settings.speed)


def head_targets(target, head, tip) -> np.ndarray:
    """(F, 3) where the foot bone's head (the ankle) goes so that the foot keeps its input world
    rotation (its pitch: heel rise, toe roll) and its tip lands on `target`: target + head - tip,
    with `head` and `tip` the input pose's (F, 3) world positions of the foot's ends."""
    target = check_points(target, "tip targets")
    head, tip = check_points(head, "foot heads"), check_points(tip, "foot tips")
    if not len(target) == len(head) == len(tip):
        raise ValueError(
            f"targets, heads and tips must have the same frames, got {len(target)}, {len(head)}, {len(tip)}"
        )
    return target + (head - tip)


def plant_metrics(points, planted, fps: float, ground=None, window: float = SPEED_WINDOW) -> PlantFigures:
    """Figures of a tip's track (the input's before, the target's after): how far it slides per
    `window` seconds within contacts (solvers.foot_metrics.foot_slide on the point alone), and its
    lowest height above `ground` (None: z = 0, as foot_metrics; a plane height; (F,) heights)."""
    points = check_points(points, "planted points")
    flags = _check_planted(planted, len(points))
    return PlantFigures(foot_slide(points, points, flags, fps, window), lowest_height(points, points, ground))


@dataclass(frozen=True)
class HeelFirst:
    """A contact's heel strike held too: plan `points` with `planted`, then add `offset` to the target."""

    points: np.ndarray  # (F, 3) the track to plan on
    planted: np.ndarray  # (F,) bool: the contacts on which the tip comes down, whole
    offset: np.ndarray  # (F, 3) added to the planned target (non-zero on heel-strike frames only)


def heel_first(tip, heel, rotations, planted, down, heel_on=None, tip_slow=None) -> HeelFirst:
    """Hold a contact from its first keyed frame (heel strike), not only from where the tip lands
    (`down`, tip_down's flags). On the frames between, the foot (world rotations `rotations`
    (F, 4), w x y z) turns as captured about a pivot fixed in the world: the point under its heel
    end (the ankle) at the tip's landing height, where the heel touches; its tip comes down onto
    the point it then holds to the contact's last frame. Plan the returned `points` with
    `planted`, then add `offset` to the target: on heel-strike frames k of a contact whose tip
    lands at d, offset_k = tip'_k - tip'_d (tip' the tip as the foot turns about the pivot) and
    points_k = tip_k - offset_k, so `plan` holds tip'_d from the contact's first frame (where
    tip' is the input's own tip: no jump) and the ground snap, eased in before the contact,
    moves both phases alike. A contact on which the tip is never down is not held (as tip_down).
    `heel_on`, `tip_slow` (F,) bool (`pivot_flags`), or None (the heel down, the tip slow on every
    frame): the foot pivots about the point under its heel only while the heel is down. Where the
    heel leaves (rises or moves) before the tip lands, the pivot ends there and the tip is held
    from that frame when it is slow (the foot turns on its tip: heel rise, a toe pivot), else from
    where it lands (the frames before follow the input). Pivoted about a point under the first
    frame's heel through a heel rise, the held tip went below the capture's lowest (a user trial,
    a 2.5 s contact of standing, pivots and a crouch on the raw CMU start-walk-stop clip: 58 mm
    below it, or the foot lifted 33 mm for 2 s onto a ground)."""
    tip, heel = check_points(tip, "planted points"), check_points(heel, "heel positions")
    frames = len(tip)
    if len(heel) != frames:
        raise ValueError(f"heel and tip positions must have the same frames, got {len(heel)} and {frames}")
    turns = np.asarray(rotations, dtype=float)
    if turns.shape != (frames, 4) or not np.all(np.isfinite(turns)):
        raise ValueError(f"foot rotations must be (frames, 4) finite quaternions, got shape {turns.shape}")
    flags, down = _check_planted(planted, frames), _check_planted(down, frames)
    heel_on = np.ones(frames, dtype=bool) if heel_on is None else _check_planted(heel_on, frames)
    tip_slow = np.ones(frames, dtype=bool) if tip_slow is None else _check_planted(tip_slow, frames)
    points, offset = tip.copy(), np.zeros_like(tip)
    held = np.zeros(frames, dtype=bool)
    pivoted = []  # (start, first): the contacts whose foot turns about the point under its heel
    for start, end in contact_runs(flags):
        landed = np.flatnonzero(down[start:end])
        if not len(landed):
            continue
        first = start + int(landed[0])
        # Frames before the heel first comes down (a contact keyed a frame or two early) are not
        # the heel leaving: only those after it are (review11b).
        on = np.flatnonzero(heel_on[start:first])
        arrived = int(on[0]) if len(on) else 0
        left = np.flatnonzero(~heel_on[start + arrived : first]) + arrived
        if len(left):  # the heel leaves before the tip lands: no heel strike all the way
            if not tip_slow[start + left[0]]:  # held from where the tip lands
                held[first:end] = True
                continue
            first = start + int(left[0])  # the foot turns on its tip from here
        held[start:end] = True
        if first != start:
            pivoted.append((start, first))
    if pivoted:  # every pivoting contact's turns in one pass (each frame's figures its own)
        starts = np.array([start for start, _ in pivoted])
        firsts = np.array([first for _, first in pivoted])
        pivots = np.stack([heel[starts, 0], heel[starts, 1], tip[firsts, 2]], axis=1)
        arms = quat.rotate(quat.conjugate(turns[starts]), heel[starts] - pivots)  # in the foot's frame
        counts = firsts + 1 - starts
        rows = np.concatenate([np.arange(start, first + 1) for start, first in pivoted])
        ankles = np.repeat(pivots, counts, axis=0) + quat.rotate(turns[rows], np.repeat(arms, counts, axis=0))
        turned = ankles + tip[rows] - heel[rows]
        at = 0
        for (start, first), count in zip(pivoted, counts.tolist(), strict=True):
            mine = turned[at : at + count]
            offset[start:first] = mine[:-1] - mine[-1]
            points[start:first] = tip[start:first] - offset[start:first]
            at += count
    return HeelFirst(points, held, offset)
