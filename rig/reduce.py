"""Key reduction on baked channels, with tolerances in an animator's units.

'TIP': no chain's end plays back further than a world distance from where the full bake puts
it; 'ANGLE': no joint turns further than an angle from its baked rotation. Either becomes a
budget per keyed channel: an angle per bone (solvers.keyfit.tip_angle_budget over the lever
arms of the chain's path, rig.key_paths: joints far from the end get tighter ones), then a
value tolerance per rotation channel for the bone's rotation mode
(solvers.keyfit.channel_tolerances), and for IK stretch a value tolerance on the Y scale.
Bezier channels are fitted (keys and handles, solvers.keyfit.fit_bezier); linear ones drop
keys (keyfit.reduce_keys); constant ones drop repeated holds.

In 'TIP' a chain's end is moved by every keyed bone on its path: its own rotations and Y
scales, and those of a baked chain it hangs below. The budgets bound the sum of all of them,
with the levers lengthened by the largest stretch keyed on the path, so together they hold;
they are far stricter than needed, so looser ones (LOOSER) are tried first and kept when the
ends of every chain, played through Blender's own bone transform (rig.key_paths.PathFK), stay
within the distance at every baked frame. Should even the bounds miss there (a case they do
not model), tighter ones are tried, and at the last every key is kept.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..solvers import keyfit, quat
from .key_paths import PathFK, chain_paths

REDUCE_MODES = ("TIP", "ANGLE")
# Multiples of the budgets: looser ones tried first (kept when measured within the tolerance);
# 1 is the bound; tighter ones only if a measurement still misses at 1.
LOOSER = (4.0, 2.0)
TIGHTER = (1.0, 0.5, 0.25, 0.125)
# Largest change of a Y scale key, as a share of its value (keeps the levers' stretch bound valid).
SCALE_SHARE = 0.01


@dataclass
class Reduced:
    rotations: dict[str, list[tuple]]  # bone -> per rotation channel (kept frames, values, handles or None)
    scales: dict[str, tuple]  # bone -> (kept frames, values, handles or None) of its Y scale


def check_tolerance(mode: str, tolerance: float) -> None:
    """ValueError unless `tolerance` is a usable reduction tolerance for `mode`."""
    if mode not in REDUCE_MODES:
        raise ValueError(f"unknown reduction mode '{mode}' (expected one of {', '.join(REDUCE_MODES)})")
    what = "Max Tip Error" if mode == "TIP" else "Max Joint Error"
    if not (math.isfinite(tolerance) and tolerance > 0.0):
        raise ValueError(f"the key reduction tolerance ({what}) must be a finite number > 0, got {tolerance:g}")


def budgets(obj, paths, values, scales, mode: str, tolerance: float) -> tuple[dict, dict]:
    """(bone -> rotation budget in radians, bone -> Y scale value tolerance). A bone on several
    chains' paths takes the tightest."""
    check_tolerance(mode, tolerance)
    low = {name: float(np.min(np.abs(ys))) for name, ys in scales.items()}
    if mode == "ANGLE":  # a scale off by angle x y moves the bone's end as a turn by the angle
        return {n: tolerance for n in values}, {n: tolerance * low[n] for n in scales}
    rotation: dict[str, float] = {}
    scale: dict[str, float] = {}
    pose = obj.pose.bones
    for path in paths:
        stretch = 1.0  # bound on every product of scales along the path, reduced Y scales included
        for name in path.names:
            factors = [abs(c) for c in pose[name].scale]
            if name in scales:
                factors[1] = float(np.max(np.abs(scales[name]))) * (1.0 + SCALE_SHARE)
            stretch *= max(1.0, *factors)
        arms = path.arms * stretch * path.above * path.world
        joints = [(name, rotation, arm) for name, arm in zip(path.names, arms, strict=True) if name in values]
        joints += [(name, scale, arm) for name, arm in zip(path.names, arms, strict=True) if name in scales]
        if not joints:
            continue
        shares = keyfit.tip_angle_budget(np.array([arm for *_, arm in joints]), tolerance).tolist()
        for (name, into, _), share in zip(joints, shares, strict=True):
            into[name] = min(into.get(name, share), share)
    return rotation, {n: min(scale.get(n, math.inf), SCALE_SHARE * low[n]) for n in scales}


def hold_keys(values: np.ndarray, tolerance: float) -> np.ndarray:
    """Indices of the keys a constant curve needs: a key whose value is within `tolerance` of
    the held one is dropped (first and last kept)."""
    keep = [0]
    for i in range(1, len(values) - 1):
        if abs(values[i] - values[keep[-1]]) > tolerance:
            keep.append(i)
    if len(values) > 1:
        keep.append(len(values) - 1)
    return np.array(keep, dtype=int)


def reduce_channel(frames: np.ndarray, column: np.ndarray, tolerance: float, interpolation: str):
    """(kept frames, kept values, (left, right) handles or None, the curve's value at `frames`)."""
    order = np.argsort(frames, kind="stable")  # a reversed NLA strip maps frames backwards
    t, v = frames[order], column[order]
    if interpolation == "BEZIER":
        fit = keyfit.fit_bezier(t, v, tolerance)
        return t[fit.index], v[fit.index], fit.handles(t, v), keyfit.evaluate(t, v, fit, frames)
    if interpolation == "LINEAR":
        keep = keyfit.reduce_keys(t, v, tolerance)
        return t[keep], v[keep], None, np.interp(frames, t[keep], v[keep])
    keep = hold_keys(v, tolerance)
    held = v[keep][np.clip(np.searchsorted(t[keep], frames, side="right") - 1, 0, len(keep) - 1)]
    return t[keep], v[keep], None, held


def reduce_values(
    obj,
    frames: np.ndarray,
    values: dict[str, np.ndarray],
    chains,
    mode: str,
    tolerance: float,
    interpolation: str,
    scales: dict[str, np.ndarray] | None = None,
) -> Reduced:
    """The reduced curves of the rotation channels `values` (bone -> (frames, channels)) and the
    Y scales `scales` (bone -> (frames,)); `chains`: (bone names root first, use_tail, tip)."""
    scales = scales or {}
    rotation = {name: obj.pose.bones[name].rotation_mode for name in values}
    paths = chain_paths(obj, chains, set(values), set(scales)) if mode == "TIP" else []
    angle, scale_tolerance = budgets(obj, paths, values, scales, mode, tolerance)
    check = _Check(obj, len(frames), paths, mode, tolerance, rotation, values, scales)
    # The bounds hold whatever bones outside the keys do; a measurement needs them keyed or still.
    factors = LOOSER + TIGHTER if all(p.exact for p in paths) else TIGHTER[:1]
    for factor in factors:
        reduced, played, played_scales = Reduced({}, {}), {}, {}
        for name, table in values.items():
            tolerances = keyfit.channel_tolerances(rotation[name], table, min(angle.get(name, np.pi) * factor, np.pi))
            channels = [reduce_channel(frames, table[:, i], tol, interpolation) for i, tol in enumerate(tolerances)]
            reduced.rotations[name] = [c[:3] for c in channels]
            played[name] = keyfit.channel_quaternions(rotation[name], np.column_stack([c[3] for c in channels]))
        for name, column in scales.items():
            tol = min(scale_tolerance[name] * factor, SCALE_SHARE * float(np.min(np.abs(column))))
            channel = reduce_channel(frames, column, tol, interpolation)
            reduced.scales[name], played_scales[name] = channel[:3], channel[3]
        if len(factors) == 1 or check.within(played, played_scales):
            return reduced
    return Reduced(  # every key: the full bake
        {name: [(frames, table[:, i], None) for i in range(table.shape[1])] for name, table in values.items()},
        {name: (frames, column, None) for name, column in scales.items()},
    )


class _Check:
    """Whether reduced curves play back within the tolerance of the full bake's at every frame."""

    def __init__(self, obj, frames: int, paths, mode, tolerance, rotation, values, scales) -> None:
        self.paths, self.mode, self.tolerance, self.scales = paths, mode, tolerance, scales
        self.baked = {name: keyfit.channel_quaternions(rotation[name], table) for name, table in values.items()}
        self.fk = PathFK(obj, frames)
        self._ends: list | None = None

    def within(self, played: dict, played_scales: dict) -> bool:
        if self.mode == "ANGLE":
            worst = max((float(np.max(_angles(self.baked[n], q), initial=0.0)) for n, q in played.items()), default=0.0)
            return worst <= self.tolerance and all(
                np.all(np.abs(played_scales[n] - ys) <= self.tolerance * np.abs(ys)) for n, ys in self.scales.items()
            )
        if self._ends is None:
            self._ends = [self.fk.ends(path, self.baked, self.scales) for path in self.paths]
        for path, full in zip(self.paths, self._ends, strict=True):
            ends = self.fk.ends(path, played, played_scales)
            if float(np.max(np.linalg.norm(ends - full, axis=1), initial=0.0)) * path.world > self.tolerance:
                return False
        return True


def _angles(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    # From the relative rotation: 2 arccos |a.b| keeps only half the digits near 0 (3e-8 rad of noise
    # against a Max Joint Error that may be 1e-7).
    return quat.angle_between(a, b)
