"""Smooth group bakes: the largest per-frame joint turn vs Blender's IK + Bake Action (issue 22).

Run inside a bpy venv:  <venv>/bin/python bench/bench_smooth_bake.py [--frames 150] [--repeats 2] [--quick]

Rig and cases as bench/bench_tree.py: Rigify's human metarig at the origin, its rest pose every
frame's input pose; "two hands" (both forearm chains down to spine.002) and "five from the hips"
(both forearms, the head and both shins, every chain to the root). The targets are keyed every
frame at the chains' end points in an FK motion of the tree's bones, so they are jointly
reachable; two paths:
- "keys": bench_tree.smooth_motion, every local rotation blended between random key poses (within
  ±--angle per axis of the rest pose) 30 frames apart: brisk, and it takes limbs near full reach;
- "sway": every local rotation swinging sinusoidally (up to ±0.3 rad per axis, random phase, two
  periods over the range) about one random pose within ±--angle: slow and smooth everywhere.
- Blender: IK constraints (legacy solver) + bpy.ops.nla.bake(visual_keying=True,
  clear_constraints=True) on the tree's bones (bench_tree.bake_blender).
- Chain IK: its own bake (app.bake.bake, what the Bake operator runs) of panel chains set as
  the constraints, tolerance 1e-5, per method; two routes through the group bake
  (app.bake.bake_unit): "sampled" (nothing but the targets moves: every frame in one
  solvers.solve_skeleton_many call) and "per frame" (a frame-change handler forces frame_set at
  every frame, as a rig with animated bones would).
Measured on playback of the written keys, every frame: the largest per-frame joint turn (the
angle between a bone's local rotation, matrix_basis, at frame f and at f-1; the largest over the
tree's bones and frames), the mean tip error (world distance of each chain's end from its target,
mean over chains and frames) and the time per frame of the whole bake (each side's fastest of
--repeats). "<= 2x" checks the issue's goal: the largest turn at most twice Blender's.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import bpy
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_tree import (  # noqa: E402
    CASES,
    SOLVE_TOLERANCE,
    add_constraints,
    evaluated,
    fk_targets,
    keyed_targets,
    metarig,
    random_locals,
    smooth_motion,
    tips_world,
)
from blender_bench import bake_action, chosen_methods, exit_after_main, load_extension, select_only  # noqa: E402

SMOOTH_CASES = ("two hands", "five from the hips")
PATHS = ("keys", "sway")
SWAY = 0.3  # radians per axis: the sway path's amplitude
ROUTES = ("sampled", "per frame")
GOAL = 2.0  # the bound: at most this many times Blender's largest per-frame turn


def playback(obj, chains, empties, names, frames: int) -> tuple[float, str, float]:
    """(largest per-frame turn of any of `names`, degrees; where: "bone @ frame"; mean tip error)
    over frames 1..frames."""
    previous, turn, where, errors = None, 0.0, "", []
    for f in range(1, frames + 1):
        bpy.context.scene.frame_set(f)
        obj_eval = evaluated(obj)
        q = np.array([obj_eval.pose.bones[n].matrix_basis.to_quaternion().normalized()[:] for n in names])
        if previous is not None:
            turns = np.degrees(2.0 * np.arccos(np.clip(np.abs(np.sum(q * previous, axis=1)), 0.0, 1.0)))
            if turns.max() > turn:
                turn, where = float(turns.max()), f"{names[int(np.argmax(turns))]} @ {f}"
        previous = q
        goals = np.array([e.matrix_world.translation[:] for e in empties])
        errors.append(np.linalg.norm(tips_world(obj_eval, chains) - goals, axis=1))
    return turn, where, float(np.mean(errors))


def bake_blender(chains, motion, names) -> dict:
    obj = metarig()
    empties = add_constraints(obj, chains, keyed_targets(chains, motion))
    bpy.context.view_layer.objects.active = obj
    select_only(obj, names)
    frames = len(motion)
    seconds = bake_action(frames)
    turn, where, error = playback(obj, chains, empties, names, frames)
    return {"seconds": seconds / frames, "turn": turn, "where": where, "error": error}


def bake_ours(ext, chains, motion, names, method: str, route: str) -> dict:
    """Chain IK's bake of the chains as panel chains (one group), through `route`."""
    obj = metarig()
    empties = keyed_targets(chains, motion)
    frames = len(motion)
    bpy.context.view_layer.objects.active = obj
    for (tip, count, use_tail), empty in zip(chains, empties, strict=True):
        item = obj.chain_ik.chains.add()
        length = len(ext.rig.tree.chain_bones(obj, tip, count, use_tail)[0])
        item.name, item.tip, item.chain_length, item.use_tail = tip, tip, length, use_tail
        item.target, item.method, item.tolerance = empty, method, SOLVE_TOLERANCE
    specs = [ext.app.spec.spec_from_item(item) for item in obj.chain_ik.chains]
    options = ext.app.bake.BakeOptions(frame_start=1, frame_end=frames, measure=False)
    handler = lambda *_: None  # noqa: E731 - any frame-change handler rules out sampling
    if route == "per frame":
        bpy.app.handlers.frame_change_post.append(handler)
    try:
        start = time.perf_counter()
        result = ext.app.bake.bake(bpy.context, obj, specs, options)
        seconds = time.perf_counter() - start
    finally:
        if route == "per frame":
            bpy.app.handlers.frame_change_post.remove(handler)
    kernel = ext.app.bake.bake_solve.PER_FRAME if route == "per frame" else ext.app.bake.bake_solve.SAMPLED_GROUP
    went = {why.split(":")[0] for why in result.reasons.values()}
    assert went == {kernel}, (route, result.reasons)
    turn, where, error = playback(obj, chains, empties, names, frames)
    return {"seconds": seconds / frames, "turn": turn, "where": where, "error": error}


def sway_motion(skeleton, local0, bones, rng, frames: int, angle: float, quat) -> np.ndarray:
    """Targets per frame: FK of every local rotation swinging sinusoidally about a random pose."""
    base = random_locals(local0, rng, angle, quat)
    amplitude = rng.uniform(-SWAY, SWAY, local0.shape[:-1] + (3,))
    phase = rng.uniform(0.0, 2.0 * np.pi, local0.shape[:-1] + (1,))
    t = np.arange(frames)[:, None, None]
    turn = amplitude[None] * np.sin(4.0 * np.pi * t / frames + phase[None])
    poses = quat.multiply(np.broadcast_to(base, turn.shape[:-1] + (4,)), quat.from_rotation_vector(turn))
    return fk_targets(skeleton, poses, bones)


def measure_case(ext, chains, path: str, args, rng) -> dict:
    solvers, tree = ext.solvers, ext.rig.tree
    obj = metarig()
    layout = tree.tree_layout(obj, chains)
    skeleton, local0, names = tree.read_tree(obj, evaluated(obj), chains, layout)
    motion_of = smooth_motion if path == "keys" else sway_motion
    motion = motion_of(skeleton, local0, list(layout.effectors), rng, args.frames, args.angle, solvers.quat)
    runs: dict = {}

    def keep(key, run: dict) -> None:
        # The fastest bake's time; the poses are the same every repeat.
        if key not in runs or run["seconds"] < runs[key]["seconds"]:
            runs[key] = run

    for _ in range(args.repeats):  # interleaved
        keep(("blender", ""), bake_blender(chains, motion, names))
        for method in args.methods:
            for route in args.routes:
                keep((method, route), bake_ours(ext, chains, motion, names, method, route))
    return {"names": names, "runs": runs}


def table(name: str, chains, path: str, measured: dict, args) -> list[str]:
    runs = measured["runs"]
    blender = runs[("blender", "")]
    tips = ", ".join(f"{tip} ({count or 'to root'})" for tip, count, _ in chains)
    lines = [
        f"### {name}, {path} path: {len(chains)} effectors, {len(measured['names'])} bones ({tips}),"
        f" {args.frames} frames",
        "",
        "| side | route | largest turn / frame ° | where | vs Blender | <= 2x | mean tip error | ms / frame |",
        "|---|---|---:|---|---:|---|---:|---:|",
        f"| Blender IK + Bake Action | | {blender['turn']:.2f} | {blender['where']} | 1.00x | | {blender['error']:.2e}"
        f" | {1e3 * blender['seconds']:.2f} |",
    ]
    for method in args.methods:
        for route in args.routes:
            run = runs[(method, route)]
            ratio = run["turn"] / blender["turn"] if blender["turn"] > 0.0 else np.inf
            ok = "yes" if ratio <= GOAL else "**no**"
            lines.append(
                f"| Chain IK {method} | {route} | {run['turn']:.2f} | {run['where']} | {ratio:.2f}x | {ok}"
                f" | {run['error']:.2e} | {1e3 * run['seconds']:.2f} |"
            )
    return lines


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", type=int, default=150)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--angle", type=float, default=0.6, help="largest random rotation per axis (radians)")
    parser.add_argument("--seed", type=int, default=10)
    parser.add_argument("--methods", nargs="*", default=None)
    parser.add_argument("--routes", nargs="*", default=list(ROUTES), choices=ROUTES)
    parser.add_argument("--cases", nargs="*", default=list(SMOOTH_CASES), choices=list(CASES))
    parser.add_argument("--paths", nargs="*", default=list(PATHS), choices=PATHS)
    parser.add_argument("--quick", action="store_true", help="a short run (smoke test)")
    args = parser.parse_args(argv)
    if args.quick:
        args.frames, args.repeats = 24, 1
    import addon_utils

    ext = load_extension("solvers", "rig.tree", "app.bake", "app.bake.bake_solve", "app.spec")
    if not hasattr(bpy.types.Object, "chain_ik"):  # the bake reads panel chains (a test has registered it)
        ext.register()
    tree_methods = [m.name for m in ext.solvers.registry.METHOD_LIST if m.tree is not None]
    args.methods = chosen_methods(parser, args.methods, tree_methods)
    addon_utils.enable("rigify", default_set=True)
    try:
        lines = [
            f"bpy {bpy.app.version_string}, {args.frames} frames (FK motions about poses within ±{args.angle} rad"
            f" per axis, seed {args.seed}), tolerance {SOLVE_TOLERANCE:g}, fastest of {args.repeats} bakes",
            "",
        ]
        for name in args.cases:
            for path in args.paths:
                measured = measure_case(ext, CASES[name], path, args, np.random.default_rng(args.seed))
                lines += [*table(name, CASES[name], path, measured, args), ""]
    finally:
        addon_utils.disable("rigify", default_set=True)
    print("\n".join(lines))


if __name__ == "__main__":
    main()
    exit_after_main()
