"""solve_sequence: one chain through targets in order, each solved from the previous solution.

The bake's core. Frame k starts from frame k-1's pose, so iterative methods
warm-start and the motion follows the previous pose. With a pole target every
step starts from the chain's input pose instead, pre-turned toward that step's
pole (solvers.common.goals), as Blender's IK constraint starts every frame: a free
elbow then bends where Blender's does, whatever came before. One path: a method's
sequence kernel (solvers.registry; triangulation's carries plain floats from
step to step) where it has one and it serves, else every step through `solve`
from a chain rebuilt from the last solution, with the kernel's reason kept on
the result (`SequenceSolution.reason`). Goals (pole, tip orientation) and joint
limits go through both.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import replace

import numpy as np

from . import quat
from .api import settings, solve
from .common import goals, soft
from .common.chain_path import position_solver
from .model.chain import Chain
from .model.result import SequenceSolution

BATCH_REASON = "pole target: the steps are independent, solved as one batch"
GOALS_REASON = "pole target or tip orientation: each step through solve"
POP_RATIO = 2.0  # an own solve turning a joint more than this x the continued one's turn pops
POP_MARGIN = math.radians(1.0)  # ... plus this much (turns of a tolerance's size never pop)


def largest_turn(a: np.ndarray, b: np.ndarray) -> float:
    """The largest rotation angle (radians) between the rotations a and b (n, 4)."""
    return float(np.max(quat.angles_between_cheaply(np.asarray(a), np.asarray(b))))


def straight_start(extent: float, total: float, distance: float, tolerance: float) -> bool:
    """Whether a step continued from a start whose tip lies `extent` from the chain's root (its
    full length `total`) toward a target `distance` from the root is solved from its input pose
    too: the start is straight (within the tolerance of full length: the last steps were at or
    past reach), so neither the plane nor the sense of the bend follows from it (rounding picked
    them: Rigify's arm bent backward, or twisted 56-113 degrees in one frame, or CCD, which cannot
    bend a straight chain toward a target on its line, stayed straight and missed), and the
    target is within reach, so the chain must bend. Blender's IK takes both from its input pose."""
    return extent >= total - tolerance and distance < total - tolerance


def keep_own(previous: np.ndarray, continued: np.ndarray, continued_miss: tuple[bool, float], own: np.ndarray,
             own_miss: tuple[bool, float], tolerance: float | None = None) -> bool:  # fmt: skip
    """Whether a step's own solve (from its input pose: rotations `own`) is kept over the continued
    one (`continued`), both after the last step's `previous`; `*_miss`: (reached, largest error).
    Goals first: one that reaches beats one that does not, and of two that miss the nearer by more
    than `tolerance` and a tenth of the smaller miss (CCD stuck straight misses by 11 mm, from the
    input pose by 0.03); then the own
    one unless it pops (turns a joint more than POP_RATIO times as far from `previous` as the
    continued one, plus POP_MARGIN)."""
    if own_miss[0] != continued_miss[0]:
        return own_miss[0]
    # Of two misses only a real gain counts (a tenth of the miss at least): a hair's gain kept an
    # own solve that turned a limited arm 81.7 degrees where the continued one turned 9.4.
    gain = max(tolerance or 0.0, 0.1 * min(own_miss[1], continued_miss[1]))
    if not own_miss[0] and abs(own_miss[1] - continued_miss[1]) > gain:
        return own_miss[1] < continued_miss[1]
    return largest_turn(previous, own) <= POP_RATIO * largest_turn(previous, continued) + POP_MARGIN


def _targets(targets: object) -> np.ndarray:
    try:
        t = np.array(targets, dtype=float)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"targets must be an (m, 3) array of numbers: {exc}") from exc
    if t.ndim != 2 or t.shape[1] != 3 or t.shape[0] < 1:
        raise ValueError(f"targets must have shape (m, 3) with m >= 1, got {t.shape}")
    finite = np.all(np.isfinite(t), axis=1)
    if not np.all(finite):
        bad = int(np.flatnonzero(~finite)[0])
        raise ValueError(f"target {bad} is not finite: {t[bad].tolist()}")
    return t


def _tolerances(chain: Chain, tolerance: object, m: int) -> tuple[float | None, np.ndarray]:
    """(scalar for validation or None, per-step tolerances (m,))."""
    if tolerance is None or np.ndim(tolerance) == 0:
        return tolerance, None
    tol = np.array(tolerance, dtype=float)
    if tol.shape != (m,) or not np.all(np.isfinite(tol)) or np.any(tol <= 0.0):
        raise ValueError(f"tolerance must be a positive distance or {m} of them, got shape {tol.shape}")
    return float(tol[0]), tol


def solve_sequence(
    chain: Chain,
    targets: object,
    *,
    method: str,
    tolerance: object = None,
    max_iterations: int | None = None,
    progress: Callable[[int], None] | None = None,
    keep_points: bool = True,
    pole: object = None,
    pole_angle: float = 0.0,
    target_rotation: object = None,
    rotation_weight: float = 1.0,
    softness: float = 0.0,
    **method_options: object,
) -> SequenceSolution:
    """Solve (m, 3) targets one after another, step k from step k-1's solution (with a pole:
    every step from the chain's input pose, pre-turned toward the pole; see the module doc).

    `tolerance`: a distance, or one per target; defaults and method options as
    `solve`. `progress(k)` is called after step k, for about every hundredth
    step and the last (steps are cheap: a call per step would show). Joint limits, reference
    pose and base frame of `chain` carry through every step. `keep_points`
    False keeps only the tips (a bake needs the frames and the tips). Goals as in `solve`;
    `pole` and `target_rotation` may be one for all steps or one per step ((m, 3), (m, 4)).
    `softness` as in `solve`: every target softened once, here, from the chain's root."""
    share = soft.check_softness(softness)
    t = _targets(targets)
    if share:
        t = soft.soften_targets(chain.root, t, chain.total_length, share)
    scalar_tol, per_step = _tolerances(chain, tolerance, len(t))
    entry, tol, iters, options = settings(chain, method, scalar_tol, max_iterations, method_options)
    tols = np.full(len(t), tol) if per_step is None else per_step
    report = _sparse(progress, len(t))
    extra = goals.read_goals(chain, len(t), pole, pole_angle, target_rotation, rotation_weight)
    reason = GOALS_REASON if extra is not None else ""
    if entry.sequence is not None and extra is None:
        steps = entry.sequence(chain, t, tols, iters, options, report, keep_points)
        if not isinstance(steps, str):
            return steps if keep_points or steps.points is None else replace(steps, points=None)
        reason = steps
    if extra is not None and extra.pole is not None and np.all(tols == tols[0]):
        # With a pole every step starts from the input pose: the steps are independent, and one
        # batch solves them all (solve_batch's kernels; a step agrees with `solve` to 2e-8 x length).
        tol = float(tols[0])
        sol = goals.solve_with_goals(chain, t, extra, position_solver(entry, tol, iters, options), tol)
        frames = None if chain.frames is None else quat.multiply(sol.rotations, chain.frames)
        if report is not None:
            report(len(t) - 1)
        tips = sol.points[:, -1].copy()
        steps = SequenceSolution(sol.points, tips, frames, sol.error, sol.iterations, sol.reached, method, BATCH_REASON)
        return steps if keep_points else replace(steps, points=None)
    steps = _step_by_step(chain, t, tols, method, iters, options, report, extra)
    steps = replace(steps, reason=reason)
    return steps if keep_points else replace(steps, points=None)


def _sparse(progress: Callable[[int], None] | None, m: int) -> Callable[[int], None] | None:
    """`progress` called for every stride-th step and the last one."""
    if progress is None:
        return None
    stride = max(1, m // 100)
    return lambda k: progress(k) if (k + 1) % stride == 0 or k == m - 1 else None


def _step_goals(extra: goals.Goals | None, k: int) -> dict:
    """Step k's goal arguments for `solve`."""
    if extra is None:
        return {}
    out = {"pole_angle": extra.pole_angle, "rotation_weight": extra.rotation_weight}
    if extra.pole is not None:
        out["pole"] = extra.pole[k]
    if extra.rotation is not None:
        out["target_rotation"] = extra.rotation[k]
    return out


def _step_by_step(chain, targets, tols, method, iters, options, progress, extra) -> SequenceSolution:
    m, n = len(targets), chain.n_bones
    points = np.empty((m, n + 1, 3))
    frames = None if chain.frames is None else np.empty((m, n, 4))
    error, iterations = np.empty(m), np.empty(m, dtype=int)
    # The joint model's rest pose is the first chain's: every step keeps it.
    keep = {} if chain.frames is None else {"reference": chain.reference, "base_frame": chain.base_frame}
    current = chain
    for k, target in enumerate(targets):
        sol = solve(
            current,
            target,
            method=method,
            tolerance=float(tols[k]),
            max_iterations=iters,
            **_step_goals(extra, k),
            **options,
        )
        solved_on = current
        if k and extra is None and _restart(chain, current, target, sol, float(tols[k])):
            own = solve(chain, target, method=method, tolerance=float(tols[k]), max_iterations=iters, **options)
            if frames is None or keep_own(
                current.frames, sol.frames(current), (sol.reached, sol.error),
                own.frames(chain), (own.reached, own.error), float(tols[k]),
            ):  # fmt: skip
                sol, solved_on = own, chain
        points[k], error[k], iterations[k] = sol.points, sol.error, sol.iterations
        solved = None
        if frames is not None:
            solved = sol.frames(solved_on)
            frames[k] = solved
        if extra is None or extra.pole is None:
            current = Chain(sol.points, solved, limits=chain.limits, radii=chain.radii, **keep)
        if progress is not None:
            progress(k)
    return SequenceSolution(points, points[:, -1].copy(), frames, error, iterations, error <= tols, method)


def _restart(chain: Chain, current: Chain, target: np.ndarray, sol, tolerance: float) -> bool:
    """Whether step `sol`, continued from the chain `current`, is solved from the input pose
    (`chain`) too: its start was straight (straight_start). Not on every miss within reach: a
    chain held by its limits misses there on every frame, and a second solve then doubled the
    bake and, kept for a hair's gain, popped (review12b: 81.7 deg against 9.4)."""
    distance = float(np.linalg.norm(target - chain.root))
    extent = float(np.linalg.norm(np.asarray(current.points[-1]) - np.asarray(current.points[0])))
    return straight_start(extent, chain.total_length, distance, tolerance)
