"""IK stretch on a skeleton: each effector's branch planned as one chain (`solvers.stretch.plan`),
the bones' own Y factors combined over the branches, and the skeleton's geometry stretched by them.

The rule per branch is the chain's (docs/design.md, "IK stretch"): with the branch's unstretched
reach L and its root-to-target distance d > L, each stretchable bone's own Y factor makes the
links sum to d; within reach every factor is 1. A bone on several branches takes the largest own
factor any of them asks: every branch's world factors (products of own factors down its bones)
are then at least what its plan asked, so each branch can still reach its target, and a bone on
no stretching branch keeps 1. The geometry then scales along each bone's own Y axis: its link
(its head to its end point) and its children's head offsets (held in its frame).

Soft IK (an effector's `softness`, solvers.common.soft): its branch is planned to Nicholas' soft
stretch (`soft_stretch`: from D_s = (1 - softness) x the branch's reach on, so it bends as the soft
chain would and still reaches); an effector whose branch this stretched is then solved to its own
position (softness 0 in `SkeletonStretch.effectors`), one whose branch could not stretch keeps its
softness (the plain soft target). A branch stretched further through bones it shares with another
branch bends a little less than the soft rule asks; it still reaches.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import numpy as np

from .common.soft import soft_stretch
from .stretch import plan, reach

# Each branch is stretched this share beyond its target's distance. Exactly at full reach the only
# pose that reaches is straight, which the tree kernels approach slowly while the other effectors
# pull on the shared bones (FABRIK: 100 iterations and 2.8e-4 off on a 3-unit branch); a little
# slack leaves a slight bend they close at once. (A chain alone is solved straight in float64:
# rig.unit.stretch_branch.)
SLACK = 1e-3


@dataclasses.dataclass(frozen=True)
class SkeletonStretch:
    skeleton: object  # the stretched Skeleton (the input one when nothing stretches)
    own: tuple[float, ...]  # per bone, its own Y channel (what it does not inherit)
    world: tuple[float, ...]  # per bone, its Y factor in its frame (inherited times own)
    effectors: tuple = ()  # the effectors to solve the stretched skeleton toward (soft IK: see the module doc)


def stretch_skeleton(
    skeleton, local: np.ndarray, effectors: Sequence, weights: Sequence[float], inherit: Sequence[bool]
) -> SkeletonStretch:
    """`skeleton` (a solvers.Skeleton, posed at `local`) stretched toward `effectors`' positions.

    `weights`: per bone its ik_stretch (0: it does not stretch); `inherit[i]`: bone i inherits its
    parent's Y scale (ignored for a root). Pins and effectors without a position stretch nothing."""
    n = skeleton.n_bones
    if len(weights) != n or len(inherit) != n:
        raise ValueError(f"weights and inherit must have one entry per bone ({n})")
    own = [1.0] * n
    solve_toward = list(effectors)
    if any(w > 0.0 for w in weights):
        _, heads, _ = skeleton.forward(local)
        for j, effector in enumerate(effectors):
            if effector.pin or effector.position is None:
                continue
            branch = skeleton.branch(effector.bone)
            if not any(weights[i] > 0.0 for i in branch):
                continue
            links = [tuple(skeleton.offsets[c].tolist()) for c in branch[1:]]
            last = branch[-1]
            links.append(tuple((skeleton.lengths[last] * skeleton.links[last]).tolist()))
            distance = float(np.linalg.norm(effector.position - heads[branch[0]]))
            if effector.softness:  # the soft stretch, at least the slack's
                soft = soft_stretch(distance, reach(links, [1.0] * len(links)), effector.softness)
                distance = max(soft, distance * (1.0 + SLACK))
            else:
                distance *= 1.0 + SLACK
            branch_inherit = [bool(inherit[i]) for i in branch]
            k, _, factors = plan(links, [float(weights[i]) for i in branch], branch_inherit, distance)
            if k > 0.0 and effector.softness:
                solve_toward[j] = dataclasses.replace(effector, softness=0.0)
            for i, f in zip(branch, factors, strict=True):
                if weights[i] > 0.0:
                    own[i] = max(own[i], f)
    world = []
    for i, p in enumerate(skeleton.parents):
        inherited = world[p] if (p != -1 and inherit[i]) else 1.0
        world.append(inherited * own[i])
    return SkeletonStretch(stretched_geometry(skeleton, world), tuple(own), tuple(world), tuple(solve_toward))


def stretched_geometry(skeleton, world: Sequence[float]):
    """`skeleton` with each bone scaled by `world[i]` along its own Y axis: its link and its
    children's head offsets (held in its frame); the skeleton itself when every factor is 1."""
    if all(c == 1.0 for c in world):
        return skeleton
    n = skeleton.n_bones
    scale = np.ones((n, 3))
    scale[:, 1] = world
    ends = skeleton.lengths[:, None] * skeleton.links * scale
    lengths = np.linalg.norm(ends, axis=1)
    offsets = skeleton.offsets.copy()
    for i, p in enumerate(skeleton.parents):
        if p != -1:
            offsets[i, 1] *= world[p]  # the child's head, held in its parent's stretched frame
    return dataclasses.replace(skeleton, offsets=offsets, links=ends / lengths[:, None], lengths=lengths)
