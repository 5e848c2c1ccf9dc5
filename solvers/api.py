"""solve / solve_batch: validate input, pick the method, package the result."""

from __future__ import annotations

import math

import numpy as np

from . import ccd, constrained, fabrik, goals, iterate, jacobian, kernels, triangulation
from .chain import Chain, as_point
from .result import BatchSolution, Solution, batch_result

# Default tolerance: this fraction of the chain's total length (1 m arm ->
# 10 µm). Triangulation is exact anyway; this bounds the iterative methods.
DEFAULT_RELATIVE_TOLERANCE = 1e-5

# name -> one-line description (the UI shows these).
METHODS: dict[str, str] = {
    "triangulation": "One pass from the root with the law of cosines; upper joints lead",
    "fabrik": "Forward and backward reaching; fast, natural poses in few iterations",
    "ccd": "Cyclic coordinate descent from the tip; cheap steps, tip joints lead",
    "jacobian": "Jacobian (damped least squares, pseudoinverse or transpose); smooth",
}

DEFAULT_MAX_ITERATIONS = {"triangulation": 1, "fabrik": 100, "ccd": 100, "jacobian": 200}
OPTIONS = {
    "triangulation": {"fold_angle": 180.0, "smooth_fold": 0.0},
    "fabrik": {"placement": "line"},
    "ccd": {},
    "jacobian": {"variant": "dls", "damping": 0.05, "max_step": 0.5},
}


def _settings(
    chain: Chain, method: str, tolerance: float | None, max_iterations: int | None, options: dict
) -> tuple[float, int, dict]:
    if not isinstance(chain, Chain):
        raise ValueError(f"expected a solvers.Chain, got {type(chain).__name__}")
    if method not in METHODS:
        raise ValueError(f"unknown method {method!r}; choose one of {', '.join(METHODS)}")
    unknown = set(options) - set(OPTIONS[method])
    if unknown:
        raise ValueError(
            f"unknown option(s) for {method}: {', '.join(sorted(unknown))}"
            f" (accepted: {', '.join(OPTIONS[method]) or 'none'})"
        )
    if tolerance is None:
        tolerance = DEFAULT_RELATIVE_TOLERANCE * chain.total_length
    elif not (isinstance(tolerance, (int, float)) and math.isfinite(tolerance) and tolerance > 0):
        raise ValueError(f"tolerance must be a positive distance, got {tolerance!r}")
    if max_iterations is None:
        max_iterations = DEFAULT_MAX_ITERATIONS[method]
    elif not (isinstance(max_iterations, (int, np.integer)) and max_iterations >= 1):
        raise ValueError(f"max_iterations must be an integer >= 1, got {max_iterations!r}")
    return float(tolerance), int(max_iterations), {**OPTIONS[method], **options}


def _iterative(
    chain: Chain, targets: np.ndarray, method: str, tolerance: float, max_iterations: int, options: dict
) -> BatchSolution:
    if method == "fabrik":
        step = fabrik.make_step(chain, **options)
    elif method == "ccd":
        step = ccd.make_step(chain)
    else:
        step = jacobian.make_step(chain, **options)
    points, iterations, local = iterate.run(chain, targets, tolerance, max_iterations, step)
    rotations = None if local is None else constrained.rotations(chain, constrained.forward(chain, local)[0])
    return batch_result(chain, points, targets, iterations, tolerance, method, rotations)


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
    tol, iters, options = _settings(chain, method, tolerance, max_iterations, method_options)
    t = as_point(target, "target")
    extra = goals.read_goals(chain, 1, pole, pole_angle, target_rotation, rotation_weight)
    if kernels.one.reason(chain, method, options) is None:
        return kernels.one.solve(chain, t, method, tol, iters, options, extra)
    if extra is not None:
        return goals.solve_with_goals(chain, t[None, :], extra, _plain(method, tol, iters, options), tol)[0]
    if method == "triangulation":  # the vectorised pass carries the limits
        return triangulation.solve_many(chain, t[None, :], tol, **options)[0]
    return _iterative(chain, t[None, :], method, tol, iters, options)[0]


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
    tol, iters, options = _settings(chain, method, tolerance, max_iterations, method_options)
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
    plain = _plain(method, tol, iters, options)
    if extra is not None:
        return goals.solve_with_goals(chain, t, extra, plain, tol)
    return plain(chain, t)


def _plain(method: str, tol: float, iters: int, options: dict):
    """The position-only batch solve for these settings."""
    if method == "fabrik":
        fabrik.check_placement(options["placement"])
    if method == "triangulation":
        triangulation.check_fold_angle(options["fold_angle"])
        return lambda chain, targets: triangulation.solve_many(chain, targets, tol, **options)
    return lambda chain, targets: _iterative(chain, targets, method, tol, iters, options)
