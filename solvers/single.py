"""One triangulation solve straight from joint rows and bone frames, without building a `Chain`.

The Blender Solve operator solves one short chain per call. There, building a
`Chain` (numpy arrays, validated frames, tie-breaker axes for every bone) and
packing a `Solution` cost several times the pass itself. `solve_rows` takes what
`Chain(rows, frames)` takes and returns what `solve(chain, target,
method="triangulation", ...)` returns, as plain floats and to the bit (tested
against it): the same helpers derive the chain's terms, and the tie-breaker axes
are computed only for a bone that needs one. Anything `Chain` or `solve` would
refuse gives None instead, so the caller takes the generic path, which raises the
proper error.
"""

from __future__ import annotations

import math

import numpy as np

from .api import DEFAULT_RELATIVE_TOLERANCE
from .chain import fallback_axis, link_terms, reach_terms, short_bone
from .metrics import rotation_cost_rows
from .result import Solution
from .triangulation import BAND
from .triangulation.scalar import fold_blend, fold_terms, one_pass


class RowsSolution:
    """A `Solution` in plain floats (lists of tuples); `solution()` packs the numpy one."""

    # A plain slotted class: a frozen dataclass's __init__ alone costs a microsecond here.
    __slots__ = ("points", "rotations", "error", "reached", "first_direction")
    iterations = 1

    def __init__(self, points: list, rotations: list, error: float, reached: bool, first_direction: tuple) -> None:
        self.points = points  # n+1 (x, y, z), root first
        self.rotations = rotations  # n (w, x, y, z)
        self.error = error
        self.reached = reached
        self.first_direction = first_direction  # the root bone's input direction (for the rotation cost)

    def solution(self) -> Solution:
        return Solution(np.array(self.points), np.array(self.rotations), 1, self.error, self.reached, "triangulation")

    def rotation_cost(self) -> float:
        """`solvers.rotation_cost` of this solve, in degrees."""
        return rotation_cost_rows(self.first_direction, self.points)


class _Fallbacks:
    """Bone i's tie-breaker axis on first use (`one_pass` asks only in degenerate steps)."""

    __slots__ = ("dirs", "frames")

    def __init__(self, dirs: list, frames) -> None:
        self.dirs, self.frames = dirs, frames

    def __getitem__(self, i: int) -> tuple:
        w, x, y, z = self.frames[i]
        norm = math.sqrt(w * w + x * x + y * y + z * z)  # as Chain normalises its frames
        return fallback_axis(self.dirs[i], (w / norm, x / norm, y / norm, z / norm))


def _unit_frames(frames, n: int) -> bool:
    """What `Chain` accepts as (n, 4) frames: finite, unit to 1e-6."""
    if len(frames) != n:
        return False
    for q in frames:
        if len(q) != 4:
            return False
        w, x, y, z = q
        norm = math.sqrt(w * w + x * x + y * y + z * z)
        if not math.isfinite(norm) or abs(norm - 1.0) > 1e-6:
            return False
    return True


def solve_rows(
    rows,
    frames,
    target,
    tolerance: float | None = None,
    fold_angle: float = 180.0,
    smooth_fold: float = 0.0,
) -> RowsSolution | None:
    """`solve(Chain(rows, frames), target, method="triangulation", tolerance=..., fold_angle=...,
    smooth_fold=...)` for n+1 joint rows ((x, y, z) floats) and n unit frame quaternions
    (w, x, y, z), or None where that would raise (or would need options this path does not take)."""
    n = len(rows) - 1
    if n < 1 or not _unit_frames(frames, n):
        return None
    if not (isinstance(fold_angle, float) and isinstance(smooth_fold, float)):
        return None
    if not 90.0 <= fold_angle <= 180.0 or not 0.0 <= smooth_fold <= 1.0 or (smooth_fold and fold_angle != 180.0):
        return None
    try:
        tx, ty, tz = target
        # A finite sum means every term is finite (inf or nan would carry through).
        if not math.isfinite(sum(map(sum, rows)) + tx + ty + tz):
            return None
        lengths, dirs, total = link_terms(rows)  # unpacks each row as (x, y, z)
    except (TypeError, ValueError):
        return None
    if short_bone(lengths, total) is not None:
        return None
    if tolerance is None:
        tolerance = DEFAULT_RELATIVE_TOLERANCE * total
    elif not (isinstance(tolerance, float) and math.isfinite(tolerance) and tolerance > 0.0):
        return None
    reach, inner, guard = reach_terms(lengths, total, guard=fold_angle != 180.0)
    blend = fold_blend(lengths, reach, inner, smooth_fold) if smooth_fold else None
    t = (float(tx), float(ty), float(tz))
    fallbacks = _Fallbacks(dirs, frames)
    out, rots, _ = one_pass(
        tuple(rows[0]),
        lengths,
        dirs,
        reach,
        guard,
        fallbacks,
        t,
        BAND * total,
        fold_angle,
        fold_terms(fold_angle),
        blend,
    )
    px, py, pz = out[-1]
    error = math.sqrt((px - tx) ** 2 + (py - ty) ** 2 + (pz - tz) ** 2)
    return RowsSolution(out, rots, error, error <= tolerance, dirs[0])
