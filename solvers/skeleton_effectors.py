"""Effectors made ready for a tree kernel: pins given their bone's input pose (`resolve_pins`),
and effectors on one bone merged into one (`shared_bones`, `merge_shared`)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from .skeleton import Effector, Skeleton, level, ranked_weights


def resolve_pins(skeleton: Skeleton, local: np.ndarray, effectors: list[Effector]) -> list[Effector]:
    """Pins with their bone's input end point and world orientation filled in (a pin given its
    position already, say by a bake starting from the previous frame, keeps it)."""
    if not any(e.pin and e.position is None for e in effectors):
        return list(effectors)
    frames, _, ends = skeleton.forward(local)
    return [
        replace(e, position=ends[e.bone], orientation=frames[e.bone], rotation_weight=1.0)
        if e.pin and e.position is None
        else e
        for e in effectors
    ]


def shared_bones(effectors: list[Effector]) -> list[tuple[list[int], int]]:
    """Per bone with effectors, in order: (their indices, the lead's: the heaviest of the highest
    level), as merge_shared merges them."""
    out = []
    for bone in dict.fromkeys(e.bone for e in effectors):
        group = [k for k, e in enumerate(effectors) if e.bone == bone]
        top = min(level(effectors[k]) for k in group)
        lead = max((k for k in group if level(effectors[k]) == top), key=lambda k: effectors[k].weight)
        out.append((group, lead))
    return out


def merge_shared(effectors: list[Effector]) -> list[Effector]:
    """One effector per bone: effectors on the same bone become one at their weighted mean position
    with their summed weight (sum w_k |p - t_k|^2 is that total weight x |p - mean|^2 plus a
    constant, so every method then solves their weighted compromise, as Blender's tree IK does).
    Across priority levels the higher level's ranked weight dominates (ranked_weights); the
    merged goal takes the lead's other goals (pin, pole, orientation; shared_bones).
    Returns `effectors` itself when no two share a bone."""
    if len({e.bone for e in effectors}) == len(effectors):
        return effectors
    out = []
    for group, lead in shared_bones(effectors):
        if len(group) == 1:
            out.append(effectors[group[0]])
            continue
        members = [effectors[k] for k in group]
        ranked = np.array(ranked_weights(members))
        position = ranked @ np.array([e.position for e in members]) / ranked.sum()
        top = level(effectors[lead])
        weight = float(sum(e.weight for e in members if level(e) == top))
        out.append(replace(effectors[lead], position=position, weight=weight))
    return out
