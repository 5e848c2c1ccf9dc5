"""Soft IK on a skeleton's effectors (issue 20 item 2): each effector's `softness` applied once,
where solve_skeleton and solve_skeleton_many read the goals (solvers.common.soft's formula).

The reach is the effector's branch from the skeleton's root bone above it (the group's root the
effector's bones hang from), all straight (`branch_reach`), measured from that root bone's head:
a lone chain is a one-branch skeleton, so this is `solvers.solve`'s softness (the chain's reach
from its root). The group's root rather than the effector's own chain root: a tree holds no chain
bounds, and what straightens (and pops) near full reach is the whole branch from its fixed root."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np

from ..skeleton import Effector, Skeleton
from .soft import soften_target, soften_targets


def branch_reach(skeleton: Skeleton, bone: int) -> float:
    """The reach of the branch from its root bone's head to `bone`'s end point, all straight: the
    head-to-head distances down the branch (the children's offsets) plus `bone`'s length."""
    branch = skeleton.branch(bone)
    heads = [math.hypot(*skeleton.offsets[c].tolist()) for c in branch[1:]]
    return math.fsum([*heads, float(skeleton.lengths[bone])])


def _softens(e: Effector) -> bool:
    return bool(e.softness) and not e.pin


def soften_effectors(skeleton: Skeleton, effectors: list[Effector]) -> list[Effector]:
    """The effectors with softness (not pins) at their soft positions and softness 0 (so a second
    call leaves them); `effectors` itself when none has any."""
    if not any(_softens(e) and e.position is not None for e in effectors):
        return effectors
    out = []
    for e in effectors:
        if _softens(e) and e.position is not None:
            root = skeleton.branch(e.bone)[0]  # a root bone's head is its offset, whatever the pose
            soft = soften_target(skeleton.offsets[root], e.position, branch_reach(skeleton, e.bone), e.softness)
            e = replace(e, position=np.array(soft), softness=0.0)
        out.append(e)
    return out


def soften_positions(skeleton: Skeleton, effectors: list[Effector], positions: np.ndarray) -> tuple:
    """(positions (m, k, 3), effectors) with each soft effector's positions softened on every frame
    and its softness then 0 (a frame solved alone must not soften them again)."""
    if not any(_softens(e) for e in effectors):
        return positions, effectors
    positions = np.array(positions)
    out = list(effectors)
    for j, e in enumerate(effectors):
        if _softens(e):
            root = skeleton.branch(e.bone)[0]
            reach = branch_reach(skeleton, e.bone)
            positions[:, j] = soften_targets(skeleton.offsets[root], positions[:, j], reach, e.softness)
            out[j] = replace(e, softness=0.0)
    return positions, out
