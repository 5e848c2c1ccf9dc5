"""Soft IK against the knee pop (issue 20 item 2): a leg baked while its target passes through full
extension, softness 0.05 against the exact solve, every method, same run.

Run inside a bpy venv:  <venv>/bin/python bench/bench_soft.py [--frames 100]

Leg: thigh (hip at z=1) and shin, the knee a little forward (quaternion channels), built with
edit_bones.new (tests/blender/test_soft_ik.py's). Target: straight below the hip, keyed every frame
from 0.88 to 1.08 of the leg's reach. Per method: Chain IK's Bake (bpy.ops.chain_ik.bake, the
chains' iteration cap 2000: CCD creeps near full reach) with softness 0 and 0.05, then on playback
- the largest knee turn between consecutive frames (the shin's local rotation), exact and soft,
  and their ratio (goal: soft at most a fifth of exact);
- the tip's distance to the target against Nicholas' formula (d - D_s - s (1 - e^(-(d - D_s)/s)),
  solvers.common.soft.soft_distance): the worst difference over the frames.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import bpy
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from blender_bench import exit_after_main, load_extension  # noqa: E402

HIP = np.array([0.0, 0.0, 1.0])
SHARE = 0.05
CAP = 2000


def leg(name: str):
    """thigh and shin (module doc); POSE mode."""
    arm = bpy.data.armatures.new(name)
    obj = bpy.data.objects.new(name, arm)
    bpy.context.scene.collection.objects.link(obj)
    bpy.context.view_layer.objects.active = obj
    bpy.ops.object.mode_set(mode="EDIT")
    thigh = arm.edit_bones.new("thigh")
    thigh.head, thigh.tail = tuple(HIP), (0.0, 0.05, 0.5)
    shin = arm.edit_bones.new("shin")
    shin.head, shin.tail, shin.parent, shin.use_connect = (0.0, 0.05, 0.5), (0.0, 0.0, 0.0), thigh, True
    bpy.ops.object.mode_set(mode="POSE")
    for n in ("thigh", "shin"):
        obj.pose.bones[n].rotation_mode = "QUATERNION"
    return obj


def reach(obj) -> float:
    return sum(obj.data.bones[n].length for n in ("thigh", "shin"))


def through_full_reach(name: str, full: float, frames: int):
    """An empty straight below the hip, keyed on frames 1..frames from 0.88 to 1.08 of `full`."""
    goal = bpy.data.objects.new(name, None)
    bpy.context.scene.collection.objects.link(goal)
    for k in range(frames):
        goal.location = HIP - np.array([0.0, 0.0, full * (0.88 + 0.2 * k / (frames - 1))])
        goal.keyframe_insert("location", frame=k + 1)
    return goal


def chain(obj, target, softness: float, method: str) -> None:
    item = obj.chain_ik.chains.add()
    item.name, item.tip, item.chain_length, item.target, item.method = "leg", "shin", 2, target, method
    item.softness, item.max_iterations = softness, CAP


def knee_turns(obj, frames: int) -> np.ndarray:
    """Degrees the knee turns between consecutive frames (the shin's local rotation), on playback."""
    quats = []
    for f in range(1, frames + 1):
        bpy.context.scene.frame_set(f)
        quats.append(obj.pose.bones["shin"].matrix_basis.to_quaternion().normalized()[:])
    q = np.array(quats)
    return np.degrees(2.0 * np.arccos(np.abs(np.sum(q[1:] * q[:-1], axis=1)).clip(0.0, 1.0)))


def formula_gaps(obj, goal, frames: int, soft) -> np.ndarray:
    """(frames, 2): the tip's distance to the target on playback, and what the formula says it is."""
    full, out = reach(obj), []
    for f in range(1, frames + 1):
        bpy.context.scene.frame_set(f)
        target = np.array(goal.matrix_world.translation)
        d = float(np.linalg.norm(target - HIP))
        tip = np.array(obj.matrix_world @ obj.pose.bones["shin"].tail)
        out.append((float(np.linalg.norm(tip - target)), d - soft.soft_distance(d, full, SHARE)))
    return np.array(out)


def measure(ext, method: str, frames: int = 100) -> dict:
    """{"exact", "soft": largest knee turn per frame (degrees), "ratio", "formula": worst |gap - formula|,
    "short": the formula's gap on the last frame over the reach}."""
    bpy.ops.wm.read_homefile(use_empty=True)
    exact, softened = leg("Exact"), leg("Soft")
    goal = through_full_reach("Goal", reach(exact), frames)
    out = {}
    for obj, softness, key in ((exact, 0.0, "exact"), (softened, SHARE, "soft")):
        chain(obj, goal, softness, method)
        bpy.context.view_layer.objects.active = obj
        assert bpy.ops.chain_ik.bake(frame_start=1, frame_end=frames) == {"FINISHED"}
        out[key] = float(knee_turns(obj, frames).max())
    gaps = formula_gaps(softened, goal, frames, ext.solvers.common.soft)
    out["ratio"] = out["soft"] / out["exact"]
    out["formula"] = float(np.abs(gaps[:, 0] - gaps[:, 1]).max())
    out["short"] = float(gaps[-1, 1]) / reach(exact)  # beyond reach the soft tip stays short by this share
    return out


def table(measured: dict, frames: int) -> list[str]:
    lines = [
        f"Soft IK: a 2-bone leg baked over {frames} frames, its target from 0.88 to 1.08 of its reach; softness"
        f" {SHARE:g} against 0; bpy {bpy.app.version_string}",
        "",
        "| method | largest knee turn / frame, exact | soft | soft / exact | <= 1/5 | worst tip gap - formula |",
        "|---|---:|---:|---:|---|---:|",
    ]
    for method, m in measured.items():
        ok = "yes" if m["ratio"] <= 0.2 else "**no**"
        lines.append(
            f"| {method} | {m['exact']:.2f}° | {m['soft']:.2f}° | {m['ratio']:.3f} | {ok} | {m['formula']:.1e} |"
        )
    return lines


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--frames", type=int, default=100)
    args = p.parse_args(argv)
    ext = load_extension("solvers", "solvers.common.soft")
    if not hasattr(bpy.types.Object, "chain_ik"):  # the bake reads panel chains (a test has registered it)
        ext.register()
    measured = {method: measure(ext, method, args.frames) for method in ext.solvers.REGISTRY}
    print("\n".join(table(measured, args.frames)))


if __name__ == "__main__":
    main()
    exit_after_main()
