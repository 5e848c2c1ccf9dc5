"""Buss & Kim's "Y" and "double Y" trees (the SDLS paper's test), Chain IK's tree solvers
against a damped-least-squares baseline in the same harness. Numpy only:

    python bench/bench_buss.py [--warmup 400] [--steps 2000]

The trees and target paths are those of Buss's IK demo (Buss & Kim 2005, "Selectively damped
least squares for inverse kinematics"): one-axis joints at given points, effectors at the ends
of the branches, targets on Lissajous-like paths, time step 0.005. The "Y" has 7 joints and 2
effectors; the "double Y" 25 joints and 4 effectors (as the demo's code builds it; co-located
joints on one branch become one bone with those axes free, a universal joint). Every method
takes one iteration per time step from the previous step's pose, as in Buss's harness; the
score is the sum over the scored steps of every effector's distance to its target, after the
step. The baseline is Buss's DLS: dθ = Jᵀ(JJᵀ + λ²I)⁻¹ e, each joint's change capped at 45°,
λ = 0.6 (Y) and 1.1 (double Y), the values his code marks as best for DLS on those shapes.
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
from solvers import quat  # noqa: E402

TIME_STEP = 0.005
UNIT1 = (math.sqrt(14.0) / 8.0, 1.0 / 8.0, 7.0 / 8.0)
X, Y, Z = (1.0, 0.0, 0.0), (0.0, 1.0, 0.0), (0.0, 0.0, 1.0)
R2, H3 = 1.0 / math.sqrt(2.0), math.sqrt(3.0) / 2.0


def y_shape() -> tuple[list, list]:
    """([(parent bone, head, tail, free axes)], effector bones) of Buss's "Y"."""
    bones = [
        (-1, (0.0, -0.5, 0.0), (0.0, 0.4, 0.0), [Z]),
        (0, (0.0, 0.4, 0.0), (0.5, 1.0, 0.0), [Z]),
        (0, (0.0, 0.4, 0.0), (-0.5, 1.0, 0.0), [Z]),
        (1, (0.5, 1.0, 0.0), (0.7, 1.3, 0.0), [X]),
        (2, (-0.5, 1.0, 0.0), (-0.8, 1.5, 0.0), [X]),
        (3, (0.7, 1.3, 0.0), (0.7, 2.0, 0.0), [UNIT1]),
        (4, (-0.8, 1.5, 0.0), (-0.8, 1.9, 0.0), [UNIT1]),
    ]
    return bones, [5, 6]


def double_y_shape() -> tuple[list, list]:
    """The same for Buss's "double Y"."""
    p = {
        0: (0.0, -1.5, 0.0),
        1: (0.0, -1.0, 0.0),
        2: (0.0, -0.5, 0.0),
        3: (0.5 * R2, -0.5 + 0.5 * R2, 0.0),
        4: (0.5 * R2 + 0.5 * H3, -0.5 + 0.5 * R2 + 0.25, 0.0),
        5: (0.5 * R2 + 1.0 * H3, -0.5 + 0.5 * R2 + 0.5, 0.0),
        6: (0.5 * R2 + 1.5 * H3, -0.5 + 0.5 * R2 + 0.75, 0.0),
        7: (0.5 * R2 + 0.5 * H3, -0.5 + 0.5 * R2 + 0.5 * H3, 0.0),
        8: (0.5 * R2 + 1.0 * H3, -0.5 + 0.5 * R2 + 1.0 * H3, 0.0),
        9: (0.5 * R2 + 1.5 * H3, -0.5 + 0.5 * R2 + 1.5 * H3, 0.0),
        10: (-0.5 * R2, -0.5 + 0.5 * R2, 0.0),
        11: (-0.5 * R2 - 0.5 * H3, -0.5 + 0.5 * R2 + 0.5 * H3, 0.0),
        12: (-0.5 * R2 - 1.0 * H3, -0.5 + 0.5 * R2 + 1.0 * H3, 0.0),
        13: (-0.5 * R2 - 1.5 * H3, -0.5 + 0.5 * R2 + 1.5 * H3, 0.0),
        14: (-0.5 * R2 - 0.5 * H3, -0.5 + 0.5 * R2 + 0.25, 0.0),
        15: (-0.5 * R2 - 1.0 * H3, -0.5 + 0.5 * R2 + 0.5, 0.0),
        16: (-0.5 * R2 - 1.5 * H3, -0.5 + 0.5 * R2 + 0.75, 0.0),
    }
    bones = [
        (-1, p[0], p[1], [UNIT1]),  # 0: node 0
        (0, p[1], p[2], [X, Z]),  # 1: nodes 1, 2
        (1, p[2], p[3], [Z]),  # 2: node 3
        (1, p[2], p[10], [Z]),  # 3: node 4
        (2, p[3], p[4], [Y, X]),  # 4: nodes 5, 7
        (4, p[4], p[5], [Z]),  # 5: node 8
        (5, p[5], p[6], [X, Y]),  # 6: nodes 9, 10 -> effector 11
        (2, p[3], p[7], [Y, X]),  # 7: nodes 6, 12
        (7, p[7], p[8], [Z]),  # 8: node 13
        (8, p[8], p[9], [X, Y]),  # 9: nodes 14, 15 -> effector 16
        (3, p[10], p[11], [Y, X]),  # 10: nodes 17, 18
        (10, p[11], p[12], [Z]),  # 11: node 20
        (11, p[12], p[13], [X, Y]),  # 12: nodes 21, 22 -> effector 23
        (3, p[10], p[14], [Y, X]),  # 13: nodes 19, 24
        (13, p[14], p[15], [Z]),  # 14: node 25
        (14, p[15], p[16], [X, Y]),  # 15: nodes 26, 27 -> effector 28
    ]
    return bones, [6, 9, 12, 15]


def targets_at(shape: str, t: float) -> np.ndarray:
    """Buss's target paths at time t (effector order as above)."""
    s = math.sin
    if shape == "Y":
        return np.array(
            [
                (2.0 + 1.5 * s(6 * t), -0.5 + 1.7 + 0.2 * s(7 * t), 0.3 + 0.2 * s(8 * t)),
                (-0.7 + 0.4 * s(4 * t), -0.5 + 1.3 + 0.3 * s(4 * t), -0.2 + 0.2 * s(3 * t)),
            ]
        )
    return np.array(
        [
            (2.0 + 3.0 * s(3 * t), -0.5 + 1.0 + 0.4 * s(7 * t), 0.3 + 1.4 * s(5 * t)),
            (0.5 + 0.8 * s(4 * t), -0.5 + 0.9 + 0.6 * s(4 * t), -0.2 + 2.0 * s(3 * t)),
            (-0.5 + 1.6 * s(6 * t), -0.5 + 1.1 + 0.4 * s(7 * t), 0.3 + 1.0 * s(8 * t)),
            (-1.6 + 1.6 * s(4 * t), -0.5 + 0.8 + 0.6 * s(4 * t), -0.2 + 0.6 * s(3 * t)),
        ]
    )


def skeleton_of(bones: list) -> solvers.Skeleton:
    """One-axis (or co-located two-axis) joints as bones whose frame has the free axes as X (and
    Z): the other axes locked, so each bone turns only as Buss's joints do."""
    n = len(bones)
    world = np.empty((n, 4))
    parents, offsets, links, lengths, reference = [], np.empty((n, 3)), np.empty((n, 3)), np.empty(n), np.empty((n, 4))
    lock = np.ones((n, 3), dtype=bool)
    for i, (parent, head, tail, axes) in enumerate(bones):
        first = np.array(axes[0], dtype=float) / np.linalg.norm(axes[0])
        second = np.array(axes[1], dtype=float) if len(axes) > 1 else quat.any_perpendicular(first)
        second = second - first * (first @ second)
        second /= np.linalg.norm(second)
        matrix = np.column_stack((first, np.cross(second, first), second))  # X, Y, Z columns
        world[i] = quat.from_matrix(matrix)
        lock[i, 0] = False
        if len(axes) > 1:
            lock[i, 2] = False
        direction = np.subtract(tail, head)
        lengths[i] = np.linalg.norm(direction)
        links[i] = matrix.T @ (direction / lengths[i])
        parents.append(parent)
        if parent == -1:
            offsets[i], reference[i] = head, world[i]
        else:
            parent_matrix = quat.to_matrix(world[parent])
            offsets[i] = parent_matrix.T @ np.subtract(head, bones[parent][1])
            reference[i] = quat.multiply(quat.conjugate(world[parent]), world[i])
    limits = solvers.make_limits(n, lock=lock)
    return solvers.Skeleton(tuple(parents), offsets, links, lengths, reference, np.array([1.0, 0, 0, 0]), limits)


def dls_baseline(skeleton: solvers.Skeleton, local: np.ndarray, effectors: list[int], targets, lam: float):
    """One step of Buss's DLS on the free axes (world axes of each bone's free local axes)."""
    frames, heads, ends = skeleton.forward(local)
    columns = []  # (bone, its local free axis, that axis in world space)
    for i in range(skeleton.n_bones):
        matrix = quat.to_matrix(frames[i])
        columns += [(i, k, matrix[:, k]) for k in np.flatnonzero(~skeleton.limits.lock[i])]
    m = len(effectors)
    jac = np.zeros((3 * m, len(columns)))
    below = [set(skeleton.branch(e)) for e in effectors]
    for c, (i, _, axis) in enumerate(columns):
        for r, e in enumerate(effectors):
            if i in below[r]:
                jac[3 * r : 3 * r + 3, c] = np.cross(axis, ends[e] - heads[i])
    error = (targets - ends[effectors]).reshape(-1)
    dtheta = jac.T @ np.linalg.solve(jac @ jac.T + lam * lam * np.eye(3 * m), error)
    biggest = np.max(np.abs(dtheta))
    if biggest > math.pi / 4:
        dtheta *= (math.pi / 4) / biggest
    out = local.copy()
    for (i, k, _), angle in zip(columns, dtheta, strict=True):
        # A turn about the bone's own free axis k (the joint's axis), after its current rotation.
        out[i] = quat.normalize(quat.multiply(out[i], quat.from_axis_angle(np.eye(3)[k], np.array(angle))))
    return out


def run(shape: str, step, warmup: int, steps: int) -> tuple[float, float]:
    """(summed effector error over the scored steps, ms per step) for `step(local, targets)`."""
    bones, effectors = y_shape() if shape == "Y" else double_y_shape()
    skeleton = skeleton_of(bones)
    local = np.tile([1.0, 0.0, 0.0, 0.0], (skeleton.n_bones, 1))
    t, total, spent = 0.0, 0.0, 0.0
    for k in range(warmup + steps):
        t += TIME_STEP
        goals = targets_at(shape, t)
        start = time.perf_counter()
        local = step(skeleton, local, effectors, goals)
        spent += time.perf_counter() - start
        if k >= warmup:
            _, _, ends = skeleton.forward(local)
            total += float(np.sum(np.linalg.norm(ends[effectors] - goals, axis=1)))
    return total, 1e3 * spent / (warmup + steps)


def methods() -> list[tuple[str, object]]:
    rows = []
    for entry in solvers.REGISTRY.values():
        if entry.tree is None:
            continue
        variants = [{}] if entry.name != "jacobian" else [{"variant": v} for v in solvers.JACOBIAN_VARIANTS]
        for options in variants:
            name = entry.name + (f" ({options['variant']})" if options else "")

            def step(skeleton, local, effectors, goals, method=entry.name, options=options):
                chosen = [solvers.Effector(b, g) for b, g in zip(effectors, goals, strict=True)]
                return solvers.solve_skeleton(skeleton, local, chosen, method=method, max_iterations=1, **options).local

            rows.append((name, step))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--warmup", type=int, default=400)
    parser.add_argument("--steps", type=int, default=2000)
    args = parser.parse_args()
    print(f"Buss & Kim's trees, {args.warmup} warm-up steps then {args.steps} scored, one iteration per step")
    for shape, lam in (("Y", 0.6), ("double Y", 1.1)):
        baseline, base_ms = run(
            shape, lambda s, q, e, g, lam=lam: dls_baseline(s, q, e, g, lam), args.warmup, args.steps
        )
        print(f"\n### {shape}\n")
        print("| method | summed error | vs DLS baseline | ms per step |")
        print("|---|---|---|---|")
        print(f"| DLS baseline (λ={lam}) | {baseline:.1f} | 1.00 | {base_ms:.2f} |")
        for name, step in methods():
            total, ms = run(shape, step, args.warmup, args.steps)
            print(f"| {name} | {total:.1f} | {total / baseline:.2f} | {ms:.2f} |")


if __name__ == "__main__":
    main()
