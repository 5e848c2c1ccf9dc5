"""The one solve path of a chain, given the method's declaration (`Method`, not its name).

`solve` runs the method's one-target kernel where it has one, else its batch kernel on a single
row; `position_solver` its many-target kernel where it has one, else its batch kernel; when the
faster kernel declines, its reason stays on the result (`Solution.reason`,
`BatchSolution.reason`). Goals (pole, tip orientation) wrap the position solve (common.goals).
solvers.api looks the method up by name and runs this; a tree kernel that solves chains
(triangulation's segments) runs it with its own method's declaration.
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np

from ..model.chain import Chain, as_floats
from ..model.method import Method
from ..model.result import BatchSolution, Solution
from . import goals, soft

# Default tolerance: this fraction of the chain's total length (1 m arm ->
# 10 µm). Triangulation is exact anyway; this bounds the iterative methods.
DEFAULT_RELATIVE_TOLERANCE = 1e-5
NO_FLOAT_KERNEL = "{name} has no float kernel"  # Solution.reason of a method without `one`


def entry_settings(
    entry: Method, tolerance: float | None, max_iterations: int | None, options: dict, length: float
) -> tuple[Method, float, int, dict]:
    """(entry, tolerance, iteration cap, complete checked options) for bones of total `length`
    (the default tolerance's scale), chain or tree; or ValueError."""
    options = entry.options_for(options)
    if tolerance is None:
        tolerance = DEFAULT_RELATIVE_TOLERANCE * length
    elif not (isinstance(tolerance, (int, float)) and math.isfinite(tolerance) and tolerance > 0):
        raise ValueError(f"tolerance must be a positive distance, got {tolerance!r}")
    if max_iterations is None:
        max_iterations = entry.max_iterations
    elif not (isinstance(max_iterations, (int, np.integer)) and max_iterations >= 1):
        raise ValueError(f"max_iterations must be an integer >= 1, got {max_iterations!r}")
    return entry, float(tolerance), int(max_iterations), options


def check_chain(chain: object) -> None:
    if not isinstance(chain, Chain):
        raise ValueError(f"expected a solvers.Chain, got {type(chain).__name__}")


def solve(
    entry: Method,
    chain: Chain,
    target: object,
    tolerance: float | None = None,
    max_iterations: int | None = None,
    pole: object = None,
    pole_angle: float = 0.0,
    target_rotation: object = None,
    rotation_weight: float = 1.0,
    options: dict | None = None,
    softness: float = 0.0,
) -> Solution:
    """`solvers.solve` with the method's declaration `entry` (the chain already checked;
    `softness` a checked share, common.soft: the target softened once here, before any kernel)."""
    entry, tol, iters, options = entry_settings(entry, tolerance, max_iterations, options, chain.total_length)
    t = as_floats(target, "target")
    if softness:
        t = soft.soften_target(chain.root, t, chain.total_length, softness)
    extra = goals.read_goals(chain, 1, pole, pole_angle, target_rotation, rotation_weight)
    if entry.one is None:
        reason = NO_FLOAT_KERNEL.format(name=entry.name)
    else:
        solved = entry.one(chain, t, tol, iters, options, extra)
        if not isinstance(solved, str):
            return solved
        reason = solved
    row = np.array([t])
    if extra is not None:
        solution = goals.solve_with_goals(chain, row, extra, position_solver(entry, tol, iters, options), tol)
    else:
        solution = position_solver(entry, tol, iters, options)(chain, row)
    return solution[0].replace(reason=reason)


def position_solver(entry: Method, tol: float, iters: int, options: dict):
    """The position-only batch solve for these settings: `(chain, targets (m, 3)) -> BatchSolution`;
    the method's `many` kernel where it serves, else `batch` with the reason kept."""

    def solve(chain: Chain, targets: np.ndarray) -> BatchSolution:
        reason = ""
        if entry.many is not None:
            solved = entry.many(chain, targets, tol, iters, options)
            if not isinstance(solved, str):
                return solved
            reason = solved
        solution = entry.batch(chain, targets, tol, iters, options)
        return replace(solution, reason=reason) if reason else solution

    return solve
