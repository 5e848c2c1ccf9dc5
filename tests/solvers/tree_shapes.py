"""Test skeletons that are trees (several effectors), built from rest heads and tails.

`y_tree`: a trunk splitting into two arms (Buss & Kim's "Y"); `humanoid`: hips -> spine ->
head and two arms, hips -> two legs. `fk_targets` poses a skeleton at random (each joint
turned by up to `spread` radians) and returns its effector bones' end points, so the targets
are jointly reachable by construction."""

from __future__ import annotations

import numpy as np

import solvers
from solvers import quat


def y_tree() -> tuple[solvers.Skeleton, np.ndarray, list[int]]:
    """(skeleton, input local rotations, effector bones): trunk of 2 bones, two 3-bone arms."""
    heads = [[0, 0, 0], [0, 0, 1], [0, 0, 2], [-0.5, 0, 2.7], [-0.9, 0, 3.3], [0, 0, 2], [0.5, 0, 2.7], [0.9, 0, 3.3]]
    tails = [
        [0, 0, 1],
        [0, 0, 2],
        [-0.5, 0, 2.7],
        [-0.9, 0, 3.3],
        [-1.1, 0, 4.0],
        [0.5, 0, 2.7],
        [0.9, 0, 3.3],
        [1.1, 0, 4.0],
    ]
    parents = (-1, 0, 1, 2, 3, 1, 5, 6)
    skeleton, local = solvers.Skeleton.from_bones(parents, heads, tails)
    return skeleton, local, [4, 7]


def humanoid() -> tuple[solvers.Skeleton, np.ndarray, dict[str, int]]:
    """(skeleton, input local rotations, effector bones by name): hips, 3 spine bones, neck/head,
    shoulders with 2-bone arms, 2-bone legs with the thighs hanging from the hips."""
    bones = {  # name: (parent, head, tail)
        "hips": (None, (0, 0, 1.0), (0, 0, 1.1)),
        "spine": ("hips", (0, 0, 1.1), (0, 0, 1.3)),
        "chest": ("spine", (0, 0, 1.3), (0, 0, 1.5)),
        "neck": ("chest", (0, 0, 1.5), (0, 0, 1.6)),
        "head": ("neck", (0, 0, 1.6), (0, 0, 1.8)),
        "shoulder.L": ("chest", (0.05, 0, 1.45), (0.18, 0, 1.45)),
        "upper_arm.L": ("shoulder.L", (0.18, 0, 1.45), (0.45, 0, 1.45)),
        "forearm.L": ("upper_arm.L", (0.45, 0, 1.45), (0.7, -0.02, 1.45)),
        "shoulder.R": ("chest", (-0.05, 0, 1.45), (-0.18, 0, 1.45)),
        "upper_arm.R": ("shoulder.R", (-0.18, 0, 1.45), (-0.45, 0, 1.45)),
        "forearm.R": ("upper_arm.R", (-0.45, 0, 1.45), (-0.7, -0.02, 1.45)),
        "thigh.L": ("hips", (0.1, 0, 1.0), (0.1, -0.02, 0.55)),
        "shin.L": ("thigh.L", (0.1, -0.02, 0.55), (0.1, 0, 0.1)),
        "thigh.R": ("hips", (-0.1, 0, 1.0), (-0.1, -0.02, 0.55)),
        "shin.R": ("thigh.R", (-0.1, -0.02, 0.55), (-0.1, 0, 0.1)),
    }
    names = list(bones)
    parents = tuple(-1 if p is None else names.index(p) for p, _, _ in bones.values())
    heads = [h for _, h, _ in bones.values()]
    tails = [t for _, _, t in bones.values()]
    skeleton, local = solvers.Skeleton.from_bones(parents, heads, tails)
    return skeleton, local, {name: names.index(name) for name in names}


def fk_targets(
    skeleton: solvers.Skeleton, local: np.ndarray, bones: list[int], rng: np.random.Generator, spread: float = 0.6
) -> tuple[np.ndarray, np.ndarray]:
    """(targets (len(bones), 3), the random local rotations that reach them)."""
    axes = rng.normal(size=(skeleton.n_bones, 3))
    angles = rng.uniform(0.0, spread, size=skeleton.n_bones)
    posed = quat.multiply(local, quat.from_axis_angle(quat.normalize(axes), angles))
    _, _, ends = skeleton.forward(posed)
    return ends[bones], posed
