"""The keys a bake writes on its chains' channels, reduced when asked, and their writing (app.bake)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...rig import keys, reduce
from .bake_options import BakeOptions, reduce_tolerance


@dataclass
class Curve:
    """One channel's keys to write (frames on the action's time line)."""

    bone: str
    path: str
    index: int
    frames: np.ndarray
    values: np.ndarray
    handles: tuple[np.ndarray, np.ndarray] | None = None


def key_curves(
    obj,
    frames: np.ndarray,
    values: dict[str, np.ndarray],
    options: BakeOptions,
    chains: list[tuple[tuple[str, ...], bool, str]] | None = None,
    scales: dict[str, np.ndarray] | None = None,
    locations: dict[str, np.ndarray] | None = None,
) -> list[Curve]:
    """Every channel to key: the rotations `values` (bone -> (frames, channels)) and, for IK
    stretch, the Y scales `scales` (bone -> (frames,)), reduced together when asked. Computed
    before the action is touched, so a failure here leaves it as it was. `chains` (bone names
    root first, use_tail, tip) set the reduction's tip distances; without them each bone is its
    own chain."""
    # In NLA tweak mode the keys belong to the tweaked strip's action, on its own time line.
    frames = keys.action_frames(obj, frames)
    scales = scales or {}
    reduced = None
    if options.reduce:
        chains = chains if chains is not None else [((name,), True, name) for name in values]
        reduced = reduce.reduce_values(
            obj, frames, values, chains, options.reduce_mode, reduce_tolerance(options), options.interpolation, scales
        )
    curves = []
    for name, table in values.items():
        path = keys.data_path(name, keys.rotation_property(obj.pose.bones[name]))
        for index in range(table.shape[1]):
            kept, column, handles = reduced.rotations[name][index] if reduced else (frames, table[:, index], None)
            curves.append(Curve(name, path, index, kept, column, handles))
    for name, column in scales.items():  # scale[1] only: X and Z stay as they are
        kept, column, handles = reduced.scales[name] if reduced else (frames, column, None)
        curves.append(Curve(name, keys.data_path(name, "scale"), 1, kept, column, handles))
    for name, table in (locations or {}).items():  # a moved root: keyed on every frame (not reduced)
        for index in range(3):
            curves.append(Curve(name, keys.data_path(name, "location"), index, frames, table[:, index]))
    return curves


def write_curves(obj, curves: list[Curve], options: BakeOptions) -> dict[str, int]:
    """Key `curves` (all values were checked finite); per bone, the keys its written channels
    then hold inside the baked range (inclusive, by write_keys' float32 test), counted on
    the keys written (write_keys keeps only keys outside the range, by the same float32
    test), with no read back per curve."""
    fcurves = keys.FCurves(obj)
    first, last = keys.action_frames(obj, np.array([options.frame_start, options.frame_end]))
    frame_range = (float(min(first, last)), float(max(first, last)))
    per_bone: dict[str, int] = {}
    inside: dict[int, int] = {}  # by id of a curve's frames (most curves share one array): keys in range
    for curve in curves:
        fc = fcurves.ensure(curve.path, curve.index, curve.bone)
        keys.write_keys(fc, curve.frames, curve.values, frame_range, options.interpolation, curve.handles)
        count = inside.get(id(curve.frames))
        if count is None:
            count = inside[id(curve.frames)] = _keys_inside(curve.frames, frame_range)
        per_bone[curve.bone] = per_bone.get(curve.bone, 0) + count
    return per_bone


def _keys_inside(frames: np.ndarray, frame_range: tuple[float, float]) -> int:
    """How many of the keys at `frames` lie inside `frame_range` (inclusive): write_keys' test on
    the frames as it stores them (float32)."""
    t = np.asarray(frames, dtype=np.float32)
    low, high = frame_range[0] - keys.FRAME_EPSILON, frame_range[1] + keys.FRAME_EPSILON
    return int(np.count_nonzero((t >= low) & (t <= high)))
