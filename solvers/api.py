"""solve / solve_batch: the public entry points of one chain (the method looked up by name).

One path (solvers.common.chain_path): `solve` runs the method's one-target kernel where it has
one, else its batch kernel on a single row; `solve_batch` its many-target kernel where it has
one, else its batch kernel; when the faster kernel declines, its reason stays on the result
(`Solution.reason`, `BatchSolution.reason`). Goals (pole, tip orientation) wrap the position
solve (solvers.common.goals).
"""

from __future__ import annotations

import numpy as np

from . import registry
from .common import chain_path, goals, soft
from .common.chain_path import DEFAULT_RELATIVE_TOLERANCE, position_solver
from .model.chain import Chain
from .model.method import Method
from .model.result import BatchSolution, Solution

__all__ = ["DEFAULT_RELATIVE_TOLERANCE", "METHODS", "OPTIONS", "position_solver", "settings", "solve", "solve_batch"]

# name -> one-line description (compatibility views of the registry; the UI reads `registry`).
METHODS: dict[str, str] = {m.name: m.description for m in registry.METHOD_LIST}
OPTIONS = {m.name: m.defaults for m in registry.METHOD_LIST}


def settings(
    chain: Chain, method: str, tolerance: float | None, max_iterations: int | None, options: dict
) -> tuple[Method, float, int, dict]:
    """(method entry, tolerance, iteration cap, complete checked options), or ValueError."""
    chain_path.check_chain(chain)
    return method_settings(method, tolerance, max_iterations, options, chain.total_length)


def method_settings(
    method: str, tolerance: float | None, max_iterations: int | None, options: dict, length: float
) -> tuple[Method, float, int, dict]:
    """`settings` for bones of total `length` (the default tolerance's scale), chain or tree."""
    return chain_path.entry_settings(registry.get(method), tolerance, max_iterations, options, length)


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
    softness: float = 0.0,
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
    wanted orientation, with `rotation_weight` 0..1 (see solvers.common.goals).

    `softness` (soft IK, a share of the chain's reach in [0, 1); 0: the exact solve, to the
    bit): the target is first brought in by Nicholas' formula (solvers.common.soft), measured
    from the chain's root with its reach `chain.total_length`; the result's error and `reached`
    are the soft target's.
    """
    chain_path.check_chain(chain)
    share = soft.check_softness(softness)
    return chain_path.solve(
        registry.get(method),
        chain,
        target,
        tolerance,
        max_iterations,
        pole,
        pole_angle,
        target_rotation,
        rotation_weight,
        method_options,
        share,
    )


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
    softness: float = 0.0,
    **method_options: object,
) -> BatchSolution:
    """Solve each of (m, 3) targets independently from the chain's pose.
    Goals as in `solve`; `pole` and `target_rotation` may be one for all
    targets or one per target ((m, 3), (m, 4)). `softness` as in `solve`, for every target."""
    share = soft.check_softness(softness)
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
    if share:
        t = soft.soften_targets(chain.root, t, chain.total_length, share)
    extra = goals.read_goals(chain, t.shape[0], pole, pole_angle, target_rotation, rotation_weight)
    plain = position_solver(entry, tol, iters, options)
    if extra is not None:
        return goals.solve_with_goals(chain, t, extra, plain, tol)
    return plain(chain, t)
