"""Foot contacts on real motion capture: what the input looks like before any cleanup.

Run inside a bpy venv:  <venv>/bin/python bench/bench_contacts.py [--clips walk run_jog ...]

For each clip of ../shared/data/mocap (bench/mocap_rigs.py), on the clean source and on two quick
retargets (thighs and shins 20% longer, and 20% shorter; the hips' path scaled by the hip-height
ratio), with one Chain IK chain per leg (thigh, shin, foot) and a ground plane at the source's
lowest toe height: `chain_ik.detect_contacts` keys each foot's contacts (raycast on the plane),
then per foot, measured on the played-back motion:
- contacts found, and their frame-wise F1 against the source's contacts (goal: F1 >= 0.9);
- foot slide during contacts: how far the planted end (the stiller of heel and toe) moves per
  1/30 s inside a contact, mean, median and largest, in mm;
- the skating ratio (Guided Motion Diffusion: share of 20 fps steps where the foot, within 5 cm
  of the ground, moves faster than 0.5 m/s);
- the lowest height of the foot's ends above the ground (negative: below), in mm;
- the largest joint angular speed of the leg (thigh, shin, foot; over 1/30 s), in degrees per second;
- the swing: the toe's median height above the ground outside contacts (after the bake: as a share
  of the input's), and the swing frames with the toe on the ground (within 1 mm).
"After": `chain_ik.bake` honours the contacts (issue 21 item 2: each foot held where it planted, on
the ground, eased back after; app/bake/contact_targets.py), the same figures measured again on the
baked playback; and its time per frame against the route a Blender user would build by hand on a
copy of the character (an IK constraint per leg, thigh to foot, on an empty keyed at every frame
where the bake put the foot's tip, then Bake Action, visual keying, over the legs' bones), same run:
each side's cost (bench/timing.py `cost`, as bench_tree.py judges: its CPU time, or its wall clock
where less, for both routes run Blender's depsgraph on both cores), best of REPEATS runs of each,
or more, as many as SPAN seconds take (the same number of each), the two alternating; CPU time
alone beside it.
`--picture PATH` draws the feet of one clip's longer-legged character (PNG: paths seen from above,
and heights over time, before and after; bench/plant_picture.py).
"""

from __future__ import annotations

import argparse
import contextlib
import math
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import bpy
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import mocap_rigs  # noqa: E402
from blender_bench import exit_after_main, load_extension  # noqa: E402
from timing import Clock, alternated, cost  # noqa: E402

LEG_SCALES = {"source": 1.0, "legs +20%": 1.2, "legs -20%": 0.8}


@dataclass
class FootRow:
    clip: str
    character: str
    foot: str
    contacts: int
    f1: float | None
    slide_mean: float
    slide_median: float
    slide_largest: float
    skating: float
    lowest: float
    angular: float
    floating: float  # the largest, over contacts, of the toe's lowest height above the ground during it
    swing: float  # the toe's median height above the ground outside contacts
    swing_low: int  # frames outside contacts with the toe within 1 mm of the ground
    after: dict | None = None  # the same figures after the bake that honours contacts (None: source)


def _ground_plane(height: float):
    mesh = bpy.data.meshes.new("Ground")
    size = 50.0
    mesh.from_pydata(
        [(-size, -size, height), (size, -size, height), (size, size, height), (-size, size, height)], [], [(0, 1, 2, 3)]
    )
    obj = bpy.data.objects.new("Ground", mesh)
    bpy.context.scene.collection.objects.link(obj)
    return obj


def _assign(obj, action) -> None:
    """Give `obj` `action` (its first slot on 4.4+)."""
    obj.animation_data.action = action
    if hasattr(obj.animation_data, "action_slot") and obj.animation_data.action_slot is None:
        obj.animation_data.action_slot = action.slots[0]


def blender_route(obj, action, clip, frames: np.ndarray, tips: list[np.ndarray]) -> tuple[float, float]:
    """(CPU seconds, wall seconds) for the route by hand on a copy of `obj` playing `action`: IK
    constraints (thigh to foot) on empties keyed at `tips` (world, one per leg) on every frame, then
    Bake Action over the legs' bones. The copy and its empties are removed afterwards (left in the
    scene, every later frame change would evaluate them too)."""
    from blender_bench import select_only

    copy = obj.copy()
    copy.data = obj.data.copy()
    _assign(copy, action.copy())
    bpy.context.scene.collection.objects.link(copy)
    previous = bpy.context.view_layer.objects.active
    bpy.context.view_layer.update()  # evaluated before the clock, as a user's scene is (the copy just made)
    clock = Clock()
    bones, empties = [], []
    for (side, (thigh, shin, foot)), points in zip(clip.legs.items(), tips, strict=True):
        empty = bpy.data.objects.new(f"IK {side}", None)
        empties.append(empty)
        bpy.context.scene.collection.objects.link(empty)
        empty.animation_data_create()
        empty.animation_data.action = bpy.data.actions.new(f"IK {side}")
        for axis in range(3):
            empty.keyframe_insert("location", index=axis, frame=float(frames[0]))
            fc = next(f for f in ext_keys().assigned_fcurves(empty) if f.array_index == axis)
            kp = fc.keyframe_points
            kp.clear()
            kp.add(len(frames))
            co = np.empty(2 * len(frames), dtype=np.float32)
            co[0::2], co[1::2] = frames, points[:, axis]
            kp.foreach_set("co", co)
            fc.update()
        constraint = copy.pose.bones[foot].constraints.new("IK")
        constraint.target, constraint.chain_count, constraint.use_tail = empty, 3, True
        bones += [thigh, shin, foot]
    bpy.context.view_layer.objects.active = copy
    bpy.ops.object.mode_set(mode="POSE")
    select_only(copy, bones)
    result = bpy.ops.nla.bake(
        frame_start=int(frames[0]),
        frame_end=int(frames[-1]),
        only_selected=True,
        visual_keying=True,
        clear_constraints=True,
        bake_types={"POSE"},
    )
    seconds, wall = clock.spent()
    assert result == {"FINISHED"}, result
    bpy.ops.object.mode_set(mode="OBJECT")
    baked = copy.animation_data.action
    for empty in empties:
        bpy.data.actions.remove(empty.animation_data.action)
        bpy.data.objects.remove(empty)
    armature = copy.data
    bpy.data.objects.remove(copy)
    bpy.data.armatures.remove(armature)
    bpy.data.actions.remove(baked)
    bpy.context.view_layer.objects.active = previous
    return seconds, wall


def our_bake(obj, action, specs, frames: np.ndarray) -> tuple[float, float]:
    """(CPU seconds, wall seconds) of Chain IK's bake honouring the contacts on `obj` playing a
    copy of `action` (the input), figures not measured (the bench measures them itself)."""
    bake = load_extension("app.bake").app.bake
    _assign(obj, action.copy())
    options = bake.BakeOptions(int(frames[0]), int(frames[-1]), measure=False)
    bpy.context.view_layer.update()  # evaluated before the clock, as a user's scene is (the copy just made)
    clock = Clock()
    bake.bake(bpy.context, obj, specs, options)
    return clock.spent()


# Each route is timed this many times, the two alternating (which goes first swaps each round), and
# the best of each kept: a shared machine's load then weighs on both alike, and CPU time
# (time.process_time) leaves out the time other processes take the cores.
REPEATS = 5
# ... and the rounds go on, two at a time, until they have taken at least SPAN seconds. The shared
# machine runs at two speeds for seconds at a time (a fixed Python loop's best CPU time 2.2 or
# 3.6-4.0 ms, whether or not this process keeps the other core busy: docs/benchmarks.md, feet19):
# five rounds of run_jog (about 1 s) could fall in one slow spell for one route and not the other,
# and the bake then timed 1.6x slower. Both routes still run as often as each other.
SPAN = 4.0


@contextlib.contextmanager
def alone(obj) -> Iterator[None]:
    """The scene holds `obj` and no other armature while timing: the other characters (the
    source, the other retarget) would otherwise be evaluated on each of Blender's frame changes
    too, a cost a user's one-character scene does not have."""
    collection = bpy.context.scene.collection
    others = [o for o in collection.objects if o.type == "ARMATURE" and o is not obj]
    for other in others:
        collection.objects.unlink(other)
    try:
        yield
    finally:
        for other in others:
            collection.objects.link(other)


def timed_routes(obj, input_action, clip, specs, frames: np.ndarray, tips: list[np.ndarray]) -> dict:
    """Best CPU and wall seconds of our bake (from `input_action`) and of Blender's route (from the
    action `obj` plays, our bake's), REPEATS each, alternated, with `obj` alone in the scene;
    `obj` is left playing its action."""
    with alone(obj):
        return _timed_routes(obj, input_action, clip, specs, frames, tips)


def _timed_routes(obj, input_action, clip, specs, frames: np.ndarray, tips: list[np.ndarray]) -> dict:
    baked_action = obj.animation_data.action

    def ours() -> tuple[float, float]:
        spent = our_bake(obj, input_action, specs, frames)
        bpy.data.actions.remove(obj.animation_data.action)
        return spent

    routes = {"ours": ours, "theirs": lambda: blender_route(obj, baked_action, clip, frames, tips)}
    start = time.perf_counter()
    runs = alternated(routes, REPEATS)
    while time.perf_counter() - start < SPAN:  # two more rounds, the first route the one next in turn
        turn = routes if len(runs["ours"]) % 2 == 0 else dict(reversed(routes.items()))
        for route, spent in alternated(turn, 2).items():
            runs[route] += spent
    best = {route: [min(run[k] for run in spent) for k in (0, 1)] for route, spent in runs.items()}
    _assign(obj, baked_action)
    return best


def floating(toe: np.ndarray, flags: np.ndarray, floor: float) -> float:
    """How far above the ground a planted foot stays: the largest, over the contacts, of the toe's
    lowest height during the contact."""
    runs = load_extension("solvers.contacts").solvers.contacts.contact_runs(flags)
    return max((float(toe[a:b, 2].min()) - floor for a, b in runs), default=0.0)


def swing(toe: np.ndarray, flags: np.ndarray, floor: float) -> tuple[float, int]:
    """(the toe's median height above the ground outside contacts, the frames there within 1 mm of it)."""
    heights = toe[~flags, 2] - floor
    return (float(np.median(heights)) if len(heights) else 0.0), int(np.count_nonzero(heights < 1e-3))


def ext_keys():
    return load_extension("rig.keys").rig.keys


def measure_clip(name: str, picture: str = "", move_root: bool = True) -> tuple[list[FootRow], float, dict]:
    """The rows of one clip (source and retargets), the detection's seconds per frame, and per
    retarget the bake's and Blender's route's seconds per frame. `move_root`: the legs' Move Root
    (the hips lowered where a planted foot is beyond reach; off: the hold raised instead)."""
    ext = load_extension("rig.contacts", "solvers.contacts", "solvers.foot_metrics")
    rig_contacts, foot_metrics = ext.rig.contacts, ext.solvers.foot_metrics
    clip = mocap_rigs.CLIPS[name]
    bpy.ops.wm.read_homefile(use_empty=True)
    source = mocap_rigs.load_clip(name)
    mocap_rigs.add_leg_chains(source, clip)
    characters = {"source": source}
    for label, scale in LEG_SCALES.items():
        if scale != 1.0:
            characters[label] = mocap_rigs.retarget(source, clip, scale)
    scene = bpy.context.scene
    frames = np.arange(scene.frame_start, scene.frame_end + 1)
    fps = scene.render.fps / scene.render.fps_base
    samples = {
        label: rig_contacts.sample_feet(bpy.context, obj, obj.chain_ik.chains, frames, rotations=True)
        for label, obj in characters.items()
    }
    floor = min(float(track.toe[:, 2].min()) for track in samples["source"])
    ground = _ground_plane(floor)
    seconds = 0.0
    planted = {}
    for label, obj in characters.items():
        obj.chain_ik.ground = ground
        bpy.context.view_layer.objects.active = obj
        start = time.perf_counter()
        result = bpy.ops.chain_ik.detect_contacts(frame_start=int(frames[0]), frame_end=int(frames[-1]))
        seconds += time.perf_counter() - start
        assert result == {"FINISHED"}, result
        planted[label] = [rig_contacts.read_contacts(obj, item, frames) for item in obj.chain_ik.chains]
    baked, timing = {}, {}
    for label, obj in characters.items():
        if label == "source":
            continue
        bpy.context.view_layer.objects.active = obj
        for item in obj.chain_ik.chains:
            item.move_root = move_root
        specs = [load_extension("app.spec").app.spec.spec_from_item(item) for item in obj.chain_ik.chains]
        input_action = obj.animation_data.action
        our_bake(obj, input_action, specs, frames)  # the bake measured (on a copy of the input)
        baked[label] = rig_contacts.sample_feet(bpy.context, obj, obj.chain_ik.chains, frames, rotations=True)
        tips = [track.toe for track in baked[label]]
        best = timed_routes(obj, input_action, clip, specs, frames, tips)
        # (CPU ours, CPU theirs, wall ours, wall theirs), seconds per frame, best of REPEATS; the frames
        timing[label] = (*(best[route][k] / len(frames) for k in (0, 1) for route in ("ours", "theirs")), len(frames))
        if picture and label == "legs +20%":
            import plant_picture

            plant_picture.draw(picture, samples[label], baked[label], floor, fps)
    rows = []

    def figures(track, flags) -> dict:
        slide = foot_metrics.foot_slide(track.heel, track.toe, flags, fps)
        height, low = swing(track.toe, flags, floor)
        return dict(
            slide_mean=slide.mean,
            slide_median=slide.median,
            slide_largest=slide.largest,
            skating=foot_metrics.skating_ratio(track.toe, fps, floor),
            lowest=foot_metrics.lowest_height(track.heel, track.toe, floor),
            angular=foot_metrics.largest_angular_speed(track.rotations, fps),
            floating=floating(track.toe, flags, floor),
            swing=height,
            swing_low=low,
        )

    for label, obj in characters.items():
        for c, item in enumerate(obj.chain_ik.chains):
            flags = planted[label][c]
            rows.append(
                FootRow(
                    clip=name,
                    character=label,
                    foot=item.name,
                    contacts=len(ext.solvers.contacts.contact_runs(flags)),
                    f1=None if label == "source" else foot_metrics.contact_f1(flags, planted["source"][c]),
                    **figures(samples[label][c], flags),  # before: the input's
                    after=figures(baked[label][c], flags) if label in baked else None,
                )
            )
    return rows, seconds / (len(frames) * len(characters)), timing


def _cells(f: dict) -> str:
    return (
        f" {1000 * f['slide_mean']:.2f} / {1000 * f['slide_median']:.2f} / {1000 * f['slide_largest']:.1f} |"
        f" {f['skating']:.3f} | {1000 * f['lowest']:.1f} | {1000 * f['floating']:.1f} |"
        f" {math.degrees(f['angular']):.0f} |"
    )


def table(rows: list[FootRow], timing: dict) -> str:
    """Before and after per foot; the last column: ms per frame of the bake against Blender's route."""
    lines = [
        "| clip | character | foot | contacts | F1 vs source | before: slide mean / median / largest"
        " (mm per 1/30 s) | skating | lowest (mm) | contact above ground (mm) | joint speed (°/s) |"
        " after: slide mean / median / largest | skating | lowest (mm) | contact above ground (mm) |"
        " joint speed (°/s) | swing toe height, median (mm): before / after | swing frames on the ground:"
        " before / after | ms per frame (cost): bake / Blender's route (speed-up; CPU time alone) |",
        "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        f1 = "" if r.f1 is None else f"{r.f1:.3f}" + ("" if r.f1 >= 0.9 else " (below 0.9)")
        before = dict(
            slide_mean=r.slide_mean,
            slide_median=r.slide_median,
            slide_largest=r.slide_largest,
            skating=r.skating,
            lowest=r.lowest,
            angular=r.angular,
            floating=r.floating,
        )
        after = _cells(r.after) if r.after else " – | – | – | – | – |"
        t = timing.get((r.clip, r.character))
        speed = "–"
        if t is not None:
            speed = f"{1000 * _cost(t, 0):.3f} / {1000 * _cost(t, 1):.3f} ({_speedup(t):.1f}x; {t[1] / t[0]:.1f}x)"
        lifted = f" {1000 * r.swing:.0f} / " + (f"{1000 * r.after['swing']:.0f} |" if r.after else "– |")
        lifted += f" {r.swing_low} / " + (f"{r.after['swing_low']} |" if r.after else "– |")
        head = f"| {r.clip} | {r.character} | {r.foot} | {r.contacts} | {f1} |"
        lines.append(f"{head}{_cells(before)}{after}{lifted} {speed} |")
    return "\n".join(lines)


def _cost(t: tuple, side: int) -> float:
    """A side's seconds per frame (0: the bake, 1: Blender's route) from (CPU ours, CPU theirs,
    wall ours, wall theirs): timing.cost."""
    return cost(t[side], t[side + 2])


def _speedup(t: tuple) -> float:
    return _cost(t, 1) / _cost(t, 0)


def _all_frames(timing: dict) -> float:
    """Blender's route / the bake over every timed frame of every clip together (each side's cost
    per frame times the clip's frames, summed): a clip's fixed cost then weighs by its length."""
    return sum(_cost(t, 1) * t[4] for t in timing.values()) / sum(_cost(t, 0) * t[4] for t in timing.values())


def goals(rows: list[FootRow], timing: dict, move_root: bool = True) -> list[str]:
    """Issue 21 item 5's goals, each with its worst figure over the retargets."""
    after = [r for r in rows if r.after]
    share = max(r.after["slide_mean"] / r.slide_mean for r in after if r.slide_mean > 0.0)
    median = max(r.after["slide_median"] for r in after)
    lowest = min(r.after["lowest"] for r in after)
    speed = max(r.after["angular"] / r.angular for r in after)
    faster = min(_speedup(t) for t in timing.values())
    cpu = min(t[1] / t[0] for t in timing.values())
    f1 = min(r.f1 for r in rows if r.f1 is not None)
    afloat = max(r.after["floating"] for r in after)
    lifted = min(r.after["swing"] / r.swing for r in after if r.swing > 0.0)
    grounded = max(r.after["swing_low"] - r.swing_low for r in after)
    return [
        f"slide during contacts after / before, worst foot: {share:.3f} (goal: at most 0.1)",
        f"median slide after, worst foot: {1000 * median:.3f} mm per 1/30 s (goal: under 1 mm)",
        f"lowest foot end after: {1000 * lowest:.2f} mm above the ground (goal: not below -1 mm)",
        f"largest joint speed after / before, worst leg: {speed:.3f} (goal: at most 1.1)",
        # Two decimals: 4.95x shown as 5.0x would read as met.
        f"time per frame, Blender's route / the bake, slowest: {faster:.2f}x (goal: at least 5x; each side's CPU time"
        f" or wall clock where less, best of {REPEATS} or more alternated, over at least {SPAN:g} s a character;"
        f" CPU time alone: {cpu:.1f}x)",
        f"time per frame, Blender's route / the bake, every clip's frames together: {_all_frames(timing):.2f}x",
        f"worst F1 of a retarget's contacts against the source's: {f1:.3f} (goal: at least 0.9)",
        f"swing toe height after / before (median outside contacts), lowest foot: {lifted:.2f}; most swing"
        f" frames put on the ground by the bake: {grounded}",
        f"planted foot held above the ground, worst contact: {1000 * afloat:.1f} mm"
        + (" (the hips lowered where a foot is beyond reach: Move Root)" if move_root else " (the hips not lowered)"),
    ]


def main(argv: list[str] | None = None) -> list[FootRow]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clips", nargs="+", default=list(mocap_rigs.CLIPS), choices=list(mocap_rigs.CLIPS))
    parser.add_argument("--no-move-root", action="store_true", help="the hips not lowered (the hold raised)")
    parser.add_argument("--repeats", type=int, default=REPEATS, help="timed runs of each route (best kept)")
    parser.add_argument("--span", type=float, default=SPAN, help="seconds the timed runs take at least (more rounds)")
    parser.add_argument("--picture", default="", help="write the README's picture (PNG) of the first clip here")
    args = parser.parse_args(argv)
    globals()["REPEATS"] = max(1, args.repeats)
    globals()["SPAN"] = max(0.0, args.span)
    mocap_rigs.require_clips(args.clips)
    ext = load_extension()
    if not hasattr(bpy.types.Object, "chain_ik"):  # as a script; a test has it registered
        ext.register()
    rows, detection, timing = [], {}, {}
    for name in args.clips:
        picture = args.picture if name == args.clips[0] else ""
        clip_rows, detection[name], clip_timing = measure_clip(name, picture, not args.no_move_root)
        rows.extend(clip_rows)
        timing.update(((name, label), t) for label, t in clip_timing.items())
    print(f"Blender {bpy.app.version_string}; ground: a plane at the source's lowest toe height")
    print()
    print(table(rows, timing))
    print()
    for line in goals(rows, timing, not args.no_move_root):
        print(line)
    print("detection, ms per frame and character: " + ", ".join(f"{n} {1000 * s:.2f}" for n, s in detection.items()))
    return rows


if __name__ == "__main__":
    main()
    exit_after_main()
