"""Triangulation on one chain: its kernels and its declaration (`CHAIN`).

- `float_solver`: the one-target float solve (chain_floats.one_pass), run by common.float_solve.
  `shape_keeping_solver` the same pass keeping the start's shape where it can (a tree's segments).
- `batch`: the vectorised pass (chain_numpy.solve_many), or the limited passes
  (chain_limits.solve_limited).
- `sequence`: the plain-float pass carried from step to step (chain_steps.solve_steps); not for
  chains with joint limits.
- `CHAIN`: the method's declaration with these kernels and its options; the package's `METHOD`
  adds the tree kernel (tree.py), which solves each segment of a tree through `solve`.
"""

from __future__ import annotations

import functools

import numpy as np

from ..common.make_kernels import floats
from ..model.chain import Chain
from ..model.method import Method, Option, real
from ..model.result import BatchSolution, SequenceSolution
from .chain_floats import fold_blend, fold_terms, one_pass
from .chain_limits import solve_limited
from .chain_numpy import solve_many
from .chain_span import start_shape
from .chain_steps import solve_steps
from .checks import BAND, check_fold_angle, check_smooth_fold

LIMITS_REASON = "joint limits: the limited passes are vectorised (numpy) only"


def float_solver(tolerance: float, cap: int, options: dict):
    """The float solve (terms, target) -> (points, rotations, 1): one pass (no tolerance or cap
    to apply: the pass is exact where the target is reachable)."""
    fold_angle, smooth = options["fold_angle"], options["smooth_fold"]
    fold = fold_terms(fold_angle)

    def solve(t, target: tuple):
        blend = fold_blend(t.lengths, t.reach, t.inner, smooth) if smooth else None
        guard = t.guard if fold_angle != 180.0 else None  # only a narrower fold reads it
        out, rots, _ = one_pass(
            t.rows[0], t.lengths, t.dirs, t.reach, guard, t.fallbacks, target, BAND * t.total, fold_angle, fold, blend
        )
        return out, rots, 1

    return solve


def shape_keeping_solver(options: dict) -> ShapeKeeping:
    """float_solver's pass with each rest of the chain taking the extent that turns the joints least
    from the start's shape (chain_floats.one_pass's `keep`), turned with its chord onto the target
    line before the joint bends (`chords`): a tree's segments (triangulation.tree). One per fold
    setting, kept (a bake's frames each asked for one)."""
    return _keeping(options["fold_angle"], options["smooth_fold"])


@functools.lru_cache(maxsize=64)  # bounded: the settings are the user's floats
def _keeping(fold_angle: float, smooth: float) -> ShapeKeeping:
    return ShapeKeeping(fold_angle, smooth)


class ShapeKeeping:
    """shape_keeping_solver's solve (terms, target) -> (points, rotations, 1); `rows_pass` the same
    pass on the terms as separate rows (tree_segment: no Terms built per segment)."""

    __slots__ = ("fold", "fold_angle", "smooth")

    def __init__(self, fold_angle: float, smooth: float) -> None:
        self.fold_angle, self.smooth, self.fold = fold_angle, smooth, fold_terms(fold_angle)

    def __call__(self, t, target: tuple) -> tuple[list, list, int]:
        guard = t.guard if self.fold_angle != 180.0 else None  # only a narrower fold reads it
        out, rots = self.rows_pass(t.rows, t.lengths, t.dirs, t.reach, t.inner, guard, t.fallbacks, t.total, target)
        return out, rots, 1

    def rows_pass(self, rows, lengths, dirs, reach, inner, guard, fallbacks, total: float, target: tuple):
        """(points, rotations) of the pass from joint `rows` (the joints, then the tip) and the
        chain's float terms (`guard`: read only by a fold narrower than 180 degrees)."""
        smooth = self.smooth
        blend = fold_blend(lengths, reach, inner, smooth) if smooth else None
        n, tip = len(lengths), rows[-1]
        keep = [
            start_shape(rows[i], dirs[i], rows[i + 1], tip, inner[i], lengths[i + 1], reach[i + 1])
            for i in range(n - 1)
        ]
        keep.append(None)
        # each joint's chord to the tip, for the rest's lead (one_pass's `chords`)
        tx, ty, tz = tip
        chords = [(tx - r[0], ty - r[1], tz - r[2]) for r in rows[:n]]
        out, rots, _ = one_pass(
            rows[0], lengths, dirs, reach, guard, fallbacks, target, BAND * total, self.fold_angle, self.fold, blend,
            keep=keep, chords=chords,
        )  # fmt: skip
        return out, rots


def batch(chain: Chain, targets: np.ndarray, tolerance: float, max_iterations: int, options: dict) -> BatchSolution:
    if chain.limits is not None:  # limits fold by the collapsed reach (§3.1.3)
        return solve_limited(chain, targets, tolerance, options["fold_angle"], options["smooth_fold"])
    return solve_many(chain, targets, tolerance, options["fold_angle"], options["smooth_fold"])


def sequence(
    chain: Chain, targets: np.ndarray, tols: np.ndarray, max_iterations: int, options: dict, progress, keep_points: bool
) -> SequenceSolution | str:
    if chain.limits is not None:
        return LIMITS_REASON
    return solve_steps(chain, targets, tols, options["fold_angle"], options["smooth_fold"], progress, keep_points)


def _fold_angle(value: object) -> float:
    check_fold_angle(value)
    return float(value)


def _check(options: dict) -> None:
    check_smooth_fold(options["smooth_fold"], options["fold_angle"])


CHAIN = Method(
    name="triangulation",
    label="Triangulation",
    description="One pass from the root with the law of cosines; upper joints lead",
    options=(
        Option(
            "fold_angle",
            180.0,
            "Fold Angle",
            "Triangulation: largest bend between a bone and its parent, degrees",
            _fold_angle,
            minimum=90.0,
            maximum=180.0,
        ),
        Option(
            "smooth_fold",
            0.0,
            "Smooth Fold",
            "Triangulation with a 180° fold: 0 folds sharply as in the paper (a joint can pop when the target"
            " crosses the fold distance); 1 keeps every joint's speed bounded, for animation and bakes",
            real("smooth_fold", 0.0, 1.0),
            active=lambda options: options.get("fold_angle", 180.0) == 180.0,
            minimum=0.0,
            maximum=1.0,
            subtype="FACTOR",
            panel_default=1.0,
            why="a chain in Blender is animated (Live, Bake): a joint must not pop where the target crosses"
            " the fold distance; the core's default is the paper's method",
        ),
    ),
    max_iterations=1,
    batch=batch,
    one=floats("triangulation", float_solver),
    sequence=sequence,
    check=_check,
)
