"""Feet over time: their world positions sampled frame by frame, and the chains' `contact` keys.

A chain's foot is its tip bone: its head is the heel end (the ankle), its tail the toe end (the
ball of the foot, or the toe tip when the foot bone ends there). `contact` is keyed with CONSTANT
keys at the frames where it changes (and at both ends of the range written), on the F-Curve
`chain_ik.chains[i].contact` of the armature object's action: the Dope Sheet and Graph Editor
show and edit it as any other channel.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from . import keys, pose_frames, protected
from .read import chain_pose_bones
from .steps import run_to_end

CONTACT_GROUP = "Chain IK Contacts"


@dataclass
class FootTrack:
    """One chain's foot over the sampled frames (world space)."""

    heel: np.ndarray  # (m, 3): the tip bone's head
    toe: np.ndarray  # (m, 3): the tip bone's tail
    rotations: np.ndarray | None = None  # (m, n, 4): the chain bones' rotations relative to their parents


def chain_bones(obj, item) -> list[str]:
    """The bones of panel chain `item` (root first, the foot last), or ValueError naming the chain."""
    try:
        bones, end = chain_pose_bones(obj, item.tip, item.chain_length, item.use_tail)
    except ValueError as exc:
        raise ValueError(f"chain '{item.name}': {exc}") from None
    names = [b.name for b in bones]
    return names if end.name in names else [*names, end.name]


def leg_length(obj, item) -> float:
    """World length at rest of the chain's bones and its foot (the contact thresholds scale with it)."""
    m3 = obj.matrix_world.to_3x3()
    bones = obj.data.bones
    return float(sum((m3 @ (bones[n].tail_local - bones[n].head_local)).length for n in chain_bones(obj, item)))


def sample_feet(
    context, obj, items, frames: np.ndarray, progress: Callable | None = None, rotations: bool = False
) -> list[FootTrack]:
    """Each chain's foot at every frame (one `frame_set` per frame for all of them: rig.pose_frames);
    the frame is put back afterwards. `rotations`: also the chain bones' rotations relative to their
    parents (for angular speeds)."""
    names = [chain_bones(obj, item) for item in items]
    read = run_to_end(pose_frames.pose_in_steps(context, obj, frames, progress))
    out = []
    for chain in names:
        foot = read.order[chain[-1]]
        out.append(
            FootTrack(
                read.to_world(read.heads[:, foot]),
                read.to_world(read.tails[:, foot]),
                read.rotations(chain, relative=True) if rotations else None,
            )
        )
    return out


def contact_path(item) -> str:
    """The data path of chain `item`'s `contact` on its armature object (by index, as Blender keys it)."""
    return item.path_from_id("contact")


def contact_curve(obj, item):
    """The F-Curve animating `item.contact` in `obj`'s action (its slot on 4.4+), or None."""
    return keys.assigned_fcurve(obj, contact_path(item))


def read_contacts(obj, item, frames: np.ndarray) -> np.ndarray:
    """(m,) bool: `item.contact` at each scene frame (`played_contacts`)."""
    return played_contacts(obj, contact_path(item), frames)


def played_contacts(obj, path: str, frames: np.ndarray) -> np.ndarray:
    """(m,) bool: the Contact at data path `path` of `obj` at each scene frame, from its keys (as
    playback evaluates them; NLA tweak mode: through the tweaked strip's time); without keys (or
    with a curve playback skips: keys.plays), its value on every frame."""
    curve = keys.played_fcurve(obj, path)
    if curve is None:
        return np.full(len(frames), bool(obj.path_resolve(path)))
    return played_flags(curve, keys.action_frames(obj, frames))


# Blender finds a key "on" the evaluated frame within 1e-4 of it (BKE_fcurve_bezt_binarysearch_index_ex):
# a frame nearer a key than this, but not on it, is evaluated by FCurve.evaluate.
NEAR_KEY = 1e-3
CONSTANT = keys.INTERPOLATIONS.index("CONSTANT")


def played_flags(curve, action_frames: np.ndarray) -> np.ndarray:
    """(m,) bool: `curve.evaluate(f) > 0.5` at each of `action_frames`: a curve of `step_keys` read
    from its keys in one call (but a frame within NEAR_KEY of a key it is not on), any other curve
    evaluated frame by frame."""
    at = np.asarray(action_frames, dtype=float)
    steps = step_keys(curve)
    if steps is None:
        return np.array([curve.evaluate(float(f)) > 0.5 for f in at.tolist()], dtype=bool)
    times, values = steps
    frames32 = at.astype(np.float32)  # FCurve.evaluate takes the frame as a 32-bit float
    index = np.searchsorted(times, frames32, side="right") - 1
    out = values[np.maximum(index, 0)] > 0.5
    last = len(times) - 1
    gap = np.minimum(
        np.abs(times[np.clip(index, 0, last)] - frames32), np.abs(times[np.clip(index + 1, 0, last)] - frames32)
    )
    for row in np.flatnonzero((gap > 0.0) & (gap < NEAR_KEY)).tolist():
        out[row] = curve.evaluate(float(at[row])) > 0.5
    return out


def step_keys(curve) -> tuple[np.ndarray, np.ndarray] | None:
    """(key times, values) of a curve that plays its last key at or before each frame (the first
    key's before it): CONSTANT keys of 0 or 1 in increasing time (as write_contacts keys them), no
    modifier; None for any other curve."""
    count = len(curve.keyframe_points)
    if not count or len(curve.modifiers):
        return None
    co = np.empty(2 * count, dtype=np.float32)
    curve.keyframe_points.foreach_get("co", co)
    ipo = np.empty(count, dtype=np.uint8)
    curve.keyframe_points.foreach_get("interpolation", ipo)
    times, values = co[0::2], co[1::2]
    if np.all(ipo == CONSTANT) and np.all((values == 0.0) | (values == 1.0)) and np.all(times[1:] > times[:-1]):
        return times, values
    return None


def change_keys(planted: np.ndarray) -> np.ndarray:
    """Indices of the frames to key so CONSTANT keys play `planted` back: the first, every change,
    and the last."""
    changes = np.flatnonzero(planted[1:] != planted[:-1]) + 1
    return np.unique(np.concatenate(([0], changes, [len(planted) - 1])))


def outside_motion(obj, frames: np.ndarray) -> str:
    """Why some of scene `frames` tell nothing of the motion ('' when none do, or where that cannot
    be told): they lie beyond the keys of every played curve of the armature's action but Chain
    IK's own (the pose holds still there, so a foot near the ground reads as planted: user13's 1,001
    planted frames past the clip's end)."""
    span = motion_span(obj)
    if span is None:
        return ""
    at = keys.action_frames(obj, np.asarray(frames, dtype=float))
    low, high = span
    beyond = (at < low - keys.FRAME_EPSILON) | (at > high + keys.FRAME_EPSILON)
    if not beyond.any():
        return ""
    return (
        f"{int(beyond.sum())} of the {len(frames)} frames lie beyond the motion's keys (frames {low:g}-{high:g}"
        " of its action): the pose holds still there, so a foot near the ground reads as planted"
    )


def motion_span(obj) -> tuple[float, float] | None:
    """(first, last) action frame of the keys of every played curve of the armature's action but
    Chain IK's own; None where the motion may go on past its keys: a curve with modifiers (a cycle),
    NLA strips playing (review13b), or no keys of its own (drivers, constraints, strips may move it)."""
    ad = obj.animation_data
    if ad is None or any(not track.mute and len(track.strips) for track in ad.nla_tracks):
        return None
    times = []
    for fc in keys.assigned_fcurves(obj):
        if fc.data_path.startswith("chain_ik.") or not len(fc.keyframe_points) or not keys.plays(fc):
            continue
        if any(not m.mute for m in fc.modifiers):
            return None
        co = np.empty(2 * len(fc.keyframe_points), dtype=np.float32)
        fc.keyframe_points.foreach_get("co", co)
        times.append((float(co[0::2].min()), float(co[0::2].max())))
    if not times:
        return None
    return min(t[0] for t in times), max(t[1] for t in times)


def write_contacts(obj, item, frames: np.ndarray, planted: np.ndarray) -> int:
    """Key `item.contact` to `planted` over scene `frames` (replacing its keys in that range only,
    keys outside it kept); the number of keys written."""
    index = change_keys(planted)
    action_frames = keys.action_frames(obj, frames)
    curve = keys.FCurves(obj).ensure(contact_path(item), 0, CONTACT_GROUP)
    span = (float(min(action_frames[0], action_frames[-1])), float(max(action_frames[0], action_frames[-1])))
    values = planted[index].astype(np.float32)
    written = keys.write_keys(curve, action_frames[index], values, span, "CONSTANT")
    # The evaluated copy made again: chains added from a script (or the panel) are not in it until
    # then, and playback could not set the keyed Contact (user13: it stayed as it was).
    obj.update_tag()
    return written


def _curve_owner(obj):
    """The F-Curve collection of `obj`'s action that `contact_curve` finds curves in."""
    ad = obj.animation_data
    if hasattr(ad.action, "layers"):
        from bpy_extras.anim_utils import animdata_get_channelbag_for_assigned_slot

        return animdata_get_channelbag_for_assigned_slot(ad).fcurves
    return ad.action.fcurves


def clear_contacts(obj, item, frame_range: tuple[float, float] | None = None) -> int:
    """Take `item.contact` off over scene `frame_range` (inclusive; None: everywhere, the curve
    removed), every other frame playing as before: its keys within the range removed, and where
    needed a key off on the range's first frame and one on the frame after it giving back the value
    played there (user14: removing an off key inside the range ran a contact on past it, removing an
    on key lost the contact's frames after it). The number of keys removed. Without keys left, the
    contact is off."""
    curve = contact_curve(obj, item)
    if curve is None:
        return 0
    points = curve.keyframe_points
    if frame_range is None:
        removed = len(points)
        _curve_owner(obj).remove(curve)
    else:
        first, last = sorted(frame_range)
        a, b, c = keys.action_frames(obj, np.array([first, last, last + 1.0], dtype=float)).tolist()
        # In the action's time (a reversed NLA strip runs the range backwards): the range, and the
        # frame one scene frame past its end there.
        low, high = min(a, b), max(a, b)
        step = abs(c - b)
        before, after = low - step, high + step
        eps = keys.FRAME_EPSILON
        # The frames either side as they play now (before the first key: its value, held), kept.
        kept = [(frame, _played(points, frame)) for frame in (before, after)]
        doomed = [k for k in points if low - eps <= k.co[0] <= high + eps]
        removed = len(doomed)
        for key in reversed(doomed):
            points.remove(key, fast=True)
        for frame, value in ((*kept[0],), (low, False), (*kept[1],)):  # in time order: each holds on
            if _played(points, frame) != value:
                _constant_key(points, frame, float(value))
        curve.update()
        if not len(points):
            _curve_owner(obj).remove(curve)
    if contact_curve(obj, item) is None:
        item.contact = False
    obj.update_tag()  # (as write_contacts)
    return removed


def _played(points, frame: float) -> bool:
    """Whether a Contact curve's constant keys `points` play on at (action) `frame`: its last key
    at or before it (before the first key: the first key's value, as Blender holds it)."""
    if not len(points):
        return False  # (the curve is then removed and the contact set off)
    co = sorted((k.co[0], k.co[1]) for k in points)  # (keys just inserted come last, unsorted)
    return ([v for t, v in co if t <= frame + keys.FRAME_EPSILON] or [co[0][1]])[-1] >= 0.5


def _constant_key(points, frame: float, value: float) -> None:
    key = points.insert(frame, value, options={"FAST"})
    key.interpolation = "CONSTANT"


def follow_removed_chain(obj, paths: list[str], index: int) -> None:
    """After panel chain `index` was removed (`paths`: every chain's `contact_path` before): its
    contact F-Curve goes, and those of the chains after it follow them down the list (their paths
    name the chain by its index)."""
    ad = obj.animation_data
    if ad is None or ad.action is None or protected.id_refusal(ad.action, "action"):
        return  # no keys, or keys in a linked action, which cannot change (nor be keyed by chains here)
    curves = {fc.data_path: fc for fc in keys.assigned_fcurves(obj)}
    doomed = curves.get(paths[index])
    if doomed is not None:
        _curve_owner(obj).remove(doomed)
    for i in range(index + 1, len(paths)):
        curve = curves.get(paths[i])
        if curve is not None:
            curve.data_path = paths[i - 1]
