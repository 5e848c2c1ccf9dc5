"""A tree bake per frame, part by part, against Blender's IK + Bake Action in the same run (issue 20 item 5).

Run inside a bpy venv:  <venv>/bin/python bench/bench_tree_floor_bake.py [--frames 120] [--repeats 3]

The rig, cases, smooth motion and both bakes are bench_tree.py's (bench/tree_case.py: same seed
and --poses, the same motion). Per frame, each part's least cost over --repeats rounds (bench/timing.py: CPU time, or
the wall clock where less), in ms:
- Blender: IK constraints + Bake Action (bench_tree.bake_blender), the anchor.
- bake: Chain IK's whole bake of the method (bench_tree.bake_ours).
- bake, no solve: the same bake with the sequence solve replaced by the input pose on every frame
  (app.bake's own work: checks, reading, goals, the key conversion, writing the keys, Blender's
  evaluations), the floor of any bake through app.bake on this rig.
- sequence: `solvers.solve_skeleton_sequence` on the bake's goals alone (every frame's solve).
- prediction: the least-squares steps alone (`skeleton_solve.least_squares_steps`, PREDICT_STEPS
  within PREDICT_WITHIN tolerances) from each frame's last solution, as the sequence takes them
  (none for the least-squares method: its solve is the steps).
- 0-iteration solve: `solvers.solve_skeleton` of the method from each frame's own solution (every
  goal met: no iteration), the method's fixed cost per call; given the tips' distances as the
  prediction measures them there (`start_error`), as a bake's frame gives its method the prediction's.
Floor = bake, no solve + prediction + 0-iteration solve: what a frame costs before the method
iterates at all; "x Blender" is Blender's cost over the part's (the goals: every method 3x, the
best 5x).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_tree as bt  # noqa: E402
from blender_bench import chosen_methods, exit_after_main, load_extension  # noqa: E402
from tables import print_cases  # noqa: E402
from timing import Clock, cost  # noqa: E402
from tree_case import add_case_arguments, read_case  # noqa: E402


def per_frame(call, frames: int) -> float:
    clock = Clock()
    call()
    return cost(*clock.spent()) / frames


def measure(ext, chains, args) -> dict:
    solvers, sequence = ext.solvers, ext.solvers.skeleton_sequence
    case = read_case(ext, chains, args)
    skeleton, local0, names, bones = case.skeleton, case.local0, case.names, case.bones
    motion = case.motion(args.frames, args.angle)
    methods = [m for m in solvers.REGISTRY if not args.methods or m in args.methods]
    effectors = [solvers.Effector(b, position=motion[0, j]) for j, b in enumerate(bones)]
    settings = {"tolerance": bt.SOLVE_TOLERANCE}
    solved = {
        m: solvers.solve_skeleton_sequence(skeleton, local0, effectors, motion, method=m, **settings) for m in methods
    }
    goals = [[solvers.Effector(b, position=motion[f, j]) for j, b in enumerate(bones)] for f in range(args.frames)]
    near = sequence.PREDICT_WITHIN * bt.SOLVE_TOLERANCE
    steps = ext.solvers.skeleton_solve.least_squares_steps

    def unsolved(skeleton, local, effectors, positions, **_):  # the input pose on every frame
        m, k = len(positions), len(effectors)
        rotations = np.broadcast_to(np.asarray(local, dtype=float), (m, *np.shape(local))).copy()
        return solvers.SkeletonBatch(rotations, np.zeros((m, k)), np.ones(m, bool), np.zeros(m, int), "none")

    def no_solve():
        real = solvers.solve_skeleton_sequence
        solvers.solve_skeleton_sequence = unsolved
        try:
            return bt.bake_ours(ext, chains, motion, methods[0])
        finally:
            solvers.solve_skeleton_sequence = real

    parts: dict = {"blender": lambda: bt.bake_blender(chains, motion, names), "no solve": no_solve}
    measured = {  # each frame's own solution as the prediction's kernel measures it (no step: every goal met)
        m: [steps(skeleton, solved[m].local[f], goals[f], near, sequence.PREDICT_STEPS)[1] for f in range(args.frames)]
        for m in methods
    }
    for m in methods:
        local = solved[m].local
        parts[(m, "bake")] = lambda m=m: bt.bake_ours(ext, chains, motion, m)
        parts[(m, "sequence")] = lambda m=m: per_frame(
            lambda: solvers.solve_skeleton_sequence(skeleton, local0, effectors, motion, method=m, **settings),
            args.frames,
        )
        if not solvers.REGISTRY[m].least_squares:
            parts[(m, "prediction")] = lambda local=local: per_frame(
                lambda: [
                    steps(skeleton, local[f - 1], goals[f], near, sequence.PREDICT_STEPS) for f in range(1, args.frames)
                ],
                args.frames - 1,
            )
        parts[(m, "zero")] = lambda m=m, local=local: per_frame(
            lambda: [
                solvers.solve_skeleton(skeleton, local[f], goals[f], method=m, start_error=measured[m][f], **settings)
                for f in range(args.frames)
            ],
            args.frames,
        )
    best: dict = {}
    for _ in range(args.repeats):
        for key, call in parts.items():
            out = call()
            seconds = cost(out[0], out[4]) if isinstance(out, tuple) else out
            best[key] = min(best.get(key, np.inf), seconds)
    zero_iterations = {
        m: float(
            np.mean(
                [
                    solvers.solve_skeleton(skeleton, solved[m].local[f], goals[f], method=m, **settings).iterations
                    for f in range(args.frames)
                ]
            )
        )
        for m in methods
    }
    return {"ms": {k: 1e3 * v for k, v in best.items()}, "methods": methods, "zero_iterations": zero_iterations}


def table(name: str, m: dict) -> list[str]:
    ms = m["ms"]
    blender = ms["blender"]
    lines = [
        f"### {name}",
        "",
        f"Blender IK + Bake Action: {blender:.3f} ms / frame; app.bake without solving: {ms['no solve']:.3f}"
        f" ({blender / ms['no solve']:.1f}x).",
        "",
        "| method | bake | x Blender | sequence | prediction | 0-iteration solve | floor | x Blender |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for method in m["methods"]:
        bake, prediction = ms[(method, "bake")], ms.get((method, "prediction"), 0.0)
        floor = ms["no solve"] + prediction + ms[(method, "zero")]
        zero = f"{ms[(method, 'zero')]:.3f} ({m['zero_iterations'][method]:.1f} it.)"
        lines.append(
            f"| {method} | {bake:.3f} | {blender / bake:.1f}x | {ms[(method, 'sequence')]:.3f} | {prediction:.3f} |"
            f" {zero} | {floor:.3f} | {blender / floor:.1f}x |"
        )
    return lines


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_case_arguments(parser, poses=100, repeats=3)
    parser.add_argument("--frames", type=int, default=120)
    parser.add_argument("--methods", nargs="*", default=[], help="only these methods (default: every one)")
    args = parser.parse_args(argv)
    ext = load_extension(
        "solvers", "solvers.skeleton_solve", "solvers.skeleton_sequence", "rig.tree", "rig.keys", "app.bake", "app.spec"
    )
    args.methods = chosen_methods(parser, args.methods, ext.solvers.REGISTRY)
    header = (
        f"bpy {bt.bpy.app.version_string}; {args.frames} baked frames, least cost of {args.repeats} rounds,"
        " ms per frame (CPU time, or the wall clock where less)"
    )
    print_cases(ext, header, args.cases, lambda name: table(name, measure(ext, bt.CASES[name], args)))


if __name__ == "__main__":
    main()
    exit_after_main()
