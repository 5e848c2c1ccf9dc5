"""Key reduction on baked rotation channels, with tolerances in an animator's units.

'TIP': no chain's tip moves more than a world distance from where the bake put it;
'ANGLE': no joint turns more than an angle from its baked rotation. Either becomes an
angle per bone (solvers.keyfit.tip_angle_budget: joints far from the tip get tighter
ones), then a value tolerance per channel for the bone's rotation mode
(solvers.keyfit.channel_tolerances). Bezier channels are fitted (keys and handles,
solvers.keyfit.fit_bezier); linear ones drop keys (keys.reduce_keys); constant ones
drop repeated holds.
"""

from __future__ import annotations

import numpy as np

from ..solvers import keyfit, quat
from . import keys

REDUCE_MODES = ("TIP", "ANGLE")
# Multiples of the per-channel bounds tried, loosest first; the last (1) always holds.
SCALES = (4.0, 2.0, 1.0)


def lever_arms(obj, names: tuple[str, ...] | list[str], use_tail: bool = True) -> np.ndarray:
    """Per bone of a chain (root first): a bound on its head's distance to the chain's end
    in world units, whatever the pose (the sum of the rigid joint-to-joint offsets beyond it)."""
    bones = [obj.data.bones[n] for n in names]
    points = [np.array(b.head_local[:]) for b in bones]
    points.append(np.array((bones[-1].tail_local if use_tail else bones[-1].head_local)[:]))
    steps = np.linalg.norm(np.diff(np.array(points), axis=0), axis=1)
    scale = max(abs(s) for s in obj.matrix_world.to_scale())
    return np.cumsum(steps[::-1])[::-1] * scale


def angle_budgets(obj, chains: list[tuple[tuple[str, ...], bool]], mode: str, tolerance: float) -> dict[str, float]:
    """Bone -> its rotation tolerance (radians). `chains`: (bone names root first, use_tail);
    `tolerance`: a world distance ('TIP') or an angle in radians ('ANGLE'). A bone in several
    chains takes the tightest."""
    if mode not in REDUCE_MODES:
        raise ValueError(f"unknown reduction mode '{mode}' (expected one of {', '.join(REDUCE_MODES)})")
    if not tolerance > 0.0:
        raise ValueError(f"the key reduction tolerance must be > 0, got {tolerance:g}")
    budgets: dict[str, float] = {}
    for names, use_tail in chains:
        if mode == "ANGLE":
            angles = np.full(len(names), tolerance)
        else:
            angles = keyfit.tip_angle_budget(lever_arms(obj, names, use_tail), tolerance)
        for name, angle in zip(names, angles.tolist(), strict=True):
            budgets[name] = min(budgets.get(name, angle), angle)
    return budgets


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
        keep = keys.reduce_keys(t, v, tolerance)
        return t[keep], v[keep], None, np.interp(frames, t[keep], v[keep])
    keep = hold_keys(v, tolerance)
    held = v[keep][np.clip(np.searchsorted(t[keep], frames, side="right") - 1, 0, len(keep) - 1)]
    return t[keep], v[keep], None, held


def _rest(obj, names, use_tail: bool):
    """keyfit.chain_tips' rest data of a chain: per bone its rest orientation and head in its parent's space."""
    rest, offsets = [], []
    for name in names:
        bone = obj.data.bones[name]
        local = bone.matrix_local if bone.parent is None else bone.parent.matrix_local.inverted() @ bone.matrix_local
        rest.append(local.to_quaternion()[:])
        offsets.append(local.translation[:])
    tip = (0.0, obj.data.bones[names[-1]].length if use_tail else 0.0, 0.0)
    return np.array(rest), np.array(offsets), np.array(tip)


def reduce_values(
    obj, frames: np.ndarray, values: dict[str, np.ndarray], chains, mode: str, tolerance: float, interpolation: str
) -> dict[str, list[tuple]]:
    """Bone -> per channel (kept frames, kept values, handles or None).

    The per-channel tolerances bound the error whatever the channels do together, which is far
    more than they do: looser ones (SCALES) are tried first and the first whose curves keep
    every tip (or joint) within `tolerance` at every baked frame, computed exactly, is kept."""
    budgets = angle_budgets(obj, chains, mode, tolerance)
    rotation = {name: obj.pose.bones[name].rotation_mode for name in values}
    baked = {name: keyfit.channel_quaternions(rotation[name], table) for name, table in values.items()}
    scale = max(abs(s) for s in obj.matrix_world.to_scale())
    for factor in SCALES:
        reduced, played = {}, {}
        for name, table in values.items():
            angle = min(budgets[name] * factor, np.pi)
            tolerances = keyfit.channel_tolerances(rotation[name], table, angle)
            channels = [
                reduce_channel(frames, table[:, i], tolerances[i], interpolation) for i in range(len(tolerances))
            ]
            reduced[name] = [c[:3] for c in channels]
            played[name] = keyfit.channel_quaternions(rotation[name], np.column_stack([c[3] for c in channels]))
        if factor == 1.0 or _within(obj, chains, mode, tolerance, scale, baked, played):
            return reduced
    raise AssertionError("unreachable: the last scale is the bound")


def _within(obj, chains, mode, tolerance, scale, baked, played) -> bool:
    if mode == "ANGLE":
        return all(float(np.max(_angles(baked[n], played[n]), initial=0.0)) <= tolerance for n in baked)
    for names, use_tail in chains:
        rest = _rest(obj, names, use_tail)
        tips = [keyfit.chain_tips(*rest, np.stack([q[n] for n in names], axis=1)) for q in (baked, played)]
        if float(np.max(np.linalg.norm(tips[1] - tips[0], axis=1), initial=0.0)) * scale > tolerance:
            return False
    return True


def _angles(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    # From the relative rotation: 2 arccos |a.b| keeps only half the digits near 0 (3e-8 rad of noise
    # against a Max Joint Error that may be 1e-7).
    return quat.angle_between(a, b)
