"""The spans of frames a bake that changes some frames only keys (a planted foot's contacts and
their eases); rig.keys.write_keys_in replaces each channel's keys within them."""

from __future__ import annotations

import numpy as np

from ..solvers.contacts import contact_runs


def spans(frames: np.ndarray, keyed: np.ndarray) -> list[tuple[float, float]]:
    """(first, last) action frames of each run of consecutive `keyed` frames."""
    out = []
    for start, end in contact_runs(keyed):
        first, last = frames[start], frames[end - 1]
        out.append((float(min(first, last)), float(max(first, last))))
    return out
