"""Test skeletons that are trees (several effectors), built from rest heads and tails.

`y_tree`: a trunk splitting into two arms (Buss & Kim's "Y"); `humanoid`: hips -> spine ->
head and two arms, hips -> two legs; `upper_body`: a spine to the head with two arms from the
chest. `fk_targets` poses a skeleton at random (each joint turned by up to `spread` radians) and
returns its effector bones' end points, so the targets are jointly reachable by construction."""

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


def upper_body() -> tuple[list[str], solvers.Skeleton, np.ndarray]:
    """(bone names, skeleton, input local rotations): hips - spine - chest - neck - head, and from
    the chest two arms (upper, fore, hand); the aim tests' body."""
    names = ["hips", "spine", "chest", "neck", "head", "up.L", "fore.L", "hand.L", "up.R", "fore.R", "hand.R"]
    parents = (-1, 0, 1, 2, 3, 2, 5, 6, 2, 8, 9)
    heads = [
        (0, 0, 1.0), (0, 0, 1.1), (0, 0, 1.3), (0, 0, 1.5), (0, 0, 1.6),
        (0.1, 0, 1.45), (0.4, 0, 1.45), (0.65, 0, 1.45),
        (-0.1, 0, 1.45), (-0.4, 0, 1.45), (-0.65, 0, 1.45),
    ]  # fmt: skip
    tails = [
        (0, 0, 1.1), (0, 0, 1.3), (0, 0, 1.5), (0, 0, 1.6), (0, 0, 1.8),
        (0.4, 0, 1.45), (0.65, 0, 1.45), (0.75, 0, 1.45),
        (-0.4, 0, 1.45), (-0.65, 0, 1.45), (-0.75, 0, 1.45),
    ]  # fmt: skip
    skeleton, local = solvers.Skeleton.from_bones(parents, heads, tails)
    return names, skeleton, local


def fk_targets(
    skeleton: solvers.Skeleton, local: np.ndarray, bones: list[int], rng: np.random.Generator, spread: float = 0.6
) -> tuple[np.ndarray, np.ndarray]:
    """(targets (len(bones), 3), the random local rotations that reach them)."""
    axes = rng.normal(size=(skeleton.n_bones, 3))
    angles = rng.uniform(0.0, spread, size=skeleton.n_bones)
    posed = quat.multiply(local, quat.from_axis_angle(quat.normalize(axes), angles))
    _, _, ends = skeleton.forward(posed)
    return ends[bones], posed


def bones_on(
    rng: np.random.Generator, parents: list[int], limited: bool = False
) -> tuple[solvers.Skeleton, np.ndarray]:
    """(skeleton, rest local rotations) of random bones under `parents`: each child's head at its
    parent's tail or beside it (30%), lengths 0.3..1; with `limited`, hinges (40%) and cones on the rest."""
    import math

    n = len(parents)
    heads, tails = np.zeros((n, 3)), np.zeros((n, 3))
    for i, p in enumerate(parents):
        heads[i] = 0.0 if p == -1 else tails[p] + (rng.normal(size=3) * 0.1 if rng.random() < 0.3 else 0.0)
        d = rng.normal(size=3)
        tails[i] = heads[i] + rng.uniform(0.3, 1.0) * d / np.linalg.norm(d)
    limits = None
    if limited:
        hinge = rng.random(n) < 0.4
        limits = solvers.make_limits(
            n,
            lock=np.where(hinge[:, None], [False, True, True], False),
            use_limit=np.where(hinge[:, None], [True, False, False], False),
            minimum=np.where(hinge[:, None], [-1.2, 0.0, 0.0], -math.pi),
            maximum=np.where(hinge[:, None], [1.2, 0.0, 0.0], math.pi),
            cone=np.where(hinge, math.pi, rng.uniform(0.3, 1.5, n)),
        )
    skeleton, local = solvers.Skeleton.from_bones(parents, heads, tails, limits)
    return skeleton, local


def random_tree(
    rng: np.random.Generator, *, limited: bool = False, leaves: bool = False, pose: float = 0.3
) -> tuple[solvers.Skeleton, np.ndarray, list[int]]:
    """(skeleton, input local rotations, effector bones) of a random tree: 4..12 bones, each child's
    head at its parent's tail or beside it; with `limited`, hinges (40%) and cones on the rest; an
    input pose turned by up to `pose` per axis (clamped into the limits); 2..4 effector bones, on
    leaves only with `leaves` (no effector on another's branch), else anywhere."""

    from solvers import limits as joint_limits

    while True:
        n = int(rng.integers(4, 13))
        parents = [-1] + [int(rng.integers(0, i)) for i in range(1, n)]
        candidates = [i for i in range(n) if i not in parents] if leaves else list(range(n))
        if len(candidates) >= 2:
            break
    skeleton, local = bones_on(rng, parents, limited)
    posed = quat.multiply(local, quat.from_rotation_vector(rng.uniform(-pose, pose, size=(n, 3))))
    if skeleton.limits is not None:
        posed = joint_limits.clamp(skeleton.limits, np.arange(n), posed)
    k = int(rng.integers(2, min(4, len(candidates)) + 1))
    return skeleton, posed, sorted(rng.choice(candidates, size=k, replace=False).tolist())
