"""A bake that honours contacts (issue 21 items 2-4): chains with Contact keys plant their foot.

For each chain with contacts (`ChainSpec.contacts`; it needs no target), over the bake's frames:
1. its input pose is read in one pass (rig.plant_read: one `frame_set` per frame for all legs);
2. its planted frames: the Contact keys as they play, narrowed to where the tip itself is down
   (solvers.plant.tip_down: a contact keyed from heel strike would pull the ankle below the ground);
3. the tip's target per frame (solvers.plant.plan): held where it is on a contact's first frame
   (on the ground's surface when the armature has a ground: a raycast on its evaluated mesh,
   rig.ground), eased back to the input over `contact_blend` frames after, never ahead of the
   input before, clamped above the ground on every frame;
4. the ankle's goal: the foot keeps its input world rotation (pitch: heel rise, toe roll) and
   its tip lands on the target (solvers.plant.head_targets); thigh and shin reach it by the
   analytic two-bone leg (solvers.plant_legs, the input's knee swivel kept; the chain's
   `softness` against the knee pop beyond reach), every frame independently, all at once;
5. keys on the frames that changed only (and the frame either side, at its input value, which
   bounds the new keys' interpolation), in each channel's spans (rig.plant_keys): every other
   key, bone and channel as it was.

With Move Root on the first chain with contacts, the hips they hang from are lowered by the
least amount (smoothly) where a held ankle is beyond its leg's reach (app.bake.contact_hips),
before the legs are solved, and their location keyed on the frames that changed; without it, a
hold beyond reach is raised as far as the leg needs (contact_legs.lifts; `float_largest`).

The figures (`ContactFigures`, app.bake.contact_figures) are measured on the written keys as they play back.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Generator
from dataclasses import dataclass, field, replace

import numpy as np

from ...rig import bake_record, keys, leg_checks, plant_curves, plant_keys, plant_read, pose_frames, root_location
from ...rig.contacts import played_contacts
from ...rig.ground import GroundProbe, ground_probe
from ...rig.read import chain_pose_bones
from ...rig.steps import run_to_end
from ...solvers import foot_metrics, plant
from ...solvers.contacts import ContactSettings, contact_runs
from ..spec import ChainSpec
from . import contact_eases, contact_figures, contact_hips, contact_legs
from .contact_figures import ContactFigures

PLANTED = "planted on its contacts (thigh and shin solved for the ankle as a two-bone leg, not by the chain's solver)"
FROM_CURVES = "legs read from the action's curves"
FRAME_BY_FRAME = "legs read frame by frame"
# Without a ground, a tip has landed once within this share of its contact's Height above the height
# it settles at (plant.settled): held from there, not from where it first comes within Height.
SETTLED_SHARE = 1.0 / 3.0
# ... and a hold whose height is within this share of the Height of where it settles keeps its own
# (plant.unless_near: a bobbing walk's few mm are not a landing still under way).
REST_SLACK = 0.1


@dataclass
class PlantedChain:
    """One chain's planted bake, solved, before any key is written."""

    spec: ChainSpec
    leg: plant_read.LegFrames
    contacts: np.ndarray  # (F,) the Contact keys as they play
    plan: plant.PlantPlan
    keyed: np.ndarray  # (F,) frames keyed: those that changed and the frame either side
    values: list[np.ndarray]  # per bone (F, channels), the input's where nothing changed
    errors: np.ndarray  # (F,) world distance of the ankle from its goal
    probe: GroundProbe | None
    basis: np.ndarray | None = None  # (F, 3, 4) the solved local rotations (the input's where unchanged)
    tips: np.ndarray | None = None  # (F, 3) where the solved pose puts the tip (world; held frames: the target)
    figures: ContactFigures | None = None
    keys: int = 0
    # For its report: what the planted leg did not honour (rig.leg_checks.leg_note), and why a faster
    # conversion did not serve (rig.plant_read.channel_runs).
    note: str = ""
    dropped: list = field(default_factory=list)  # contacts not held: (first frame, last frame, why)

    @property
    def held(self) -> np.ndarray:
        """(F, 3) where the tip must be on playback (the report's pin): the planned point on hold
        frames, where the solve put it on the others (eases and clamps are not positional goals)."""
        return np.where((self.plan.weight == 1.0)[:, None], self.plan.target, self.tips)


@dataclass
class Plants:
    chains: list[PlantedChain] = field(default_factory=list)
    seconds: float = 0.0
    reading: str = FROM_CURVES  # how the legs' input was read (and why not from the curves)
    hips: str = ""  # the bone lowered for feet beyond reach (contact_hips), or none
    hips_offset: np.ndarray | None = None  # (F, 3) its world offset per frame
    hips_values: np.ndarray | None = None  # (F, 3) its location channel, the input's where unchanged
    hips_keyed: np.ndarray | None = None  # (F,) frames its location is keyed on
    hips_moved: float = 0.0  # the largest move of the legs' hips on playback (world)
    # The legs' rotation curves' keys' co as read from the curves (sample_legs), by (data path, index):
    # `write` takes them instead of reading them again; valid only while nothing has written keys
    # since (bake_steps empties it where other chains are solved and keyed in between).
    curve_keys: dict = field(default_factory=dict)

    @property
    def reason(self) -> str:
        return f"{PLANTED}; {self.reading}"


def as_planted(specs: list[ChainSpec]) -> list[ChainSpec]:
    """The specs with each chain with contacts as a pin (no target needed; the report measures its
    tip against the point it holds)."""
    return [replace(s, pin=True) if s.contacts else s for s in specs]


def leg_bones(obj, spec: ChainSpec) -> tuple[str, str, str]:
    """The chain's thigh, shin and foot (its tip bone), or ValueError naming the chain."""
    names, why = leg_checks.planted_leg(obj, spec.tip, spec.chain_length, spec.use_tail, spec.use_locks)
    if why:
        raise ValueError(f"chain '{spec.label}' has contacts but {why}; nothing was keyed")
    return names


def hips_to_lower(obj, specs: list[ChainSpec]) -> list[str]:
    """The hips a bake with contacts may key (contact_hips.hips_bone), as a list (none or one)."""
    planted = [s for s in specs if s.contacts]
    hips = contact_hips.hips_bone(obj, planted, [leg_bones(obj, s) for s in planted]) if planted else None
    return [hips] if hips else []


def check_alone(obj, specs: list[ChainSpec]) -> None:
    """Refuse a chain with contacts sharing bones with another chain of the bake (it is solved
    alone), or another chain turning a bone a planted leg hangs from: the legs are planted on the
    input pose of the bones above them, so turning those after would slide the held feet."""
    if not any(spec.contacts for spec in specs):
        return
    owner, above = {}, {}
    for spec in specs:
        if spec.contacts:
            legs = leg_bones(obj, spec)
            for name in legs:
                owner[name] = spec.label
            for bone in obj.pose.bones[legs[0]].parent_recursive:
                above.setdefault(bone.name, spec.label)
    for spec in specs:
        if spec.contacts:
            continue
        bones, end = chain_pose_bones(obj, spec.tip, spec.chain_length, spec.use_tail)
        for bone in bones:
            if bone.name in owner:
                raise ValueError(
                    f"chain '{spec.label}' shares bone '{bone.name}' with chain '{owner[bone.name]}', which has"
                    " contacts (a planted leg is baked alone); nothing was keyed"
                )
            if bone.name in above:
                raise ValueError(
                    f"chain '{spec.label}' turns bone '{bone.name}', which chain '{above[bone.name]}' (with"
                    " contacts) hangs from: its planted foot would slide. Bake that chain first, then the"
                    " legs (they plant on the baked pose), or shorten it to start below; nothing was keyed"
                )


def check_under_hips(obj, specs: list[ChainSpec], hips: list[str]) -> None:
    """Refuse another chain hanging from the hips that Move Root on planted legs may lower: it is
    solved on the hips as they were, so lowered hips would carry it off its target on playback."""
    if not hips:
        return
    for spec in specs:
        if spec.contacts:
            continue
        bones, _ = chain_pose_bones(obj, spec.tip, spec.chain_length, spec.use_tail)
        if any(parent.name == hips[0] for parent in bones[0].parent_recursive):
            raise ValueError(
                f"chain '{spec.label}' hangs from bone '{hips[0]}', which Move Root on the chains with contacts"
                " may lower: it would miss its target by that much on playback. Bake the legs first, then that"
                " chain (it follows the lowered hips), or turn Move Root off; nothing was keyed"
            )


def blend_frames(obj, fps: float) -> float:
    blend = obj.chain_ik.contact_blend
    return float(plant.default_blend(fps)) if blend < 0 else float(blend)


def leg_length(obj, names) -> float:
    m3 = obj.matrix_world.to_3x3()
    bones = obj.data.bones
    return float(sum((m3 @ (bones[n].tail_local - bones[n].head_local)).length for n in names))


def read_legs(
    context,
    obj,
    legs,
    frames: np.ndarray,
    progress=None,
    read: dict | None = None,
    located: dict | None = None,
    restore: bool = True,
) -> Generator[str, None, tuple[list, str]]:
    """The legs' input pose at `frames`, from the action's curves where that is provably the pose
    (rig.plant_curves; checked against the evaluated pose on three frames), else frame by frame
    (yielding 'solve' after each frame); and how it was read. `read`, `located`:
    plant_curves.sample_legs' (left empty where the legs are read frame by frame). Without
    `restore` (a bake, which sets the frame once its keys are written) the check may leave the
    scene at another frame."""
    why = plant_curves.curves_reason(obj, legs) if legs else ""
    if not why and legs:
        sampled = plant_curves.sample_legs(obj, legs, frames, read, located)
        rows = np.unique([0, len(frames) // 2, len(frames) - 1])
        # The scene's current frame read last: the check then need not set it back; or, where the
        # caller sets the frame next, first: read as evaluated, no frame_set (pose_frames).
        current = frames[rows] == context.scene.frame_current
        rows = np.concatenate([rows[current], rows[~current]] if not restore else [rows[~current], rows[current]])
        scene = context.scene
        frame0, subframe0 = scene.frame_current, scene.frame_subframe
        check = plant_read.joints_at(context, obj, legs, frames[rows], restore=restore)
        off = plant_curves.mismatch(sampled, check, rows)
        if off <= plant_curves.MATCH:
            if progress is not None:
                progress(1.0, int(frames[-1]))
            return sampled, FROM_CURVES
        if (scene.frame_current, scene.frame_subframe) != (frame0, subframe0):
            scene.frame_set(frame0, subframe=subframe0)  # read frame by frame from where it was
        why = f"the curves' pose differs from the evaluated one by {off:.2g} of the leg"
        for found in (read, located):
            if found is not None:
                found.clear()
    sampled = yield from _each_frame(plant_read.legs_in_steps(context, obj, legs, frames, progress))
    return sampled, f"{FRAME_BY_FRAME}: {why}"


def _each_frame(steps) -> Generator[str, None, list]:
    while True:
        try:
            next(steps)
        except StopIteration as done:
            return done.value
        yield "solve"


def solve(context, obj, specs: list[ChainSpec], frames: np.ndarray, progress: Callable | None = None) -> Plants:
    """`solve_steps` run to its end."""
    return run_to_end(solve_steps(context, obj, specs, frames, progress))


def solve_steps(
    context, obj, specs: list[ChainSpec], frames: np.ndarray, progress: Callable | None = None, restore: bool = True
) -> Generator[str, None, Plants]:
    """Plan and solve every chain with contacts in `specs` (nothing is written). Without `restore`
    (app.bake, which sets the frame after writing the keys) the scene may be left at another frame."""
    start = time.perf_counter()
    planted_specs = [s for s in specs if s.contacts]
    if not planted_specs:  # a bake without contacts: nothing to read or plan
        return Plants(seconds=time.perf_counter() - start)
    legs = [leg_bones(obj, s) for s in planted_specs]
    scene = context.scene
    fps = scene.render.fps / scene.render.fps_base
    blend = blend_frames(obj, fps)
    probe = ground_probe(context, obj, frames[0])  # the ground as it is on the range's first frame
    cut = contact_eases.cut_ends(context, obj, frames)  # ends met by unbaked motion: holds kept off them
    flags = [played_contacts(obj, s.contacts, frames) for s in planted_specs]
    read: dict = {}
    located: dict = {}  # the bones' location channels as they play (read with the legs from the curves)
    sampled, reading = yield from read_legs(context, obj, legs, frames, progress, read, located, restore)
    out = Plants(reading=reading, curve_keys=read)
    hips = contact_hips.hips_bone(obj, planted_specs, legs)
    steps = []  # per chain: (length, the tip's ground heights, its heel-first plan, the first plan)
    rests = []  # per chain: its holds' heights without a ground (plant.settle_heights), or None
    dropped = []  # per chain: its contacts not held (contact_figures.dropped)
    for spec, leg, contacts in zip(planted_specs, sampled, flags, strict=True):
        length = leg_length(obj, leg.names)
        toe = leg.toe_world
        under = contact_legs.ground_under(probe, spec, toe, frames, length)
        settings = ContactSettings.for_leg(length)
        speed = plant.tip_speeds(toe, fps, settings)  # read by both
        room = plant.room_at_ends(contacts, blend, *cut)  # no hold within an ease of a range end cut
        down = plant.tip_down(room, toe, fps, settings, under, speed)
        # without a ground, each hold at the height the tip settles at in its contact
        rest = None
        if under is None:  # held from where the tip has settled, at that height
            rest = plant.settle_heights(toe, room, down, fps)
            down = plant.settled(down, toe, rest, SETTLED_SHARE * settings.height)
        pivots = plant.pivot_flags(room, down, leg.heel_world, toe, fps, settings, under, speed)
        first = plant.heel_first(toe, leg.heel_world, leg.world_rotations(2), room, down, *pivots)
        if rest is not None:
            rest = plant.kept_above(rest, first.planted, leg.heel_world, first.offset + leg.heel_world - toe)
            rest = plant.unless_near(rest, first.planted, first.points[:, 2], REST_SLACK * settings.height)
        rests.append(rest)
        steps.append((length, under, first, plant.plan(first.points, first.planted, fps, blend, under, rest=rest)))
        dropped.append(contact_figures.dropped(contacts, room, first.planted, frames, settings, blend))
    moved = None
    if hips is not None:  # the hips lowered where a held ankle is beyond reach (contact_hips)
        ankles = [
            plan.target + first.offset + leg.heel_world - leg.toe_world
            for leg, (_, _, first, plan) in zip(sampled, steps, strict=True)
        ]
        moved = contact_hips.offsets(
            sampled, [s[3] for s in steps], ankles, [s.softness for s in planted_specs], blend, fps, cut
        )
        out.hips, out.hips_offset = hips, moved
    inputs = [(leg, None) for leg in sampled]
    if moved is not None:  # the hips lowered, the feet kept where the input has them
        inputs = contact_hips.kept_feet(
            sampled,
            [contact_hips.shifted(leg, moved) for leg in sampled],
            # no soft IK: lowered hips are nearer every foot below them than the input's were
            lambda jobs: contact_legs.positional_legs(jobs, 0.0, fps),
        )
    jobs = []  # per chain: (its plan, its feet's ground tilt, ground_at, the input's largest joint speed)
    largest = foot_metrics.largest_angular_speeds([leg.basis for leg in sampled], fps)  # every leg's at once
    for spec, input_leg, (length, under, first, plan), rest, (leg, _), most in zip(
        planted_specs, sampled, steps, rests, inputs, largest, strict=True
    ):
        toe, heel = input_leg.toe_world, input_leg.heel_world
        # Held as low as the leg reaches (on the ground, or where the tip settles without one; with
        # the hips lowered: their lowest).
        lifts = contact_legs.lifts(plan, leg, first.offset + heel - toe, spec.softness)
        if np.any(lifts):  # (none: the plan as it is, planned with no clearance)
            plan = plant.plan(first.points, first.planted, fps, blend, ground=under, clearance=lifts, rest=rest)
        offset = np.any(first.offset != 0.0, axis=1)
        plan = replace(plan, target=plan.target + first.offset, changed=plan.changed | offset)
        tilt = None
        if probe is not None and obj.chain_ik.contact_align and plan.holds:
            points = np.array([hold.point for hold in plan.holds])
            tilt = contact_legs.ground_tilts(plan, probe.normals_below(points, length))
        ground_at = None
        if probe is not None:

            def ground_at(points, rows, spec=spec, length=length, toe=toe, under=under):
                # the rays from where the planning cast them (the input tip) not cast again
                return contact_legs.ground_under(probe, spec, points, frames[rows], length, (toe[rows], under[rows]))

        jobs.append((plan, tilt, ground_at, most))
    # Every leg's holds, eases and clamp solved at once (contact_legs.solve_legs).
    solves = contact_legs.solve_legs(
        [
            (leg, plan, spec.softness, tilt, ground_at, largest, None)
            for spec, (leg, _), (plan, tilt, ground_at, largest) in zip(planted_specs, inputs, jobs, strict=True)
        ],
        fps,
    )
    for spec, names, input_leg, contacts, (leg, kept), (plan, *_), (solved, errors, changed, tips), lost in zip(
        planted_specs, legs, sampled, flags, inputs, jobs, solves, dropped, strict=True
    ):
        if kept is not None:  # frames where the hips moved differ from the input's pose
            solved = np.where((kept & ~changed)[:, None, None], leg.basis, solved)
            changed = changed | kept
        keyed = changed.copy()
        keyed[1:] |= changed[:-1]
        keyed[:-1] |= changed[1:]
        values = []
        runs = contact_runs(keyed)  # each run's values continuous from the input's on its first frame
        rows = plant_read.run_rows(runs)
        keep = ~changed[rows]  # unchanged frames keep their input values exactly
        notes = [leg_checks.leg_note(obj, names, spec.use_limits)]
        for b, new in enumerate(plant_read.channel_runs(obj, leg, solved, runs, spec.use_locks, notes, ~changed)):
            table = leg.values[b].copy()
            new[keep] = leg.values[b][rows][keep]
            table[rows] = new
            if not np.all(np.isfinite(table)):
                raise ValueError(f"the planted rotation of bone '{names[b]}' is not finite; nothing was keyed")
            values.append(table)
        note = "; ".join(filter(None, notes))
        out.chains.append(
            PlantedChain(
                spec, input_leg, contacts, plan, keyed, values, errors, probe, solved, tips, note=note, dropped=lost
            )
        )
    if moved is not None:
        played = located.get(hips)
        out.hips_values, out.hips_keyed = _hips_locations(context, obj, hips, frames, sampled[0], moved, played)
    out.seconds = time.perf_counter() - start
    return out


def _hips_locations(
    context, obj, name: str, frames, leg: plant_read.LegFrames, offset: np.ndarray, played=None
) -> tuple:
    """((F, 3) the hips' location channel with the world `offset` (F, 3) applied, (F,) the frames
    to key: those it changed and the frame either side, at its input value). `played`: the channel
    as it plays (F, 3), where read with the legs (root_location.played_locations' figures)."""
    changed = np.any(offset != 0.0, axis=1)
    keyed = changed.copy()
    keyed[1:] |= changed[:-1]
    keyed[:-1] |= changed[1:]
    values = played
    if values is None:
        values = root_location.played_locations(obj, name, keys.action_frames(obj, frames))
    if not np.any(changed):
        return values, keyed
    armature = np.einsum("fij,fj->fi", leg.inverse3(), offset)
    channel = root_location.channel_frames(context, obj, name, frames, changed)
    delta = np.zeros_like(values)
    delta[changed] = np.einsum("fij,fj->fi", pose_frames.inverse3(channel[changed]), armature[changed])
    values = values + delta
    if not np.all(np.isfinite(values)):
        raise ValueError(f"the lowered location of bone '{name}' is not finite; nothing was keyed")
    return values, keyed


def write(obj, plants: Plants, frames: np.ndarray, interpolation: str, record: list | None = None) -> dict[str, int]:
    """Key every planted chain's changed frames (rig.plant_keys); keys written per bone. `record` (a
    list): each F-Curve written added to it as a rig.bake_record.Entry, the keys written and those
    they replaced as the writer read them (app.bake.contact_record: each curve looked at once)."""
    slot = bake_record.slot_identifier(obj) if record is not None else ""  # (before FCurves assigns one)
    action_frames = keys.action_frames(obj, frames)
    fcurves = keys.FCurves(obj)

    def key(path: str, index: int, group: str, at, values, runs, seen: dict, co) -> int:
        fc = fcurves.find(path, index)
        static = float("nan")
        if fc is None:
            if record is not None:  # the bake makes it: the value it read is the channel's, as posed
                static = bake_record.channel_value(obj, path, index)
            fc = fcurves.ensure(path, index, group)
        replaced = {} if record is not None else None
        written = keys.write_keys_in(fc, at, values, runs, interpolation, seen=seen, co=co, replaced=replaced)
        if record is not None:
            record.append(bake_record.Entry(slot, path, index, at, values, replaced, static))
        return written

    per_bone = {}
    for chain in plants.chains:
        runs = plant_keys.spans(action_frames, chain.keyed)
        at = action_frames[chain.keyed].astype(np.float32)  # as write_keys_in keys them
        seen: dict = {}  # the chain's curves mostly share their key times: where to write looked up once
        for name, table in zip(chain.leg.names, chain.values, strict=True):
            path = plant_read.rotation_path(obj, name)
            values = table[chain.keyed].astype(np.float32)
            per_bone[name] = sum(
                # each curve's keys as the solve read them
                key(path, index, name, at, values[:, index], runs, seen, plants.curve_keys.pop((path, index), None))
                for index in range(table.shape[1])
            )
        chain.keys = sum(per_bone[n] for n in chain.leg.names)
    if plants.hips and np.any(plants.hips_keyed):
        runs = plant_keys.spans(action_frames, plants.hips_keyed)
        at = action_frames[plants.hips_keyed].astype(np.float32)
        path = keys.data_path(plants.hips, "location")
        values = plants.hips_values[plants.hips_keyed].astype(np.float32)
        seen = {}
        written = sum(key(path, i, plants.hips, at, values[:, i], runs, seen, None) for i in range(3))
        per_bone[plants.hips] = per_bone.get(plants.hips, 0) + written
    return per_bone


def measure(context, obj, plants: Plants, frames: np.ndarray) -> None:
    """Each chain's figures, before (its input) and after (the written keys, played back)."""
    if not plants.chains:
        return
    scene = context.scene
    fps = scene.render.fps / scene.render.fps_base
    # played on the frame either side too: a pop where the range meets unbaked motion is named
    wide = contact_figures.played_edges(scene, frames)
    after = plant_read.sample_legs(context, obj, [c.leg.names for c in plants.chains], wide)
    for chain, played in zip(plants.chains, after, strict=True):
        chain.figures = contact_figures.figures(chain, played, fps, frames, bool(plants.hips), wide)
    plants.hips_moved = max(c.figures.root_moved for c in plants.chains)
