"""Key reduction benchmark: Chain IK's reduction against Blender's Decimate and Clean Channels, same bake, same run.

Run inside a bpy venv:  <venv>/bin/python bench/bench_reduce.py [--frames 250] [--rigify-frames 240]

Per rig (bench_bake's 5-bone chain and Rigify's metarig arm following a smooth loop):
1. Chain IK bakes every frame (no reduction); the action is kept.
2. Blender: on a copy of that action, every key selected, a Graph Editor operator runs
   (headless: the window's Dope Sheet area is switched to a Graph Editor and the operator
   runs under context.temp_override): graph.decimate in ratio mode and in error mode at
   several settings, graph.clean(channels=True). Its keys and its worst tip error (tip to
   target, every frame, on playback) are measured.
3. Chain IK bakes again with key reduction by tip distance set to that worst error, and its
   keys and worst tip error are measured the same way: fewer keys at no more error wins.
Prints a Markdown table.
"""

from __future__ import annotations

import argparse
import io
import sys
import time
from contextlib import redirect_stdout
from pathlib import Path

import bpy

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_bake import animate_target, chain_rig, fcurves, measure, rigify_arm  # noqa: E402
from blender_bench import exit_after_main, load_extension  # noqa: E402

BLENDER_OPS = (
    [("Decimate ratio", {"mode": "RATIO", "factor": f}) for f in (0.5, 0.75, 0.9)]
    + [("Decimate error", {"mode": "ERROR", "remove_error_margin": e}) for e in (1e-4, 1e-3, 1e-2)]
    + [("Clean Channels", {"threshold": t}) for t in (1e-3, 1e-2)]
)


def graph_editor():
    """(window, area, region) of a Graph Editor in the (background) window: graph operators poll for one."""
    window = bpy.context.window_manager.windows[0]
    area = next(a for a in window.screen.areas if a.type in {"GRAPH_EDITOR", "DOPESHEET_EDITOR"})
    area.type = "GRAPH_EDITOR"
    # "Only Show Selected" finds no animation data under temp_override: every object is listed,
    # and the others' curves are hidden and deselected instead (run_graph_op).
    area.spaces.active.dopesheet.show_only_selected = False
    return window, area, next(r for r in area.regions if r.type == "WINDOW")


def run_graph_op(obj, name: str, kwargs: dict) -> None:
    bpy.ops.object.mode_set(mode="OBJECT")
    for other in bpy.context.view_layer.objects:
        other.select_set(other == obj)
        for fc in fcurves(other):
            fc.select, fc.hide = other == obj, other != obj
            for key in fc.keyframe_points:
                key.select_control_point = key.select_left_handle = key.select_right_handle = other == obj
    bpy.context.view_layer.objects.active = obj
    window, area, region = graph_editor()
    op = bpy.ops.graph.clean if name == "Clean Channels" else bpy.ops.graph.decimate
    extra = {"channels": True} if name == "Clean Channels" else {}
    with bpy.context.temp_override(window=window, area=area, region=region, active_object=obj):
        assert op(**kwargs, **extra) == {"FINISHED"}, name
    bpy.ops.object.mode_set(mode="POSE")


def chain_ik_bake(obj, tip, names, target, frames, tolerance: float | None) -> dict:
    bpy.context.view_layer.objects.active = obj
    args = {"tip": tip, "chain_length": len(names), "target": target.name, "frame_start": 1, "frame_end": frames}
    if tolerance is not None:
        args.update(reduce=True, reduce_mode="TIP", reduce_tolerance=tolerance)
    start = time.perf_counter()
    with redirect_stdout(io.StringIO()):
        assert bpy.ops.chain_ik.bake(**args, measure=False) == {"FINISHED"}
    return {"seconds": time.perf_counter() - start, **measure(obj, tip, names, target, frames)}


def run_case(label: str, build, frames: int, turns: float) -> list[str]:
    obj, tip, names, center, radius = build()
    target = animate_target(center, radius, frames, turns)
    full = chain_ik_bake(obj, tip, names, target, frames, None)
    baked = obj.animation_data.action.copy()
    lines = [
        f"| {label} | Chain IK bake, every frame | {full['keys']} | {full['error'] * 1e3:.3f} |"
        f" ({full['seconds']:.2f} s) | |"
    ]
    for name, kwargs in BLENDER_OPS:
        obj.animation_data.action = baked.copy()
        run_graph_op(obj, name, kwargs)
        theirs = measure(obj, tip, names, target, frames)
        setting = ", ".join(f"{k}={v:g}" for k, v in kwargs.items() if k != "mode")
        # Reduce so the tip stays within their worst error (the bake's own error counted in).
        ours = chain_ik_bake(obj, tip, names, target, frames, max(theirs["error"] - full["error"], 1e-7))
        ratio = ours["keys"] / max(theirs["keys"], 1)
        win = "**yes**" if ours["keys"] < theirs["keys"] and ours["error"] <= theirs["error"] else "no"
        lines.append(
            f"| {label} | {name} ({setting}) | {theirs['keys']} | {theirs['error'] * 1e3:.3f} |"
            f" {ours['keys']} ({ours['error'] * 1e3:.3f} mm, {ours['seconds']:.2f} s) | {ratio:.2f} {win} |"
        )
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--frames", type=int, default=250)
    parser.add_argument("--rigify-frames", type=int, default=240)
    args = parser.parse_args(sys.argv[sys.argv.index("--") + 1 :] if "--" in sys.argv else sys.argv[1:])
    ext = load_extension()
    ext.register()
    try:
        lines = [
            "| rig | Blender reduction (setting) | their keys | their worst tip error (mm) |"
            " Chain IK keys at that tip distance (its worst error, bake seconds) |"
            " keys ratio, Chain IK fewer at no more error |",
            "|---|---|---:|---:|---:|---:|",
        ]
        with redirect_stdout(io.StringIO()):
            lines += run_case("5 bones", lambda: chain_rig(5), args.frames, 2.0)
            lines += run_case("Rigify arm (hand.L, 3)", rigify_arm, args.rigify_frames, 1.0)
        print(f"bpy {bpy.app.version_string}, {args.frames} frames ({args.rigify_frames} for Rigify)\n")
        print("\n".join(lines))
    finally:
        ext.unregister()


if __name__ == "__main__":
    main()
    exit_after_main()
