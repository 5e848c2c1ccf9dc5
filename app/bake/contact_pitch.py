"""The planted foot's pitch at push-off, where holding the captured pitch would pop a joint (issue 21
item 5: the largest joint speed at most 1.1x the input's), for app.bake.contact_legs.

Holding the tip with the foot's captured world pitch fixes the ankle: at push-off, where the hold
keeps the ankle farther from the hip than the capture has it, the knee cannot flex as the capture's
does, and the ankle (in the hold's last frames) or the knee (in the ease after it) turns faster than
anything in the capture (walks: up to 1.21x). Only holds whose joints near their end turn faster
than TRIGGER x the input's largest joint speed are reworked: over their last PUSH_OFF_SECONDS the
foot's pitch about the held tip is chosen per knot (every 1/30 s) from a grid of PITCH_STEP up to
PITCH_LIMIT either way (solvers.plant_pitch: the least largest joint speed, from the hold into the
ease after it, and among paths under CAP x the input's, the least deviation from the captured
pitch), never putting the heel below the ground, and interpolated between knots. The tip stays
held (no slide); the result is kept only where it lowers the leg's largest joint speed.
"""

from __future__ import annotations

import bisect
import math

import numpy as np

from ...rig import plant_read
from ...solvers import plant, plant_pitch, quat
from ...solvers.contacts import window_frames
from . import contact_eases

PITCH_LIMIT = math.radians(20.0)
PITCH_STEP = math.radians(5.0)
PUSH_OFF_SECONDS = 0.4
TRIGGER = 1.05
CAP = 1.0
# An ease's time is warped by the room the input's joints leave under their largest speed, and
# moves at least this share of its even pace where they leave none.
BUDGET_FLOOR = 0.1


def window_speeds(basis: np.ndarray, k: int, fps: float) -> np.ndarray:
    """(F - k,) the largest joint angular speed of local rotations `basis` (F, n, 4) over k frames
    from each frame (rad/s)."""
    if len(basis) <= k:
        return np.zeros(0)
    return plant_pitch.largest_joint(quat.angles_between_cheaply(basis[:-k], basis[k:])) * (fps / k)


def ease_budget(basis: np.ndarray, fps: float, largest: float, floor: float = BUDGET_FLOOR) -> np.ndarray:
    """(F,) per frame, how much faster than the input a joint may turn there: `largest` less the
    input's own joint speed over the windows that step lies in (at least `floor` x `largest`)."""
    k = window_frames(fps)
    speeds = window_speeds(basis, k, fps)
    frames = len(basis)
    own = np.zeros(frames)
    for j in range(k):  # a step from frame t - 1 to t lies in the windows starting at t - k .. t - 1
        own[j + 1 : j + 1 + len(speeds)] = np.maximum(own[j + 1 : j + 1 + len(speeds)], speeds[: frames - j - 1])
    return np.maximum(largest - own, floor * largest)


def _knots(hold: plant.Hold, k: int, span: int) -> np.ndarray:
    """The hold's knots: every k frames back from its last frame, over `span` frames, the first at
    least k frames after the hold's start (the knot before it stays at the captured pitch)."""
    last = hold.end - 1
    first = max(hold.start + k, last - span)
    return np.arange(last, first - 1, -k)[::-1]


def _following(plan: plant.PlantPlan, hold: plant.Hold, frames: int) -> int:
    """The next hold's first frame (`frames` where none: its leg's end)."""
    return min(next((h.start for h in plan.holds if h.start >= hold.end), frames), frames)


def push_off(
    leg: plant_read.LegFrames,
    plan: plant.PlantPlan,
    solved,
    out,
    changed,
    solve_rows,
    fps: float,
    largest,
    tilt=None,
    budget=None,
    limit=0.0,
    ends=None,
):
    """(solved, out, changed) with the push-off's pitch reworked where that lowers the leg's largest
    joint speed, or None where no hold needs it. `solved`: the positional solve (F, 3, 4), `out`,
    `changed`: after the eases (contact_eases); `solve_rows(rows, turns)`: the positional
    solve (F', 3, 4) of frames `rows` with the foot turned by world `turns` (F', 4); `largest`: the
    input's largest joint speed (rad/s); `tilt` (F, 4): the ground's tilt of held feet, or None;
    `budget`, `limit`: the eases' time warp (ease_budget, or a function giving it) and where it is
    tried (contact_eases). `ends`: several legs joined into one timeline (contact_eases.joint_eases;
    `largest` and `limit` then one per leg): each leg's push-off kept or not on its own figures."""
    frames = len(out)
    legs = [(0, frames)] if ends is None else [(a, b) for a, b in zip([0, *ends[:-1]], ends, strict=True)]
    largest = np.broadcast_to(np.asarray(largest, dtype=float), (len(legs),))
    k = window_frames(fps)
    speeds = window_speeds(out, k, fps)
    span = int(round(PUSH_OFF_SECONDS * fps))
    holds = []
    for hold in plan.holds:
        low, end = contact_eases.bounds(ends, hold.start)
        end = frames if end is None else end
        i = 0 if ends is None else bisect.bisect_right(ends, hold.start)
        following = _following(plan, hold, end)
        ease = contact_eases.ease_frames(plan, hold, following, end)
        near = speeds[max(low, hold.end - span - k) : min(end - k, hold.end + len(ease))]
        knots = _knots(hold, k, span)
        if len(near) and near.max() > TRIGGER * largest[i] and len(knots):
            holds.append((hold, knots, ease, following, end, i))
    if not holds:
        return None
    if callable(budget):
        budget = budget()
    steps = int(round(PITCH_LIMIT / PITCH_STEP))
    angles = PITCH_STEP * np.arange(-steps, steps + 1)
    phi = np.zeros(frames)
    # Every hold's candidates in one solve (each frame is solved on its own: the same rotations as
    # a solve per hold, for one call's fixed cost).
    every = [np.tile(knots, len(angles)) for _, knots, *_ in holds]
    all_rows = np.concatenate(every)
    pitches = np.concatenate([np.repeat(angles, len(knots)) for _, knots, *_ in holds])
    # The pitch axes and the foot on the rows solved alone (each row's figures its own).
    heel, tip = leg.heel_world, leg.toe_world
    axes = plant_pitch.pitch_axes(heel[all_rows], tip[all_rows])
    all_turns = plant_pitch.pitch_turns(axes, pitches)
    if tilt is not None:
        all_turns = quat.multiply(all_turns, tilt[all_rows])
    solved_rows = solve_rows(all_rows, all_turns)
    ends_at = np.cumsum([len(r) for r in every])
    # Every candidate's heel height and every hold's last-knot corrections in one product each
    # (each row's figures its own).
    above = None
    if plan.ground is not None:  # the heel (the ankle) never below the ground under the tip
        lifted = plan.target[all_rows, 2] + quat.rotate(all_turns, heel[all_rows] - tip[all_rows])[:, 2]
        above = lifted >= plan.ground[all_rows]
    # Row of candidate g at hold h's last knot: its start + g K + K - 1 (rows are tiled knots).
    at_last = np.concatenate(
        [
            stop - len(rows) + np.arange(1, len(angles) + 1) * len(hold[1]) - 1
            for hold, rows, stop in zip(holds, every, ends_at, strict=True)
        ]
    )
    last_knots = np.repeat([hold[1][-1] for hold in holds], len(angles))
    all_corrections = quat.multiply(solved_rows[at_last], quat.conjugate(leg.basis[last_knots]))
    picks, eases = [], []
    for h, ((hold, knots, after, following, end, i), rows, stop) in enumerate(zip(holds, every, ends_at, strict=True)):
        start = stop - len(rows)
        candidates = solved_rows[start:stop].reshape(len(angles), len(knots), 3, 4)
        allowed = None if above is None else above[start:stop].reshape(len(angles), len(knots))
        corrections = all_corrections[h * len(angles) : (h + 1) * len(angles)]
        target = None
        if following < end and following <= hold.end + int(math.ceil(plan.blend)):
            target = quat.multiply(solved[following], quat.conjugate(leg.basis[following]))
        eases.append((hold, after, leg.basis[after], corrections, following, target))
        picks.append((hold, knots, candidates, allowed, i))
    # The eases after every hold for every candidate at once (none depends on another hold's).
    after_holds = contact_eases.eased_outs(plan, eases, budget, ends)
    # Every hold's search in one pass (plant_pitch.pitch_paths: each hold's path its own).
    searches = [
        (candidates, solved[knots[0] - k], ease, CAP * largest[i], allowed)
        for (_, knots, candidates, allowed, i), ease in zip(picks, after_holds, strict=True)
    ]
    paths = plant_pitch.pitch_paths(searches, angles, k / fps, k)
    for (hold, knots, *_), (path, _) in zip(picks, paths, strict=True):
        span_frames = np.arange(knots[0] - k, hold.end)
        at = np.concatenate([[knots[0] - k], knots])
        phi[span_frames] = np.interp(span_frames, at, np.concatenate([[0.0], angles[path]]))  # np.r_ costs more
    rows = np.flatnonzero(phi != 0.0)
    if not len(rows):
        return None
    turns = plant_pitch.pitch_turns(plant_pitch.pitch_axes(heel[rows], tip[rows]), phi[rows])
    if tilt is not None:
        turns = quat.multiply(turns, tilt[rows])
    pitched = solved.copy()
    pitched[rows] = solve_rows(rows, turns)
    new_out, new_changed = contact_eases.joint_eases(
        plan, leg.basis, pitched, budget, k, limit, ends, earlier=(solved, out)
    )
    new_speeds = window_speeds(new_out, k, fps)
    kept = False
    for low, end in legs:  # each leg's push-off kept only where it lowers that leg's largest joint speed
        if not np.any(phi[low:end]) or new_speeds[low : end - k].max() >= speeds[low : end - k].max():
            pitched[low:end], new_out[low:end], new_changed[low:end] = solved[low:end], out[low:end], changed[low:end]
        else:
            kept = True
    return (pitched, new_out, new_changed) if kept else None
