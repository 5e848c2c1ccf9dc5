"""The tree Jacobian's and tree FABRIK's cost per solve, part by part, against Blender's tree IK net
in the same run (issue 20 item 5: per solve at most 1x Blender's).

Run inside a bpy venv:  <venv>/bin/python bench/bench_tree_floor.py [--methods jacobian,fabrik]
  [--cases "two hands" ...] [--poses 100] [--repeats 5]

bench_tree.py's rig, cases, poses and Blender passes (bench/tree_case.py: same seed, the same
targets). Per pose, timed (wall clock, each pose's fastest of --repeats interleaved passes, mean
over poses; Blender's passes shared by the methods):
- Blender IK net: the depsgraph update with the IK constraints less the same update muted.
- solve: `solvers.solve_skeleton(..., method=...)` as bench_tree.py times it (effectors built inside).
- fixed cost (the floor): the same call with every target where the input pose has its tip
  (0 iterations): the entry layers, the tree's structure, one forward kinematics and the result,
  which no solve avoids.
Jacobian, besides:
- of that floor, the tree kernel alone (jacobian.tree_plain.iterate: tree_unrolled's written-out
  kernel on two hands and hands and head, the numpy one on larger trees; its structure built
  beforehand, as a solve finds it kept) with those met targets: the start's forward kinematics and
  the start and end products; the rest is the entry layers and the result;
- so each iteration's cost is (solve - floor) / iterations.
FABRIK, besides (its fixed cost taken without the start, tree_start_steps 0):
- least-squares start: `skeleton_solve.stepped_start` alone (Method.tree_start_steps steps).
- FABRIK from the input pose: the same solve with tree_start_steps 0 (the passes alone), with its
  rotation cost.
- fixed cost + the start: what any solve with the start costs before its first FABRIK iteration
  (per solve at most Blender's net needs it below that net); the rest, the FABRIK solve less
  both: its iterations.
- the start split: its kernel's first look alone (`skeleton_solve.least_squares_steps` with 0
  steps: the least-squares tree kernel's call measuring the input pose) and the steps (the rest);
- FABRIK's tree kernel alone from the start (`Method.tree`, the start and effectors made
  beforehand), whole and capped at 0 iterations (its own fixed cost: plan, forward kinematics and
  measure of the start, to_locals, the result measured); the difference is its iterations.
Prints one Markdown table per case and method: each part's ms and its ratio to Blender's net.
"""

from __future__ import annotations

import argparse
import sys
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_tree as bt  # noqa: E402
from blender_bench import chosen_methods, exit_after_main, load_extension  # noqa: E402
from tables import markdown_table, print_cases  # noqa: E402
from tree_case import add_case_arguments, blender_passes, keep_fastest, read_case, timed  # noqa: E402

METHODS = ("jacobian", "fabrik")


def solver(case, method: str):
    """One row's solve through solvers.solve_skeleton, as bench_tree.ours_pass times it."""

    def solve(row):
        return case.solvers.solve_skeleton(
            case.skeleton, case.local0, case.effectors(row), method=method, tolerance=bt.SOLVE_TOLERANCE
        )

    return solve


def jacobian_parts(ext, case, targets, here) -> tuple[dict, dict]:
    """({part: (call, rows, prepare)}, {solve whose iterations and rotation cost the table shows: call})."""
    tree_plain, tree_structure = ext.solvers.jacobian.tree_plain, ext.solvers.jacobian.tree_structure
    solve = solver(case, "jacobian")

    def kernel_input(row):
        tree = tree_structure.Tree(case.skeleton, case.effectors(row))
        return tree, case.local0[tree.moved]

    def kernel(prepared):
        tree, start = prepared
        tree_plain.iterate(tree, start, bt.SOLVE_TOLERANCE, 200, 1e-4, 0.5)

    parts = {"solve": (solve, targets, None), "fixed": (solve, here, None), "kernel": (kernel, here, kernel_input)}
    return parts, {"solve": solve}


def fabrik_parts(ext, case, targets, here) -> tuple[dict, dict]:
    """As jacobian_parts, for tree FABRIK (its start and its passes from the input pose)."""
    registry, skeleton_solve = ext.solvers.registry, ext.solvers.skeleton_solve
    fabrik = registry.get("fabrik")
    solve = solver(case, "fabrik")

    @contextmanager
    def no_start():
        registry.REGISTRY["fabrik"] = replace(fabrik, tree_start_steps=0)
        try:
            yield
        finally:
            registry.REGISTRY["fabrik"] = fabrik

    def from_input(row):
        with no_start():
            return solve(row)

    def start(row):
        return skeleton_solve.stepped_start(
            case.skeleton, case.local0, case.effectors(row), bt.SOLVE_TOLERANCE, fabrik.tree_start_steps
        )

    def look(row):  # the start's kernel call measuring the input pose, no step
        near = skeleton_solve.START_WITHIN * bt.SOLVE_TOLERANCE
        return skeleton_solve.least_squares_steps(case.skeleton, case.local0, case.effectors(row), near, 0)

    def started(row):  # (untimed) what FABRIK's tree kernel gets: the effectors and the start
        return case.effectors(row), start(row)

    def kernel(cap):
        iterations = cap if cap is not None else fabrik.tree_max_iterations or fabrik.max_iterations

        def call(prepared):
            effectors, local = prepared
            return fabrik.tree(case.skeleton, local, effectors, bt.SOLVE_TOLERANCE, iterations, fabrik.defaults)

        return call

    parts = {"fabrik": (solve, targets, None), "fixed": (from_input, here, None), "start": (start, targets, None)}
    parts["look"] = (look, targets, None)
    parts["kernel"] = (kernel(None), targets, started)
    parts["kernel0"] = (kernel(0), targets, started)
    parts["input"] = (from_input, targets, None)
    return parts, {"fabrik": solve, "input": from_input}


PARTS = {"jacobian": jacobian_parts, "fabrik": fabrik_parts}


def measure(ext, chains, args) -> dict:
    """Per method: ms per part, and mean iterations and rotation cost of its shown solves; Blender's net."""
    case = read_case(ext, chains, args)
    targets, here = case.targets(), case.at_start()
    empties = bt.add_constraints(case.obj, chains)
    parts = {method: PARTS[method](ext, case, targets, here) for method in args.methods}
    best: dict = {}
    for _ in range(args.repeats):
        blender_passes(case, chains, empties, targets, best)
        for method, (timed_parts, _) in parts.items():
            for key, (call, rows, prepare) in timed_parts.items():
                keep_fastest(best, (method, key), timed(call, rows, prepare))
    ms = {key: 1e3 * float(np.mean(seconds)) for key, seconds in best.items()}
    out = {"net": ms["blender"] - ms["floor"]}
    quat = case.solvers.quat
    for method, (_, shown) in parts.items():
        sols = {key: [call(row) for row in targets] for key, call in shown.items()}
        out[method] = {
            "ms": {key: ms[(method, key)] for key in parts[method][0]},
            "iterations": {key: float(np.mean([s.iterations for s in sol])) for key, sol in sols.items()},
            "cost": {
                key: float(np.mean([bt.rotation_cost(case.skeleton, case.local0, s.local, quat) for s in sol]))
                for key, sol in sols.items()
            },
        }
    return out


def jacobian_table(m: dict, net: float) -> list[str]:
    ms, its = m["ms"], m["iterations"]
    per_iteration = (ms["solve"] - ms["fixed"]) / max(its["solve"], 1e-9)
    figures = [
        ("Blender's tree IK net (update with IK - without)", net),
        (f"Chain IK Jacobian solve ({its['solve']:.2f} iterations)", ms["solve"]),
        ("... its floor: every target met at the start (0 iterations)", ms["fixed"]),
        ("... of the floor, the tree kernel alone (start's forward kinematics, start and end products)", ms["kernel"]),
        ("... one iteration: (solve - floor) / iterations", per_iteration),
    ]
    rows = [[what, f"{t:.3f}", f"{t / net:.2f}x"] for what, t in figures]
    return markdown_table(["", "ms / solve", "vs Blender's net"], rows, "lrr")


def fabrik_table(m: dict, net: float) -> list[str]:
    ms, cost, its = m["ms"], m["cost"], m["iterations"]
    figures = [
        ("Blender IK net (with - without)", net, ""),
        (
            "FABRIK solve (least-squares start, then its passes)",
            ms["fabrik"],
            f"{cost['fabrik']:.1f}° ({its['fabrik']:.1f} it.)",
        ),
        ("  of which: fixed cost (no start, tips already there)", ms["fixed"], ""),
        ("  of which: the least-squares start alone", ms["start"], ""),
        ("    of the start: its kernel's first look (0 steps)", ms["look"], ""),
        ("    of the start: its steps (the start less the look)", ms["start"] - ms["look"], ""),
        ("  fixed cost + the start (the floor with the start)", ms["fixed"] + ms["start"], ""),
        ("  the rest: the FABRIK iterations from the start", ms["fabrik"] - ms["fixed"] - ms["start"], ""),
        ("FABRIK's tree kernel alone from the start", ms["kernel"], ""),
        ("  of it: capped at 0 iterations (plan, FK and measure, to_locals, result)", ms["kernel0"], ""),
        ("  of it: its iterations (the kernel less that)", ms["kernel"] - ms["kernel0"], ""),
        ("FABRIK from the input pose (no start)", ms["input"], f"{cost['input']:.1f}° ({its['input']:.1f} it.)"),
    ]
    rows = [[what, f"{t:.3f}", f"{t / net:.2f}x", extra] for what, t, extra in figures]
    return markdown_table(["part", "ms / solve", "x Blender's net", "rotation cost"], rows, "lrrr")


TABLES = {"jacobian": jacobian_table, "fabrik": fabrik_table}


def case_lines(name: str, m: dict, methods) -> list[str]:
    lines = []
    for method in methods:
        lines += [f"### {name}: {method}", "", *TABLES[method](m[method], m["net"]), ""]
    return lines[:-1]


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--methods", nargs="*", default=[], help="jacobian, fabrik or both (default both)")
    add_case_arguments(parser)
    args = parser.parse_args(argv)
    args.methods = chosen_methods(parser, args.methods, METHODS)
    ext = load_extension("solvers", "solvers.skeleton_solve", "rig.tree")
    import bpy

    header = (
        f"bpy {bpy.app.version_string}, {args.poses} poses, fastest of {args.repeats} interleaved passes (wall clock)"
    )
    print_cases(
        ext, header, args.cases, lambda name: case_lines(name, measure(ext, bt.CASES[name], args), args.methods)
    )


if __name__ == "__main__":
    main()
    exit_after_main()
