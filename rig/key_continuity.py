"""Written rotation keys that meet the kept keys either side of them.

A bake that rewrites some frames of a curve and keeps the input's keys on the others converts its
rotations continuous from one neighbour (`modes.series_values`, frame after frame). The kept key on
the other side holds the same rotation in its own representation, which can be another one: axis-angle
(angle, axis) or (-angle, -axis) or the angle a full turn away, a quaternion's q or -q, another Euler
solution or an angle a full turn away. Blender interpolates the channels, not the rotation: between two
keys of different representations it plays a rotation that is neither (axis-angle through a near-zero
axis, a quaternion through near zero). `meet` puts the written frames on the neighbours'
representations, switching from the one before's to the one after's on the edge where the switch
plays nearest the rotation between them (where an axis-angle's angle passes zero, say), and changes
nothing where the one representation already serves both sides.
"""

from __future__ import annotations

import math

import numpy as np

from . import keys, modes

# Channel values this close (each) are one representation: two differ by a sign or a turn's share.
SAME = 1e-4
# A switch that plays no nearer than this (radians, summed) leaves the frames as they were.
TIE = 1e-6


def nearest(mode: str, q: np.ndarray, old: np.ndarray, lock_state: tuple = modes.NO_LOCKS) -> np.ndarray:
    """(channels,) rotation `q` (4,) in `mode`, the representation nearest `old` (the bake's own rule:
    modes.series_values on one frame)."""
    return modes.series_values(mode, q[None], tuple(old.tolist()), lock_state)[0]


def _same(a: np.ndarray, b: np.ndarray) -> bool:
    return bool(np.all(np.abs(a - b) <= SAME))


def _played_error(mode: str, left: np.ndarray, right: np.ndarray) -> float:
    """Angle (radians) between what the channels play halfway from key `left` to key `right`
    (their mean, as linear interpolation gives it) and the rotation halfway between the two."""
    a = modes.to_quaternion(mode, tuple(left.tolist()))
    b = modes.to_quaternion(mode, tuple(right.tolist()))
    played = modes.to_quaternion(mode, tuple(((left + right) * 0.5).tolist()))
    angle = played.rotation_difference(a.slerp(b, 0.5)).angle
    return min(angle, 2.0 * math.pi - angle)


def meet(
    mode: str,
    values: np.ndarray,
    quats: np.ndarray,
    before: np.ndarray | None,
    after: np.ndarray | None,
    lock_state: tuple = modes.NO_LOCKS,
) -> np.ndarray:
    """(n, channels) written values `values` of rotations `quats` (n, 4), on consecutive frames, made
    continuous with the key `before` the first and the key `after` the last: `values` itself where the
    one representation meets both; else the frames up to a switch each nearest the one before, from
    it each nearest the one after, the switch on the edge (the two ends' included) that makes every
    edge's halfway frame play nearest the rotation halfway, summed (`values` on a tie). `before` None:
    no key before them is known (`values` are continuous from what stands for it); `after` None: none
    after them, the frames continuous from the one before to the last."""
    n = len(values)
    if n == 0:
        return values
    forward = values
    if before is not None and not _same(nearest(mode, quats[0], before, lock_state), values[0]):
        forward = modes.series_values(mode, quats, tuple(before.tolist()), lock_state)
    if after is None or _same(nearest(mode, quats[-1], after, lock_state), forward[-1]):
        return forward
    if any(lock_state[0]) or lock_state[2]:  # a locked channel keeps the values before (review14:
        return forward  # the series from the key after copied its own locked value onto the frames)
    # The frames from the last back, each nearest the one after it.
    backward = modes.series_values(mode, quats[::-1], tuple(after.tolist()), lock_state)[::-1]
    # Switch on the edge into frame `e` (the frames before it forward's, from it backward's; edge 0
    # from the key before, edge n into the key after: no switch): the one whose frames play nearest
    # the rotations, every edge's error summed (a key with no angle has any axis: its edges cost the
    # same either way, and a switch elsewhere would add one).
    start = forward[0] if before is None else before  # (no key before: edge 0 costs nothing)
    on_forward = _edge_errors(mode, np.concatenate((start[None], forward)))  # edge i into frame i
    on_backward = _edge_errors(mode, np.concatenate((backward, after[None])))  # edge i out of frame i
    into = np.concatenate(([0.0], np.cumsum(on_forward)))  # edges 0 .. e-1 on forward
    out_of = np.concatenate((np.cumsum(on_backward[::-1])[::-1], [0.0]))  # [e]: edges e+1 .. n on backward

    def switch_error(e: int) -> float:
        if e == 0 and before is None:  # no key before: every frame backward's costs their edges only
            return 0.0
        return _played_error(mode, forward[e - 1] if e else before, backward[e])

    totals = [into[e] + switch_error(e) + out_of[e] for e in range(n)]
    keep = into[n] + _played_error(mode, forward[-1], after)
    switch = int(np.argmin(totals))
    if not totals[switch] < keep - TIE:
        return forward
    return np.concatenate((forward[:switch], backward[switch:]))


def _edge_errors(mode: str, rows: np.ndarray) -> np.ndarray:
    """(len(rows) - 1,) `_played_error` of each key of `rows` to the next."""
    return np.array([_played_error(mode, a, b) for a, b in zip(rows[:-1], rows[1:], strict=True)])


def meet_segments(
    mode: str,
    table: np.ndarray,
    quats: np.ndarray,
    written: np.ndarray,
    kept_values: np.ndarray,
    lock_state: tuple = modes.NO_LOCKS,
) -> np.ndarray:
    """`table` (F, channels) of consecutive frames with each maximal stretch of `written` frames
    (F,) bool `meet`ing the kept values either side (`kept_values` (F, channels): what the frames not
    written hold). A stretch at either end of the table meets the kept value on its other side only:
    the key beyond the table is not read (the stretch stays continuous from the values it starts
    from, as the table gives it). `quats` (F, 4): the rotations of the written frames. `table`
    itself where nothing changed, else a copy."""
    out = table
    count = len(table)
    edges = np.flatnonzero(np.diff(np.concatenate(([0], written.astype(np.int8), [0]))))
    for first, end in zip(edges[::2], edges[1::2], strict=True):
        before = kept_values[first - 1] if first > 0 else None
        after = kept_values[end] if end < count else None
        met = meet(mode, out[first:end], quats[first:end], before, after, lock_state)
        if not np.array_equal(met, out[first:end]):
            out = out.copy() if out is table else out
            out[first:end] = met
    return out


def kept_after(obj, names, frame: float) -> dict[str, np.ndarray]:
    """Bone -> (channels,) its rotation keys on the first key frame after (action) `frame`, for the
    bones of `names` whose channels all have their next key on that one frame: the kept key a bake's
    last written frame plays toward (the others left out: no key after it, or on other frames)."""
    ad = obj.animation_data
    if ad is None or ad.action is None:
        return {}
    paths = {keys.data_path(n, keys.rotation_property(obj.pose.bones[n])): n for n in names}
    curves: dict[str, dict] = {}
    for fc in keys.assigned_fcurves(obj):
        if fc.data_path in paths:
            curves.setdefault(paths[fc.data_path], {})[fc.array_index] = fc
    out = {}
    for name, channels in curves.items():
        pbone = obj.pose.bones[name]
        values = _next_key(channels, len(getattr(pbone, keys.rotation_property(pbone))), frame)
        if values is not None:
            out[name] = values
    return out


def _next_key(channels: dict, width: int, frame: float) -> np.ndarray | None:
    values, at = [], None
    for index in range(width):
        fc = channels.get(index)
        count = 0 if fc is None else len(fc.keyframe_points)
        if not count:
            return None
        co = np.empty(2 * count, dtype=np.float32)
        fc.keyframe_points.foreach_get("co", co)
        times = co[0::2]
        later = np.flatnonzero(times > frame + keys.FRAME_EPSILON)
        if not len(later):
            return None
        first = int(later[np.argmin(times[later])])
        if at is not None and abs(float(times[first]) - at) > keys.FRAME_EPSILON:
            return None
        at = float(times[first])
        values.append(float(co[2 * first + 1]))
    return np.array(values)
