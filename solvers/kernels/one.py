"""One target through the plain-float kernels, or the reason they cannot serve it."""

from __future__ import annotations

import math
from itertools import chain as chain_iterables

import numpy as np

from .. import triangulation as numpy_triangulation
from ..chain import Chain, reach_terms
from ..result import Solution
from ..triangulation.scalar import fold_blend, fold_terms, one_pass
from . import ccd, fabrik, goals, jacobian
from .floats import multiply
from .loop import run, swing_rotations

ITERATIVE = ("fabrik", "ccd", "jacobian")


def reason(chain: Chain, method: str, options: dict, kernel: str = "float kernel") -> str | None:
    """Why the float kernel (or the block kernels of solvers.soa, `kernel` naming them) cannot
    solve on this chain with these options (None: it can).
    Options arrive checked (`registry.Method.options_for`), as the registry's interface says."""
    if chain.limits is not None:
        return "joint limits: the numpy solver carries the local rotations"
    if method == "fabrik" and options["placement"] != "line":
        return f"FABRIK sphere placement has no {kernel}"
    if method == "jacobian":
        if options["variant"] != "dls":
            # The transpose converges linearly through near-singular poses, where rounding
            # differences grow past 1e-9 x length over a hundred iterations: numpy only.
            return f"the Jacobian {options['variant']} has no {kernel}"
        if not options["damping"] > 0.0:
            return f"undamped least squares has no {kernel}"
    return None


class Terms:
    """A chain's float terms (from `Chain.scalar_terms` and its frames), and those of its head."""

    __slots__ = ("rows", "lengths", "dirs", "fallbacks", "total", "reach", "inner", "guard", "frames", "rest")

    def __init__(self, rows, lengths, dirs, fallbacks, total, reach, inner, guard, frames, rest) -> None:
        self.rows, self.lengths, self.dirs, self.fallbacks, self.total = rows, lengths, dirs, fallbacks, total
        self.reach, self.inner, self.guard, self.frames, self.rest = reach, inner, guard, frames, rest

    @classmethod
    def of(cls, chain: Chain, goals: bool = False) -> Terms:
        if not goals:  # kept on the chain (it never changes): one solve's packing cost saved
            terms = chain.__dict__.get("_float_terms")
            if terms is None:
                terms = chain.__dict__["_float_terms"] = cls._of(chain, False)
            return terms
        return cls._of(chain, True)

    @classmethod
    def _of(cls, chain: Chain, goals: bool) -> Terms:
        rows, lengths, dirs, reach, inner, fallbacks = chain.scalar_terms
        frames = rest = None
        if goals:  # the frames and the root's rest frame (base x reference), for the goals only
            frames, base, reference = chain.goal_terms
            rest = multiply(base, reference)
        return cls(rows, lengths, dirs, fallbacks, chain.total_length, reach, inner, chain.fold_guard, frames, rest)

    def head(self) -> Terms:
        """The chain without its tip bone (as `goals._head`)."""
        lengths = self.lengths[:-1]
        total = math.fsum(lengths)
        reach, inner, guard = reach_terms(lengths, total)
        return Terms(
            self.rows[:-1],
            lengths,
            self.dirs[:-1],
            self.fallbacks[:-1],
            total,
            tuple(reach),
            tuple(inner),
            guard,
            self.frames[:-1],
            self.rest,
        )


def plain_solver(method: str, tolerance: float, cap: int, options: dict):
    """solve(terms, target) -> (points, rotations, iterations): the position-only float solve."""
    if method == "triangulation":
        fold_angle, smooth = options["fold_angle"], options["smooth_fold"]
        fold = fold_terms(fold_angle)

        def solve(t: Terms, target: tuple):
            blend = fold_blend(t.lengths, t.reach, t.inner, smooth) if smooth else None
            band = numpy_triangulation.BAND * t.total
            out, rots, _ = one_pass(
                t.rows[0], t.lengths, t.dirs, t.reach, t.guard, t.fallbacks, target, band, fold_angle, fold, blend
            )
            return out, rots, 1

        return solve

    def solve(t: Terms, target: tuple):
        if method == "fabrik":
            step = fabrik.make_step(t.rows[0], t.lengths, t.dirs, target)
        elif method == "ccd":
            step = ccd.make_step(t.lengths, t.fallbacks, target)
        else:
            lam2 = (options["damping"] * t.total) ** 2
            step = jacobian.make_step(t.lengths, t.dirs, target, lam2, options["max_step"])
        points, iterations = run(t.rows, t.lengths, t.dirs, t.total, target, tolerance, cap, step)
        carried = getattr(step, "carried", None)  # a step's own unit directions of the points it returned
        solved = carried[0] if carried is not None and carried[1] is points else None
        return points, swing_rotations(points, t.dirs, t.fallbacks, solved), iterations

    return solve


def solve(
    chain: Chain, target: np.ndarray, method: str, tolerance: float, cap: int, options: dict, extra=None
) -> Solution:
    """`api.solve(chain, target, method=..., ...)` for a chain and options `reason` accepts;
    `extra` the validated goals (solvers.goals.Goals, one target) or None."""
    t = tuple(target.tolist())
    plain = plain_solver(method, tolerance, cap, options)
    if extra is None:
        points, rotations, iterations = plain(Terms.of(chain), t)
    else:
        pole = None if extra.pole is None else tuple(extra.pole[0].tolist())
        rotation = None if extra.rotation is None else tuple(extra.rotation[0].tolist())
        points, rotations, iterations = goals.solve(
            Terms.of(chain, True), t, plain, pole, extra.pole_angle, rotation, extra.rotation_weight
        )
    x, y, z = points[-1]
    error = math.sqrt((x - t[0]) ** 2 + (y - t[1]) ** 2 + (z - t[2]) ** 2)
    # np.fromiter over the flat floats: a little cheaper than np.array's nested-sequence discovery.
    return Solution(
        np.fromiter(chain_iterables.from_iterable(points), float, 3 * len(points)).reshape(-1, 3),
        np.fromiter(chain_iterables.from_iterable(rotations), float, 4 * len(rotations)).reshape(-1, 4),
        iterations,
        error,
        error <= tolerance,
        method,
    )
