"""bench_tree's bakes with and without the bake's kept frames (solvers.skeleton_sequence._kept:
a predicted start that already meets every goal is the frame's result without the method's call):
per method and case, how many frames were kept and the largest difference in the frames' local
rotations and errors (and reached, iterations), the bake's worst reported error and playback error.

    $PY5 bench/bench_tree_kept.py [--frames 120] [--poses 40] [--methods ...] [--cases ...] [--repeats 5]

Then the bake's time per frame (timing.cost: CPU unless wall is less) with kept frames off and
on and Blender's IK + Bake Action, alternated --repeats rounds in this one process (the order
turning each round), each side's least: the ratios to Blender as bench_tree gives them.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_tree as bt  # noqa: E402
from blender_bench import chosen_methods, exit_after_main, load_extension  # noqa: E402
from timing import alternated, cost  # noqa: E402
from tree_case import add_case_arguments, read_case  # noqa: E402


def bake_recorded(ext, chains, motion, method, keep: bool):
    """(the core's frames (local, error, reached, iterations) of the bake, playback error, worst
    reported error, frames kept) of bench_tree's bake of `method`, kept frames on or off."""
    sequence = ext.solvers.skeleton_sequence
    original_kept, original_frames = sequence._kept, sequence.solve_frames
    recorded, kept = [], [0]

    def counting(*args, **kwargs):
        out = original_kept(*args, **kwargs)
        kept[0] += out is not None
        return out

    def frames(*args, **kwargs):
        batch = original_frames(*args, **kwargs)
        recorded.append(batch)
        return batch

    sequence._kept = counting if keep else (lambda *args, **kwargs: None)
    sequence.solve_frames = frames
    try:
        _, played, _, worst, *_ = bt.bake_ours(ext, chains, motion, method)
    finally:
        sequence._kept, sequence.solve_frames = original_kept, original_frames
    (batch,) = recorded
    return batch, played, worst, kept[0]


def timings(ext, chains, motion, methods, names, repeats: int) -> dict[str, float]:
    """Per side (Blender, each method with kept frames off and on): its least cost per frame."""
    sequence = ext.solvers.skeleton_sequence
    original = sequence._kept

    def ours(method, keep):
        sequence._kept = original if keep else (lambda *args, **kwargs: None)
        try:
            return bt.bake_ours(ext, chains, motion, method)
        finally:
            sequence._kept = original

    routes = {"blender": lambda: bt.bake_blender(chains, motion, names)}
    for method in methods:
        routes[f"{method} (kept off)"] = lambda method=method: ours(method, False)
        routes[f"{method} (kept on)"] = lambda method=method: ours(method, True)
    runs = alternated(routes, repeats)
    return {side: min(cost(run[0], run[4]) for run in tried) for side, tried in runs.items()}


def main(argv=None) -> None:
    import addon_utils
    import bpy

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_case_arguments(parser, poses=40, repeats=5)
    parser.add_argument("--frames", type=int, default=120)
    parser.add_argument("--methods", nargs="*", default=[])
    args = parser.parse_args(argv)
    ext = load_extension("solvers", "rig.tree", "rig.keys", "app.bake", "app.spec")
    args.methods = chosen_methods(parser, args.methods, ext.solvers.REGISTRY)
    solvers = ext.solvers
    if not hasattr(bpy.types.Object, "chain_ik"):
        ext.register()
    addon_utils.enable("rigify", default_set=True)
    print(f"bpy {bpy.app.version_string}, {args.frames} frames (bench_tree's motion, seed {args.seed})")
    print(
        "| case | method | frames kept | max diff local | max diff error | reached same | iterations same"
        " | worst error (off / on) | playback error (off / on) |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    timed = []
    for name in args.cases:
        chains = bt.CASES[name]
        case = read_case(ext, chains, args)  # bench_tree's draws: the poses, then the motion
        motion = case.motion(args.frames, args.angle)
        methods = [m for m in solvers.REGISTRY if not args.methods or m in args.methods]
        for method in methods:
            off, played_off, worst_off, _ = bake_recorded(ext, chains, motion, method, keep=False)
            on, played_on, worst_on, kept = bake_recorded(ext, chains, motion, method, keep=True)
            d_local = float(np.max(np.abs(on.local - off.local)))
            d_error = float(np.max(np.abs(on.error - off.error)))
            same_reached = bool(np.array_equal(on.reached, off.reached))
            same_iterations = bool(np.array_equal(on.iterations, off.iterations))
            print(
                f"| {name} | {method} | {kept} / {len(on.local)} | {d_local:.1e} | {d_error:.1e}"
                f" | {same_reached} | {same_iterations}"
                f" | {worst_off:.3e} / {worst_on:.3e} | {played_off:.3e} / {played_on:.3e} |",
                flush=True,
            )
        if args.repeats:
            timed.append((name, timings(ext, chains, motion, methods, case.names, args.repeats)))
    for name, times in timed:
        blender = times.pop("blender")
        print(f"\n{name}: Blender IK + Bake Action {1e3 * blender:.2f} ms / frame")
        for side, seconds in times.items():
            print(f"- {side}: {1e3 * seconds:.3f} ms / frame, {blender / seconds:.2f}x faster than Blender")
    addon_utils.disable("rigify", default_set=True)


if __name__ == "__main__":
    main()
    exit_after_main()
