"""Baking chains to rotation keys over a frame range (the Bake operator and cli.py share it).

Per frame: `scene.frame_set` (the one call that evaluates the whole scene at a
frame, animation, drivers and constraints included, and measured cheapest:
~4 µs on a small scene against ~16 µs for frame_current + depsgraph.update()),
then each chain is solved from the pose solved at the previous frame, rebuilt
with this frame's parents by `rig.fk` (the pose bones are never written during
the loop, so the animation system cannot overwrite the state, and nothing has
to be undone on failure). Values are collected in numpy arrays in each bone's
own rotation mode, continuous with the previous frame (quaternion sign, Euler
and axis-angle continuity via `rig.modes.values_for`), and written only once
every frame has been solved: a failure leaves the action untouched.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Generator
from dataclasses import dataclass, field

import bpy
import numpy as np

from .. import rig, solvers
from ..rig import keys, modes, protected, read, reduce, sampling, sequence
from . import bake_report, live, solve
from .checks import changed_mid_bake
from .spec import ChainSpec


@dataclass
class BakeOptions:
    frame_start: int
    frame_end: int
    step: int = 1
    interpolation: str = "BEZIER"
    reduce: bool = False
    reduce_tolerance: float = 1e-3  # 'TIP': world distance at each chain's tip
    reduce_mode: str = "TIP"  # or 'ANGLE': each joint within reduce_angle
    reduce_angle: float = 0.0017453292519943296  # radians (0.1 degree)
    measure: bool = True  # the per-chain report, played back at every baked frame (a second pass)


@dataclass
class BakeResult:
    frames: int
    seconds: float
    keys: int
    worst_error: float  # largest world-space tip distance of the solutions
    bones: tuple[str, ...]
    locked: tuple[str, ...] = ()
    constrained: tuple[str, ...] = ()
    driven: tuple[str, ...] = ()  # bones whose rotation a driver sets: it overrides the keys
    per_chain_error: dict[str, float] = field(default_factory=dict)  # the solver's figure, by tip
    chains: list[bake_report.ChainReport] = field(default_factory=list)  # measured on playback (options.measure)
    live_off: tuple[str, ...] = ()  # chains whose Live was switched off (it would override the keys)
    measure_seconds: float = 0.0  # the playback pass that measured `chains`
    per_chain_keys: dict[str, int] = field(default_factory=dict)  # by tip: keys written on the chain's bones
    per_chain_seconds: dict[str, float] = field(default_factory=dict)  # by tip: solver time (not scene evaluation)
    keys_before: int = 0  # keys the bake solved (one per frame and channel), before any reduction


def bake_frames(options: BakeOptions) -> np.ndarray:
    if options.step < 1:
        raise ValueError(f"step must be at least 1, got {options.step}")
    if options.frame_end < options.frame_start:
        raise ValueError(f"frame end {options.frame_end} is before frame start {options.frame_start}")
    if options.interpolation not in keys.INTERPOLATIONS:
        raise ValueError(f"unknown interpolation '{options.interpolation}'")
    protected.check_frames(options.frame_start, options.frame_end)
    return np.arange(options.frame_start, options.frame_end + 1, options.step)


class Progress:
    """Window-manager progress with a window; otherwise a console line every 10%.

    `update(fraction, frame)`: the share of the work done (0..1) and the frame being worked on."""

    STEPS = 10

    def __init__(self, context, stream=None) -> None:
        self.stream = stream or sys.stdout
        self.shown = 0
        # Background mode has no window to show progress in (the bpy wheel may still report one).
        has_window = not bpy.app.background and getattr(context, "window", None) is not None
        self.wm = context.window_manager if has_window else None
        if self.wm is not None:
            self.wm.progress_begin(0, 1000)

    def update(self, fraction: float, frame: int) -> None:
        step = int(fraction * self.STEPS + 1e-9)
        if step <= self.shown:
            return
        self.shown = step
        if self.wm is not None:
            self.wm.progress_update(int(1000 * fraction))
        else:
            print(f"Chain IK bake: {100 * step // self.STEPS:3d}% (frame {frame})", file=self.stream)
            self.stream.flush()

    def end(self) -> None:
        if self.wm is not None:
            self.wm.progress_end()

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc) -> None:
        self.end()  # the window's progress bar never outlives the work, failed or not


def bake(
    context, obj, specs: list[ChainSpec], options: BakeOptions, progress: Callable | None = None
) -> BakeResult:
    """Solve `specs` on `obj` (original armature) at every frame and key the chain bones' rotations."""
    steps = bake_steps(context, obj, specs, options, progress)
    while True:
        try:
            next(steps)
        except StopIteration as done:
            return done.value


def bake_steps(
    context,
    obj,
    specs: list[ChainSpec],
    options: BakeOptions,
    progress: Callable | None = None,
    stepwise: bool = False,
) -> Generator[str, None, BakeResult]:
    """`bake` as a generator: it yields its phase ('solve', then 'measure' once the keys are
    written) at every frame so a modal operator can keep the UI alive, and returns the
    BakeResult. Closed during 'solve', nothing has been written and the frame is restored.

    The sequence path solves a whole chain in one call between two yields. `stepwise`
    (a modal bake, which Esc must be able to stop) keeps it for triangulation only, a few
    seconds at most on the longest range; iterative solvers then take the per-frame path,
    where the solver's own time dominates anyway."""
    start_time = time.perf_counter()
    frames = bake_frames(options)
    if not specs:
        raise ValueError("no chains to bake")
    refusal = keys.tweak_refusal(obj)
    if refusal:
        raise ValueError(refusal)
    depsgraph = context.evaluated_depsgraph_get()
    names, stretched = [], []
    for spec in specs:
        solve.check_spec(obj, spec)
        solve.check_in_view_layer(obj, spec, depsgraph)
        chain = rig.chain_bone_names(obj, spec.tip, spec.chain_length, spec.use_tail)
        names += chain
        weights = stretch_weights(obj, spec)
        stretched += [n for n, w in zip(chain, weights or (), strict=False) if w > 0.0]
    paths = None  # the rotation channels; with IK stretch, the stretched bones' scale too
    if stretched:
        paths = {keys.data_path(n, keys.rotation_property(obj.pose.bones[n])) for n in names}
        paths |= {keys.data_path(n, "scale") for n in stretched}
    refusal = protected.keying_refusal(obj, names, paths)
    if refusal:
        raise ValueError(refusal)
    scene = context.scene
    frame0, subframe0 = scene.frame_current, scene.frame_subframe
    was_busy = live.is_busy()
    live.set_busy(True)  # frame_set runs the Live handler: it must not pose the rig mid-bake
    fast = fast_path_refusal(obj, specs) == ""
    if stepwise and any(spec.method != "triangulation" for spec in specs):
        fast = False
    solve_frames = _solve_frames_fast if fast else _solve_frames
    try:
        values, worst, flags = yield from solve_frames(context, obj, specs, frames, progress)
    except (ReferenceError, KeyError) as exc:
        # A frame handler (or a driver's script) removed or renamed what the bake reads.
        raise ValueError(f"{changed_mid_bake(obj, specs, names, exc)}; nothing was keyed") from None
    finally:
        scene.frame_set(frame0, subframe=subframe0)
        live.set_busy(was_busy)
    bone_keys: dict[str, int] = {}
    chains = [(rig.chain_bone_names(obj, s.tip, s.chain_length, s.use_tail), s.use_tail) for s in specs]
    count = write_values(obj, frames, values, options, bone_keys, chains)
    count += write_scales(obj, frames, flags.get("scales", {}), options, bone_keys)
    chain_keys = {}
    for spec in specs:
        bones = rig.chain_bone_names(obj, spec.tip, spec.chain_length, spec.use_tail)
        chain_keys[spec.tip] = sum(bone_keys.get(n, 0) for n in bones)
    # Live would solve these bones again on playback, over the new keys.
    live_off = live.switch_off(obj, values)
    seconds = time.perf_counter() - start_time
    reports: list[bake_report.ChainReport] = []
    measure_start = time.perf_counter()
    if options.measure:
        for _ in bake_report.measure(context, obj, specs, frames, reports):
            yield "measure"
    measure_seconds = time.perf_counter() - measure_start
    # Show the baked pose at the current frame (the new keys drive it now).
    scene.frame_set(frame0, subframe=subframe0)
    return BakeResult(
        frames=len(frames),
        seconds=seconds,
        keys=count,
        worst_error=max(worst.values()),
        bones=tuple(values),
        locked=tuple(sorted(flags["locked"])),
        constrained=tuple(sorted(flags["constrained"])),
        driven=driven_rotations(obj, values),
        per_chain_error=worst,
        chains=reports,
        live_off=live_off,
        measure_seconds=measure_seconds,
        per_chain_keys=chain_keys,
        per_chain_seconds=flags.get("seconds", {}),
        keys_before=len(frames) * sum(table.shape[1] for table in values.values()),
    )


def stretch_weights(obj, spec: ChainSpec) -> list[float] | None:
    """The chain bones' ik_stretch when the chain stretches (rig.stretch), else None."""
    return rig.stretch.weights(obj, spec.tip, spec.chain_length, spec.use_tail, spec.use_stretch)


def fast_path_refusal(obj, specs: list[ChainSpec]) -> str:
    """Why `rig.sequence`'s fast path cannot bake these chains ('' when it can); see its docstring."""
    if any(spec.influence < 1.0 for spec in specs):
        return "influence below 1"
    if any(stretch_weights(obj, spec) for spec in specs):
        return "IK stretch"
    if any(spec.pole is not None or (spec.use_rotation and spec.rotation_weight > 0.0) for spec in specs):
        return "pole target or tip rotation"
    animated = keys.animated_paths(obj)
    chains = [rig.chain_bone_names(obj, s.tip, s.chain_length, s.use_tail) for s in specs]
    taken: set[str] = set()
    for spec, names in zip(specs, chains, strict=True):
        if taken & set(names):
            return "chains share bones"
        taken |= set(names)
        # With use_tail off the tip bone's head reaches: it must ride rigidly on the chain too.
        reason = sequence.unsuitable(obj, names if spec.use_tail else (*names, spec.tip), animated)
        if not reason and spec.use_limits and rig.ik_settings.read_limits([obj.pose.bones[n] for n in names]):
            reason = "bones with IK limits"
        if reason:
            return reason
    # Independent chains only: no chain may ride on another's bones (parents, or an own-bone target).
    for spec, names in zip(specs, chains, strict=True):
        starts = [obj.pose.bones[names[0]].parent]
        if spec.target is obj and spec.target_bone:
            starts.append(obj.pose.bones.get(spec.target_bone))
        if not spec.use_tail:
            starts.append(obj.pose.bones[spec.tip])
        for bone in starts:
            while bone is not None:
                if bone.name in taken and bone.name not in names:
                    return f"chain '{spec.tip}' moves with another chain's bone '{bone.name}'"
                bone = bone.parent
    return ""


def check_rigid_at(obj_eval, names, frame) -> None:
    """The first frame's rigidity check again at a later frame: a parent's animated scale can
    turn non-uniform part way through, which would shear the chain."""
    try:
        read.check_rigid_bones(obj_eval, names)
    except ValueError as exc:
        raise ValueError(f"{exc} (at frame {int(frame)}); nothing was keyed") from None


def _solve_frames_fast(context, obj, specs, frames, progress) -> Generator[str, None, tuple[dict, dict, dict]]:
    """`_solve_frames` for chains `rig.sequence` can carry from frame to frame (same results).

    Two passes: first every frame is evaluated once to map each target into its
    chain's space (the chain's own pose does not enter), then each chain is
    solved frame after frame from the previous solution, without Blender."""
    scene = context.scene
    n = len(frames)
    scene.frame_set(int(frames[0]))
    depsgraph = context.evaluated_depsgraph_get()
    obj_eval = obj.evaluated_get(depsgraph)
    tracks = [sequence.ChainTrack(obj_eval, s.tip, s.chain_length, s.use_tail, n) for s in specs]
    direct = not sampling.armature_static_reason(obj, [t.names[0] for t in tracks])
    direct = direct and not sampling.direct_targets_reason(scene, obj, specs)
    if direct:
        # Nothing but the targets' own location curves moves: evaluate just those.
        for spec, track in zip(specs, tracks, strict=True):
            track.sample_all(track.space_to_world(obj_eval), sampling.target_positions(spec.target, frames), frames)
    else:
        for k, frame in enumerate(frames):
            if k:
                scene.frame_set(int(frame))
                depsgraph = context.evaluated_depsgraph_get()
                obj_eval = obj.evaluated_get(depsgraph)
            for spec, track in zip(specs, tracks, strict=True):
                if k:
                    check_rigid_at(obj_eval, track.names, frame)
                target_world = rig.target_world_location(rig.evaluated(spec.target, depsgraph), spec.target_bone)
                track.sample(k, track.space_to_world(obj_eval), target_world, int(frame))
            if progress is not None:
                progress(0.5 * (k + 1) / n, int(frame))
            yield "solve"
    worst, values, seconds = {}, {}, {}
    for i, (spec, track) in enumerate(zip(specs, tracks, strict=True)):
        done = (0.5 + 0.5 * i / len(specs), 0.5 / len(specs))

        def report(k: int, done=done) -> None:
            if progress is not None:
                progress(done[0] + done[1] * (k + 1) / n, int(frames[k]))

        solve_start = time.perf_counter()
        worst[spec.tip] = track.solve(spec, report)
        seconds[spec.tip] = time.perf_counter() - solve_start
        yield "solve"
        for name, table in track.channel_values(obj).items():
            if not np.all(np.isfinite(table)):
                raise ValueError(f"the solved rotation of bone '{name}' is not finite; nothing was keyed")
            values[name] = table
    return values, worst, {"locked": set(), "constrained": set(), "seconds": seconds}


def _solve_frames(context, obj, specs, frames, progress) -> Generator[str, None, tuple[dict, dict, dict]]:
    """(bone -> (frames, channels) values, chain tip -> worst error, locked/constrained bone names)."""
    scene = context.scene
    n = len(frames)
    values: dict[str, np.ndarray] = {}
    state_q: dict = {}  # bone -> local rotation (Quaternion) solved at the previous frame
    state_v: dict[str, tuple[float, ...]] = {}  # bone -> its channel values (continuity reference)
    worst = {spec.tip: 0.0 for spec in specs}
    flags: dict = {"locked": set(), "constrained": set(), "seconds": {spec.tip: 0.0 for spec in specs}}
    chain_names = [rig.chain_bone_names(obj, s.tip, s.chain_length, s.use_tail) for s in specs]
    stretches = [stretch_weights(obj, s) for s in specs]
    scales: dict[str, np.ndarray] = {}  # stretched bone -> Y scale per frame (IK stretch)
    flags["scales"] = scales
    for k, frame in enumerate(frames):
        scene.frame_set(int(frame))
        depsgraph = context.evaluated_depsgraph_get()
        obj_eval = obj.evaluated_get(depsgraph)
        space = rig.object_space(obj_eval)
        if k == 0:
            for spec, weights in zip(specs, stretches, strict=True):
                # Full read once: the rigidity checks and their messages (a stretching chain's: its own).
                if weights is None:
                    first = rig.read_chain(obj_eval, spec.tip, spec.chain_length, spec.use_tail, spec.use_limits)
                else:
                    goal = rig.target_world_location(rig.evaluated(spec.target, depsgraph), spec.target_bone)
                    target = space.to_local(goal)
                    first, own = rig.stretch.read_stretched(
                        obj_eval, spec.tip, spec.chain_length, spec.use_tail, spec.use_limits, weights, target
                    )
                    scales.update((name, np.empty(n)) for name in own)
                for name in first.names:
                    pbone = obj_eval.pose.bones[name]
                    state_v[name] = modes.current_values(pbone)
                    state_q[name] = modes.current_quaternion(pbone)
                    values[name] = np.empty((n, len(state_v[name])))
        for spec, names, weights in zip(specs, chain_names, stretches, strict=True):
            if k and weights is None:  # a stretching chain's read checks its unstretched pose itself
                check_rigid_at(obj_eval, names, frame)
            target_world = rig.target_world_location(rig.evaluated(spec.target, depsgraph), spec.target_bone)
            target = space.to_local(target_world)
            if weights is None:
                chain = rig.read_chain_posed(
                    obj_eval, spec.tip, spec.chain_length, spec.use_tail, state_q, spec.use_limits
                )
            else:
                chain, own = rig.stretch.read_stretched(
                    obj_eval, spec.tip, spec.chain_length, spec.use_tail, spec.use_limits, weights, target, state_q
                )
                for name, y in rig.stretch.blend(obj_eval.pose.bones, own, spec.influence)[0].items():
                    scales[name][k] = y
            tolerance = space.distance_to_local(spec.tolerance) if spec.tolerance > 0.0 else None
            solve_start = time.perf_counter()
            # The tip's goal orientation with use_tail off keeps the tip bone's offset from the last
            # chain bone: read both from the evaluated pose, where they are consistent.
            goal_chain = chain
            if spec.use_rotation and not spec.use_tail:
                goal_chain = rig.read_chain(obj_eval, spec.tip, spec.chain_length, spec.use_tail)
            solution = solvers.solve(
                chain.chain,
                target,
                method=spec.method,
                tolerance=tolerance,
                max_iterations=spec.max_iterations or None,
                **solve.goal_arguments(spec, depsgraph, obj_eval, space, goal_chain),
                **spec.options,
            )
            blend = None
            if spec.influence < 1.0:
                blend = {name: modes.current_quaternion(obj_eval.pose.bones[name]) for name in chain.names}
            write = rig.compute_pose(
                obj, chain, solution.rotations, spec.influence, state_v, blend, use_locks=spec.use_locks
            )
            for name, vals in write.values.items():
                state_v[name] = vals
                state_q[name] = modes.to_quaternion(obj.pose.bones[name].rotation_mode, vals)
                values[name][k] = vals
            if k == 0:
                flags["locked"].update(write.locked)
                flags["constrained"].update(write.constrained)
            flags["seconds"][spec.tip] += time.perf_counter() - solve_start
            error = float(np.linalg.norm(space.to_world(solution.points[-1]) - target_world))
            worst[spec.tip] = max(worst[spec.tip], error)
        if progress is not None:
            progress((k + 1) / n, int(frame))
        yield "solve"
    return values, worst, flags


def blend_warning(obj) -> str:
    """Why the baked keys may not play back as solved because of how the action blends ('' if not)."""
    ad = obj.animation_data
    if ad is None or not len(ad.nla_tracks):
        return ""
    if ad.action_blend_type != "REPLACE" or ad.action_influence < 1.0:
        return (
            f"the action blends ({ad.action_blend_type.lower()}, influence {ad.action_influence:g}) over NLA strips:"
            " playback adds their rotation to the baked keys"
        )
    return ""


def driven_rotations(obj, bones) -> tuple[str, ...]:
    """Those of `bones` with a driver on their rotation channel in use (drivers win over keys)."""
    return keys.playback_overrides(obj, bones).get("drivers", ())


def write_values(
    obj,
    frames: np.ndarray,
    values: dict[str, np.ndarray],
    options: BakeOptions,
    per_bone: dict | None = None,
    chains: list[tuple[tuple[str, ...], bool]] | None = None,
) -> int:
    """Key every channel of every baked bone (all values were checked finite by compute_pose); the
    number of keys written, and per bone into `per_bone` when given. `chains` (bone names root first,
    use_tail) set the reduction's tip distances; without them each bone is its own chain."""
    curves = keys.FCurves(obj)
    # In NLA tweak mode the keys belong to the tweaked strip's action, on its own time line.
    frames = keys.action_frames(obj, frames)
    first, last = keys.action_frames(obj, np.array([options.frame_start, options.frame_end]))
    frame_range = (float(min(first, last)), float(max(first, last)))
    reduced = {}
    if options.reduce:
        tolerance = options.reduce_tolerance if options.reduce_mode == "TIP" else options.reduce_angle
        chains = chains if chains is not None else [((name,), True) for name in values]
        reduced = reduce.reduce_values(
            obj, frames, values, chains, options.reduce_mode, tolerance, options.interpolation
        )
    count = 0
    for name, table in values.items():
        prop = keys.rotation_property(obj.pose.bones[name])
        path = keys.data_path(name, prop)
        for index in range(table.shape[1]):
            kept, column, handles = reduced[name][index] if reduced else (frames, table[:, index], None)
            fc = curves.ensure(path, index, name)
            written = keys.write_keys(fc, kept, column, frame_range, options.interpolation, handles)
            count += written
            if per_bone is not None:
                per_bone[name] = per_bone.get(name, 0) + written
    return count


def write_scales(obj, frames: np.ndarray, scales: dict[str, np.ndarray], options: BakeOptions, per_bone: dict) -> int:
    """Key the Y scale (scale[1] only) of the bones IK stretch lengthened, one key per baked frame
    (not reduced); the number of keys written, added per bone into `per_bone`."""
    if not scales:
        return 0
    curves = keys.FCurves(obj)
    frames = keys.action_frames(obj, frames)
    first, last = keys.action_frames(obj, np.array([options.frame_start, options.frame_end]))
    frame_range = (float(min(first, last)), float(max(first, last)))
    count = 0
    for name, column in scales.items():
        fc = curves.ensure(keys.data_path(name, "scale"), 1, name)
        written = keys.write_keys(fc, frames, column, frame_range, options.interpolation)
        count += written
        per_bone[name] = per_bone.get(name, 0) + written
    return count
