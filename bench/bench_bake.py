"""Bake benchmark: Chain IK's bake against Blender's IK constraint + Bake Action, same rig, same run.

Run inside a bpy venv:  <venv>/bin/python bench/bench_bake.py [--frames 1000] [--rigify-frames 240] [--memory 100000]

Cases: a 5-bone and a 20-bone chain following an animated empty (a smooth
tilted loop, several turns) for --frames frames, Rigify's human metarig arm
(hand.L, chain length 3) for --rigify-frames frames, and the metarig's four limbs
(--limb-frames frames): both arms (upper_arm + forearm) and both legs (thigh +
shin), each with a pole target and its hand or foot target on a smooth keyed
loop, the knees hinges with IK limits (shin: Y and Z locked, X limited); the
Blender side has the same targets, poles and limits on its IK constraints, and
all four chains bake in one Bake Action (one Chain IK bake). For that case it
also prints how far each elbow and knee bends from Blender's bend direction.
- Chain IK:  bpy.ops.chain_ik.bake (triangulation) on the chain.
- Blender:   an IK constraint (chain_count = chain length) on the tip bone, the
             chain bones selected, bpy.ops.nla.bake(visual_keying=True,
             clear_constraints=True, only_selected=True, bake_types={'POSE'}).
Both start from the same rest pose of the same rig; per side: seconds, keys
written, worst tip error when the baked action plays back (constraint gone),
and the largest per-frame joint rotation (with the median for scale). Prints a
Markdown table with Chain IK / Blender ratios. --memory N bakes the 5-bone
chain over N frames and reports time, Python peak (tracemalloc) and RSS growth.
"""

from __future__ import annotations

import argparse
import math
import resource
import sys
import time
import tracemalloc
from pathlib import Path

import bpy
import numpy as np
from mathutils import Vector

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))

from blender_bench import bake_action, exit_after_main, load_extension, select_only  # noqa: E402


def fcurves(obj):
    ad = obj.animation_data
    if ad is None or ad.action is None:
        return []
    if hasattr(ad.action, "fcurves"):
        return list(ad.action.fcurves)
    from bpy_extras.anim_utils import animdata_get_channelbag_for_assigned_slot

    bag = animdata_get_channelbag_for_assigned_slot(ad)
    return [] if bag is None else list(bag.fcurves)


def speed(theirs: float, ours: float) -> str:
    """'**N.Nx faster**' or 'N.Nx slower', never a fraction of 'faster'."""
    return f"**{theirs / ours:.1f}x faster**" if ours <= theirs else f"{ours / theirs:.1f}x slower"


def chain_rig(n_bones: int):
    """A gently bent connected chain of n bones (total length 5), in a fresh empty file."""
    bpy.ops.wm.read_homefile(use_empty=True)
    arm = bpy.data.armatures.new("Rig")
    obj = bpy.data.objects.new("Rig", arm)
    bpy.context.scene.collection.objects.link(obj)
    bpy.context.view_layer.objects.active = obj
    obj.select_set(True)
    bpy.ops.object.mode_set(mode="EDIT")
    head, parent, length = Vector((0, 0, 0)), None, 5.0 / n_bones
    for i in range(n_bones):
        eb = arm.edit_bones.new(f"b{i}")
        eb.head = head
        bend = 0.25 * math.sin(1.3 * i)
        eb.tail = head + Vector((bend, 0.1 * math.cos(0.7 * i), 1.0)).normalized() * length
        if parent is not None:
            eb.parent, eb.use_connect = parent, True
        head, parent = eb.tail.copy(), eb
    bpy.ops.object.mode_set(mode="POSE")
    names = [f"b{i}" for i in range(n_bones)]
    return obj, names[-1], names, Vector((0.0, 0.0, 2.6)), 1.2


def rigify_arm():
    import addon_utils

    addon_utils.enable("rigify", default_set=True)
    bpy.ops.wm.read_homefile(use_empty=True)
    bpy.ops.object.armature_human_metarig_add()
    obj = bpy.context.object
    bpy.ops.object.mode_set(mode="POSE")
    bpy.context.view_layer.update()
    names = ["upper_arm.L", "forearm.L", "hand.L"]
    shoulder = obj.matrix_world @ obj.pose.bones["upper_arm.L"].head
    hand = obj.matrix_world @ obj.pose.bones["hand.L"].tail
    # A loop in front of the shoulder, well inside the arm's reach (the "smooth loop").
    center = shoulder + (hand - shoulder) * 0.55 + Vector((0.0, -0.15, 0.05))
    return obj, "hand.L", names, center, 0.15


def animate_target(center: Vector, radius: float, frames: int, turns: float, cyclic_period: int | None = None):
    """An empty on a tilted smooth loop, keyed every frame (or one period + a Cycles modifier)."""
    target = bpy.data.objects.new("Target", None)
    bpy.context.scene.collection.objects.link(target)
    period = cyclic_period or frames
    for f in range(1, period + 1):
        a = 2.0 * math.pi * turns * (f - 1) / (frames - 1) if cyclic_period is None else 2 * math.pi * (f - 1) / period
        offset = Vector((math.cos(a), 0.6 * math.sin(a), 0.5 * math.sin(2 * a) + 0.3 * math.sin(a)))
        target.location = center + radius * offset
        target.keyframe_insert("location", frame=f)
    for fc in fcurves(target):
        fc.keyframe_points.foreach_set("interpolation", [1] * len(fc.keyframe_points))  # LINEAR
        if cyclic_period is not None:
            fc.modifiers.new("CYCLES")
    scene = bpy.context.scene
    scene.frame_start, scene.frame_end = 1, frames
    return target


def reset(obj, names) -> None:
    if obj.animation_data is not None:
        obj.animation_data_clear()
    for n in names:
        pb = obj.pose.bones[n]
        pb.rotation_quaternion, pb.rotation_euler, pb.rotation_axis_angle = (1, 0, 0, 0), (0, 0, 0), (0, 0, 1, 0)
    bpy.context.scene.frame_set(1)


def measure(obj, tip, names, target, frames: int) -> dict:
    """Playback: worst tip error, largest and median per-frame joint rotation (degrees), keys."""
    scene = bpy.context.scene
    errors, quats = [], []
    for f in range(1, frames + 1):
        scene.frame_set(f)
        errors.append((obj.matrix_world @ obj.pose.bones[tip].tail - target.matrix_world.translation).length)
        quats.append([obj.pose.bones[n].matrix_basis.to_quaternion().normalized()[:] for n in names])
    q = np.array(quats)
    dots = np.abs(np.sum(q[1:] * q[:-1], axis=-1)).clip(0.0, 1.0)
    jumps = np.degrees(2.0 * np.arccos(dots)).max(axis=1)
    keys = sum(len(fc.keyframe_points) for fc in fcurves(obj))
    return {"error": max(errors), "jump": float(jumps.max()), "median": float(np.median(jumps)), "keys": keys}


SHARP = "triangulation, paper's sharp fold"


def bake_chain_ik(obj, tip, names, target, frames, method="triangulation") -> dict:
    """Chain IK's bake with the panel's defaults, or (SHARP) a panel chain set to the paper's fold."""
    bpy.context.view_layer.objects.active = obj
    obj.chain_ik.chains.clear()
    args = {"tip": tip, "chain_length": len(names), "target": target.name, "method": method}
    if method == SHARP:
        item = obj.chain_ik.chains.add()
        item.tip, item.chain_length, item.target, item.method = tip, len(names), target, "triangulation"
        item.smooth_fold = 0.0
        args = {"chain_index": 0}
    start = time.perf_counter()
    # measure=False: the per-chain report's playback pass is a check, not part of baking (Blender's
    # Bake Action beside it checks nothing); this bench measures the tip error on playback itself.
    result = bpy.ops.chain_ik.bake(**args, frame_start=1, frame_end=frames, measure=False)
    seconds = time.perf_counter() - start
    assert result == {"FINISHED"}, result
    return {"seconds": seconds, **measure(obj, tip, names, target, frames)}


def bake_blender(obj, tip, names, target, frames) -> dict:
    bpy.context.view_layer.objects.active = obj
    con = obj.pose.bones[tip].constraints.new("IK")
    con.target, con.chain_count = target, len(names)
    select_only(obj, names)
    seconds = bake_action(frames)
    assert not obj.pose.bones[tip].constraints, "Bake Action left the constraint"
    return {"seconds": seconds, **measure(obj, tip, names, target, frames)}


def best_of(repeats: int, bake, obj, names) -> dict:
    """The fastest of `repeats` bakes from the same start (timings on a shared machine are noisy)."""
    runs = []
    for _ in range(repeats):
        reset(obj, names)
        runs.append(bake())
    return min(runs, key=lambda r: r["seconds"])


def run_case(label: str, build, frames: int, turns: float, repeats: int, methods) -> list[tuple[str, dict, dict]]:
    obj, tip, names, center, radius = build()
    target = animate_target(center, radius, frames, turns)
    theirs = best_of(repeats, lambda: bake_blender(obj, tip, names, target, frames), obj, names)
    rows = []
    for method in methods:
        ours = best_of(repeats, lambda m=method: bake_chain_ik(obj, tip, names, target, frames, m), obj, names)
        rows.append((label, method, ours, theirs))
    return rows


LIMBS = (  # (tip, chain bones, pole offset from the middle joint, target loop radius)
    ("forearm.L", ("upper_arm.L", "forearm.L"), (0.0, 0.4, 0.0), 0.15),
    ("forearm.R", ("upper_arm.R", "forearm.R"), (0.0, 0.4, 0.0), 0.15),
    ("shin.L", ("thigh.L", "shin.L"), (0.0, -0.5, 0.0), 0.12),
    ("shin.R", ("thigh.R", "shin.R"), (0.0, -0.5, 0.0), 0.12),
)
POLE_ANGLE = -math.pi / 2  # the up vector -Z of the root bone: toward the pole on the metarig
KNEE = (math.radians(-10.0), math.radians(150.0))  # the shin's X range (bending is +X)


def four_limbs(frames: int):
    """The metarig with four limb chains: (obj, [(tip, names, target, pole)])."""
    import addon_utils

    addon_utils.enable("rigify", default_set=True)
    bpy.ops.wm.read_homefile(use_empty=True)
    bpy.ops.object.armature_human_metarig_add()
    obj = bpy.context.object
    bpy.ops.object.mode_set(mode="POSE")
    bpy.context.view_layer.update()
    scene = bpy.context.scene
    limbs = []
    for i, (tip, names, pole_offset, radius) in enumerate(LIMBS):
        root, end = obj.pose.bones[names[0]], obj.pose.bones[names[-1]]
        head, middle, reach = (obj.matrix_world @ v for v in (root.head, end.head, end.tail))
        if tip.startswith("shin"):
            knee = obj.pose.bones[tip]
            knee.lock_ik_y = knee.lock_ik_z = True
            knee.use_ik_limit_x, (knee.ik_min_x, knee.ik_max_x) = True, KNEE
            center = reach + Vector((0.0, 0.05, 0.18))  # the foot lifted: the knee bends
        else:
            center = head + (reach - head) * 0.6 + Vector((0.0, -0.15, 0.0))
        pole = bpy.data.objects.new(f"Pole.{tip}", None)
        scene.collection.objects.link(pole)
        pole.location = middle + Vector(pole_offset)
        target = bpy.data.objects.new(f"Target.{tip}", None)
        scene.collection.objects.link(target)
        phase = 0.5 * math.pi * i
        for f in range(1, frames + 1):
            a = 2.0 * math.pi * (f - 1) / (frames - 1) + phase
            if tip.startswith("shin"):  # a stepping loop in the leg's plane
                offset = Vector((0.2 * math.sin(2 * a) * 0.3, math.cos(a), 0.6 * math.sin(a)))
            else:
                offset = Vector((math.cos(a), 0.6 * math.sin(a), 0.5 * math.sin(2 * a) + 0.3 * math.sin(a)))
            target.location = center + radius * offset
            target.keyframe_insert("location", frame=f)
        limbs.append((tip, names, target, pole))
    scene.frame_start, scene.frame_end = 1, frames
    return obj, limbs


def limb_playback(obj, limbs, frames: int) -> dict:
    """Playback of the four limbs: worst tip error, largest/median jump, keys, and per frame
    and limb the middle joint's unit offset from the root-target line (the bend side)."""
    scene = bpy.context.scene
    errors, quats, sides = [], [], []
    names = [n for _, chain, _, _ in limbs for n in chain]
    for f in range(1, frames + 1):
        scene.frame_set(f)
        row = []
        for tip, chain, target, _ in limbs:
            t = target.matrix_world.translation
            errors.append((obj.matrix_world @ obj.pose.bones[tip].tail - t).length)
            s = obj.matrix_world @ obj.pose.bones[chain[0]].head
            e = obj.matrix_world @ obj.pose.bones[chain[1]].head
            axis = (t - s).normalized()
            off = (e - s) - (e - s).dot(axis) * axis
            row.append(off.normalized()[:])
        sides.append(row)
        quats.append([obj.pose.bones[n].matrix_basis.to_quaternion().normalized()[:] for n in names])
    q = np.array(quats)
    dots = np.abs(np.sum(q[1:] * q[:-1], axis=-1)).clip(0.0, 1.0)
    jumps = np.degrees(2.0 * np.arccos(dots)).max(axis=1)
    keys = sum(len(fc.keyframe_points) for fc in fcurves(obj))
    return {
        "error": max(errors),
        "jump": float(jumps.max()),
        "median": float(np.median(jumps)),
        "keys": keys,
        "sides": np.array(sides),
    }


def limbs_reset(obj, limbs) -> None:
    reset(obj, [n for _, chain, _, _ in limbs for n in chain])


def limbs_blender(obj, limbs, frames: int) -> dict:
    bpy.context.view_layer.objects.active = obj
    for tip, chain, target, pole in limbs:
        con = obj.pose.bones[tip].constraints.new("IK")
        con.target, con.pole_target, con.pole_angle, con.chain_count = target, pole, POLE_ANGLE, len(chain)
    select_only(obj, [n for _, chain, _, _ in limbs for n in chain])
    seconds = bake_action(frames)
    return {"seconds": seconds, **limb_playback(obj, limbs, frames)}


def limbs_chain_ik(obj, limbs, frames: int, method: str) -> dict:
    bpy.context.view_layer.objects.active = obj
    obj.chain_ik.chains.clear()
    for tip, chain, target, pole in limbs:
        item = obj.chain_ik.chains.add()
        item.tip, item.chain_length, item.target, item.method = tip, len(chain), target, method
        item.pole_target, item.pole_angle = pole, POLE_ANGLE
    start = time.perf_counter()
    result = bpy.ops.chain_ik.bake(frame_start=1, frame_end=frames, measure=False)
    seconds = time.perf_counter() - start
    assert result == {"FINISHED"}, result
    return {"seconds": seconds, **limb_playback(obj, limbs, frames)}


def limbs_case(frames: int, repeats: int, methods) -> tuple[list, list[str]]:
    """The four-limb rows, and one line per method on the bend sides against Blender's."""
    obj, limbs = four_limbs(frames)

    def best(bake):
        runs = []
        for _ in range(repeats):
            limbs_reset(obj, limbs)
            runs.append(bake())
        return min(runs, key=lambda r: r["seconds"])

    label = f"Rigify 4 limbs (poles, knee limits, {frames} frames)"
    theirs = best(lambda: limbs_blender(obj, limbs, frames))
    rows, sides = [], []
    for method in methods:
        if method == SHARP:
            continue
        ours = best(lambda m=method: limbs_chain_ik(obj, limbs, frames, m))
        rows.append((label, method, ours, theirs))
        drift = np.degrees(np.arccos(np.clip(np.sum(ours["sides"] * theirs["sides"], axis=-1), -1.0, 1.0)))
        per_limb = ", ".join(f"{tip} {drift[:, i].max():.1f}" for i, (tip, *_) in enumerate(limbs))
        sides.append(
            f"| {method} | {drift.max():.1f} | {np.median(drift):.2f} | {int(np.sum(drift > 90.0))} | {per_limb} |"
        )
    head = [
        "| method | largest bend-side drift from Blender ° | median ° | limb-frames > 90° | largest per limb ° |",
        "|---|---:|---:|---:|---|",
    ]
    return rows, head + sides


def table(rows) -> str:
    """rows: (rig label, method, Chain IK figures, Blender figures); Blender's row once per rig."""
    lines = [
        "| rig | side | seconds | keys | worst tip error | largest jump ° (median; largest / median) |",
        "|---|---|---:|---:|---:|---:|",
    ]

    def row(label, side, r):
        lines.append(
            f"| {label} | {side} | {r['seconds']:.3f} | {r['keys']} | {r['error']:.2e} |"
            f" {r['jump']:.2f} ({r['median']:.2f}; {r['jump'] / max(r['median'], 1e-12):.1f}x) |"
        )

    seen = set()
    for label, method, ours, theirs in rows:
        if label not in seen:
            seen.add(label)
            row(label, "Blender IK constraint + Bake Action", theirs)
        row(label, f"Chain IK bake ({method})", ours)
        lines.append(
            f"| {label} | ratio Chain IK ({method}) / Blender | {ours['seconds'] / theirs['seconds']:.3f}"
            f" ({speed(theirs['seconds'], ours['seconds'])}) | {ours['keys'] / theirs['keys']:.2f} |"
            f" {ours['error'] / max(theirs['error'], 1e-12):.2g} | {ours['jump'] / max(theirs['jump'], 1e-12):.2f} |"
        )
    return "\n".join(lines)


def memory_case(frames: int) -> str:
    """Time and peak RSS growth of a long bake; Python-side bytes per frame from a traced run of a tenth."""
    obj, tip, names, center, radius = chain_rig(5)
    target = animate_target(center, radius, frames, turns=0, cyclic_period=250)
    bpy.context.view_layer.objects.active = obj
    rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    start = time.perf_counter()
    result = bpy.ops.chain_ik.bake(
        tip=tip, chain_length=5, target=target.name, frame_start=1, frame_end=frames, measure=False
    )
    seconds = time.perf_counter() - start
    rss1 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    assert result == {"FINISHED"}
    keys = sum(len(fc.keyframe_points) for fc in fcurves(obj))
    # The whole range traced again (tracemalloc slows allocations ~10x): the solver and the channel
    # conversion work in chunks of 4096 frames, so a shorter traced run would overstate the per-frame peak.
    traced = frames
    reset(obj, names)
    tracemalloc.start()
    bpy.ops.chain_ik.bake(tip=tip, chain_length=5, target=target.name, frame_start=1, frame_end=traced, measure=False)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return (
        f"Memory: {frames} frames, 5 bones: {seconds:.1f} s ({1e6 * seconds / frames:.0f} µs/frame), {keys} keys;"
        f" peak RSS growth {(rss1 - rss0) / 1024:.0f} MiB (Blender's own {keys} keyframes included);"
        f" Python peak (tracemalloc, {traced} frames) {peak / 2**20:.1f} MiB = {peak / traced:.0f} B/frame"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--frames", type=int, default=1000)
    parser.add_argument("--rigify-frames", type=int, default=240)
    parser.add_argument("--limb-frames", type=int, default=250)
    parser.add_argument("--cases", default="5;20;arm;limbs", help="';'-separated: 5, 20, arm, limbs")
    parser.add_argument("--memory", type=int, default=0, help="also bake this many frames (e.g. 100000)")
    parser.add_argument("--repeats", type=int, default=5, help="best of this many runs per side")
    parser.add_argument(
        "--methods", default=f"triangulation;{SHARP};jacobian", help="Chain IK solvers to run, ';'-separated"
    )
    args = parser.parse_args(sys.argv[sys.argv.index("--") + 1 :] if "--" in sys.argv else sys.argv[1:])
    ext = load_extension()
    ext.register()
    import io
    from contextlib import redirect_stdout

    try:
        rows, sides = [], []
        cases = args.cases.split(";")
        with redirect_stdout(io.StringIO()):  # Blender's and our progress lines
            methods = args.methods.split(";")
            if "5" in cases:
                rows += run_case("5 bones", lambda: chain_rig(5), args.frames, 4.0, args.repeats, methods)
            if "20" in cases:
                rows += run_case("20 bones", lambda: chain_rig(20), args.frames, 4.0, args.repeats, methods)
            if "arm" in cases:
                rig = rigify_arm
                rows += run_case("Rigify arm (hand.L, 3)", rig, args.rigify_frames, 1.0, args.repeats, methods)
            if "limbs" in cases:
                limb_rows, sides = limbs_case(args.limb_frames, args.repeats, methods)
                rows += limb_rows
        print(
            f"bpy {bpy.app.version_string}, {args.frames} frames ({args.rigify_frames} for the Rigify arm,"
            f" {args.limb_frames} for the four limbs), best of {args.repeats} runs per side\n"
        )
        print(table(rows))
        if sides:
            print("\nFour limbs: elbows and knees against Blender's bend side (the middle joint's direction")
            print("off the root-target line, per frame)\n")
            print("\n".join(sides))
        if args.memory:
            with redirect_stdout(io.StringIO()):
                line = memory_case(args.memory)
            print("\n" + line)
    finally:
        ext.unregister()


if __name__ == "__main__":
    main()
    exit_after_main()
