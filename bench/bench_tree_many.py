"""A bake's frames solved at once (solve_skeleton_many) vs frame by frame (solve_skeleton) vs Blender's bake (issue 10).

Run inside a bpy venv:  <venv>/bin/python bench/bench_tree_many.py [--frames 60 250 1000] [--repeats 3]
[--method fabrik] [--no-blender] [--quick]

Rig and cases as bench/bench_tree.py (Rigify's human metarig; two hands, hands and head, five
from the hips), read with rig.tree.read_tree from the rest pose, which is every frame's input
pose (as Blender's IK starts each frame from the pose the animation gives it). Targets: the
chains' end points along a smooth FK motion through random poses (bench_tree.smooth_motion),
m frames. Per case and m:
- batch: `solvers.solve_skeleton_many` on all m frames (the method's batch tree kernel);
- loop: `solvers.solve_skeleton` frame after frame (effectors built per frame, as a bake does);
- agreement: frames whose iteration counts differ, and the largest difference of a rotation
  component (q and -q alike) between the two;
- Blender: the IK constraints + Bake Action on the same motion at the smallest m (bench_tree.bake_blender:
  the whole bake, evaluation and keys included, per frame). "batch vs Blender" compares the
  batch *solve* alone with that: the bridge (reading the rig, writing keys) is not in it.
Timings in µs per frame: --repeats passes interleaved, each side's fastest.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import bpy
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_tree import CASES, bake_blender, evaluated, metarig, smooth_motion  # noqa: E402
from blender_bench import exit_after_main, load_extension  # noqa: E402

TOLERANCE = 1e-5


def loop(solvers, skeleton, local0, bones, motion, method) -> tuple[float, list]:
    Effector = solvers.Effector
    start = time.perf_counter()
    out = [
        solvers.solve_skeleton(
            skeleton,
            local0,
            [Effector(b, position=p) for b, p in zip(bones, row, strict=True)],
            method=method,
            tolerance=TOLERANCE,
        )
        for row in motion
    ]
    return time.perf_counter() - start, out


def batch(solvers, skeleton, local0, bones, motion, method):
    effectors = [solvers.Effector(b, position=motion[0, k]) for k, b in enumerate(bones)]
    start = time.perf_counter()
    out = solvers.solve_skeleton_many(skeleton, local0, effectors, motion, method=method, tolerance=TOLERANCE)
    return time.perf_counter() - start, out


def agreement(many, ones) -> tuple[int, float]:
    iterations = np.array([s.iterations for s in ones])
    local = np.array([s.local for s in ones])
    sign = np.where(np.sum(local * many.local, axis=-1, keepdims=True) < 0.0, -1.0, 1.0)
    return int(np.sum(iterations != many.iterations)), float(np.max(np.abs(many.local * sign - local)))


def ratio(theirs: float, ours: float) -> str:
    return f"{theirs / ours:.2f}x faster" if ours <= theirs else f"{ours / theirs:.2f}x slower"


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", type=int, nargs="*", default=[60, 250, 1000])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--method", default="fabrik")
    parser.add_argument("--angle", type=float, default=0.6)
    parser.add_argument("--seed", type=int, default=10)
    parser.add_argument("--no-blender", action="store_true", help="skip Blender's bake")
    parser.add_argument("--quick", action="store_true", help="a short run (smoke test)")
    parser.add_argument("--cases", nargs="*", default=list(CASES), choices=list(CASES))
    args = parser.parse_args(argv)
    if args.quick:
        args.frames, args.repeats = [12], 1
    import addon_utils

    ext = load_extension("solvers", "rig.tree")
    solvers, tree = ext.solvers, ext.rig.tree
    addon_utils.enable("rigify", default_set=True)
    lines = [
        f"bpy {bpy.app.version_string}, method {args.method}, tolerance {TOLERANCE:g}, fastest of {args.repeats}"
        " interleaved passes; µs per frame",
        "",
        "| case | frames | batch µs/frame | loop µs/frame | batch vs loop | Blender bake µs/frame"
        " | batch vs Blender bake | iterations mean / max | frames with other iterations | max Δ rotation |",
        "|---|---:|---:|---:|---|---:|---|---:|---:|---:|",
    ]
    try:
        for name in args.cases:
            chains = CASES[name]
            rng = np.random.default_rng(args.seed)
            obj = metarig()
            layout = tree.tree_layout(obj, chains)
            skeleton, local0, names = tree.read_tree(obj, evaluated(obj), chains, layout)
            bones = list(layout.effectors)
            blender = None
            for m in args.frames:
                motion = smooth_motion(skeleton, local0, bones, rng, m, args.angle, solvers.quat)
                best = {"batch": np.inf, "loop": np.inf}
                for _ in range(args.repeats):
                    seconds, many = batch(solvers, skeleton, local0, bones, motion, args.method)
                    best["batch"] = min(best["batch"], seconds)
                    seconds, ones = loop(solvers, skeleton, local0, bones, motion, args.method)
                    best["loop"] = min(best["loop"], seconds)
                    if blender is None and not args.no_blender:
                        # Blender's bake on the first (smallest) motion, interleaved with ours
                        blender = min(bake_blender(chains, motion, names)[0] for _ in range(args.repeats))
                differ, worst = agreement(many, ones)
                b, lp = 1e6 * best["batch"] / m, 1e6 * best["loop"] / m
                bake = "" if blender is None else f"{1e6 * blender:.0f}"
                vs = (
                    ""
                    if blender is None
                    else f"**{1e6 * blender / b:.1f}x faster**"
                    if b <= 1e6 * blender
                    else (f"{b / (1e6 * blender):.1f}x slower")
                )
                lines.append(
                    f"| {name} | {m} | {b:.0f} | {lp:.0f} | {ratio(lp, b)} | {bake} | {vs} |"
                    f" {many.iterations.mean():.1f} / {many.iterations.max()} | {differ} | {worst:.1e} |"
                )
                if many.reason:
                    lines.append(f"| ({name}: {many.reason}) | | | | | | | | | |")
    finally:
        addon_utils.disable("rigify", default_set=True)
    print("\n".join(lines))


if __name__ == "__main__":
    main()
    exit_after_main()
