"""Solve operator end to end vs Blender's own IK constraint, same 5-bone chain, same run.

Run inside a bpy venv:  <venv>/bin/python bench/bench_pose_operator.py [--targets 300]

Per target, both sides do the whole user-visible job:
- Blender IK: move the target, view_layer.update() (evaluates the IK constraint), read the tip.
- Chain IK:   move the target, bpy.ops.chain_ik.solve(), view_layer.update(), read the tip.
Each side runs in its own empty scene (nothing else evaluates). Prints a Markdown table.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import math
import os
import statistics
import sys
import time
from pathlib import Path

import bpy
import numpy as np
from mathutils import Vector

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))

from blender_bench import exit_after_main, load_extension  # noqa: E402

N_BONES = 5


def _flush_c_stdout() -> None:
    """Flush C's stdout buffer (Blender prints its reports with printf)."""
    try:
        ctypes.CDLL(None).fflush(None)
    except (OSError, AttributeError, TypeError):  # no C library handle on this platform
        pass


@contextlib.contextmanager
def quiet_stdout():
    """File descriptor 1 goes to the null device inside: the operators' reports (printed in
    background mode, one line per solve) would bury the table. Only the destination changes,
    never what runs, so the timings are those of the same calls."""
    sys.stdout.flush()
    _flush_c_stdout()
    saved = os.dup(1)
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, 1)
    try:
        yield
    finally:
        sys.stdout.flush()
        _flush_c_stdout()
        os.dup2(saved, 1)
        os.close(null)
        os.close(saved)


def build(name: str):
    """A bent 5-bone connected chain (lengths 1.0..0.6) and a target empty, in a fresh empty file."""
    bpy.ops.wm.read_homefile(use_empty=True)
    arm = bpy.data.armatures.new(name)
    obj = bpy.data.objects.new(name, arm)
    bpy.context.scene.collection.objects.link(obj)
    bpy.context.view_layer.objects.active = obj
    bpy.ops.object.mode_set(mode="EDIT")
    head, parent = Vector((0, 0, 0)), None
    for i in range(N_BONES):
        eb = arm.edit_bones.new(f"b{i}")
        eb.head = head
        eb.tail = head + Vector((0.15 * (i % 2), 0.05 * i, 1.0 - 0.1 * i))
        if parent is not None:
            eb.parent, eb.use_connect = parent, True
        head, parent = eb.tail.copy(), eb
    bpy.ops.object.mode_set(mode="POSE")
    target = bpy.data.objects.new("Target", None)
    bpy.context.scene.collection.objects.link(target)
    return obj, target


def targets(count: int, reach: float, seed: int = 0) -> np.ndarray:
    """Uniform in a ball of 0.8 x reach around the root: reachable by both solvers."""
    rng = np.random.default_rng(seed)
    d = rng.normal(size=(count, 3))
    d /= np.linalg.norm(d, axis=1, keepdims=True)
    return d * (0.8 * reach * rng.uniform(0.05, 1.0, size=(count, 1)) ** (1 / 3))


def run(obj, target, goals, step) -> tuple[list[float], list[float]]:
    times, errors = [], []
    tip = obj.pose.bones[f"b{N_BONES - 1}"]
    for g in goals:
        t0 = time.perf_counter()
        target.location = g
        step()
        bpy.context.view_layer.update()
        p = obj.matrix_world @ tip.tail
        times.append(time.perf_counter() - t0)
        errors.append((p - target.location).length)
    return times, errors


def bench_blender_ik(goals, iterations: int):
    obj, target = build("BlenderIK")
    c = obj.pose.bones[f"b{N_BONES - 1}"].constraints.new("IK")
    c.target, c.chain_count, c.iterations = target, N_BONES, iterations
    return run(obj, target, goals, lambda: None)


def bench_chain_ik(goals, method: str):
    obj, target = build("ChainIK")
    item = obj.chain_ik.chains.add()
    item.tip, item.chain_length, item.target, item.method = f"b{N_BONES - 1}", N_BONES, target, method
    return run(obj, target, goals, bpy.ops.chain_ik.solve)


class BENCH_OT_noop(bpy.types.Operator):
    """The floor for any Python operator: the call round trip, nothing else."""

    bl_idname = "bench.noop"
    bl_label = "No-op"

    def execute(self, context):
        return {"FINISHED"}


class BENCH_OT_write(bpy.types.Operator):
    """The floor for a posing operator: write the chain's rotations (changing values, so the
    armature is re-evaluated, as after a solve) and report one line; no reading, no solving."""

    bl_idname = "bench.write"
    bl_label = "Write"
    count = 0

    def execute(self, context):
        BENCH_OT_write.count += 1
        angle = 0.1 * (BENCH_OT_write.count % 7)
        bones = context.object.pose.bones
        for i in range(N_BONES):
            bones[f"b{i}"].rotation_quaternion = (math.cos(angle), math.sin(angle), 0.0, 0.0)
        self.report({"INFO"}, f"b{N_BONES - 1}: tip error 0, 1 iteration(s), rotation cost {angle:.1f}°, 0.00 ms")
        return {"FINISHED"}


def bench_floor(goals, operator):
    obj, target = build("Floor")
    return run(obj, target, goals, operator)


def row(name: str, times, errors, baseline: float) -> str:
    ms = statistics.median(times) * 1e3
    return (
        f"| {name} | {ms:.3f} | {statistics.mean(times) * 1e3:.3f} | {ms / baseline:.2f} |"
        f" {statistics.median(errors):.2e} | {max(errors):.2e} |"
    )


def measure(args) -> dict:
    """Every side's (times, errors) after warm-up, by row name."""
    obj, _ = build("probe")
    reach = sum(b.length for b in obj.data.bones)
    goals = [tuple(g) for g in targets(args.targets + args.warmup, reach)]
    results = {}
    for iters in (500,):
        t, e = bench_blender_ik(goals, iters)
        results[f"Blender IK constraint ({iters} it.)"] = (t[args.warmup :], e[args.warmup :])
    floors = (
        (BENCH_OT_noop, "any Python operator (no-op; the floor, tip not solved)"),
        (BENCH_OT_write, f"Python operator writing {N_BONES} rotations + 1 report line (no read, no solve)"),
    )
    for cls, name in floors:
        bpy.utils.register_class(cls)
        t, e = bench_floor(goals, getattr(bpy.ops.bench, cls.bl_idname.split(".")[1]))
        bpy.utils.unregister_class(cls)
        results[name] = (t[args.warmup :], e[args.warmup :])
    for method in ("triangulation", "fabrik", "ccd", "jacobian"):
        t, e = bench_chain_ik(goals, method)
        results[f"chain_ik.solve {method}"] = (t[args.warmup :], e[args.warmup :])
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--targets", type=int, default=300)
    parser.add_argument("--warmup", type=int, default=20)
    args = parser.parse_args()
    ext = load_extension()
    ext.register()
    try:
        with quiet_stdout():
            results = measure(args)
        base_name = next(iter(results))
        baseline = statistics.median(results[base_name][0]) * 1e3
        print(f"Blender {bpy.app.version_string}, {N_BONES}-bone chain, {args.targets} random reachable targets;")
        print("time = move target + (operator) + depsgraph update + read tip, per target.\n")
        print("| side | median ms | mean ms | ratio to Blender IK (median) | median tip error | max tip error |")
        print("|---|---|---|---|---|---|")
        for name, (t, e) in results.items():
            print(row(name, t, e, baseline))
        assert all(math.isfinite(x) for _, e in results.values() for x in e)
    finally:
        ext.unregister()


if __name__ == "__main__":
    main()
    exit_after_main()
