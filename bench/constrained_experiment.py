"""The triangulation paper's constrained experiment (§4-5), with Blender's own
IK constraint under equivalent limits in the same run when bpy is available.

    python bench/constrained_experiment.py [--targets 10000]          # solvers only
    <bpy venv>/bin/python bench/constrained_experiment.py              # + Blender IK

Chain 18, 18, 4 straight from the origin along +Y; the elbow may turn at most
126° and the wrist 90° from their parent (X and Z limits of ±126° / ±90°: in
Blender's swing parametrisation that is exactly a cone). 10,000 targets in a
60-unit box; success within 0.5; every target solved from the rest pose.
"Reachable" = reached by any method (the paper: 8.27% of targets beyond the
chain's radius, a further 2.23% unreachable because of the limits).
Paper: triangulation reached every reachable target, cost 141.5°; CCD 173.9°.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import solvers  # noqa: E402

LENGTHS = (18.0, 18.0, 4.0)
LIMITS_DEG = (180.0, 126.0, 90.0)  # per bone: largest swing from its parent
PAPER = {"triangulation": "all reachable; C 141.5°", "ccd": "92.97% in 20 it; mean 8.727 it; C 173.9°"}


def limited_arm() -> solvers.Chain:
    points = np.array([[0.0, 0.0, 0.0], [0.0, 18.0, 0.0], [0.0, 36.0, 0.0], [0.0, 40.0, 0.0]])
    limit = np.radians(LIMITS_DEG)
    use = np.array([[False, False, False], [True, False, True], [True, False, True]])
    lo = np.stack((-limit, np.zeros(3), -limit), axis=1)
    limits = solvers.make_limits(3, use_limit=use, minimum=lo, maximum=-lo)
    return solvers.Chain(points, np.tile([1.0, 0.0, 0.0, 0.0], (3, 1)), limits=limits)


def blender_ik(targets: np.ndarray) -> tuple[np.ndarray, float] | None:
    """Tip points (m, 4, 3) from Blender's IK constraint, and seconds per target."""
    try:
        import bpy
        from mathutils import Vector
    except ImportError:
        return None
    bpy.ops.wm.read_homefile(use_empty=True)
    arm = bpy.data.armatures.new("Arm")
    obj = bpy.data.objects.new("Arm", arm)
    bpy.context.scene.collection.objects.link(obj)
    bpy.context.view_layer.objects.active = obj
    bpy.ops.object.mode_set(mode="EDIT")
    head, parent = Vector((0.0, 0.0, 0.0)), None
    for i, length in enumerate(LENGTHS):
        eb = arm.edit_bones.new(f"b{i}")
        eb.head, eb.tail = head, head + Vector((0.0, length, 0.0))
        if parent is not None:
            eb.parent, eb.use_connect = parent, True
        head, parent = eb.tail.copy(), eb
    bpy.ops.object.mode_set(mode="POSE")
    empty = bpy.data.objects.new("Target", None)
    bpy.context.scene.collection.objects.link(empty)
    for i, limit in enumerate(LIMITS_DEG):
        pb = obj.pose.bones[f"b{i}"]
        if limit < 180.0:
            pb.use_ik_limit_x = pb.use_ik_limit_z = True
            pb.ik_min_x = pb.ik_min_z = -math.radians(limit)
            pb.ik_max_x = pb.ik_max_z = math.radians(limit)
    ik = obj.pose.bones["b2"].constraints.new("IK")
    ik.target, ik.chain_count = empty, 3
    bones = [obj.pose.bones[f"b{i}"] for i in range(3)]
    out = np.empty((len(targets), 4, 3))
    start = time.perf_counter()
    for k, t in enumerate(targets):
        empty.location = Vector(t.tolist())
        bpy.context.view_layer.update()
        out[k, :3] = [b.head[:] for b in bones]
        out[k, 3] = bones[-1].tail[:]
    return out, (time.perf_counter() - start) / len(targets)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--targets", type=int, default=10000)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args(
        [a for a in sys.argv[1:] if a != "--"] if "--" not in sys.argv else sys.argv[sys.argv.index("--") + 1 :]
    )
    targets = np.random.default_rng(args.seed).uniform(-30.0, 30.0, size=(args.targets, 3))
    chain = limited_arm()
    results, violations = {}, {}
    for method in solvers.METHODS:
        start = time.perf_counter()
        batch = solvers.solve_batch(chain, targets, method=method, tolerance=0.5, max_iterations=99)
        results[method] = (batch.points, batch.iterations, (time.perf_counter() - start) / len(targets))
        violations[method] = worst_violation(chain, batch.rotations)
    blender = blender_ik(targets)
    if blender is not None:
        results["Blender IK constraint"] = (blender[0], None, blender[1])
    reached = {name: np.linalg.norm(p[:, -1] - targets, axis=1) <= 0.5 for name, (p, _, _) in results.items()}
    reachable = np.logical_or.reduce(list(reached.values()))
    within = np.linalg.norm(targets, axis=1) <= sum(LENGTHS)
    print(
        f"{len(targets)} targets: {1 - within.mean():.2%} beyond the chain's radius (paper 8.27%), "
        f"{(within & ~reachable).mean():.2%} more reached by no method (paper: 2.23% unreachable by limits).\n"
    )
    print("| method | reached / reachable | mean it | cost C (reachable) | µs / target | paper |")
    print("|---|---|---|---|---|---|")
    for name, (points, iterations, seconds) in results.items():
        ok = reached[name][reachable]
        its = "" if iterations is None else f"{iterations[reachable][ok].mean():.2f}"
        cost = solvers.rotation_cost(chain, points[reachable]).mean()
        print(f"| {name} | {ok.mean():.2%} | {its} | {cost:.1f}° | {seconds * 1e6:.1f} | {PAPER.get(name, '')} |")
    print("\nWorst limit violation over all targets: " + ", ".join(f"{k} {v:.1e}°" for k, v in violations.items()))


def worst_violation(chain: solvers.Chain, rotations: np.ndarray) -> float:
    """Largest angle (degrees) by which any solved bone leaves its limits."""
    q = solvers.quat
    frames = q.multiply(rotations, chain.frames)
    parents = np.concatenate((np.broadcast_to(chain.base_frame, (len(frames), 1, 4)), frames[:, :-1]), axis=1)
    local = q.multiply(q.conjugate(q.multiply(parents, chain.reference)), frames)
    return math.degrees(float(solvers.limits.violation(chain.limits, local).max()))


if __name__ == "__main__":
    main()
