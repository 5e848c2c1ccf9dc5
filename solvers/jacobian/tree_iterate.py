"""The tree Jacobian's general iteration (jacobian.tree's module doc): priority levels, limits, the
joint weighting (stiffness or mass), the nullspace pull; a trust region and Levenberg-Marquardt
damping around each step. (The common case runs in jacobian.tree_plain: the same iteration.)"""

from __future__ import annotations

import math

import numpy as np

from .. import limits as joint_limits
from .. import quat
from ..common import mass
from . import tree_steps as steps
from .tree_plain import MULTIPLY
from .tree_settings import (
    CALM,
    CORRECTIONS,
    DEFAULT_DAMPING,
    ERROR_DAMPING,
    LM_DOWN,
    LM_FLOOR,
    LM_FLOOR_REFUSED,
    LM_UP,
    PATIENCE,
    RESOLVES,
    SETTLED,
)
from .tree_structure import Tree


def _multiply(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return (a[:, :, None] * b[:, None, :]).reshape(-1, 16) @ MULTIPLY


def iterate(tree: Tree, start, tolerance, max_iterations, options, variant, by_mass, lam2) -> tuple[np.ndarray, int]:
    """(the moved bones' locals (m, 4) of the best pose met, the iterations): the solve's loop
    (module doc) from `start`; `lam2` the DLS damping to start from (0: undamped)."""
    gain = float(options["nullspace_gain"])
    lam2_base = lam2 if lam2 > 0.0 else (DEFAULT_DAMPING * tree.mean_span) ** 2
    lam2_floor = LM_FLOOR * lam2_base
    attractor = np.array([1.0, 0.0, 0.0, 0.0]) if options["attractor"] == "rest" else start.copy()
    settle = SETTLED * tolerance / tree.max_span
    current = start
    frames, heads, ends = tree.forward(current)
    error, costs, done = tree.state(frames, ends, tolerance)
    ranked = _with_pull(costs, current, attractor, gain)
    radius, stale, iterations, jac, kept = float(options["max_step"]), 0, 0, None, CALM
    error_damping = ERROR_DAMPING
    inertia = None
    while iterations < max_iterations and not (gain == 0.0 and all(done)):
        pull = None if gain == 0.0 else -gain * _away(current, attractor).ravel()[tree.cols]
        mode = "dls" if variant == "pseudoinverse" and lam2 > 0.0 else variant
        if jac is None:  # the Jacobian of the current pose (a refused step keeps the pose, and it)
            jac = tree.jacobian(frames, heads, ends)
            inertia = tree.inertia(frames, heads) if by_mass else None
        # Damping that shrinks with the error (Levenberg-Marquardt with mu ~ |e|^2, which keeps
        # Newton's quadratic convergence near the goal): a far goal is approached in shorter, more
        # nearly least-motion steps (less turning overall, and fewer iterations than an undamped
        # first step's overshoot); a near one (a bake's next frame) gets the plain step.
        # (Priority levels: from the highest level not yet met, the one the step serves first.)
        damped = lam2
        if variant == "dls":
            rows = next((rows for ok, rows in zip(done, tree.row_levels, strict=True) if not ok), None)
            if rows is not None:
                part = jac if len(done) == 1 else jac[rows]
                pulled = part.T @ error[rows]
                removable = float(pulled @ pulled) * len(rows) / max(float(np.einsum("ij,ij->", part, part)), 1e-300)
                damped = max(lam2, error_damping * removable)
        trial = _advance(tree, current, jac, error, pull, mode, damped, radius, done, settle, inertia)
        iterations += 1
        trial_frames, trial_heads, trial_ends = tree.forward(trial)
        trial_error, trial_costs, trial_done = tree.state(trial_frames, trial_ends, tolerance)
        for _ in range(CORRECTIONS if len(done) > 1 else 0):
            # A lower level's step moves the met levels above it to second order (pins above all: a
            # planted foot drifts off as the spine turns): Newton steps on those levels' goals alone
            # take it back before the step is judged (a second-order correction).
            met = [rows for k, rows in enumerate(tree.row_levels) if done[k]]
            if not met or all(trial_done[k] for k in range(len(done)) if done[k]):
                break
            trial = _correct(
                tree, trial, trial_frames, trial_heads, trial_ends, trial_error, np.concatenate(met), by_mass
            )
            trial_frames, trial_heads, trial_ends = tree.forward(trial)
            trial_error, trial_costs, trial_done = tree.state(trial_frames, trial_ends, tolerance)
        trial_ranked = _with_pull(trial_costs, trial, attractor, gain)
        # Trust region: keep a step that lowers the ranked error and widen the next one (up to max_step;
        # after a refusal only once CALM steps in a row were kept); refuse one that does not and halve
        # the turn. Conflicting goals then settle instead of oscillating, and PATIENCE refusals in a
        # row end the solve: progress has stalled.
        verdict = steps.compare(trial_ranked, ranked)
        if verdict >= 0:
            current, frames, heads, ends, jac = trial, trial_frames, trial_heads, trial_ends, None
            error, done, ranked = trial_error, trial_done, trial_ranked
            kept += 1
            if kept > CALM:
                radius = min(2.0 * radius, float(options["max_step"]))
                lam2_floor = LM_FLOOR * lam2_base  # calm again: the floor as before the refusal (tree_settings)
                lam2 = max(LM_DOWN * lam2, lam2_floor) if variant == "dls" else LM_DOWN * lam2 * (lam2 > lam2_floor)
        else:  # refused: a shorter turn, and (Levenberg-Marquardt) more damping
            radius *= 0.5
            lam2_floor = LM_FLOOR_REFUSED * lam2_base
            lam2 = LM_UP * max(lam2, lam2_floor)
            kept = 0
        stale = 0 if verdict > 0 else stale + 1
        if verdict <= 0:  # the error has stopped falling: no longer damped with it (a compromise's approach)
            error_damping = 0.0
        if stale >= PATIENCE:
            break
    return current, iterations


def _away(local: np.ndarray, attractor: np.ndarray) -> np.ndarray:
    """Each joint's rotation vector (m, 3) from the attractor: grad H, H = 1/2 sum |log(A^-1 L)|^2
    (turning L by -t x it, L <- L exp(-t v), lowers H by exactly (2t - t^2) H for t in 0..1)."""
    return quat.to_rotation_vector(quat.multiply(quat.conjugate(attractor), local))


def _with_pull(costs: list, local: np.ndarray, attractor: np.ndarray, gain: float) -> list:
    """The level costs, and H last when there is a pull (it ranks below every goal)."""
    if gain == 0.0:
        return costs
    return [*costs, 0.5 * float(np.sum(_away(local, attractor) ** 2))]


def _weights(tree: Tree, inertia: np.ndarray | None, weights: np.ndarray | None):
    """The change of variables q' = T y of the joint weights: None (every weight 1), the column scales
    (n,) (W diagonal) or, with the mass weighting's `inertia`, the matrix T (mass.weighted_whitening).
    `weights` (free columns, the mass weighting's): 1 - stiffness, 0 where a resolve locked an axis
    (None: the structure's)."""
    if inertia is not None:
        return mass.weighted_whitening(inertia, tree.col_scale**2 if weights is None else weights)
    return None if tree.unit_cols else tree.col_scale


def _into(scale, jac: np.ndarray, pull):
    """(J~, the pull in y) for the change of variables `scale` (`_weights`)."""
    if scale is None:
        return jac, pull
    if scale.ndim == 2:
        return jac @ scale, None if pull is None else scale.T @ pull
    return jac * scale, None if pull is None else pull * scale


def _back(scale, y: np.ndarray) -> np.ndarray:
    """q' = T y for the change of variables `scale` (`_weights`)."""
    if scale is None:
        return y
    return scale @ y if scale.ndim == 2 else scale * y


def _advance(tree: Tree, local, jac, error, pull, variant, lam2, max_step, done, settle, inertia=None):
    """One iteration's new locals (m, 4): the step, each joint clamped into its limits; where a joint
    had to be clamped its clamped axes are locked and the step solved again (RESOLVES times).

    A level's step (and the pull, below them all) joins only when every level above is settled:
    its goals met (`done`) or its own step turns no joint more than `settle` (it is as near as it
    gets). A lower level's step moves the higher goals to second order; they take that back before
    the lower level moves again. A lower level also gets only the turn that max_step leaves."""
    scale = _weights(tree, inertia, None)
    weights = None
    m = tree.m
    for attempt in range(RESOLVES + 1):
        weighted, weighted_pull = _into(scale, jac, pull)
        parts = steps.priority_steps(weighted, error, tree.row_levels, variant, lam2, weighted_pull)
        step = None
        budget = max_step
        for k, y in enumerate(parts):  # the highest level first
            y = _back(scale, y)
            if tree.every_col:
                part = y.reshape(m, 3)
            else:
                part = np.zeros(3 * m)
                part[tree.cols] = y
                part = part.reshape(m, 3)
            biggest = math.sqrt(float(np.einsum("ij,ij->i", part, part).max()))
            if biggest > budget:
                part = part * (budget / biggest)
            step = part if step is None else step + part
            budget -= min(biggest, budget)
            if budget <= 0.0 or (k < len(done) and not (done[k] or biggest <= settle)):
                break
        # L (1, d/2) normalised: exp(d) to first order (Newton's convergence is the same), and
        # a turn of 2 atan(|d|/2) <= |d| (within max_step), in a few numpy calls.
        turn = np.empty((m, 4))
        turn[:, 0] = 1.0
        turn[:, 1:] = 0.5 * step
        wanted = _multiply(local, turn)
        wanted /= np.sqrt(np.einsum("ij,ij->i", wanted, wanted))[:, None]
        if tree.limits is None or not len(tree.limited):
            return wanted
        bones = tree.limited
        clamped = np.array(wanted)
        clamped[bones] = joint_limits.clamp(tree.limits, bones, wanted[bones])
        over = quat.angle(quat.multiply(clamped[bones], quat.conjugate(wanted[bones])))
        if attempt == RESOLVES or not np.any(over > 1e-12):
            return clamped
        hit = bones[over > 1e-12]
        tw, sx, sz = joint_limits.twist_swing(wanted[hit])
        cw, cx, cz = joint_limits.twist_swing(clamped[hit])
        changed = np.stack((np.abs(sx - cx) > 1e-12, np.abs(tw - cw) > 1e-12, np.abs(sz - cz) > 1e-12), axis=1)
        lock = np.zeros((m, 3), dtype=bool)
        lock[hit] = changed
        if inertia is None:
            scale = np.where(lock.ravel()[tree.cols], 0.0, tree.col_scale if scale is None else scale)
        else:
            weights = np.where(lock.ravel()[tree.cols], 0.0, tree.col_scale**2 if weights is None else weights)
            scale = _weights(tree, inertia, weights)
    return clamped


def _correct(tree: Tree, local, frames, heads, ends, error, rows, by_mass: bool = False) -> np.ndarray:
    """`local` (m, 4) after one Gauss-Newton step on the error rows `rows` alone (the least joint
    motion, or the least kinetic energy `by_mass`; the pseudoinverse up to its ridge), each joint
    clamped into its limits."""
    jac = tree.jacobian(frames, heads, ends)[rows]
    scale = _weights(tree, tree.inertia(frames, heads) if by_mass else None, None)
    y = _back(scale, steps.inverse(_into(scale, jac, None)[0], error[rows], "pseudoinverse", 0.0))
    step = np.zeros(3 * tree.m)
    step[tree.cols] = y
    turn = np.empty((tree.m, 4))
    turn[:, 0] = 1.0
    turn[:, 1:] = 0.5 * step.reshape(tree.m, 3)
    out = _multiply(local, turn)
    out /= np.sqrt(np.einsum("ij,ij->i", out, out))[:, None]
    if tree.limits is not None and len(tree.limited):
        out[tree.limited] = joint_limits.clamp(tree.limits, tree.limited, out[tree.limited])
    return out
