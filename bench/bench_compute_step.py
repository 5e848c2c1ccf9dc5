"""The Solve operator's compute step of a chain alone (`app.solve.solve_unit`, in older checkouts
`app.solve.solve_spec`: read, solve, channel values, figures)
against Blender's IK constraint, same 5-bone chain, same run; optionally several checkouts at once.

Run inside a bpy venv:
    <venv>/bin/python bench/bench_compute_step.py [--targets 60] [--methods triangulation,fabrik]
        [--checkout DIR ...]

Each --checkout (a directory holding an extracted commit, e.g. `git archive <rev> | tar -x -C DIR`)
is loaded as its own package beside this one, so before/after compare in one process. Per target,
the checkouts' compute calls alternate (order reversed every other target), best of --reps
calls each, on the chain of bench_pose_operator (bent, 5 bones); nothing is written. The anchor is
Blender's IK constraint on the same chain (500 iterations): per target, moving the target and
`view_layer.update()` with the constraint, minus the same without it (the armature's own
evaluation), best of --reps. Wall time on both sides, medians over targets. Prints a Markdown table.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import statistics
import sys
import time
from pathlib import Path

import bpy

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_pose_operator import N_BONES, build, targets  # noqa: E402

REPO = Path(__file__).resolve().parents[1]


def load(directory: Path, name: str):
    """The extension in `directory` as the package `name`, with app.solve and app.spec imported."""
    init = directory / "__init__.py"
    spec = importlib.util.spec_from_file_location(name, init, submodule_search_locations=[str(directory)])
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    importlib.import_module(f"{name}.app.solve")
    importlib.import_module(f"{name}.app.spec")
    return module


def best(fn, reps: int) -> float:
    t = float("inf")
    for _ in range(reps):
        start = time.perf_counter()
        fn()
        t = min(t, time.perf_counter() - start)
    return t


def blender_net(goals, reps: int) -> float:
    """Median over targets of (update with the IK constraint - update without it), seconds."""
    obj, target = build("BlenderIK")
    con = obj.pose.bones[f"b{N_BONES - 1}"].constraints.new("IK")
    con.target, con.chain_count, con.iterations = target, N_BONES, 500
    layer = bpy.context.view_layer

    def move(g):
        target.location = g
        layer.update()

    net = []
    for g in goals:
        con.mute = False
        with_ik = best(lambda g=g: move(g), reps)
        con.mute = True
        without = best(lambda g=g: move(g), reps)
        net.append(with_ik - without)
    con.mute = False
    return statistics.median(net)


def compute_times(packages, method: str, goals, reps: int) -> list[float]:
    """Median over targets of each package's best compute time, seconds, alternated per target."""
    obj, target = build("ChainIK")
    tip = f"b{N_BONES - 1}"
    specs = [p.app.spec.ChainSpec(tip=tip, chain_length=N_BONES, target=target, method=method) for p in packages]
    times = [[] for _ in packages]
    for k, g in enumerate(goals):
        target.location = g
        bpy.context.view_layer.update()
        depsgraph = bpy.context.evaluated_depsgraph_get()
        order = range(len(packages)) if k % 2 == 0 else range(len(packages) - 1, -1, -1)
        for i in order:
            call = compute_call(packages[i])
            times[i].append(best(lambda call=call, spec=specs[i], dg=depsgraph: call(obj, spec, dg), reps))
    return [statistics.median(t) for t in times]


def compute_call(package):
    """`(obj, spec, depsgraph) -> outcome` of a chain alone in `package`: `solve_unit` (a unit of
    one), or `solve_spec` in checkouts from before the one path."""
    solve = package.app.solve
    if hasattr(solve, "solve_unit") and not hasattr(solve, "solve_spec"):
        return lambda obj, spec, dg: solve.solve_unit(obj, [spec], dg)[0]
    return solve.solve_spec


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--targets", type=int, default=60)
    parser.add_argument("--reps", type=int, default=7)
    parser.add_argument("--methods", default="triangulation,fabrik,ccd,jacobian")
    parser.add_argument("--checkout", action="append", default=[], help="another checkout to compare (repeatable)")
    args = parser.parse_args()
    dirs = [Path(d).resolve() for d in args.checkout] + [REPO]
    labels = [d.name for d in dirs[:-1]] + ["this checkout"]
    packages = [load(d, f"chain_ik_bench{i}") for i, d in enumerate(dirs)]
    obj, _ = build("probe")
    goals = [tuple(g) for g in targets(args.targets, sum(b.length for b in obj.data.bones))]
    anchor = blender_net(goals, args.reps)
    print(f"Blender {bpy.app.version_string}, {N_BONES}-bone chain, {args.targets} targets; compute step =")
    print(
        f"app.solve.solve_unit of a chain alone (best of {args.reps} per target, median);"
        " Blender IK = net constraint evaluation.\n"
    )
    print("| method | " + " | ".join(f"{label}: µs (ratio to Blender IK)" for label in labels) + " |")
    print("|---|" + "---|" * len(labels))
    print(f"| Blender IK constraint (500 it.) | {anchor * 1e6:.1f} µs (1.00) |" + " |" * (len(labels) - 1))
    for method in args.methods.split(","):
        row = compute_times(packages, method, goals, args.reps)
        print(f"| {method} | " + " | ".join(f"{t * 1e6:.1f} ({t / anchor:.2f})" for t in row) + " |")


if __name__ == "__main__":
    main()
