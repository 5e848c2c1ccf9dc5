"""The tree Jacobian's cost per solve split into its floor and its iterations, against Blender's tree
IK net in the same run (issue 20 item 5: per solve at most 1x Blender's).

Run inside a bpy venv:  <venv>/bin/python bench/bench_tree_floor_jacobian.py [--cases "two hands"]
  [--poses 100] [--repeats 5]

bench_tree.py's rig, chains, poses and Blender passes (its functions), and per pose:
- Chain IK's solve as bench_tree.py times it (`solvers.solve_skeleton`, effectors built inside);
- the same call with every target where the input pose has its tip (0 iterations): the entry
  layers, the tree's structure, one forward kinematics and the result, which no solve avoids;
- of that floor, the tree kernel alone (jacobian.tree_unrolled's written-out kernel on two hands
  and hands and head, tree_plain's numpy one on larger trees) with those met targets: the start's
  forward kinematics and the start and end products; the rest is the entry layers and the result;
- so each iteration's cost is (solve - floor) / iterations.
Each figure is each pose's fastest of --repeats interleaved passes, averaged over the poses.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_tree  # noqa: E402
from blender_bench import exit_after_main, load_extension  # noqa: E402
from tables import markdown_table, print_cases  # noqa: E402


def ours(solvers, skeleton, local0, bones, targets) -> tuple[np.ndarray, float]:
    """(seconds per pose, mean iterations) of the Jacobian's solve as bench_tree.ours_pass times it."""
    Effector = solvers.skeleton.Effector
    seconds, iterations = [], []
    for row in targets:
        start = time.perf_counter()
        sol = solvers.solve_skeleton(
            skeleton,
            local0,
            [Effector(b, position=p) for b, p in zip(bones, row, strict=True)],
            method="jacobian",
            tolerance=bench_tree.SOLVE_TOLERANCE,
        )
        seconds.append(time.perf_counter() - start)
        iterations.append(sol.iterations)
    return np.array(seconds), float(np.mean(iterations))


def kernel_floor(solvers, skeleton, local0, bones, targets) -> np.ndarray:
    """Seconds per pose of the tree kernel alone with `targets` (met at the start: 0 iterations),
    its structure built beforehand (as a solve finds it kept)."""
    tree_plain, tree_structure = solvers.jacobian.tree_plain, solvers.jacobian.tree_structure
    Effector = solvers.skeleton.Effector
    seconds = []
    for row in targets:
        tree = tree_structure.Tree(skeleton, [Effector(b, position=p) for b, p in zip(bones, row, strict=True)])
        start = local0[tree.moved]
        begin = time.perf_counter()
        tree_plain.iterate(tree, start, bench_tree.SOLVE_TOLERANCE, 200, 1e-4, 0.5)
        seconds.append(time.perf_counter() - begin)
    return np.array(seconds)


def measure(ext, chains, args) -> list[str]:
    solvers, tree = ext.solvers, ext.rig.tree
    rng = np.random.default_rng(args.seed)
    obj = bench_tree.metarig()
    layout = tree.tree_layout(obj, chains)
    skeleton, local0, names = tree.read_tree(obj, bench_tree.evaluated(obj), chains, layout)
    bones = list(layout.effectors)
    poses = np.array([bench_tree.random_locals(local0, rng, args.angle, solvers.quat) for _ in range(args.poses)])
    targets = bench_tree.fk_targets(skeleton, poses, bones)
    at_start = np.repeat(skeleton.forward(local0)[2][bones][None], len(targets), axis=0)
    empties = bench_tree.add_constraints(obj, chains)
    best: dict[str, np.ndarray] = {}
    counts = {}
    for _ in range(args.repeats):
        runs = {}
        bench_tree.mute(obj, chains, False)
        runs["blender"] = bench_tree.blender_pass(obj, empties, targets, names[0], chains)[0]
        bench_tree.mute(obj, chains, True)
        runs["floor"] = bench_tree.blender_pass(obj, empties, targets, names[0], chains)[0]
        runs["solve"], counts["solve"] = ours(solvers, skeleton, local0, bones, targets)
        runs["fixed"], counts["fixed"] = ours(solvers, skeleton, local0, bones, at_start)
        runs["kernel"] = kernel_floor(solvers, skeleton, local0, bones, at_start)
        for key, seconds in runs.items():
            best[key] = np.minimum(best.get(key, np.inf), seconds)
    t = {key: 1e3 * float(np.mean(seconds)) for key, seconds in best.items()}
    net = t["blender"] - t["floor"]
    per_iteration = (t["solve"] - t["fixed"]) / max(counts["solve"], 1e-9)
    figures = [
        ("Blender's tree IK net (update with IK - without)", net),
        (f"Chain IK Jacobian solve ({counts['solve']:.2f} iterations)", t["solve"]),
        ("... its floor: every target met at the start (0 iterations)", t["fixed"]),
        ("... of the floor, the tree kernel alone (start's forward kinematics, start and end products)", t["kernel"]),
        ("... one iteration: (solve - floor) / iterations", per_iteration),
    ]
    rows = [[what, f"{ms:.3f}", f"{ms / net:.2f}x"] for what, ms in figures]
    return markdown_table(["", "ms / solve", "vs Blender's net"], rows, "lrr")


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--poses", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--angle", type=float, default=0.6, help="largest random rotation per axis (radians)")
    parser.add_argument("--seed", type=int, default=10)
    parser.add_argument("--cases", nargs="*", default=["two hands"], choices=list(bench_tree.CASES))
    args = parser.parse_args(argv)
    ext = load_extension("solvers", "rig.tree")
    import bpy

    header = f"bpy {bpy.app.version_string}, {args.poses} poses, fastest of {args.repeats} passes"

    def case_lines(name: str) -> list[str]:
        return [f"### {name}", "", *measure(ext, bench_tree.CASES[name], args)]

    print_cases(ext, header, args.cases, case_lines)


if __name__ == "__main__":
    main()
    exit_after_main()
