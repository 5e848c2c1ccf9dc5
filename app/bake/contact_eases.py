"""The planted leg's eases in joint space (app.bake.contact_legs): after a hold, the correction of its
last frame (new local rotation x input's^-1, per bone) faded out on the parent's side over the plan's
blend frames, or into the next hold's correction where that starts sooner; before a hold, the ground
snap's correction faded in. An ease of the tip's position through IK would turn a nearly straight
knee far faster than the foot moves."""

from __future__ import annotations

import bisect
import math

import numpy as np

from ...rig import contacts as rig_contacts
from ...rig import keys
from ...solvers import plant, plant_legs, quat


def cut_ends(context, obj, frames: np.ndarray) -> tuple[bool, bool]:
    """(start, end): whether the frame before the range's first, after its last, plays motion the
    bake leaves as it is: within the scene's frame range and the action's keys. A hold or lowered
    hips there would pop against it (solvers.plant.room_at_ends). A range that starts (ends) where
    the scene or the action does is met by no unbaked frame of the motion: nothing eases there."""
    scene = context.scene
    if not len(frames):
        return False, False
    # The motion's own keys (not Chain IK's Contact keys, which may run on past them: review14);
    # None where it may go on past them (a cycle, NLA strips): then the scene's range decides.
    span = rig_contacts.motion_span(obj)
    low, high = (-math.inf, math.inf) if span is None else span
    first, last = (float(f) for f in keys.action_frames(obj, np.array([frames[0], frames[-1]])))
    start = int(frames[0]) > scene.frame_start and low < first - keys.FRAME_EPSILON
    end = int(frames[-1]) < scene.frame_end and high > last + keys.FRAME_EPSILON
    return bool(start), bool(end)


def ease_frames(plan: plant.PlantPlan, hold: plant.Hold, following: int, frames: int) -> np.ndarray:
    """The frames of the ease after `hold`: `plan.blend` frames, or up to `following` (the next
    hold's start) where that comes first."""
    return np.arange(hold.end, min(hold.end + int(math.ceil(plan.blend)) + 1, following, frames))


def bounds(ends, frame: int) -> tuple[int, int]:
    """(first frame, end) of the leg holding `frame` where several legs' frames are joined into one
    timeline (`ends`: each leg's end in it, increasing; None: one leg over every frame, end None)."""
    if ends is None:
        return 0, None
    i = bisect.bisect_right(ends, frame)
    return (ends[i - 1] if i else 0), ends[i]


def _progress(after: np.ndarray, last: int, steps: float, budget, end: int | None = None) -> np.ndarray:
    """(k,) how far along an ease of `steps` frames after frame `last` each of `after` is: k / steps,
    or, with a `budget` (F,) per frame, the share of the budget spent by then (the ease's time
    warped so that it moves most where the budget is largest; `end`: its leg's end, default F)."""
    if budget is None:
        return (after - last) / float(steps)
    count = int(math.ceil(steps))
    end = len(budget) if end is None else end
    spent = np.cumsum(budget[np.minimum(np.arange(last + 1, last + count + 1), end - 1)])
    if not (count and spent[-1] > 0.0 and np.isfinite(spent[-1])):  # no budget: the even pace
        return (after - last) / float(steps)
    return np.concatenate([[0.0], spent / spent[-1]])[np.minimum(after - last, count)]


def eased_outs(plan, eases, budget=None, ends=None) -> list[np.ndarray]:
    """Per ease (hold, after, inputs, corrections, following, target): (G, k, 3, 4) the leg's local
    rotations on the ease's frames `after` (k,) for G corrections (G, 3, 4) of the hold's last
    frame: faded out (plant_legs.faded) over `plan.blend` frames, or, where the ease runs into the
    next hold (`target`: its first frame's correction (3, 4), at frame `following`), faded from one
    correction into the other over the gap. `inputs` (k, 3, 4). Every hold's eases in one numpy
    pass per kind of ease (each frame's rotations from its own figures). `ends`: where several legs
    are joined in `plan`, each leg's end (bounds)."""
    kinds: dict[bool, list] = {False: [], True: []}  # by `target is not None`
    for i, (hold, after, inputs, corrections, following, target) in enumerate(eases):
        last = hold.end - 1
        end = bounds(ends, hold.start)[1]
        count = len(corrections)
        shape = (count, len(after), 3, 4)
        steps = plan.blend + 1.0 if target is None else following - last
        # Each ease's progress repeated per correction; its smoothstep taken below for every ease at once.
        progress = _progress(after, last, steps, budget, end)
        if count == 1:  # one correction (joint_eases): no repeat (np.tile and np.broadcast_to cost more)
            base = np.asarray(inputs).reshape(-1, 3, 4)
        else:
            base = np.broadcast_to(inputs, shape).reshape(-1, 3, 4)
            progress = np.tile(progress, count)
        kinds[target is not None].append((i, shape, base, corrections, progress, target))
    out: list = [None] * len(eases)
    for crossed, items in kinds.items():
        if not items:
            continue
        base, weight = (np.concatenate([item[j] for item in items]) for j in (2, 4))
        weight = plant.smooth(weight) if crossed else 1.0 - plant.smooth(weight)
        # Each correction's turn (or its turn into the next hold's) converted once for every
        # candidate, then repeated over its ease's frames: each frame's figures as converted there.
        corrections = np.concatenate([item[3] for item in items])
        if crossed:
            targets = np.concatenate([np.broadcast_to(item[5], item[3].shape) for item in items])
            turns = quat.multiply(quat.conjugate(corrections), targets)
        else:
            turns = corrections
        vectors = _over_frames(plant_legs.turn_vectors(turns), items)
        if not crossed:
            turned = plant_legs.faded(base, None, weight, vectors)
        else:
            fixes = _over_frames(corrections, items)
            step = plant_legs.scaled_turns(vectors, weight)
            turned = quat.normalize(quat.multiply(quat.multiply(fixes, step), base))
        ends = np.cumsum([len(item[2]) for item in items])
        for item, end in zip(items, ends, strict=True):
            out[item[0]] = turned[end - len(item[2]) : end].reshape(item[1])
    return out


def _over_frames(per_correction: np.ndarray, items: list) -> np.ndarray:
    """(sum G x k, 3, m) each item's (G, 3, m) rows of `per_correction` (the items' corrections one
    after the other) repeated over its k ease frames, as the items' frames are laid out."""
    # Row g of an item with k frames repeated k times: np.repeat's copies, in one call for every item.
    frames = np.repeat([item[1][1] for item in items], [item[1][0] for item in items])
    return np.repeat(per_correction, frames, axis=0)


def _layout(plan: plant.PlantPlan, frames: int, ends=None) -> list[tuple]:
    """Per hold, where joint_eases eases: (hold, its leg's first frame, end, index, the next hold's
    start or the leg's end, the ease-in's frames before it (0 where the previous ease ran into it),
    whether its ease runs into the next hold, its ease-out's frames)."""
    out = []
    starts = [h.start for h in plan.holds[1:]] + [frames] if plan.holds else []  # (no hold: nothing eases)
    crossed = False  # the previous ease ran into this hold: it faded into this hold's correction
    for hold, following in zip(plan.holds, starts, strict=True):
        low, end = bounds(ends, hold.start)
        end = frames if end is None else end
        leg = 0 if ends is None else bisect.bisect_right(ends, hold.start)
        following = min(following, end)  # the next hold, or the leg's end
        ease_in = 0 if crossed else hold.ease_in
        crossed = hold.end + int(math.ceil(plan.blend)) + 1 > following < end
        out.append((hold, low, end, leg, following, ease_in, crossed, ease_frames(plan, hold, following, end)))
    return out


def _near(hold: plant.Hold, low: int, end: int, after: np.ndarray, window: int) -> tuple[int, int]:
    """(first, end) of the frames whose joint speeds judge a hold's ease: its hold's last ones, the
    ease, and `window` frames after."""
    last = hold.end - 1
    return max(low, last - window + 1), min(end, (after[-1] if len(after) else last) + window + 1)


def unread_frames(plan: plant.PlantPlan, frames: int, window: int) -> np.ndarray:
    """(F,) bool: the frames of one leg's `plan` (over `frames`) on which joint_eases (with this
    `window`) never reads what it is given as `solved`: an ease (out or in) sets them, and no ease
    is judged on them but their own ease-out, set before it is judged."""
    eased, read = np.zeros(frames, dtype=bool), np.zeros(frames, dtype=bool)
    for hold, low, end, _, _, ease_in, _, after in _layout(plan, frames):
        eased[after] = True
        eased[hold.start - ease_in : hold.start] = True
        first, stop = _near(hold, low, end, after, window)
        own = read[after].copy()
        read[first:stop] = True
        read[after] = own
    return eased & ~read


def _to_redo(plan, solved, earlier, eases, nears, ease_ins) -> tuple[list[int], list[bool]]:
    """(the holds whose ease-out differs from an earlier call's on `earlier` (its `solved`), per hold
    whether its ease-in does): an ease-out reads `solved` on its hold's last frame, the next hold's
    first where it runs into it, and its judged frames (`nears`, where plan.changed); an ease-in on
    its hold's first frame and on the ease-out it is faded on (which is then redone too: the
    earlier call's figures there hold that ease-in already)."""
    frames = len(solved)
    # NaN differs; so does a zero's sign (-0.0 == 0.0, yet a reused ease would keep the other bits)
    differ = np.any((solved != earlier) | (np.signbit(solved) != np.signbit(earlier)), axis=(1, 2))
    read = differ & plan.changed
    redo = set()
    for h, ease in enumerate(eases):
        first, stop = nears[h]
        following = ease[5] is not None and differ[plan.holds[h + 1].start]
        if differ[ease[0].end - 1] or following or read[first:stop].any():
            redo.add(h)
    while True:
        fresh = np.zeros(frames, dtype=bool)
        for h in redo:
            fresh[eases[h][1]] = True
        ins = [
            bool(count) and bool(differ[hold.start] or fresh[hold.start - count : hold.start].any())
            for hold, count in zip(plan.holds, ease_ins, strict=True)
        ]
        under = {
            j
            for hold, count, again in zip(plan.holds, ease_ins, ins, strict=True)
            if again
            for j, ease in enumerate(eases)
            if len(ease[1]) and max(hold.start - count, int(ease[1][0])) < min(hold.start, int(ease[1][-1]) + 1)
        }
        if under <= redo:
            return sorted(redo), ins
        redo |= under


def _apart(nears: list[tuple[int, int]], eases: list) -> bool:
    """No hold's judged frames (`nears`, (first, end) each) take in another hold's ease frames."""
    spans = [(int(e[1][0]), int(e[1][-1]) + 1) if len(e[1]) else None for e in eases]
    for h, (first, end) in enumerate(nears):
        for j, span in enumerate(spans):
            if j != h and span is not None and max(first, span[0]) < min(end, span[1]):
                return False
    return True


def _fastest_each(rotations: np.ndarray, nears: list[tuple[int, int]], window: int) -> list[float]:
    """`_fastest` of rotations[first:end] for each (first, end) of `nears`, every window's angles in
    one call (each its own figures; a maximum is exact, NaN wins either way)."""
    counts = [max(0, end - first - window) for first, end in nears]
    out = [0.0] * len(nears)
    if not any(counts):
        return out
    rows = np.concatenate([np.arange(first, first + count) for (first, _), count in zip(nears, counts, strict=True)])
    angles = quat.angles_between_cheaply(rotations[rows], rotations[rows + window])
    joints = angles[:, 0].copy()
    for j in range(1, angles.shape[1]):
        np.maximum(joints, angles[:, j], out=joints)
    filled = [h for h, count in enumerate(counts) if count]
    starts = np.cumsum([0] + [counts[h] for h in filled[:-1]])
    for h, value in zip(filled, np.maximum.reduceat(joints, starts).tolist(), strict=True):
        out[h] = value
    return out


def _fastest(rotations: np.ndarray, window: int) -> float:
    """The largest angle (any joint) turned over `window` frames within (k, 3, 4) rotations."""
    if len(rotations) <= window:
        return 0.0
    return float(quat.angles_between_cheaply(rotations[:-window], rotations[window:]).max())


def joint_eases(
    plan: plant.PlantPlan,
    inputs: np.ndarray,
    solved: np.ndarray,
    budget=None,
    window: int = 1,
    limit=0.0,
    ends=None,
    earlier=None,
) -> tuple:
    """((F, 3, 4) the leg's local rotations, (F,) the frames they change): `solved` (the tip on its
    target) on hold and clamp frames; after a hold, the input's with the correction of its last
    frame faded out (solvers.plant_legs.faded) over the `plan.blend` frames (issue 21 item 2: then
    the leg plays its input: the swing keeps its height), into the next hold's correction where that
    starts sooner; before it, the ground snap's correction of its first frame faded in over the
    plan's ease-in frames. `inputs`: the input's local rotations (with the hips lowered, the leg
    solved for the input's tip: contact_hips.kept_feet). `budget` (F,), or a function giving it
    (called where first needed): an ease whose joints turn
    more than `limit` (radians) over `window` frames is also tried with its time warped by it (the
    room the input's joints leave, contact_pitch.ease_budget), and the slower of the two kept.
    `ends`: several legs joined into one timeline (each leg's end in it; plan, inputs and solved
    joined alike, no ease crosses into the next leg), `limit` then one per leg (or one for all).
    `earlier`: (solved, out) of an earlier call alike in every argument but `solved`: each ease whose
    figures are alike (the frames it reads of `solved` the same) taken from its `out`, not redone."""
    out = np.where(plan.changed[:, None, None], solved, inputs)
    changed = plan.changed.copy()
    frames = len(inputs)
    eased = np.zeros(frames, dtype=bool)  # frames an ease-out has set (an ease-in adds to them)
    limits = np.broadcast_to(np.asarray(limit, dtype=float), (1 if ends is None else len(ends),))
    # Every hold's (3, 4) corrections (new local rotation x input's^-1, the three bones) of its last
    # and first frames in one product (each quaternion's own figures: the same as one by one).
    lasts = [h.end - 1 for h in plan.holds]
    firsts = [h.start for h in plan.holds]
    every = quat.multiply(solved[lasts + firsts], quat.conjugate(inputs[lasts + firsts]))
    at_end, at_start = every[: len(lasts)], every[len(lasts) :]
    eases, ease_ins, legs = [], [], []  # legs: per hold (its leg's first frame, end, index)
    for h, (hold, low, end, leg, following, ease_in, crossed, after) in enumerate(_layout(plan, frames, ends)):
        legs.append((low, end, leg))
        ease_ins.append(ease_in)
        target = at_start[h + 1] if crossed else None  # the next hold's first frame's correction
        eases.append((hold, after, inputs[after], at_end[h][None], following, target))
    nears = [_near(ease[0], low, end, ease[1], window) for ease, (low, end, _) in zip(eases, legs, strict=True)]
    batched = budget is not None and _apart(nears, eases)
    redo, ins_redo = list(range(len(eases))), [True] * len(eases)
    if earlier is not None and batched:
        redo, ins_redo = _to_redo(plan, solved, earlier[0], eases, nears, ease_ins)
    if batched:
        # No hold's judged frames take in another's ease: every hold judged in one pass, and the
        # warped eases of those that try it in one (the same figures as hold by hold: each reads its
        # own ease and frames no ease writes); an earlier call's eases where their figures are alike.
        for h in set(range(len(eases))) - set(redo):
            out[eases[h][1]] = earlier[1][eases[h][1]]
        plains = dict(zip(redo, eased_outs(plan, [eases[h] for h in redo], ends=ends), strict=True))
        for h in redo:
            out[eases[h][1]] = plains[h][0]
        plain = dict(zip(redo, _fastest_each(out, [nears[h] for h in redo], window), strict=True))
        tries = [h for h in redo if plain[h] > limits[legs[h][2]]]
        if tries:
            if callable(budget):
                budget = budget()
            for h, warped in zip(tries, eased_outs(plan, [eases[h] for h in tries], budget, ends), strict=True):
                out[eases[h][1]] = warped[0]
            for h, speed in zip(tries, _fastest_each(out, [nears[h] for h in tries], window), strict=True):
                if not speed < plain[h]:  # kept unless strictly slower (NaN: kept)
                    out[eases[h][1]] = plains[h][0]
    else:  # hold by hold (an ease judged with the one before it as that one's judging left it)
        # Every hold's ease-out at the even pace at once: none reads another's (or `out`).
        plains = eased_outs(plan, eases, ends=ends)
        warped: list = []  # from the first hold that tries it on, every hold's ease with its time warped
        for h, (ease, first_try) in enumerate(zip(eases, plains, strict=True)):
            after = ease[1]
            out[after] = first_try[0]
            near = slice(*nears[h])
            plain = _fastest(out[near], window) if budget is not None else 0.0
            if plain > limits[legs[h][2]]:
                if callable(budget):
                    budget = budget()
                if not warped:  # this hold's and the later ones' at once (none reads `out`): one pass
                    warped = [None] * h + eased_outs(plan, eases[h:], budget, ends)
                kept = out[after]
                out[after] = warped[h][0]
                if not _fastest(out[near], window) < plain:  # kept unless strictly slower (NaN: kept)
                    out[after] = kept
    for ease in eases:
        eased[ease[1]] = changed[ease[1]] = True
    # Every hold's ease-in at once, on top of the ease-outs: its frames lie between the previous
    # hold's end and its own start (an ease-out there is faded on; no other ease writes them).
    ins = []
    for hold, count, fix, again in zip(plan.holds, ease_ins, at_start, ins_redo, strict=True):
        if count and again:
            ins.append((hold.start, count, fix))
        elif count:  # the earlier call's, on the same ease-out
            out[hold.start - count : hold.start] = earlier[1][hold.start - count : hold.start]
    if ins:
        before = np.concatenate([start - np.arange(1, count + 1) for start, count, _ in ins])
        counts = [count for _, count, _ in ins]  # every ease-in's weights in one call (each its own figures)
        weight = plant.ease(np.concatenate([np.arange(1, count + 1) for count in counts]), np.repeat(counts, counts))
        # Each hold's correction converted once, repeated over its ease-in frames.
        vectors = plant_legs.turn_vectors(np.stack([fix for _, _, fix in ins]))
        vectors = np.repeat(vectors, counts, axis=0)
        base = np.where(eased[before, None, None], out[before], inputs[before])
        out[before] = plant_legs.faded(base, None, weight, vectors)
    return out, changed
