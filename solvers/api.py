"""solve / solve_batch: validate input, run the method's kernels (solvers.registry), package the result.

One path: `solve` runs the method's one-target kernel where it has one, else its batch kernel
on a single row; `solve_batch` its many-target kernel where it has one, else its batch kernel;
when the faster kernel declines, its reason stays on the result (`Solution.reason`,
`BatchSolution.reason`). Goals (pole, tip orientation) wrap the position solve (solvers.goals).
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np

from . import goals, registry
from .chain import Chain, as_floats
from .result import BatchSolution, Solution

# Default tolerance: this fraction of the chain's total length (1 m arm ->
# 10 µm). Triangulation is exact anyway; this bounds the iterative methods.
DEFAULT_RELATIVE_TOLERANCE = 1e-5

# name -> one-line description (compatibility views of the registry; the UI reads `registry`).
METHODS: dict[str, str] = {m.name: m.description for m in registry.METHOD_LIST}
DEFAULT_MAX_ITERATIONS = {m.name: m.max_iterations for m in registry.METHOD_LIST}
OPTIONS = {m.name: m.defaults for m in registry.METHOD_LIST}


def settings(
    chain: Chain, method: str, tolerance: float | None, max_iterations: int | None, options: dict
) -> tuple[registry.Method, float, int, dict]:
    """(method entry, tolerance, iteration cap, complete checked options), or ValueError."""
    if not isinstance(chain, Chain):
        raise ValueError(f"expected a solvers.Chain, got {type(chain).__name__}")
    return method_settings(method, tolerance, max_iterations, options, chain.total_length)


def method_settings(
    method: str, tolerance: float | None, max_iterations: int | None, options: dict, length: float
) -> tuple[registry.Method, float, int, dict]:
    """`settings` for bones of total `length` (the default tolerance's scale), chain or tree."""
    entry = registry.get(method)
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


def solve(
    chain: Chain,
    target: object,
    *,
    method: str,
    tolerance: float | None = None,
    max_iterations: int | None = None,
    pole: object = None,
    pole_angle: float = 0.0,
    target_rotation: object = None,
    rotation_weight: float = 1.0,
    **method_options: object,
) -> Solution:
    """Solve one target (3,) from the chain's current pose.

    `tolerance` is a distance (default DEFAULT_RELATIVE_TOLERANCE x chain
    length); `max_iterations` caps iterative methods. Method options:
    triangulation `fold_angle` (180 as in the paper, or 90..180) and
    `smooth_fold` (0 as in the paper .. 1: a fold that turns at a bounded
    rate as the target crosses the fold distance, for animation);
    jacobian `variant` ('dls', 'pseudoinverse', 'transpose'), `damping`
    (lambda / chain length), `max_step` (radians per joint per iteration).

    Goals (need bone frames): `pole` (3,) with `pole_angle` (radians), as
    Blender's IK pole target; `target_rotation` (w, x, y, z), the tip bone's
    wanted orientation, with `rotation_weight` 0..1 (see solvers.goals).
    """
    entry, tol, iters, options = settings(chain, method, tolerance, max_iterations, method_options)
    t = as_floats(target, "target")
    extra = goals.read_goals(chain, 1, pole, pole_angle, target_rotation, rotation_weight)
    if entry.one is None:
        reason = registry.NO_FLOAT_KERNEL.format(name=entry.name)
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


def solve_batch(
    chain: Chain,
    targets: object,
    *,
    method: str,
    tolerance: float | None = None,
    max_iterations: int | None = None,
    pole: object = None,
    pole_angle: float = 0.0,
    target_rotation: object = None,
    rotation_weight: float = 1.0,
    **method_options: object,
) -> BatchSolution:
    """Solve each of (m, 3) targets independently from the chain's pose.
    Goals as in `solve`; `pole` and `target_rotation` may be one for all
    targets or one per target ((m, 3), (m, 4))."""
    entry, tol, iters, options = settings(chain, method, tolerance, max_iterations, method_options)
    try:
        t = np.array(targets, dtype=float)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"targets must be an (m, 3) array of numbers: {exc}") from exc
    if t.ndim != 2 or t.shape[1] != 3:
        raise ValueError(f"targets must have shape (m, 3), got {t.shape}")
    finite = np.all(np.isfinite(t), axis=1)
    if not np.all(finite):
        bad = int(np.flatnonzero(~finite)[0])
        raise ValueError(f"target {bad} is not finite: {t[bad].tolist()}")
    extra = goals.read_goals(chain, t.shape[0], pole, pole_angle, target_rotation, rotation_weight)
    plain = position_solver(entry, tol, iters, options)
    if extra is not None:
        return goals.solve_with_goals(chain, t, extra, plain, tol)
    return plain(chain, t)


def position_solver(entry: registry.Method, tol: float, iters: int, options: dict):
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
