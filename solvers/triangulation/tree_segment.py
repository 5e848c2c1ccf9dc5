"""A tree segment that aims at its effector's point alone (no pole, no orientation, no limits),
triangulated from the pose's float rows without building a Chain (tree.py).

The same numbers as `Chain.from_float_rows` then `common.float_solve.solve` with the
shape-keeping pass (the Chain's float terms from the same functions, its frames normalised the
same way): a bake's frame solves about one such segment, and the Chain's checks, numpy views
and Solution were a third of that solve's time (the rows come from the skeleton's forward
kinematics, finite; a link without length is refused as the Chain refuses it).
"""

from __future__ import annotations

import math

from ..model.chain import fallback_axis, guard_radii, link_terms, reach_terms, short_bone
from .chain import ShapeKeeping


class _Axes:
    """Each bone's tie-breaker axis (model.chain.fallback_axis of its unit frame), computed only
    when the pass reads one (a degenerate step)."""

    __slots__ = ("_dirs", "_frames")

    def __init__(self, dirs: list, frames: list) -> None:
        self._dirs, self._frames = dirs, frames

    def __len__(self) -> int:
        return len(self._dirs)

    def __getitem__(self, i: int) -> tuple:
        return fallback_axis(self._dirs[i], self._frames[i])


def segment_pass(rows: list, frames: list, target: tuple, solve: ShapeKeeping) -> tuple[list, list]:
    """(the segment's solved world rotations, its unit start frames) for joint `rows` (its heads,
    then its end) and bone `frames` (rows of floats), triangulated to `target` by `solve`
    (chain.shape_keeping_solver; its pass on the rows, no Terms built)."""
    sqrt = math.sqrt  # each frame normalised as a Chain normalises its frames (model.chain's rows)
    unit = []
    for w, x, y, z in frames:
        norm = sqrt(w * w + x * x + y * y + z * z)
        unit.append((w / norm, x / norm, y / norm, z / norm))
    lengths, dirs, total = link_terms(rows)
    k = short_bone(lengths, total)
    if k is not None:  # as the Chain refuses it (a child's head on its parent's head, say)
        raise ValueError(f"bone {k} has zero length (its two ends coincide)")
    reach, inner, _ = reach_terms(lengths, total, guard=False)
    # The fold guard as a Chain's terms compute it on first use (only a fold narrower than 180
    # degrees reads it). (Lists where a Chain's terms hold tuples: the pass only indexes them.)
    guard = guard_radii(reach, inner, total) if solve.fold_angle != 180.0 else None
    return solve.rows_pass(rows, lengths, dirs, reach, inner, guard, _Axes(dirs, unit), total, target)[1], unit
