"""Tree FABRIK per solve, part by part, against Blender's tree IK net in the same run (issue 20 item 5).

Run inside a bpy venv:  <venv>/bin/python bench/bench_tree_floor_fabrik.py [--poses 100] [--repeats 5]

The rig, cases, poses and Blender's timing are bench_tree.py's (same seed: the same targets). Per
pose, timed (wall clock, each pose's fastest of --repeats interleaved passes, mean over poses):
- Blender IK net: the depsgraph update with the IK constraints less the same update muted.
- FABRIK: `solvers.solve_skeleton(..., method="fabrik")`, as bench_tree.py times it.
- fixed cost: the same call without the start (tree_start_steps 0) and with the targets where the
  input pose already has the tips (no step, no iteration: validation, plan, forward kinematics,
  the local rotations back, the errors measured on the result), the floor of any solve through
  solve_skeleton on this tree.
- least-squares start: `skeleton_solve.stepped_start` alone (Method.tree_start_steps steps).
- FABRIK from the input pose: the same solve with tree_start_steps 0 (the passes alone, as before
  the start), with its rotation cost.
- fixed cost + the start: what any solve with the start costs before its first FABRIK iteration
  (the floor of this design: per solve at most Blender's net needs it below that net); the rest,
  the FABRIK solve less both: its iterations.
Prints one Markdown table: each part's ms and its ratio to Blender's net.
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_tree as bt  # noqa: E402
from blender_bench import exit_after_main, load_extension  # noqa: E402
from tables import print_cases  # noqa: E402


def timed(call, rows) -> np.ndarray:
    out = []
    for row in rows:
        start = time.perf_counter()
        call(row)
        out.append(time.perf_counter() - start)
    return np.array(out)


def measure(ext, chains, args) -> dict:
    solvers, tree = ext.solvers, ext.rig.tree
    quat, Effector = solvers.quat, solvers.skeleton.Effector
    registry, skeleton_solve = solvers.registry, ext.solvers.skeleton_solve
    rng = np.random.default_rng(args.seed)
    obj = bt.metarig()
    layout = tree.tree_layout(obj, chains)
    skeleton, local0, names = tree.read_tree(obj, bt.evaluated(obj), chains, layout)
    bones = list(layout.effectors)
    poses = np.array([bt.random_locals(local0, rng, args.angle, quat) for _ in range(args.poses)])
    targets = bt.fk_targets(skeleton, poses, bones)
    here = np.repeat(skeleton.forward(local0)[2][bones][None], len(targets), axis=0)
    empties = bt.add_constraints(obj, chains)
    fabrik = registry.get("fabrik")
    plain = replace(fabrik, tree_start_steps=0)

    def solve(row, method="fabrik"):
        effectors = [Effector(b, position=p) for b, p in zip(bones, row, strict=True)]
        return solvers.solve_skeleton(skeleton, local0, effectors, method=method, tolerance=bt.SOLVE_TOLERANCE)

    def start(row):
        effectors = [Effector(b, position=p) for b, p in zip(bones, row, strict=True)]
        return skeleton_solve.stepped_start(skeleton, local0, effectors, bt.SOLVE_TOLERANCE, fabrik.tree_start_steps)

    def from_input(row):
        registry.REGISTRY["fabrik"] = plain
        try:
            return solve(row)
        finally:
            registry.REGISTRY["fabrik"] = fabrik

    parts = {"fabrik": (solve, targets), "fixed": (from_input, here), "start": (start, targets)}
    parts["input"] = (from_input, targets)
    best: dict[str, np.ndarray] = {}
    for _ in range(args.repeats):
        for key, goal in (("blender", targets), ("floor", targets)):
            bt.mute(obj, chains, key == "floor")
            seconds = bt.blender_pass(obj, empties, goal, names[0], chains)[0]
            best[key] = np.minimum(best.get(key, np.inf), seconds)
        for key, (call, goal) in parts.items():
            best[key] = np.minimum(best.get(key, np.inf), timed(call, goal))
    ms = {key: 1e3 * float(np.mean(v)) for key, v in best.items()}
    cost = {
        key: float(np.mean([bt.rotation_cost(skeleton, local0, call(row).local, quat) for row in targets]))
        for key, call in (("fabrik", solve), ("input", from_input))
    }
    iterations = {
        key: float(np.mean([call(row).iterations for row in targets]))
        for key, call in (("fabrik", solve), ("input", from_input))
    }
    return {"ms": ms, "cost": cost, "iterations": iterations}


def table(name: str, m: dict) -> list[str]:
    ms, cost, its = m["ms"], m["cost"], m["iterations"]
    net = ms["blender"] - ms["floor"]
    rows = [
        ("Blender IK net (with - without)", net, ""),
        (
            "FABRIK solve (least-squares start, then its passes)",
            ms["fabrik"],
            f"{cost['fabrik']:.1f}° ({its['fabrik']:.1f} it.)",
        ),
        ("  of which: fixed cost (no start, tips already there)", ms["fixed"], ""),
        ("  of which: the least-squares start alone", ms["start"], ""),
        ("  fixed cost + the start (the floor with the start)", ms["fixed"] + ms["start"], ""),
        ("  the rest: the FABRIK iterations from the start", ms["fabrik"] - ms["fixed"] - ms["start"], ""),
        ("FABRIK from the input pose (no start)", ms["input"], f"{cost['input']:.1f}° ({its['input']:.1f} it.)"),
    ]
    lines = [f"### {name}", "", "| part | ms / solve | x Blender's net | rotation cost |", "|---|---:|---:|---:|"]
    lines += [f"| {what} | {t:.3f} | {t / net:.2f}x | {extra} |" for what, t, extra in rows]
    return lines


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--poses", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--angle", type=float, default=0.6)
    parser.add_argument("--seed", type=int, default=10)
    parser.add_argument("--cases", nargs="*", default=list(bt.CASES), choices=list(bt.CASES))
    args = parser.parse_args(argv)
    ext = load_extension("solvers", "solvers.skeleton_solve", "rig.tree")
    header = f"{args.poses} poses, fastest of {args.repeats} interleaved passes (wall clock)"
    print_cases(ext, header, args.cases, lambda name: table(name, measure(ext, bt.CASES[name], args)))


if __name__ == "__main__":
    main()
    exit_after_main()
