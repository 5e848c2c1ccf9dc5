"""Live against Blender's own IK constraints: one update of Rigify's metarig, same chains, same run.

Run inside a bpy venv:  <venv>/bin/python bench/bench_live.py [--updates 60] [--repeats 3] [--quick]

Rig: Rigify's human metarig at the origin. Chains: both arms, the head and both legs, set up
as bench/bench_tree.py's (IK on each forearm, the head and each shin, Use Tail), two ways:
- *five chains*: each its own chain (forearm + upper arm, head + neck, shin + thigh: 2 bones
  each); no bone shared, five lone chains (Blender: five IK trees; Live: five units).
- *five from the hips*: every chain to the root (chain_count 0); one tree (Blender merges the
  constraints at the hips; Live solves the five chains as one group).
Targets: empties moving along a smooth FK path through random poses of the chains' bones
(bench_tree.smooth_motion, jointly reachable), one step per update, as a user drags them.
- Blender: IK constraints (legacy solver, its default 500 iterations) targeting the empties.
- Live: panel chains with those targets, Live on (tolerance 1e-5, each method in solvers.REGISTRY;
  the constraints removed). Each update solves from the pose the last one wrote, writes the
  channels and evaluates the written pose (what Live does when a target moves).
- Per update: move the empties and time `view_layer.update()` (the depsgraph evaluation, and for
  Live its handler: read, solve, write, evaluate again). The floor: the same update with the
  constraints muted (Blender) and Live off. The write floor: what any Live update pays to show the
  pose it wrote, solving nothing: Live off and, in its place, a handler run where Live's runs
  (depsgraph_update_post) that writes every chain bone's channels as they are (rig.modes, Live's
  writer) and evaluates the depsgraph again, as Live does after its last write. A channel write
  tags the armature for a copy (Blender copies the whole object to its evaluated twin) and for its
  pose (every bone evaluated again): the "copy" row is the same handler setting the channels with
  `foreach_set` instead and tagging the object's animation (TIME), which copies it and evaluates no
  pose (so it shows nothing; it measures the copy's share). Blender's IK constraints pay neither:
  a moved target re-evaluates the IK trees and the bones below them on the evaluated twin.
  Worst tip error after each update, read from the evaluated pose.
Timings: --repeats interleaved passes over the same path; each update's fastest pass, averaged;
wall time and the process's CPU time (the ratios to Blender per clock; "<= 2x" on CPU time).
Goal (issue 20 item 5): one Live update at most 2x Blender's update with its IK constraints.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import bpy
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_tree import add_constraints, evaluated, metarig, mute, smooth_motion, tips_world  # noqa: E402
from blender_bench import exit_after_main, load_extension  # noqa: E402
from tables import markdown_table, print_cases  # noqa: E402

CASES = {
    "five chains": [
        ("forearm.L", 2, True),
        ("forearm.R", 2, True),
        ("spine.006", 2, True),
        ("shin.L", 2, True),
        ("shin.R", 2, True),
    ],
    "five from the hips": [
        ("forearm.L", 0, True),
        ("forearm.R", 0, True),
        ("spine.006", 0, True),
        ("shin.L", 0, True),
        ("shin.R", 0, True),
    ],
}
TOLERANCE = 1e-5


def new_empties(count: int) -> list:
    empties = []
    for k in range(count):
        empties.append(bpy.data.objects.new(f"Target{k}", None))
        bpy.context.scene.collection.objects.link(empties[-1])
    return empties


def updates(obj, chains, empties, path: np.ndarray) -> tuple[np.ndarray, float]:
    """((wall, CPU) seconds per update, worst tip error over the path): move the empties, time the
    update."""
    for empty, p in zip(empties, path[0], strict=True):  # settle what changed before the pass
        empty.location = p
    bpy.context.view_layer.update()
    seconds, worst = [], 0.0
    for row in path[1:]:
        for empty, p in zip(empties, row, strict=True):
            empty.location = p
        start, cpu = time.perf_counter(), time.process_time()
        bpy.context.view_layer.update()
        seconds.append((time.perf_counter() - start, time.process_time() - cpu))
        worst = max(worst, float(np.linalg.norm(tips_world(evaluated(obj), chains) - row, axis=1).max()))
    return np.array(seconds), worst


def write_floor(ext, chains, path, copy_only: bool = False) -> np.ndarray:
    """What any Live update pays to show the pose it wrote, solving nothing (module docstring): the
    Live rig with Live off and, where Live's handler runs, one that writes the channels of every
    chain bone as they are and evaluates the depsgraph again. `copy_only`: the channels set with
    `foreach_set` and the object tagged TIME (the armature copied, no pose evaluated)."""
    obj, empties = live_rig(ext, chains, "fabrik")
    walks = [ext.rig.tree.chain_bones(obj, tip, count, use_tail)[0] for tip, count, use_tail in chains]
    names = dict.fromkeys(b.name for walk in walks for b in walk)
    bones, modes, busy = [obj.pose.bones[n] for n in names], ext.rig.modes, [False]
    rotations = np.zeros(4 * len(obj.pose.bones), dtype=np.float32)

    def handler(_scene, depsgraph) -> None:
        if busy[0]:
            return
        busy[0] = True
        try:
            if copy_only:  # foreach_set tags the copy on 5.0 and nothing on 4.2; TIME: the copy, no pose
                obj.pose.bones.foreach_get("rotation_quaternion", rotations)
                obj.pose.bones.foreach_set("rotation_quaternion", rotations)
                obj.update_tag(refresh={"TIME"})
            else:
                for bone in bones:
                    modes.set_values(bone, modes.current_values(bone))
            depsgraph.update()
        finally:
            busy[0] = False

    bpy.app.handlers.depsgraph_update_post.append(handler)
    try:
        return updates(obj, chains, empties, path)[0]
    finally:
        bpy.app.handlers.depsgraph_update_post.remove(handler)


def blender_rig(chains):
    obj = metarig()
    empties = add_constraints(obj, chains)
    return obj, empties


def live_rig(ext, chains, method: str):
    obj = metarig()
    empties = new_empties(len(chains))
    for (tip, count, use_tail), empty in zip(chains, empties, strict=True):
        item = obj.chain_ik.chains.add()
        length = len(ext.rig.tree.chain_bones(obj, tip, count, use_tail)[0])
        item.name, item.tip, item.chain_length, item.use_tail = tip, tip, length, use_tail
        item.target, item.method, item.tolerance = empty, method, TOLERANCE
    return obj, empties


def set_live(obj, state: bool) -> None:
    for item in obj.chain_ik.chains:
        item.live = state


def measure_case(ext, chains, args, rng) -> dict:
    quat = ext.solvers.quat
    obj = metarig()
    layout = ext.rig.tree.tree_layout(obj, chains)
    skeleton, local0, _ = ext.rig.tree.read_tree(obj, evaluated(obj), chains, layout)
    path = smooth_motion(skeleton, local0, list(layout.effectors), rng, args.updates + 1, args.angle, quat)
    methods = list(ext.solvers.REGISTRY)
    times, worst = {}, {}

    def keep(key, seconds):
        times[key] = np.minimum(times.get(key, np.inf), seconds)

    for _ in range(args.repeats):  # interleaved passes, each on a fresh file
        obj, empties = blender_rig(chains)
        seconds, worst["blender"] = updates(obj, chains, empties, path)
        keep("blender", seconds)
        mute(obj, chains, True)
        keep("floor", updates(obj, chains, empties, path)[0])
        keep("write floor", write_floor(ext, chains, path))
        keep("copy", write_floor(ext, chains, path, copy_only=True))
        for method in methods:
            obj, empties = live_rig(ext, chains, method)
            set_live(obj, True)
            try:
                seconds, worst[method] = updates(obj, chains, empties, path)
            finally:
                set_live(obj, False)
            keep(method, seconds)
    # Per clock (wall, CPU): each update's fastest pass, averaged over the updates.
    return {"methods": methods, "times": {k: np.mean(v, axis=0) for k, v in times.items()}, "worst": worst}


def table(name: str, chains, m: dict) -> list[str]:
    """One Markdown table: wall and CPU ms per update; the ratios to Blender's update per clock
    (same run); "<= 2x" judged on CPU time (what a loaded machine distorts least)."""
    t, worst = m["times"], m["worst"]
    blender, floor = t["blender"], t["floor"]
    tips = ", ".join(f"{tip} ({count or 'to root'})" for tip, count, _ in chains)

    def row(side: str, ours, error: str = "", goal: bool = True) -> list:
        ratio = ours / blender
        met = ("yes" if ratio[1] <= 2.0 else "**no**") if goal else ""
        return [side, f"{1e3 * ours[0]:.3f}", f"{1e3 * ours[1]:.3f}", f"{1e3 * (ours[1] - floor[1]):.3f}",
                f"{ratio[0]:.2f}x", f"{ratio[1]:.2f}x", met, error]  # fmt: skip

    rows = [
        row("Blender IK constraints", blender, f"{worst['blender']:.2e}", goal=False),
        ["the same update, constraints muted, Live off (floor)", f"{1e3 * floor[0]:.3f}", f"{1e3 * floor[1]:.3f}"],
        row("Live off, its writes and evaluation alone (write floor: no solve)", t["write floor"], goal=False),
        row("of which the armature's copy (no pose evaluated)", t["copy"], goal=False),
    ]
    rows += [row(f"Live, {method}", t[method], f"{worst[method]:.2e}") for method in m["methods"]]
    header = ["side", "ms / update", "CPU ms / update", "CPU net of the floor", "vs Blender (wall)",
              "vs Blender (CPU)", "<= 2x (CPU)", "worst tip error"]  # fmt: skip
    return [f"### {name}: {len(chains)} chains ({tips})", "", *markdown_table(header, rows, "lrrrrrlr")]


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--updates", type=int, default=60)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--angle", type=float, default=0.6, help="largest random rotation per axis (radians)")
    parser.add_argument("--seed", type=int, default=10)
    parser.add_argument("--quick", action="store_true", help="a short run (smoke test)")
    parser.add_argument("--cases", nargs="*", default=list(CASES), choices=list(CASES))
    args = parser.parse_args(argv)
    if args.quick:
        args.updates, args.repeats = 4, 1
    ext = load_extension("solvers", "rig.tree", "rig.modes", "app.live")
    header = (
        f"bpy {bpy.app.version_string}, {args.updates} updates along a smooth path (FK within ±{args.angle} rad"
        f" per axis), fastest of {args.repeats} passes"
    )

    def case_lines(name: str) -> list[str]:
        return table(name, CASES[name], measure_case(ext, CASES[name], args, np.random.default_rng(args.seed)))

    print_cases(ext, header, args.cases, case_lines)


if __name__ == "__main__":
    main()
    exit_after_main()
