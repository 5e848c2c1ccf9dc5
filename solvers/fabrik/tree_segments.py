"""Tree FABRIK's segments (solvers.fabrik.tree and its lanes, tree_lanes): the chains between
sub-bases its chain passes run on, and those whose passes would place nothing anew."""

from __future__ import annotations


def settled_segments(segments: list[list[int]], keep: dict, clamped: set, orientation: dict) -> set[int]:
    """Tops of one-bone segments whose chain passes could only place the bone again where its
    first placement put it (no stiffness, limits or orientation goal: that placement turned it
    fully toward its goal, which its passes leave where it is); they are skipped."""
    plain = [seg[0] for seg in segments if len(seg) == 1 and keep[seg[0]] == 1.0]
    return {i for i in plain if i not in clamped and i not in orientation}


def chain_segments(parents, plan) -> list[list[int]]:
    """Maximal runs of moved bones with one goal point each, top first: chains between
    sub-bases (or a root, or an effector)."""
    points = plan.points
    single = {i for i in plan.moved if len(points[i]) == 1}
    segments = []
    for i in plan.moved:
        if i not in single or (parents[i] != -1 and parents[i] in single):
            continue
        seg = [i]
        while points[seg[-1]][0][2] in single:
            seg.append(points[seg[-1]][0][2])
        segments.append(seg)
    return segments
