"""What a tree kernel needs to know about its effectors, worked out once per solve.

Each moved bone is a rigid body carrying *goal points*: its own end point where an effector
sits on it, and the head of each moved child (a child head need not be on the bone's axis:
Rigify's shoulders and thighs hang beside their parent's line). A point's weight is the sum of
the ranked weights of the effectors it leads to (solvers.skeleton.ranked_weights: pins above
every target, then priority 0, 1, ..., each level LEVEL times the next, so a higher level
dominates every compromise it is part of). A bone with two or more goal points is a sub-base:
the branches below it meet there.
"""

from __future__ import annotations

import threading
import weakref
from dataclasses import dataclass, field

import numpy as np

from ..skeleton import level, levels, ranked_weights
from ..skeleton_floats import moved_bones, rows


@dataclass
class Plan:
    moved: list[int]  # ascending
    # bone: [(the point in its frame, its effector or -1, its child or -1, weight)]
    points: dict[int, list[tuple[tuple, int, int, float]]]
    targets: list[tuple]  # per effector
    weights: list[float]  # per effector, ranked by level (solvers.skeleton.ranked_weights)
    levels: list[list[int]]  # effector indices by priority level, highest first
    orientation: dict[int, tuple[tuple, float]]  # bone: (wanted world frame, rotation weight), strongest effector's
    segments: dict[int, int]  # effector index with a pole: the top bone of its own branch segment
    length: float  # total length of the moved bones
    steps: dict = field(default_factory=dict)  # a kernel's per-plan closures, by the kernel's key


# Plans by skeleton and effector structure, per thread: a bake or Live solves the same effectors
# on the same skeleton frame after frame, and building the plan and a kernel's step costs more
# than a few iterations. Only the targets and orientations change; they are refreshed in place.
_CACHE = threading.local()
_CACHE_SIZE = 8


def make_plan(skeleton, effectors) -> Plan:
    """The plan for `effectors` on `skeleton` (shared with earlier calls of the same structure:
    its targets and orientations are this call's)."""
    key, turned = [id(skeleton)], False  # (one loop: a solve looks its plan up per call)
    for e in effectors:
        unturned = e.orientation is None
        key.append((e.bone, float(e.weight), level(e), unturned, float(e.rotation_weight), e.pole is None))
        turned = turned or not unturned
    key = tuple(key)
    cache = getattr(_CACHE, "plans", None)
    if cache is None:
        cache = _CACHE.plans = {}
    hit = cache.get(key)
    if hit is not None and hit[0]() is skeleton:
        plan = hit[1]
        plan.targets[:] = [tuple(e.position.tolist()) for e in effectors]
        if turned:  # (none: the plan's is empty, as its key says)
            plan.orientation.clear()
            plan.orientation.update(_orientation(effectors, plan.weights))
        return plan
    plan = _make_plan(skeleton, effectors)
    if len(cache) >= _CACHE_SIZE:
        cache.clear()
    cache[key] = (weakref.ref(skeleton), plan)
    return plan


def _orientation(effectors, weights) -> dict[int, tuple[tuple, float]]:
    """Bone: (wanted world frame, rotation weight), the heaviest effector's on that bone."""
    orientation: dict[int, tuple] = {}
    for k, e in enumerate(effectors):
        if e.orientation is None or e.rotation_weight <= 0.0:
            continue
        have = orientation.get(e.bone)
        if have is None or weights[k] > have[2]:
            orientation[e.bone] = (tuple(e.orientation.tolist()), float(e.rotation_weight), weights[k])
    return {b: (q, rw) for b, (q, rw, _) in orientation.items()}


def _make_plan(skeleton, effectors) -> Plan:
    parents = skeleton.parents
    moved = moved_bones(skeleton, [e.bone for e in effectors])
    reach = rows(skeleton.lengths[:, None] * skeleton.links)
    offsets = rows(skeleton.offsets)
    weights = ranked_weights(effectors)
    below = dict.fromkeys(moved, 0.0)
    for k, e in enumerate(effectors):
        b = e.bone
        while b != -1:
            below[b] += weights[k]
            b = parents[b]
    points: dict[int, list] = {i: [] for i in moved}
    for k, e in enumerate(effectors):
        points[e.bone].append((reach[e.bone], k, -1, weights[k]))
    for i in moved:
        p = parents[i]
        if p != -1:
            points[p].append((offsets[i], -1, i, below[i]))
    orientation = _orientation(effectors, weights)
    segments = {}
    for k, e in enumerate(effectors):
        top = e.bone
        while parents[top] != -1 and len(points[parents[top]]) == 1:
            top = parents[top]
        if e.pole is not None:
            segments[k] = top
    targets = [tuple(e.position.tolist()) for e in effectors]
    length = float(np.sum(skeleton.lengths[moved]))
    return Plan(moved, points, targets, weights, levels(effectors), orientation, segments, length)


def free_twist(skeleton, plan) -> set[int]:
    """Moved bones whose twist no goal sees: no orientation goal, every goal point on the link."""
    links = rows(skeleton.links)
    free = set()
    for i in plan.moved:
        if i in plan.orientation:
            continue
        lx, ly, lz = links[i]
        if all(_on_line(v, lx, ly, lz) for v, _, _, _ in plan.points[i]):
            free.add(i)
    return free


def _on_line(v: tuple, lx: float, ly: float, lz: float) -> bool:
    vx, vy, vz = v
    cx, cy, cz = vy * lz - vz * ly, vz * lx - vx * lz, vx * ly - vy * lx
    return cx * cx + cy * cy + cz * cz <= 1e-24 * (vx * vx + vy * vy + vz * vz)
