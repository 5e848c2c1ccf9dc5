"""Batch bake benchmark: 8 shots through tools/bake_shots.py, serial vs --jobs 2 vs Dask (2 workers), one run.

Run inside a bpy venv:  <venv>/bin/python bench/bench_bake_shots.py [--shots 8] [--frames 250] [--repeat 3]

Each shot is its own .blend (a 3-bone arm following an empty over --frames
frames, each shot from its own phase), baked by one Blender process (the bpy
wheel's Python running cli.py), so start-up is in every figure, as it is in
production. The anchor is the serial run (--jobs 1) measured in the same run;
the Dask route uses a LocalCluster of 2 single-threaded worker processes
started here. Routes run interleaved, --repeat times each, best shown. Goal:
>= 1.7x faster than serial on 2 cores. The load average is printed before and
after: other work on the machine shrinks the ratios.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TOOL = REPO / "tools" / "bake_shots.py"


def make_shots(root: Path, shots: int, frames: int) -> Path:
    # bpy is imported here, not at the top: Dask's worker processes re-import this module.
    import bpy

    entries = []
    for i in range(shots):
        bpy.ops.wm.read_homefile(use_empty=True)
        arm = bpy.data.armatures.new("Rig")
        obj = bpy.data.objects.new("Rig", arm)
        bpy.context.scene.collection.objects.link(obj)
        bpy.context.view_layer.objects.active = obj
        bpy.ops.object.mode_set(mode="EDIT")
        parent = None
        for b in range(3):
            bone = arm.edit_bones.new(f"b{b}")
            bone.head, bone.tail = (0, 0, b), (0, 0, b + 1)
            bone.parent, bone.use_connect = parent, parent is not None
            parent = bone
        bpy.ops.object.mode_set(mode="OBJECT")
        goal = bpy.data.objects.new("Goal", None)
        bpy.context.scene.collection.objects.link(goal)
        for f in range(1, frames + 1):
            a = 6.0 * math.pi * f / frames + i
            goal.location = (math.cos(a), math.sin(a), 2.0 + 0.5 * math.sin(2 * a))
            goal.keyframe_insert("location", frame=f)
        bpy.context.scene.frame_start, bpy.context.scene.frame_end = 1, frames
        bpy.ops.wm.save_as_mainfile(filepath=str(root / f"sh{i}.blend"))
        entries.append(
            f'[[shots]]\nname = "sh{i}"\nblend = "sh{i}.blend"\noutput = "out/sh{i}.blend"\narmature = "Rig"\n'
            f'[[shots.chains]]\nchain = "b2:3"\ntarget = "Goal"\n'
        )
    path = root / "shots.toml"
    path.write_text("\n".join(entries))
    return path


def bake(shot_file: Path, report: Path, *route: str) -> tuple[float, dict]:
    started = time.perf_counter()
    run = subprocess.run(
        [sys.executable, str(TOOL), str(shot_file), "--python", sys.executable, "--report", str(report), *route],
        capture_output=True,
        text=True,
    )
    seconds = time.perf_counter() - started
    if run.returncode != 0:
        raise SystemExit(f"bake_shots failed ({' '.join(route)}):\n{run.stderr}")
    return seconds, json.loads(report.read_text())


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--shots", type=int, default=8)
    p.add_argument("--frames", type=int, default=250)
    p.add_argument("--repeat", type=int, default=3, help="runs per route, interleaved; the best is shown")
    args = p.parse_args()
    from dask.distributed import LocalCluster

    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        shot_file = make_shots(root, args.shots, args.frames)
        version = sys.modules["bpy"].app.version_string
        best: dict[str, float] = {}
        per_shot = []
        with LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None, silence_logs=40
        ) as cluster:
            routes = {
                "serial (--jobs 1)": ("--jobs", "1"),
                "--jobs 2": ("--jobs", "2"),
                "Dask, 2 workers": ("--scheduler", cluster.scheduler_address),
            }
            # Interleaved repeats, best of each: a burst of load from elsewhere hits every route alike.
            for _ in range(args.repeat):
                for name, route in routes.items():
                    seconds, report = bake(shot_file, root / "report.json", *route)
                    best[name] = min(best.get(name, math.inf), seconds)
                    if name.startswith("serial"):
                        per_shot.append(sum(s["seconds"] for s in report["shots"]) / len(report["shots"]))
        serial = best["serial (--jobs 1)"]
        rows = list(best.items())
        per_shot = min(per_shot)
    load_after = os.getloadavg()
    print(
        f"{args.shots} shots x {args.frames} frames, 3-bone chain, bpy {version}, "
        f"{os.cpu_count()} cores; one shot {per_shot:.2f} s (Blender start-up included); best of {args.repeat}"
    )
    print(f"load average before {load_before[0]:.2f}, after {load_after[0]:.2f} (1 min)\n")
    print("| route | wall time (s) | speed-up vs serial |")
    print("|---|---:|---:|")
    for name, seconds in rows:
        print(f"| {name} | {seconds:.2f} | {serial / seconds:.2f}x |")


if __name__ == "__main__":
    main()
