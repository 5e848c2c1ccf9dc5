"""One solve against Blender's legacy IK constraint on the same chain, same run (µs per solve).

Run inside a bpy venv:  <venv>/bin/python bench/bench_solve.py [--targets 300] [--batch 10000]

Chains straight along +Y: 5 bones (9, 9, 9, 9, 4; the triangulation paper's) and 20 bones of 2
(both 40 long). Targets uniform in the paper's 60-unit box centred on the root.
- Blender: the IK constraint (500 iterations, its default) on the tip, chain_count = n; per target,
  move the target and `view_layer.update()`. The same loop without the constraint is the floor
  (moving the target and evaluating the armature); "net" is the difference.
- Chain IK: `solvers.solve(chain, target, method=...)` on a chain built once, default tolerance
  (wall time, as Blender's).
- Goals' cost (issue 9: at most 2x the plain solve): the same solve plain, with a pole (and pole
  angle), with a tip orientation (weight 1) and at weight 0.5, the four interleaved pass by pass
  (CPU time, best of 5), µs per solve and the ratio to the plain solve of the same method.
- Batch: `solvers.solve_batch` on --batch targets at 5 and 20 bones, µs per target per iteration
  (the time over the sum of every target's iterations), next to the general numpy code
  (`Method.batch`) on the same targets, interleaved; CPU time. The goals are at 5 bones.
Prints Markdown tables; the goals are the issue's (docs/benchmarks.md).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import solvers  # noqa: E402
from solvers import registry  # noqa: E402

CHAINS = {5: [9.0, 9.0, 9.0, 9.0, 4.0], 20: [2.0] * 20}
METHODS = ["triangulation", "fabrik", "ccd", "jacobian"]
# Goal per (bones, method): the largest ratio to Blender's time that meets it.
GOALS = {
    (5, "triangulation"): 0.25,
    (5, "fabrik"): 1.0,
    (5, "jacobian"): 1.0,
    (5, "ccd"): 4.0,
    (20, "triangulation"): 1.0,
    (20, "fabrik"): 1.0,
    (20, "jacobian"): 1.0,
}
BATCH_GOALS = {"fabrik": 0.2, "jacobian": 1.5, "ccd": 1.0}  # µs per target per iteration
GOAL_COST = 2.0  # a pole or tip orientation: at most this times the plain solve


def targets(count: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).uniform(-30.0, 30.0, size=(count, 3))


def chain(lengths: list[float]) -> solvers.Chain:
    ys = np.concatenate(([0.0], np.cumsum(lengths)))
    points = np.stack((np.zeros_like(ys), ys, np.zeros_like(ys)), axis=1)
    # Blender's bone frames for bones along +Y: the identity.
    return solvers.Chain(points, np.tile([1.0, 0.0, 0.0, 0.0], (len(lengths), 1)))


def per_call(fn, items, repeats: int = 3, clock=time.perf_counter) -> float:
    """Best of `repeats` passes over `items`, µs per item."""
    best = float("inf")
    for _ in range(repeats):
        start = clock()
        for item in items:
            fn(item)
        best = min(best, (clock() - start) / len(items))
    return best * 1e6


def blender_times(lengths: list[float], goals: np.ndarray) -> tuple[float, float] | None:
    """(µs per update with the IK constraint, µs per update without it), or None outside bpy."""
    try:
        import bpy
        from mathutils import Vector
    except ImportError:
        return None
    bpy.ops.wm.read_homefile(use_empty=True)
    arm = bpy.data.armatures.new("Rig")
    obj = bpy.data.objects.new("Rig", arm)
    bpy.context.scene.collection.objects.link(obj)
    bpy.context.view_layer.objects.active = obj
    bpy.ops.object.mode_set(mode="EDIT")
    head, parent = Vector((0.0, 0.0, 0.0)), None
    for i, length in enumerate(lengths):
        eb = arm.edit_bones.new(f"b{i}")
        eb.head, eb.tail = head, head + Vector((0.0, length, 0.0))
        if parent is not None:
            eb.parent, eb.use_connect = parent, True
        head, parent = eb.tail.copy(), eb
    bpy.ops.object.mode_set(mode="POSE")
    target = bpy.data.objects.new("Target", None)
    bpy.context.scene.collection.objects.link(target)
    con = obj.pose.bones[f"b{len(lengths) - 1}"].constraints.new("IK")
    con.target, con.chain_count = target, len(lengths)
    rows = [tuple(g) for g in goals.tolist()]
    layer = bpy.context.view_layer

    def move(g):
        target.location = g
        layer.update()

    with_ik = per_call(move, rows)
    con.mute = True
    layer.update()
    without = per_call(move, rows)
    con.mute = False
    return with_ik, without


GOAL_KINDS = ("plain", "pole", "orientation", "orientation 0.5")


def goal_kwargs(kind: str, lengths: list[float]) -> dict:
    if kind == "pole":
        return {"pole": [0.0, 0.5 * sum(lengths), 20.0], "pole_angle": 0.3}
    if kind.startswith("orientation"):
        weight = 0.5 if kind.endswith("0.5") else 1.0
        return {"target_rotation": [0.9238795325112867, 0.0, 0.0, 0.3826834323650898], "rotation_weight": weight}
    return {}


def goal_times(c: solvers.Chain, method: str, lengths: list[float], goals: np.ndarray) -> dict[str, float]:
    """CPU µs per solve for each of GOAL_KINDS, interleaved pass by pass (best of 5 each), so the
    ratios compare the same stretch of a noisy machine (CPU time: other jobs' turns drop out)."""
    times = dict.fromkeys(GOAL_KINDS, float("inf"))
    for _ in range(5):
        for kind in GOAL_KINDS:
            kw = goal_kwargs(kind, lengths)
            fn = lambda t, kw=kw: solvers.solve(c, t, method=method, **kw)  # noqa: E731
            times[kind] = min(times[kind], per_call(fn, goals, repeats=1, clock=time.process_time))
    return times


def single_table(count: int, seed: int, no_blender: bool = False) -> list[str]:
    goals = targets(count, seed)
    out = [
        "| bones | side | µs / solve | ratio to Blender | goal | met |",
        "|---|---|---:|---:|---|---|",
    ]
    for n, lengths in CHAINS.items():
        c = chain(lengths)
        blender = None if no_blender else blender_times(lengths, goals)
        anchor = None
        if blender is not None:
            anchor = blender[0]
            out.append(f"| {n} | Blender IK constraint (update with IK) | {blender[0]:.1f} | 1.00 | | |")
            out.append(f"| {n} | Blender: same update without IK (floor) | {blender[1]:.1f} | | | |")
            out.append(f"| {n} | Blender IK net (with - without) | {blender[0] - blender[1]:.1f} | | | |")
        for method in METHODS:
            plain = per_call(lambda t, c=c, m=method: solvers.solve(c, t, method=m), goals)
            ratio = "" if anchor is None else f"{plain / anchor:.2f}"
            goal = GOALS.get((n, method))
            goal_text = "" if goal is None else f"<= {goal:g}x"
            met = "" if goal is None or anchor is None else ("yes" if plain <= goal * anchor else "**no**")
            out.append(f"| {n} | Chain IK {method} | {plain:.1f} | {ratio} | {goal_text} | {met} |")
    return out


def goal_table(count: int, seed: int) -> list[str]:
    """The goals' cost: CPU µs per solve of each of GOAL_KINDS and the ratio to the plain solve
    (goal_times: interleaved, best of 5), per method at 5 and 20 bones."""
    goals = targets(count, seed)
    out = [
        "| bones | method | plain µs | pole µs (x plain) | tip orientation µs (x plain) "
        f"| orientation at weight 0.5 µs (x plain) | all <= {GOAL_COST:g}x |",
        "|---:|---|---:|---:|---:|---:|---|",
    ]
    for n, lengths in CHAINS.items():
        c = chain(lengths)
        for method in METHODS:
            times = goal_times(c, method, lengths, goals)
            cells, met = [], True
            for kind in GOAL_KINDS[1:]:
                x = times[kind] / times["plain"]
                met = met and x <= GOAL_COST
                cells.append(f"{times[kind]:.1f} ({x:.2f}" + ("" if x <= GOAL_COST else " **over**") + ")")
            out.append(
                f"| {n} | {method} | {times['plain']:.1f} | " + " | ".join(cells) + f" | {'yes' if met else '**no**'} |"
            )
    return out


def batch_table(count: int, seed: int) -> list[str]:
    """µs per target per iteration of `solve_batch` (its block kernel, solvers.soa) next to the
    general numpy code it stands in for (`Method.batch`: `iterate.run` with the method's step),
    timed interleaved in the same run, best of 3 each. Process CPU time (numpy runs on one
    thread, so it equals the wall time on a quiet machine; on the shared machine it leaves out
    the time other jobs hold the core)."""
    goals = targets(count, seed)
    out = [
        "| bones | method | m | mean iterations | general µs / target / it | block µs / target / it "
        "| speedup | goal | met |",
        "|---:|---|---:|---:|---:|---:|---:|---|---|",
    ]
    for n, lengths in CHAINS.items():
        c = chain(lengths)
        tol = solvers.DEFAULT_RELATIVE_TOLERANCE * c.total_length
        for method in ("triangulation", "fabrik", "ccd", "jacobian"):
            entry = registry.get(method)
            general, block, sol = float("inf"), float("inf"), None
            for _ in range(3):
                if entry.many is not None:
                    start = time.process_time()
                    entry.batch(c, goals, tol, entry.max_iterations, entry.defaults)
                    general = min(general, time.process_time() - start)
                start = time.process_time()
                sol = solvers.solve_batch(c, goals, method=method)
                block = min(block, time.process_time() - start)
            iterations = max(int(np.sum(sol.iterations)), 1)
            per = block / iterations * 1e6
            goal = BATCH_GOALS.get(method) if n == 5 else None
            goal_text = "" if goal is None else f"<= {goal:g}"
            met = "" if goal is None else ("yes" if per <= goal else "**no**")
            if entry.many is None:
                gen_text, speedup = "", ""
            else:
                gen_text, speedup = f"{general / iterations * 1e6:.3f}", f"{general / block:.1f}x"
            out.append(
                f"| {n} | {method} | {count} | {iterations / count:.2f} | {gen_text} | {per:.3f} | {speedup} "
                f"| {goal_text} | {met} |"
            )
    return out


def main() -> None:
    args = sys.argv[sys.argv.index("--") + 1 :] if "--" in sys.argv else sys.argv[1:]
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--targets", type=int, default=300)
    parser.add_argument("--batch", type=int, default=10000)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--single-only", action="store_true")
    parser.add_argument("--batch-only", action="store_true")
    parser.add_argument("--no-blender", action="store_true", help="Chain IK rows only")
    parser.add_argument("--goals-only", action="store_true", help="only the goals' cost table")
    opts = parser.parse_args(args)
    try:
        import bpy

        version = f"Blender {bpy.app.version_string}"
    except ImportError:
        version = "no bpy: Chain IK rows only"
    print(f"{version}; {opts.targets} targets in the 60-unit box, best of 3 passes; default tolerance.\n")
    if opts.goals_only:
        print("\n".join(goal_table(opts.targets, opts.seed)))
        return
    if not opts.batch_only:
        print("\n".join(single_table(opts.targets, opts.seed, opts.no_blender)))
        print("\nGoals' cost (CPU time, interleaved, best of 5):\n")
        print("\n".join(goal_table(opts.targets, opts.seed)))
    if not opts.single_only:
        print(f"\nBatch, {opts.batch} targets (solve_batch's block kernel vs the general code, best of 3):\n")
        print("\n".join(batch_table(opts.batch, opts.seed)))


if __name__ == "__main__":
    main()
