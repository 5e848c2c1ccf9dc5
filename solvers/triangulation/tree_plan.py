"""A tree's segments and the per-skeleton facts triangulation asks for every solve (kept on the
skeleton: a bake solves the same tree every frame). See tree.py for how they are solved."""

from __future__ import annotations

import numpy as np

from ..skeleton import Effector, Skeleton, level, levels
from ..skeleton_floats import moved_bones


def kept(skeleton: Skeleton, name: str, key, compute, *args):
    """`compute(skeleton, *args)` kept on `skeleton` (frozen) under `name` and `key`: a bake asks
    every frame (a module-level `compute`: no closure built per call, where most calls only look up)."""
    cache = skeleton.__dict__.get(name)
    if cache is None:
        cache = skeleton.__dict__[name] = {}
    value = cache.get(key)
    if value is None:
        value = cache[key] = compute(skeleton, *args)
    return value


def below(skeleton: Skeleton, top: int) -> list[int]:
    """Ascending: `top` and every bone under it (the bones a segment's solve moves)."""
    return kept(skeleton, "_triangulation_below", top, _below, top)


def _below(skeleton: Skeleton, top: int) -> list[int]:
    parents = skeleton.parents
    inside = {top}
    for b in range(top + 1, skeleton.n_bones):
        if parents[b] in inside:
            inside.add(b)
    return sorted(inside)


def segments(skeleton: Skeleton, effectors: list[Effector]) -> list[tuple[list[int], list[int]]]:
    """[(segment bones root first, effector bones below its end)], parents' segments first; per
    skeleton and effector bones."""
    key = tuple(e.bone for e in effectors)
    return kept(skeleton, "_triangulation_segments", key, _plan, effectors)


def _plan(skeleton: Skeleton, effectors: list[Effector]) -> list[tuple[list[int], list[int]]]:
    """segments' plan, computed: a segment runs from a bone down to the next bone that carries an
    effector or splits into branches that lead to effectors (a sub-base)."""
    moved = moved_bones(skeleton, [e.bone for e in effectors])  # ascending: parents first
    goal_bones = {e.bone for e in effectors}
    children: dict[int, list[int]] = {b: [] for b in moved}
    for b in moved:
        if skeleton.parents[b] != -1:
            children[skeleton.parents[b]].append(b)
    under: dict[int, list[int]] = {}
    for b in reversed(moved):  # children come after their parents
        under[b] = ([b] if b in goal_bones else []) + [g for c in children[b] for g in under[c]]
    plan = []
    starts = [b for b in moved if skeleton.parents[b] == -1]
    while starts:
        bones = [starts.pop(0)]
        while bones[-1] not in goal_bones and len(children[bones[-1]]) == 1:
            bones.append(children[bones[-1]][0])
        plan.append((bones, under[bones[-1]]))
        starts.extend(children[bones[-1]])
    return plan


def layout(skeleton: Skeleton, effectors: list[Effector]) -> tuple[list[tuple], list[list[int]]]:
    """([(segment bones, effector bones below its end, the bones its solve moves (`below` its first),
    its first bone's parent)] as `segments` orders them, the effectors' levels (solvers.skeleton.levels)),
    per skeleton, effector bones and levels: a bake's frames ask for the same every frame."""
    key = (tuple(e.bone for e in effectors), tuple(level(e) for e in effectors))
    return kept(skeleton, "_triangulation_layout", key, _layout, effectors)


def _layout(skeleton: Skeleton, effectors: list[Effector]) -> tuple[list[tuple], list[list[int]]]:
    plan = [
        (bones, under, below(skeleton, bones[0]), skeleton.parents[bones[0]])
        for bones, under in segments(skeleton, effectors)
    ]
    return plan, levels(effectors)


def base_row(skeleton: Skeleton) -> tuple:
    """The skeleton's base frame as a row of floats (kept)."""
    return kept(skeleton, "_triangulation_base", 0, _base_row)


def _base_row(skeleton: Skeleton) -> tuple:
    return tuple(skeleton.base_frame.tolist())


def child(skeleton: Skeleton, top: int, bone: int) -> int:
    """The child of `top` on the way down to `bone`."""
    return kept(skeleton, "_triangulation_child", (top, bone), _child, top, bone)


def _child(skeleton: Skeleton, top: int, bone: int) -> int:
    path = skeleton.branch(bone)
    return path[path.index(top) + 1]


def reach_from(skeleton: Skeleton, head_bone: int, bone: int) -> float:
    """Largest distance from `head_bone`'s head to `bone`'s end point (the rigid links between)."""
    return kept(skeleton, "_triangulation_reach", (head_bone, bone), _reach_from, head_bone, bone)


def _reach_from(skeleton: Skeleton, head_bone: int, bone: int) -> float:
    path = skeleton.branch(bone)
    path = path[path.index(head_bone) :]
    return float(sum(np.linalg.norm(skeleton.offsets[b]) for b in path[1:]) + skeleton.lengths[bone])


def joints_below(skeleton: Skeleton, first: int, bones: tuple[int, ...]) -> list[tuple]:
    """Ascending (parents first): every bone from `first` down to the effector `bones`, as
    (bone, parent, the effectors below it (indices into `bones`), its reference and offset rows)
    (the sub-base's lead, tree_lead)."""
    return kept(skeleton, "_triangulation_joints", (first, bones), _joints_below, first, bones)


def _joints_below(skeleton: Skeleton, first: int, bones: tuple[int, ...]) -> list[tuple]:
    under: dict[int, list[int]] = {}
    for k, b in enumerate(bones):
        path = skeleton.branch(b)
        for j in path[path.index(first) :]:
            under.setdefault(j, []).append(k)
    return [
        (
            j,
            skeleton.parents[j],
            tuple(under[j]),
            tuple(skeleton.reference[j].tolist()),
            tuple(skeleton.offsets[j].tolist()),
        )
        for j in sorted(under)
    ]
