"""Aim chains (issue 20 item 4): Rigify's metarig turning its head at a target while both hands
reach, every method, same run.

Run inside a bpy venv:  <venv>/bin/python bench/bench_aim.py

Rig: Rigify's human metarig at the origin (bench_tree.metarig). The head chain (spine.004, spine.005,
spine.006: two neck bones and the head) aims the head's +Z (forward) at a target to the left,
forward and up of the head (armature (0.8, -1.0, 0.6) from its head: about 40 degrees of turn),
Aim Spread at its default; both hand chains (upper arm, forearm, hand) reach targets from a random
pose of their bones (within 0.4 rad per axis: reachable). Apart (three units) and as one group (the
head chain from spine.003 and the hands from spine.003 too: the chest shared). Tolerance 1e-5,
iteration cap 2000, the Solve operator; on the written pose: the angle left (degrees, measured and
as the Result reports it), whether the chain counts it reached, each head-chain bone's share of
the turn (its local rotation's angle over their sum), and the hands' worst error.
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

import bpy
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_tree import metarig  # noqa: E402
from blender_bench import exit_after_main, load_extension  # noqa: E402

HEAD, NECK = "spine.006", ("spine.004", "spine.005", "spine.006")
LOOK = (0.8, -1.0, 0.6)  # from the head's head, armature space: left, forward, up
TOLERANCE = 1e-5
CASES = {"apart": (3, 3), "one group": (4, 5)}  # (head chain length, hand chain length)


def hand_target(obj, side: str, rng, shoulder: bool) -> np.ndarray:
    """The hand's tail in a random pose of its arm (the pose put back)."""
    names = [f"{n}.{side}" for n in ("shoulder", "upper_arm", "forearm", "hand")[0 if shoulder else 1 :]]
    pose = obj.pose.bones
    saved = {n: tuple(pose[n].rotation_quaternion) for n in names}
    for n in names:
        axis = rng.uniform(-0.4, 0.4, 3)
        angle = float(np.linalg.norm(axis))
        pose[n].rotation_quaternion = (math.cos(angle / 2), *(np.sin(angle / 2) * axis / max(angle, 1e-12)))
    bpy.context.view_layer.update()
    point = np.array(pose[f"hand.{side}"].tail)
    for n, q in saved.items():
        pose[n].rotation_quaternion = q
    bpy.context.view_layer.update()
    return point


def empty(name: str, location) -> object:
    obj = bpy.data.objects.new(name, None)
    bpy.context.scene.collection.objects.link(obj)
    obj.location = tuple(location)
    return obj


def measure(ext, method: str, case: str, seed: int = 7) -> dict:
    """{"angle": measured degrees left, "reported", "reached", "shares" (per NECK bone), "hands": worst error}."""
    obj = metarig()
    head_length, hand_length = CASES[case]
    rng = np.random.default_rng(seed)
    goals = {side: hand_target(obj, side, rng, hand_length > 3) for side in "LR"}
    look = np.array(obj.pose.bones[HEAD].head) + np.array(LOOK)
    item = obj.chain_ik.chains.add()
    item.name, item.tip, item.chain_length, item.target, item.method = (
        "Head",
        HEAD,
        head_length,
        empty("Look", look),
        method,
    )
    item.aim_axis, item.tolerance, item.max_iterations = "+Z", TOLERANCE, 2000
    for side in "LR":
        hand = obj.chain_ik.chains.add()
        hand.name, hand.tip, hand.chain_length, hand.method = f"Hand {side}", f"hand.{side}", hand_length, method
        hand.target, hand.tolerance, hand.max_iterations = empty(f"Goal {side}", goals[side]), TOLERANCE, 2000
    bpy.context.view_layer.objects.active = obj
    assert bpy.ops.chain_ik.solve() == {"FINISHED"}
    bpy.context.view_layer.update()
    m = obj.pose.bones[HEAD].matrix
    axis, to = np.array(m.col[2][:3]), look - np.array(m.translation)
    angle = math.degrees(math.atan2(float(np.linalg.norm(np.cross(axis, to))), float(axis @ to)))
    turns = np.array([obj.pose.bones[n].matrix_basis.to_quaternion().angle for n in NECK])
    hands = max(float(np.linalg.norm(np.array(obj.pose.bones[f"hand.{s}"].tail) - goals[s])) for s in "LR")
    head = obj.chain_ik.chains[0].result
    return {
        "angle": angle,
        "reported": float(head.angle),
        "reached": bool(head.reached),
        "shares": turns / turns.sum(),
        "hands": hands,
    }


def table(measured: dict) -> list[str]:
    lines = [
        f"Aim: the metarig's head chain ({', '.join(NECK)}) aims +Z at a target while both hands reach;"
        f" tolerance {TOLERANCE:g}; bpy {bpy.app.version_string}",
        "",
        "| case | method | angle left ° (Result) | reached | shares (neck 1, neck 2, head) | hands' worst error |",
        "|---|---|---:|---|---|---:|",
    ]
    for (case, method), m in measured.items():
        shares = " / ".join(f"{s:.0%}" for s in m["shares"])
        lines.append(
            f"| {case} | {method} | {m['angle']:.1e} ({m['reported']:.1e}) | {'yes' if m['reached'] else '**no**'}"
            f" | {shares} | {m['hands']:.1e} |"
        )
    return lines


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.parse_args(argv)
    import addon_utils

    ext = load_extension("solvers")
    if not hasattr(bpy.types.Object, "chain_ik"):  # Solve reads panel chains (a test has registered it)
        ext.register()
    addon_utils.enable("rigify", default_set=True)
    try:
        measured = {(c, m): measure(ext, m, c) for c in CASES for m in ext.solvers.REGISTRY}
    finally:
        addon_utils.disable("rigify", default_set=True)
    print("\n".join(table(measured)))


if __name__ == "__main__":
    main()
    exit_after_main()
