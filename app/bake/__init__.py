"""Baking chains to rotation keys over a frame range (the Bake operator and cli.py share it).

The checks, the range, Live kept out of the way, then `bake_solve.solve_frames` (the one solve
path: every unit, a chain alone or chains sharing bones, frame after frame from its previous
solution, carried in its top bone's parent space or frame by frame, with the reason when not the
fastest), then the keys are written in one go:
a failure before that leaves the action untouched. The per-chain report is measured on
playback afterwards (bake_report).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Generator

from ... import rig
from ...rig import keys, protected
from ...rig.steps import run_to_end
from .. import live, solve
from ..checks import changed_mid_bake
from ..live import live_above
from ..solve.group_solve import group_rig
from ..spec import ChainSpec, groups
from . import bake_report, bake_solve, contact_record, contact_targets
from .bake_curves import key_curves, write_curves
from .bake_frames import Solved
from .bake_options import BakeOptions, BakeResult, Progress, bake_frames, reduce_tolerance

# What callers use of the bake (the operators, cli.py, the job runner, benchmarks and tests).
__all__ = [
    "BakeOptions",
    "BakeResult",
    "Progress",
    "bake",
    "bake_frames",
    "bake_steps",
    "blend_warning",
    "key_curves",
    "movable_roots",
    "stretch_weights",
    "write_curves",
]


def bake(context, obj, specs: list[ChainSpec], options: BakeOptions, progress: Callable | None = None) -> BakeResult:
    """Solve `specs` on `obj` (original armature) at every frame and key the chain bones' rotations."""
    return run_to_end(bake_steps(context, obj, specs, options, progress))


def _refuse_live_above(obj, specs: list[ChainSpec], names) -> None:
    """Live is held off while baking: a live chain posing bones the baked chains hang from (or their
    targets and poles ride on, on any armature; or the armature itself) would stay put through the
    bake while playback moves it. One of this armature that poses baked bones too is switched off
    after the bake (switch_off), so its pose then stays."""
    baked = set(names)
    for arm, item, posed in live_above.live_chains_above(obj, names, specs):
        if arm != obj:
            raise ValueError(
                live_above.held_message(
                    arm, item, posed, f"a target or pole of the baked chains (or the armature '{obj.name}') rides on"
                )
            )
        if not baked.intersection(posed):
            raise ValueError(
                f"Live chain '{item.name}' poses bone '{posed[0]}', which the baked chains hang from (or a target"
                " rides on), and Live is held off while baking: the keys would follow a pose that playback moves."
                " Bake it with them, or switch its Live off; nothing was keyed"
            )


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

    The sequence kernel solves a whole chain in one call between two yields; with `stepwise`
    (a modal bake, which Esc must be able to stop) it is called a chunk of frames at a time
    (bake_solve.CHUNK), with the same keys."""
    start_time = time.perf_counter()
    frames = bake_frames(options)
    if not specs:
        raise ValueError("no chains to bake")
    specs = contact_targets.as_planted(specs)  # a chain with contacts needs no target (issue 21)
    if options.step > 1 and any(spec.contacts for spec in specs):
        planted = next(spec.label for spec in specs if spec.contacts)
        raise ValueError(
            f"chain '{planted}' has contacts and the step is {options.step}: a planted foot is held, eased and"
            " measured frame by frame (keys every few frames would let it slide between them); bake with step 1"
        )
    refusal = keys.tweak_refusal(obj)
    if refusal:
        raise ValueError(refusal)
    depsgraph = context.evaluated_depsgraph_get()
    names, stretched, read = [], [], []
    for spec in specs:
        if spec.target is None and not spec.pin:  # (a chain with contacts is a pin by now: as_planted)
            raise ValueError(
                f"chain '{spec.label or '?'}' has no target object, no pin and no contacts: give it a target,"
                " or Detect Contacts (or key its Contact) to plant it; nothing was keyed"
            )
        solve.check_spec(obj, spec)
        solve.check_in_view_layer(obj, spec, depsgraph)
        chain = rig.chain_bone_names(obj, spec.tip, spec.chain_length, spec.use_tail)
        read.append(chain)
        names += chain
        weights = stretch_weights(obj, spec)
        stretched += [n for n, w in zip(chain, weights or (), strict=False) if w > 0.0]
    _refuse_live_above(obj, specs, names)
    contact_targets.check_alone(obj, specs)
    # The units, read once for the checks, the solve and the report (the same chains throughout).
    units = groups.units(obj, specs, read)
    specs = groups.effective(obj, specs, units)  # a group's chains with its first chain's solver settings
    paths = None  # the rotation channels; with IK stretch, the stretched bones' scale too
    roots = movable_roots(obj, specs, units)  # Move Root: the top bone's location may be keyed
    hips = contact_targets.hips_to_lower(obj, specs)  # Move Root on planted legs: their hips
    contact_targets.check_under_hips(obj, specs, hips)
    roots += hips
    if stretched or roots:
        paths = {keys.data_path(n, keys.rotation_property(obj.pose.bones[n])) for n in names}
        paths |= {keys.data_path(n, "scale") for n in stretched}
        paths |= {keys.data_path(n, "location") for n in roots}
    refusal = protected.keying_refusal(obj, names, paths) or protected.nla_override_refusal(
        obj, names, paths, (options.frame_start, options.frame_end)
    )
    if refusal:
        raise ValueError(refusal)
    taken = contact_record.take_back(obj, specs, frames)  # a re-bake reads the motion, not the last bake
    scene = context.scene
    frame0, subframe0 = scene.frame_current, scene.frame_subframe
    was_busy = live.is_busy()
    live.set_busy(True)  # frame_set runs the Live handler: it must not pose the rig mid-bake
    solving = False  # the other chains' solve poses the rig: the frame is then always set back
    solved_all = False
    try:
        plants = yield from contact_targets.solve_steps(context, obj, specs, frames, progress, restore=False)
        others = [s for s in specs if not s.contacts]
        solved = Solved({}, {}, seconds={})
        if others:
            solving = True
            # Without planted chains the solve's specs are these: their bones and units as read above.
            known = (read, units) if len(others) == len(specs) else None
            solved = yield from bake_solve.solve_frames(context, obj, others, frames, progress, stepwise, known)
            plants.curve_keys.clear()  # keys read before the others' solve (frame handlers) may be stale
            solving = solved.posed  # a solve that posed nothing needs the frame set again only if it moved
        solved_all = True
    except (ReferenceError, KeyError) as exc:
        # A frame handler (or a driver's script) removed or renamed what the bake reads.
        raise ValueError(f"{changed_mid_bake(obj, specs, names, exc)}; nothing was keyed") from None
    finally:
        if not solved_all:  # failed or cancelled: the curves taken back are put back
            taken.put_back()
        # Planted legs alone, or units carried, read the curves (or frames, put back by
        # rig.pose_frames): no pose written, and a frame_set evaluates the whole scene, so it is
        # skipped where nothing moved; solved in full with no pose written, the frame is set once,
        # after the keys are written (it then shows them), not here as well.
        moved = (scene.frame_current, scene.frame_subframe) != (frame0, subframe0)
        if solving or (moved and not solved_all):
            scene.frame_set(frame0, subframe=subframe0)
        live.set_busy(was_busy)
    try:
        # Each chain's bones read again after the solve (a frame handler may have changed them), once.
        chain_bones = {
            spec.tip: rig.chain_bone_names(obj, spec.tip, spec.chain_length, spec.use_tail) for spec in specs
        }
        chains = [(chain_bones[s.tip], s.use_tail, s.tip) for s in others]
        values = solved.values
        reduction = None  # what Reduce Keys promised the played-back tips (the report measures against it)
        if options.reduce:
            reduced, scaled = frozenset(values), frozenset(solved.scales)
            reduction = bake_report.Reduction(options.reduce_mode, reduce_tolerance(options), reduced, scaled)
        try:
            curves = key_curves(obj, frames, values, options, chains, solved.scales, solved.locations)
            bone_keys = write_curves(obj, curves, options)
        except BaseException:  # refused before a planted key is written: the curves taken back go back
            taken.put_back()  # (review12b: a refusal here left the last bake taken back, nothing keyed)
            raise
        # Chains with contacts: their changed frames only (app.bake.contact_targets).
        # (the record's entries on the curves the other chains keyed end there: rebake14)
        planted_keys = contact_record.write(obj, plants, frames, options.interpolation, taken, curves)
        bone_keys.update(planted_keys)
        for planted in plants.chains:
            label, tip = planted.spec.label, planted.spec.tip
            values.update(zip(planted.leg.names, planted.values, strict=True))
            solved.worst[tip], solved.seconds[tip] = float(planted.errors.max()), plants.seconds / len(plants.chains)
            solved.held[label] = planted.held
            solved.reasons[label] = "; ".join(filter(None, (plants.reason, planted.note)))
        chain_keys = {tip: sum(bone_keys.get(n, 0) for n in bones) for tip, bones in chain_bones.items()}
        driven = keys.driven_rotations(obj, values)  # drivers in use win over the keys
        # Live would solve these bones again on playback, over the new keys.
        live_off = live.switch_off(obj, values)
        seconds = time.perf_counter() - start_time
        reports: list[bake_report.ChainReport] = []
        measure_start = time.perf_counter()
        root_moved = {name: solved.root_heads[name] for name in solved.locations}  # measured on playback below
        if options.measure:
            solves = _as_written(obj, specs, solved, chain_bones, driven)
            held = solved.held
            measuring = bake_report.measure(context, obj, specs, frames, reports, held, root_moved, solves, reduction)
            for _ in measuring:
                yield "measure"
            contact_targets.measure(context, obj, plants, frames)
            if plants.hips and plants.chains:
                root_moved[plants.hips] = plants.hips_moved
        measure_seconds = time.perf_counter() - measure_start
        reasons = {label: why for label, why in solved.reasons.items() if why}
        for report in reports:
            report.path = reasons.get(report.name, "")
        for report, label in zip(reports, groups.labels(obj, specs, units), strict=False):
            report.group = label
        figures = {c.spec.label: c.figures for c in plants.chains if c.figures is not None}
        for report in reports:
            if report.name in figures:
                report.contacts = figures[report.name].as_dict()
        # Show the baked pose at the current frame (the new keys drive it now).
        scene.frame_set(frame0, subframe=subframe0)
        return BakeResult(
            frames=len(frames),
            seconds=seconds,
            keys=sum(bone_keys.values()),
            worst_error=max(solved.worst.values()),
            bones=tuple(values),
            locked=tuple(sorted(solved.locked)),
            constrained=tuple(sorted(solved.constrained)),
            driven=driven,
            per_chain_error=solved.worst,
            chains=reports,
            live_off=live_off,
            measure_seconds=measure_seconds,
            per_chain_keys=chain_keys,
            per_chain_seconds=solved.seconds,
            keys_before=len(frames) * len(curves) + sum(planted_keys.values()),  # planted: not reduced
            reduced=options.reduce,
            reasons=reasons,
            root_moved={name: d for name, d in root_moved.items() if isinstance(d, float)},
            taken_back=taken.sentence(),
        )
    except BaseException:  # the frame the solve left, where it was not set back above
        if (scene.frame_current, scene.frame_subframe) != (frame0, subframe0):
            scene.frame_set(frame0, subframe=subframe0)
        raise


def _as_written(
    obj, specs: list[ChainSpec], solved: Solved, chain_bones: dict[str, list[str]], driven: tuple[str, ...]
) -> dict[str, float]:
    """The solver's worst tip error by tip, for the chains whose keys are the solved pose itself:
    the report puts playback past the tolerance down to float32 rounding or key reduction only on
    those. Influence below 1, locks kept, constraints, drivers (`driven`) or an action that blends
    move playback off the solved pose by more than either, so their solve's figure explains
    nothing. `chain_bones`: each chain's bones by tip, as the bake read them."""
    if blend_warning(obj):
        return {}
    off = set(solved.locked) | set(solved.constrained) | set(driven)
    out = {}
    for spec in specs:
        names = chain_bones[spec.tip]
        if spec.influence >= 1.0 and not off.intersection(names) and spec.tip in solved.worst:
            out[spec.tip] = solved.worst[spec.tip]
    return out


def movable_roots(obj, specs: list[ChainSpec], units: list | None = None) -> list[str]:
    """The top bones Move Root may key (each unit led by a chain with Move Root on). `units`:
    groups.units(obj, specs) when known."""
    out = []
    for unit in groups.units(obj, specs) if units is None else units:
        lead = specs[unit.members[0]]
        if lead.move_root and not lead.contacts:  # planted legs: their hips (contact_targets)
            out.append(group_rig(obj, [specs[i] for i in unit.members]).root)
    return out


def stretch_weights(obj, spec: ChainSpec) -> list[float] | None:
    """The chain bones' ik_stretch when the chain stretches (rig.stretch), else None."""
    return bake_solve.stretch_weights(obj, spec)


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
