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
(root_stiffness 0.5), and with the hand's softness 0.05 (soft IK, root fixed): mean time (each
target's fastest of --repeats interleaved passes), share of targets reached (every effector within
the tolerance), the pins' worst drift, the root's mean move.

`issue_case(ext, method, move_root)`: issue 20 item 1's case through the Solve operator (the panel's
chains: the hand chain leading, Move Root on or off, both feet pinned; the first "beyond" target),
measured on the written pose: the hand's error, the feet's drift, how far the hips moved
(tools/demo_root.py draws it; bench/bench_full_body.py reports it).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import bpy
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_tree import metarig  # noqa: E402
from blender_bench import chosen_methods, exit_after_main, load_extension  # noqa: E402

CHAINS = [("hand.L", 8, True), ("foot.L", 4, True), ("foot.R", 4, True)]
TOLERANCE = 1e-5


HAND, FEET = ("hand.L", 8), (("foot.L", 4), ("foot.R", 4))


def issue_scene(method: str, move_root: bool = True):
    """The metarig with the hand chain (Move Root on or off) and both feet pinned; its target 25%
    beyond the hand chain's reach from the hips, level with the hips' head and in front."""
    obj = metarig()
    bpy.context.view_layer.update()
    pose = obj.pose.bones
    names = [HAND[0]]
    while len(names) < HAND[1]:
        names.append(pose[names[-1]].parent.name)
    names.reverse()
    heads = [np.array(pose[n].head) for n in names]
    reach = sum(np.linalg.norm(b - a) for a, b in zip(heads, heads[1:], strict=False))
    reach += float(np.linalg.norm(np.array(pose[names[-1]].tail) - heads[-1]))
    goal = bpy.data.objects.new("Goal", None)
    bpy.context.scene.collection.objects.link(goal)
    goal.location = tuple(heads[0] + 1.25 * reach * np.array([0.0, -1.0, 0.0]))
    item = obj.chain_ik.chains.add()
    item.name, item.tip, item.chain_length, item.target, item.method = "hand", *HAND, goal, method
    item.move_root = move_root  # the panel's default tolerance (1e-5 of the chain's length)
    for tip, length in FEET:
        foot = obj.chain_ik.chains.add()
        foot.name, foot.tip, foot.chain_length, foot.pin = tip, tip, length, True
    bpy.context.view_layer.objects.active = obj
    bpy.context.view_layer.update()
    return obj, goal


def issue_case(ext, method: str, move_root: bool) -> dict:
    """Issue 20 item 1's case solved by the Solve operator (module doc), measured on the written pose."""
    obj, goal = issue_scene(method, move_root)
    pose = obj.pose.bones
    feet = {tip: np.array(pose[tip].tail) for tip, _ in FEET}
    hips = np.array(pose["spine"].head)
    bone = pose[HAND[0]]
    chain_length = 0.0
    for _ in range(HAND[1]):
        chain_length, bone = chain_length + bone.length, bone.parent
    result = bpy.ops.chain_ik.solve()
    bpy.context.view_layer.update()
    hand = obj.chain_ik.chains[0].result
    return {
        "tolerance": 1e-5 * chain_length,  # the panel's default: 1e-5 of the chain's length
        "finished": result == {"FINISHED"},
        "reached": bool(hand.reached),
        "error": float(np.linalg.norm(np.array(pose[HAND[0]].tail) - np.array(goal.matrix_world.translation))),
        "feet": max(float(np.linalg.norm(np.array(pose[tip].tail) - p)) for tip, p in feet.items()),
        "hips": float(np.linalg.norm(np.array(pose["spine"].head) - hips)),
    }


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


SOFTNESS = 0.05
# The plain solve, Move Root, soft IK (the hand's softness), and the exact solve (softness 0) of the
# hand's target moved to its soft point (solvers.common.soft_goals): soft IK's cost is that of the
# position it solves for. Beyond reach the soft point lies within 0.3% of full reach, where CCD and
# the Jacobian crawl (the straight arm's fold: the distance to the hips is second order in the
# bend), while the plain solve of an unreachable target stops at the straight arm.
VARIANTS = ("plain", "moving", "soft", "at soft point")


def run(solvers, skeleton, local0, bones, targets, method, variant: str):
    hand, left, right = bones
    effectors = [None, solvers.Effector(left, pin=True), solvers.Effector(right, pin=True)]
    extra = {"move_root": True, "root_stiffness": 0.5} if variant == "moving" else {}
    softness = SOFTNESS if variant in ("soft", "at soft point") else 0.0
    seconds, solutions = [], []
    for target in targets:
        effectors[0] = solvers.Effector(hand, target, softness=softness)
        if variant == "at soft point":  # (moved before the clock starts: the exact solve alone is timed)
            effectors = solvers.common.soft_goals.soften_effectors(skeleton, effectors)
        start = time.perf_counter()
        sol = solvers.solve_skeleton(skeleton, local0, effectors, method=method, tolerance=TOLERANCE, **extra)
        seconds.append(time.perf_counter() - start)
        solutions.append(sol)
    return np.array(seconds), solutions


def measure(ext, args) -> list[str]:
    """The table's lines (module doc)."""
    return table(measure_rows(ext, args), args)


def measure_rows(ext, args) -> dict:
    """{"reach": the hand chain's reach, "rows": per (case, method) the figures (module doc)}."""
    solvers, tree = ext.solvers, ext.rig.tree
    rng = np.random.default_rng(args.seed)
    obj = metarig()
    depsgraph = bpy.context.evaluated_depsgraph_get()
    layout = tree.tree_layout(obj, CHAINS)
    skeleton, local0, _ = tree.read_tree(obj, obj.evaluated_get(depsgraph), CHAINS, layout)
    bones = list(layout.effectors)
    beyond, reach = targets_beyond(skeleton, local0, bones[0], rng, args.targets)
    cases = {"beyond": beyond, "within": targets_within(skeleton, local0, bones[0], rng, args.targets, solvers.quat)}
    rows = {}
    for case, targets in cases.items():
        for method in getattr(args, "methods", None) or solvers.REGISTRY:
            best = {v: np.full(len(targets), np.inf) for v in VARIANTS}
            sols = {}
            for _ in range(args.repeats):
                for variant in VARIANTS:
                    seconds, sols[variant] = run(solvers, skeleton, local0, bones, targets, method, variant)
                    best[variant] = np.minimum(best[variant], seconds)
            row = {f"{v} ms": best[v].mean() * 1e3 for v in VARIANTS}
            row.update({f"{v} reached": float(np.mean([s.reached for s in sols[v]])) for v in VARIANTS})
            row["same"] = all(  # soft IK is the exact solve at the soft point, to the bit
                a.iterations == b.iterations and np.array_equal(a.local, b.local)
                for a, b in zip(sols["soft"], sols["at soft point"], strict=True)
            )
            row["drift"] = max(float(np.max(s.error[1:])) for s in sols["moving"])
            row["moved"] = float(np.mean([np.linalg.norm(s.root_shift) for s in sols["moving"]]))
            rows[case, method] = row
    return {"reach": reach, "rows": rows}


def table(measured: dict, args) -> list[str]:
    lines = [
        f"Metarig, hand chain from the hips (reach {measured['reach']:.3f}) and both feet pinned; {args.targets}"
        f" targets per case, tolerance {TOLERANCE:g}, root_stiffness 0.5, softness {SOFTNESS:g};"
        f" bpy {bpy.app.version_string}",
        "",
        "| case | method | plain ms | reached | Move Root ms | reached | x plain | pins' worst drift"
        " | root moved (mean) | soft ms | x plain | exact at soft point ms | x plain | soft = exact |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for (case, method), r in measured["rows"].items():
        plain, moving, soft, point = r["plain ms"], r["moving ms"], r["soft ms"], r["at soft point ms"]
        lines.append(
            f"| {case} | {method} | {plain:.2f} | {r['plain reached']:.0%} | {moving:.2f} | {r['moving reached']:.0%}"
            f" | {moving / plain:.2f} | {r['drift']:.1e} | {r['moved']:.3f} | {soft:.2f} | {soft / plain:.2f}"
            f" | {point:.2f} | {point / plain:.2f} | {'yes' if r['same'] else 'no'} |"
        )
    return lines


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--targets", type=int, default=30)
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--methods", nargs="*", default=None, help="default: every method in solvers.REGISTRY")
    args = p.parse_args(argv)
    ext = load_extension("solvers", "rig.tree")
    args.methods = chosen_methods(p, args.methods, ext.solvers.REGISTRY)
    import addon_utils

    addon_utils.enable("rigify", default_set=True)  # the metarig's operator
    try:
        print("\n".join(measure(ext, args)))
    finally:
        addon_utils.disable("rigify", default_set=True)


if __name__ == "__main__":
    main()
    exit_after_main()
