"""IK -> FK over a frame range: key FK control bones so they follow another chain's pose (bake_fk).

Per frame: `scene.frame_set`, then `rig.fk_follow.solve_frame` gives each FK bone the local
rotation that matches its partner (nothing is written during the loop); the values are made
continuous in each bone's rotation mode and keyed once at the end through the same writer as
Bake, so a failure leaves the action untouched. The figures reported are measured by playing
the new keys back.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from mathutils import Matrix

from ..rig import fk_follow, keys, modes, protected
from . import bake, live

# A followed bone that moves this much (armature units / matrix entries) when the FK bones are
# nudged depends on them (a limb switched to FK): following it would chase its own tail.
_DEPENDENCY_EPSILON = 1e-6


@dataclass
class FkBakeResult:
    frames: int
    seconds: float
    keys: int
    bones: tuple[str, ...]
    worst_angle: float  # degrees, FK bone vs its partner, on playback
    worst_distance: float  # world distance between their tails, on playback
    locked: tuple[str, ...] = ()
    driven: tuple[str, ...] = ()


def check_independent(context, obj, plan: fk_follow.FollowPlan) -> None:
    """Refuse when a followed bone moves with the FK bones (Rigify's limb in FK mode): nudge
    the FK bones, let Blender evaluate, and see. The pose is restored either way."""
    pose = obj.pose.bones
    saved = {name: pose[name].matrix_basis.copy() for name in plan.fk_names}
    follows = [follow for _, follow in plan.pairs]

    def follow_matrices() -> list[Matrix]:
        context.view_layer.update()
        evaluated = obj.evaluated_get(context.evaluated_depsgraph_get()).pose.bones
        return [evaluated[name].matrix.copy() for name in follows]

    before = follow_matrices()
    try:
        nudge = Matrix.Rotation(0.5, 4, "X")
        for name, basis in saved.items():
            pose[name].matrix_basis = basis @ nudge
        after = follow_matrices()
    finally:
        for name, basis in saved.items():
            pose[name].matrix_basis = basis
        context.view_layer.update()
    for (fk, follow), m0, m1 in zip(plan.pairs, before, after, strict=True):
        if max(abs(a - b) for r0, r1 in zip(m0, m1, strict=True) for a, b in zip(r0, r1, strict=True)) > (
            _DEPENDENCY_EPSILON
        ):
            raise ValueError(
                f"'{follow}' moves with the FK bones (it follows '{fk}' or another FK bone now): switch the"
                " limb to IK first; nothing was keyed"
            )


def _solve_frames(context, obj, plan, frames, progress) -> tuple[dict[str, np.ndarray], set[str]]:
    """FK bone -> (frames, channels) values, continuous frame to frame; and the bones with locks."""
    scene = context.scene
    pose = obj.pose.bones
    first = {name: modes.current_values(pose[name]) for name in plan.fk_names}
    lock = {name: modes.locks(pose[name]) for name in plan.fk_names}
    quats = {name: np.empty((len(frames), 4)) for name in plan.fk_names}
    for k, frame in enumerate(frames):
        scene.frame_set(int(frame))
        obj_eval = obj.evaluated_get(context.evaluated_depsgraph_get())
        for name, q in fk_follow.solve_frame(obj_eval, plan).items():
            quats[name][k] = q.normalized()[:]
        if progress is not None:
            progress(0.8 * (k + 1) / len(frames), int(frame))
    # The keys as every bake makes them: continuous frame to frame, locked channels kept.
    values = {
        name: modes.series_values(pose[name].rotation_mode, table, first[name], lock[name])
        for name, table in quats.items()
    }
    for name, table in values.items():
        if not np.all(np.isfinite(table)):
            raise ValueError(f"the rotation found for '{name}' is not finite; nothing was keyed")
    locked = {name for name, (three, _, w) in lock.items() if any(three) or w}
    return values, locked


def _playback(context, obj, plan, frames, progress) -> tuple[float, float]:
    scene = context.scene
    worst_angle = worst_distance = 0.0
    for k, frame in enumerate(frames):
        scene.frame_set(int(frame))
        obj_eval = obj.evaluated_get(context.evaluated_depsgraph_get())
        angle, distance = fk_follow.follow_error(obj_eval, plan, obj_eval.matrix_world)
        worst_angle, worst_distance = max(worst_angle, angle), max(worst_distance, distance)
        if progress is not None:
            progress(0.8 + 0.2 * (k + 1) / len(frames), int(frame))
    return worst_angle, worst_distance


def bake_fk(
    context,
    obj,
    pairs: list[tuple[str, str]],
    options: bake.BakeOptions,
    progress: Callable | None = None,
) -> FkBakeResult:
    """Key the rotation of each pair's FK bone on `obj` so it follows its partner over the range."""
    start_time = time.perf_counter()
    frames = bake.bake_frames(options)
    refusal = keys.tweak_refusal(obj)
    if refusal:
        raise ValueError(refusal)
    plan = fk_follow.make_plan(obj, pairs)
    refusal = protected.keying_refusal(obj, plan.fk_names)
    if refusal:
        raise ValueError(refusal)
    scene = context.scene
    frame0, subframe0 = scene.frame_current, scene.frame_subframe
    was_busy = live.is_busy()
    live.set_busy(True)  # frame_set runs Live's handler: it must not pose the rig meanwhile
    try:
        check_independent(context, obj, plan)
        values, locked = _solve_frames(context, obj, plan, frames, progress)
        scene.frame_set(frame0, subframe=subframe0)
        count = sum(bake.write_curves(obj, bake.key_curves(obj, frames, values, options), options).values())
        worst_angle, worst_distance = _playback(context, obj, plan, frames, progress)
    finally:
        scene.frame_set(frame0, subframe=subframe0)
        live.set_busy(was_busy)
    return FkBakeResult(
        frames=len(frames),
        seconds=time.perf_counter() - start_time,
        keys=count,
        bones=plan.fk_names,
        worst_angle=worst_angle,
        worst_distance=worst_distance,
        locked=tuple(sorted(locked)),
        driven=bake.driven_rotations(obj, plan.fk_names),
    )
