"""Move Root's cost and reach (issue 20 items 1 and 5): a movable-root solve against the plain solve
of the same goals, same run, every method.

Run inside a bpy venv:  <venv>/bin/python bench/bench_root.py [--targets 30] [--repeats 5]

Rig: Rigify's human metarig at the origin, rest pose as every solve's input pose, read once by
rig.tree.read_tree. Chains as the issue's case: the hand chain from the hips (hand.L, 8 bones:
hand ... spine) and both feet pinned (foot.L/.R, 4 bones: foot ... spine), one group at the hips.
- beyond: the hand's target 1.1-1.4 x the chain's reach from the hips' head (the head-to-head links
  down its branch and the hand's length), in front (within 45 degrees of -Y) and within 0.2 x the
  reach of the hips' height; the first is the issue's: 1.25 x, level, straight in front.
- within: the hand's end in random poses of the hand chain's bones (every local rotation within
  0.5 rad of the rest): reachable with the hips where they are.
Per case and method: `solvers.solve_skeleton` (tolerance 1e-5) without and with move_root
(root_stiffness 0.5): mean time (each target's fastest of --repeats interleaved passes), share of
targets reached (every effector within the tolerance), the pins' worst drift, the root's mean move.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import bpy
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from blender_bench import exit_after_main, load_extension  # noqa: E402

CHAINS = [("hand.L", 8, True), ("foot.L", 4, True), ("foot.R", 4, True)]
TOLERANCE = 1e-5


def metarig():
    bpy.ops.wm.read_homefile(use_empty=True)
    bpy.ops.object.armature_human_metarig_add()
    obj = bpy.context.object
    bpy.ops.object.mode_set(mode="POSE")
    return obj


def targets_beyond(skeleton, local0, hand: int, rng, count: int) -> tuple[np.ndarray, float]:
    _, heads, _ = skeleton.forward(local0)
    branch = skeleton.branch(hand)
    reach = sum(float(np.linalg.norm(skeleton.offsets[b])) for b in branch[1:]) + float(skeleton.lengths[hand])
    hips = heads[branch[0]]
    out = [hips + 1.25 * reach * np.array([0.0, -1.0, 0.0])]
    while len(out) < count:
        turn = rng.uniform(-np.pi / 4, np.pi / 4)
        d = np.array([np.sin(turn), -np.cos(turn), 0.0]) * rng.uniform(1.1, 1.4) * reach
        d[2] = rng.uniform(-0.2, 0.2) * reach
        out.append(hips + d)
    return np.array(out), reach


def targets_within(skeleton, local0, hand: int, rng, count: int, quat) -> np.ndarray:
    bones = skeleton.branch(hand)
    out = []
    for _ in range(count):
        posed = np.array(local0)
        turn = quat.from_rotation_vector(rng.uniform(-0.5, 0.5, (len(bones), 3)))
        posed[bones] = quat.multiply(local0[bones], turn)
        out.append(skeleton.forward(posed)[2][hand])
    return np.array(out)


def run(solvers, skeleton, local0, bones, targets, method, moving: bool):
    hand, left, right = bones
    effectors = [None, solvers.Effector(left, pin=True), solvers.Effector(right, pin=True)]
    extra = {"move_root": True, "root_stiffness": 0.5} if moving else {}
    seconds, solutions = [], []
    for target in targets:
        effectors[0] = solvers.Effector(hand, target)
        start = time.perf_counter()
        sol = solvers.solve_skeleton(skeleton, local0, effectors, method=method, tolerance=TOLERANCE, **extra)
        seconds.append(time.perf_counter() - start)
        solutions.append(sol)
    return np.array(seconds), solutions


def measure(ext, args) -> list[str]:
    solvers, tree = ext.solvers, ext.rig.tree
    rng = np.random.default_rng(args.seed)
    obj = metarig()
    depsgraph = bpy.context.evaluated_depsgraph_get()
    layout = tree.tree_layout(obj, CHAINS)
    skeleton, local0, _ = tree.read_tree(obj, obj.evaluated_get(depsgraph), CHAINS, layout)
    bones = list(layout.effectors)
    beyond, reach = targets_beyond(skeleton, local0, bones[0], rng, args.targets)
    cases = {"beyond": beyond, "within": targets_within(skeleton, local0, bones[0], rng, args.targets, solvers.quat)}
    lines = [
        f"Metarig, hand chain from the hips (reach {reach:.3f}) and both feet pinned; {args.targets} targets per case,"
        f" tolerance {TOLERANCE:g}, root_stiffness 0.5; bpy {bpy.app.version_string}",
        "",
        "| case | method | plain ms | reached | Move Root ms | reached | x plain | pins' worst drift | root moved |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for case, targets in cases.items():
        for method in solvers.REGISTRY:
            best = {False: np.full(len(targets), np.inf), True: np.full(len(targets), np.inf)}
            sols = {}
            for _ in range(args.repeats):
                for moving in (False, True):
                    seconds, sols[moving] = run(solvers, skeleton, local0, bones, targets, method, moving)
                    best[moving] = np.minimum(best[moving], seconds)
            reached = {m: np.mean([s.reached for s in sols[m]]) for m in (False, True)}
            drift = max(float(np.max(s.error[1:])) for s in sols[True])
            moved = np.mean([np.linalg.norm(s.root_shift) for s in sols[True]])
            plain, moving = best[False].mean() * 1e3, best[True].mean() * 1e3
            lines.append(
                f"| {case} | {method} | {plain:.2f} | {reached[False]:.0%} | {moving:.2f} | {reached[True]:.0%}"
                f" | {moving / plain:.2f} | {drift:.1e} | {moved:.3f} |"
            )
    return lines


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--targets", type=int, default=30)
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--seed", type=int, default=7)
    args = p.parse_args(argv)
    ext = load_extension("solvers", "rig.tree")
    import addon_utils

    addon_utils.enable("rigify", default_set=True)  # the metarig's operator
    try:
        print("\n".join(measure(ext, args)))
    finally:
        addon_utils.disable("rigify", default_set=True)


if __name__ == "__main__":
    main()
    exit_after_main()
