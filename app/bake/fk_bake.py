"""IK -> FK over a frame range: key FK control bones so they follow another chain's pose (bake_fk).

Per frame: `scene.frame_set`, then `rig.fk_follow.solve_frame` gives each FK bone the local
rotation that matches its partner (nothing is written during the loop); the values are made
continuous in each bone's rotation mode and keyed once at the end through the same writer as
Bake, so a failure leaves the action untouched, and a refusal puts every channel of the pose
back exactly. The figures reported are measured by playing the new keys back at every frame of
the range, not only the keyed ones (with a step, the interpolation between keys is measured too).

Live chains that pose a followed bone (or a bone above one) are solved at every frame as Live
solves them on playback (`live.follow_frame`), so the FK keys follow their solution; the report
names them. Live turns a chain from its last pose, so its pose at a frame depends on the frames
played before: both passes (keys, then playback) start from the chains' pose as it was and play
every frame of the range in order from its first, as a playback from here does, and that pose is put back
at the end. Live chains that pose the FK bones are switched off once the keys are written (Live
would pose those bones again over the keys), as Bake does.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ... import rig
from ...rig import fk_follow, keys, modes, protected
from .. import bake, live, spec
from ..live import live_above

# Worse than this on playback (degrees) and the FK bones do not follow. Blender's pose matrices
# are float32: an FK bone re-posed exactly lands within about 3e-5 degrees of its partner (Rigify's
# arm and leg), which the float64 measure (rig.fk_follow.follow_error) resolves; 1e-3 degrees is
# 17 micrometres at the end of a 1 m bone, far above that noise and below anything visible.
FOLLOW_TOLERANCE_DEGREES = 1e-3
# A difference of stretch (posed over rest length) above this between an FK bone and its partner
# is said: rotation keys do not lengthen bones, so their tails part even where they turn alike.
STRETCH_TOLERANCE = 1e-5


@dataclass
class FkBakeResult:
    frames: int  # frames keyed
    first_frame: int
    seconds: float
    keys: int
    bones: tuple[str, ...]
    worst_angle: float  # degrees, FK bone vs its partner, on playback at every frame of the range
    worst_distance: float  # world distance between their tails, on playback at every frame of the range
    keyed_angle: float = 0.0  # worst_angle at the keyed frames alone (the same with step 1)
    last_frame: int = 0  # the range measured: every frame first_frame..last_frame
    step: int = 1  # a key every this many frames
    worst_stretch: float = 0.0  # largest difference of posed / rest length between FK bone and partner
    locked: tuple[str, ...] = ()
    driven: tuple[str, ...] = ()
    constrained: tuple[str, ...] = ()  # FK bones with constraints in effect
    live: tuple[str, ...] = ()  # Live chains followed frame by frame, as on playback
    live_off: tuple[str, ...] = ()  # Live chains switched off: they posed FK bones
    loop_angle: float | None = None  # with Live chains: worst_angle on a second pass, looping from the last frame

    @property
    def measured(self) -> int:
        """Frames measured on playback: every frame of the range."""
        return self.last_frame - self.first_frame + 1

    def follow_line(self) -> str:
        """How closely the FK bones follow on playback, over every frame of the range."""
        verb = "follow within" if self.worst_angle <= FOLLOW_TOLERANCE_DEGREES else "stray up to"
        line = (
            f"on playback over every frame {self.first_frame}-{self.last_frame} they {verb} {self.worst_angle:.3g}°"
            f" (tails within {self.worst_distance:.3g})"
        )
        if self.frames != self.measured:
            line += f", at the {self.frames} keyed frames within {self.keyed_angle:.2g}°"
        return line

    def miss_warning(self) -> str:
        """Why the report must warn that the FK bones do not follow, or ''."""
        if self.worst_angle <= FOLLOW_TOLERANCE_DEGREES:
            return ""
        if self.keyed_angle <= FOLLOW_TOLERANCE_DEGREES:
            return (
                f"between the keys (one every {self.step} frames) the FK bones stray up to {self.worst_angle:.3g}°"
                f" from their partners on playback (at the keys within {self.keyed_angle:.2g}°): the keys'"
                " interpolation does not follow the motion; bake with a smaller step"
            )
        causes = []
        if self.locked:
            causes.append(f"locked rotation channels on {', '.join(self.locked)}")
        if self.constrained:
            causes.append(f"constraints on {', '.join(self.constrained)}")
        if self.driven:
            causes.append(f"drivers on {', '.join(self.driven)}")
        why = "; ".join(causes) or "no lock, constraint or driver on them: their parents' scale or shear?"
        where = "" if self.frames == self.measured else f" at the keyed frames ({self.worst_angle:.3g}° in between)"
        return f"the FK bones miss their partners by up to {self.keyed_angle:.3g}° on playback{where} ({why})"

    def loop_warning(self) -> str:
        """With Live chains: how far a second, looping playback strays from the keys, if it does."""
        # Beyond what the first playback showed (between keys with a step, say): Live's memory.
        if self.loop_angle is None or self.loop_angle <= self.worst_angle + FOLLOW_TOLERANCE_DEGREES:
            return ""
        return (
            f"Live turns a chain from its last pose, so its pose at a frame depends on the frames played before:"
            f" played again from the last frame, the followed bones stray up to {self.loop_angle:.3g}° from the"
            " keys (Bake Chain IK on the Live chains first gives keys that always hold)"
        )


def check_independent(context, obj, plan: fk_follow.FollowPlan) -> None:
    """Refuse when a followed bone moves with the FK bones (Rigify's limb in FK mode). The FK
    bones' channels are put back exactly either way (rig.fk_follow.moving_with_fk)."""

    def evaluate():
        context.view_layer.update()
        return obj.evaluated_get(context.evaluated_depsgraph_get())

    try:
        moving = set(fk_follow.moving_with_fk(obj, plan, evaluate))
    finally:
        context.view_layer.update()
    for fk, follow in plan.pairs:
        if follow in moving:
            raise ValueError(
                f"'{follow}' moves with the FK bones (it follows '{fk}' or another FK bone now): switch the"
                " limb to IK first; nothing was keyed"
            )


def live_leaders(obj, plan: fk_follow.FollowPlan) -> list[str]:
    """The live, unmuted chains of `obj` that pose a followed bone or a bone one rides on (through
    parents or constraints): playback moves the followed bones through them. Refused when one
    moves with the FK bones (its bones, target or pole ride on one: it would chase the keys), and
    when a Live chain of another armature poses what the followed bones or the leaders' targets
    and poles ride on (Live is held off: it would stay put)."""
    fk = set(plan.fk_names)
    follows = [follow for _, follow in plan.pairs]
    leaders = []
    for arm, item, posed in live_above.live_chains_above(obj, follows):
        if arm != obj:
            raise ValueError(live_above.held_message(arm, item, posed, "the followed bones ride on"))
        leader = spec.spec_from_item(item)
        bones = rig.chain_bone_names(obj, item.tip, item.chain_length, item.use_tail)
        starts = [*((obj, name, False) for name in bones), *live_above.goal_starts([leader])]
        riding = set().union(*(names for arm_, names in live_above.read_bones(starts) if arm_ == obj))
        if fk.intersection(riding):
            raise ValueError(
                f"Live chain '{item.name}' moves with the FK bones (through '{sorted(fk & riding)[0]}'): it"
                " would follow the keys being made; nothing was keyed"
            )
        for arm, other, posed in live_above.live_chains_above(obj, (), [leader]):
            if arm != obj:
                what = f"the target or pole of Live chain '{item.name}' of '{obj.name}' rides on"
                raise ValueError(live_above.held_message(arm, other, posed, what))
        leaders.append(item.name)
    return leaders


def _live_pose(obj, leaders: list[str]) -> dict[str, tuple]:
    """The rotation channels and scale of the bones the Live `leaders` pose (Live writes both)."""
    names = set()
    for item in (obj.chain_ik.chains[name] for name in leaders):
        names.update(rig.chain_bone_names(obj, item.tip, item.chain_length, item.use_tail))
    pose = obj.pose.bones
    return {n: (rig.snapshot(obj, [n])[n], tuple(pose[n].scale)) for n in sorted(names)}


def _put_back(obj, held: dict[str, tuple]) -> None:
    """The Live chains' pose as `_live_pose` held it, solved afresh at the next frame."""
    if not held:
        return
    pose = obj.pose.bones
    for name, (rotation, scale) in held.items():
        rig.apply(obj, {name: rotation})
        pose[name].scale = scale
    live.solve_again(obj)


def _follow_live(context, obj, leaders: list[str], frame: int) -> None:
    """Solve the Live chains at this frame as playback does; refuse where a leader cannot be."""
    if not leaders:
        return
    for ob, names, why in live.follow_frame(context.scene, context.evaluated_depsgraph_get()):
        if ob == obj and set(names).intersection(leaders):
            chains = " + ".join(names)
            raise ValueError(f"Live chain '{chains}' cannot be solved at frame {frame}: {why}; nothing was keyed")


def _solve_frames(context, obj, plan, frames, steps, progress, leaders) -> tuple[dict[str, np.ndarray], set[str]]:
    """FK bone -> (frames, channels) values at the keyed `frames`, continuous frame to frame; and the
    bones with locks. Playback steps through `steps` (with Live chains every frame of the range:
    Live turns each chain from its pose at the frame before)."""
    scene = context.scene
    pose = obj.pose.bones
    first = {name: modes.current_values(pose[name]) for name in plan.fk_names}
    lock = {name: modes.locks(pose[name]) for name in plan.fk_names}
    quats = {name: np.empty((len(frames), 4)) for name in plan.fk_names}
    keyed = {int(frame): k for k, frame in enumerate(frames)}
    for done, frame in enumerate(int(f) for f in steps):
        scene.frame_set(frame)
        _follow_live(context, obj, leaders, frame)
        if frame in keyed:
            obj_eval = obj.evaluated_get(context.evaluated_depsgraph_get())
            for name, q in fk_follow.solve_frame(obj_eval, plan).items():
                quats[name][keyed[frame]] = q.normalized()[:]
        if progress is not None:
            progress(0.8 * (done + 1) / len(steps), frame)
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


def _playback(context, obj, plan, frames, every, progress, leaders) -> tuple[float, float, float, float]:
    """(worst angle, tail distance and stretch difference over `every` frame of the range, worst
    angle at the keyed `frames`), played back in order as a playback does."""
    scene = context.scene
    keyed = {int(frame) for frame in frames}
    worst, at_keys = [0.0, 0.0, 0.0], 0.0
    for k, frame in enumerate(int(f) for f in every):
        scene.frame_set(frame)
        if leaders:  # as on playback; a chain that fails here failed above, before any key
            live.follow_frame(scene, context.evaluated_depsgraph_get())
        obj_eval = obj.evaluated_get(context.evaluated_depsgraph_get())
        figures = fk_follow.follow_error(obj_eval, plan, obj_eval.matrix_world)
        worst = [max(a, b) for a, b in zip(worst, figures, strict=True)]
        if frame in keyed:
            at_keys = max(at_keys, figures[0])
        if progress is not None:
            progress(0.8 + 0.2 * (k + 1) / len(every), frame)
    return worst[0], worst[1], worst[2], at_keys


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
    every = np.arange(options.frame_start, options.frame_end + 1)  # measured: every frame of the range
    refusal = keys.tweak_refusal(obj)
    if refusal:
        raise ValueError(refusal)
    plan = fk_follow.make_plan(obj, pairs)
    refusal = protected.keying_refusal(obj, plan.fk_names) or protected.nla_override_refusal(
        obj, plan.fk_names, None, (options.frame_start, options.frame_end)
    )
    if refusal:
        raise ValueError(refusal)
    leaders = live_leaders(obj, plan)
    held = _live_pose(obj, leaders)
    scene = context.scene
    frame0, subframe0 = scene.frame_current, scene.frame_subframe
    pose_before = rig.snapshot_channels(obj)  # a refusal puts every channel back as it was, exactly
    keyed, refused = False, True
    was_busy = live.is_busy()
    live.set_busy(True)  # frame_set runs Live's handler: Live chains are solved here, in order, instead
    try:
        check_independent(context, obj, plan)
        _put_back(obj, held)
        values, locked = _solve_frames(context, obj, plan, frames, every if leaders else frames, progress, leaders)
        scene.frame_set(frame0, subframe=subframe0)
        curves = bake.key_curves(obj, frames, values, options)
        keyed = True
        count = sum(bake.write_curves(obj, curves, options).values())
        bake.contact_record.unkeyed(obj, curves, frames)  # a planted bake's record ends on the curves keyed
        live_off = live.switch_off(obj, plan.fk_names)  # Live would pose them again over the keys
        _put_back(obj, held)  # the playback starts where the keys' pass did
        worst_angle, worst_distance, worst_stretch, keyed_angle = _playback(
            context, obj, plan, frames, every, progress, leaders
        )
        # Played again from where that pass ended (a looping playback): what Live's memory changes.
        loop_angle = _playback(context, obj, plan, frames, every, None, leaders)[0] if leaders else None
        refused = False
    finally:
        scene.frame_set(frame0, subframe=subframe0)
        if refused and not keyed:  # nothing keyed: the pose exactly as it was, unkeyed changes too
            rig.apply_channels(obj, pose_before)
            live.solve_again(obj)
        else:
            _put_back(obj, held)  # the Live chains as they were
        live.set_busy(was_busy)
    pose = obj.pose.bones
    return FkBakeResult(
        frames=len(frames),
        first_frame=int(frames[0]),
        seconds=time.perf_counter() - start_time,
        keys=count,
        bones=plan.fk_names,
        worst_angle=worst_angle,
        worst_distance=worst_distance,
        worst_stretch=worst_stretch,
        keyed_angle=keyed_angle,
        last_frame=int(every[-1]),
        step=options.step,
        locked=tuple(sorted(locked)),
        driven=keys.driven_rotations(obj, plan.fk_names),
        constrained=tuple(n for n in plan.fk_names if any(c.enabled and c.influence > 0 for c in pose[n].constraints)),
        live=tuple(leaders),
        live_off=live_off,
        loop_angle=loop_angle,
    )
