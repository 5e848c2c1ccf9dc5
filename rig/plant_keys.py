"""The spans of frames a bake that changes some frames only keys (a planted foot's contacts and
their eases); rig.keys.write_keys_in replaces each channel's keys within them."""

from __future__ import annotations

import numpy as np


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
