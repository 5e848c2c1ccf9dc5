"""Keys of a bake that changes some frames only: each channel's keys replaced within the spans of
frames that changed (a planted foot's contacts and their eases), every other key kept with all its
attributes, in one rebuild of the F-Curve per channel (rig.keys.write_keys replaces one range)."""

from __future__ import annotations

import numpy as np

from .keys import FRAME_EPSILON, INTERPOLATIONS, KEY_ATTRIBUTES, NEW_KEY_INTERPOLATION


def spans(frames: np.ndarray, keyed: np.ndarray) -> list[tuple[float, float]]:
    """(first, last) action frames of each run of consecutive `keyed` frames."""
    index = np.flatnonzero(keyed)
    if not len(index):
        return []
    breaks = np.flatnonzero(np.diff(index) > 1)
    starts = np.concatenate(([index[0]], index[breaks + 1]))
    ends = np.concatenate((index[breaks], [index[-1]]))
    return [
        (float(min(frames[s], frames[e])), float(max(frames[s], frames[e]))) for s, e in zip(starts, ends, strict=True)
    ]


def write_in_spans(
    fc, frames: np.ndarray, values: np.ndarray, runs: list[tuple[float, float]], interpolation: str
) -> int:
    """Replace `fc`'s keys inside `runs` (inclusive action-frame spans) by (frames, values), all of
    which lie inside them; keys elsewhere are kept as they are. Returns the keys written."""
    frames = np.asarray(frames, dtype=np.float32)
    values = np.asarray(values, dtype=np.float32)
    if not np.all(np.isfinite(values)):
        raise ValueError(f"refusing to key non-finite values on {fc.data_path}[{fc.array_index}]")
    kp = fc.keyframe_points
    old = len(kp)
    if old:
        co = np.empty(2 * old, dtype=np.float32)
        kp.foreach_get("co", co)
        t = co[0::2]
        keep = np.ones(old, dtype=bool)
        for low, high in runs:
            keep &= (t < low - FRAME_EPSILON) | (t > high + FRAME_EPSILON)
        kept = {}
        for name, width, dtype in KEY_ATTRIBUTES:
            a = np.empty(width * old, dtype=dtype)
            kp.foreach_get(name, a)
            kept[name] = a.reshape(old, width)[keep].ravel()
        old = int(np.count_nonzero(keep))
        kp.clear()
        kp.add(old)
        for name, _, _ in KEY_ATTRIBUTES:
            kp.foreach_set(name, kept[name])
    new = len(frames)
    kp.add(new)
    total = old + new
    co = np.empty(2 * total, dtype=np.float32)
    if old:
        kp.foreach_get("co", co)
    co[2 * old :: 2] = frames
    co[2 * old + 1 :: 2] = values
    kp.foreach_set("co", co)
    code = INTERPOLATIONS.index(interpolation)
    if code != NEW_KEY_INTERPOLATION:
        interp = np.empty(total, dtype=np.int32)
        if old:
            kp.foreach_get("interpolation", interp)
        interp[old:] = code
        kp.foreach_set("interpolation", interp)
    fc.update()  # kept and new keys interleave: sort, then the handles
    return new
