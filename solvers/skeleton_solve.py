"""solve_skeleton: several effectors on one skeleton, or one on a branch (the public entry point).

One effector (not a pin) on one branch is a chain: it goes through `solvers.solve`, the one
solve path with its fast kernels. Several go to the method's tree kernel
(`registry.Method.tree`); a method without one is solved by the least-squares method's tree
kernel (`registry.LEAST_SQUARES`) and the result's reason says so (`tree_kernel`). Then any
pin still off is held (common.pins.hold).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from . import quat, registry
from .api import method_settings, solve
from .common.pins import hold
from .common.soft_goals import soften_effectors
from .model.chain import Chain
from .model.method import Method
from .skeleton import Effector, Skeleton, SkeletonSolution, finish, merge_shared, moved_bones, resolve_pins


def tree_kernel(entry: Method) -> tuple[Method, str]:
    """(the method whose tree kernel solves several effectors for `entry`, the reason when it is
    not `entry` itself: a method without one is solved by `registry.LEAST_SQUARES`)."""
    if entry.tree is not None:
        return entry, ""
    return registry.LEAST_SQUARES, registry.NO_TREE_KERNEL.format(name=entry.name, by=registry.LEAST_SQUARES.name)


def solve_skeleton(
    skeleton: Skeleton,
    local: np.ndarray,
    effectors: list[Effector],
    *,
    method: str,
    tolerance: float | None = None,
    max_iterations: int | None = None,
    **options: object,
) -> SkeletonSolution:
    """Solve `effectors` on `skeleton` from the local rotations `local` (n, 4).

    One effector (not a pin) is a chain from its bone's root: it goes through `solvers.solve`,
    the one solve path with its fast kernels. Several effectors go to the method's tree kernel,
    `registry.Method.tree(skeleton, local, effectors, tolerance, max_iterations, options)`
    (a method without one: `tree_kernel`), with
    pins resolved, effectors on one bone merged (`merge_shared`), options checked and the
    tolerance (default: DEFAULT_RELATIVE_TOLERANCE x the length of the bones the effectors
    move) and iteration cap filled in; then any pin still off is held (`common.pins.hold`, which
    names one that cannot hold in the reason). Errors are each given effector's (an effector with
    `softness`: from its soft position, common.soft_goals)."""
    local = np.asarray(local, dtype=float)
    if local.shape != (skeleton.n_bones, 4) or not np.all(np.isfinite(local)):
        raise ValueError(f"local rotations must be finite with shape ({skeleton.n_bones}, 4), got {local.shape}")
    if not effectors:
        raise ValueError("no effectors to solve")
    for effector in effectors:
        if not 0 <= effector.bone < skeleton.n_bones:
            raise ValueError(f"effector bone {effector.bone} is not a bone of the skeleton")
    effectors = soften_effectors(skeleton, effectors)  # soft IK: once, here, for every method
    if len(effectors) == 1 and not effectors[0].pin:
        return _solve_branch(skeleton, local, effectors[0], method, tolerance, max_iterations, options)
    entry = registry.get(method)
    runs, reason = tree_kernel(entry)
    # The default tolerance's scale: the length of the bones the effectors move.
    length = 0.0
    if tolerance is None:
        length = float(np.sum(skeleton.lengths[moved_bones(skeleton, [e.bone for e in effectors])]))
    if max_iterations is None and entry.tree_max_iterations:
        max_iterations = entry.tree_max_iterations
    _, tol, iters, checked = method_settings(method, tolerance, max_iterations, options, length)
    if runs is not entry:  # the method's own options checked; the one solving takes its defaults
        iters, checked = max_iterations or runs.max_iterations, runs.defaults
    resolved = resolve_pins(skeleton, local, effectors)
    goals = merge_shared(resolved)
    solved = runs.tree(skeleton, local, goals, tol, iters, checked)
    if isinstance(solved, str):
        raise ValueError(f"{method} cannot solve these effectors together: {solved}")
    if reason:
        solved = replace(solved, reason="; ".join(filter(None, (reason, solved.reason))))
    solved = hold(skeleton, local, solved, goals, tol, registry.LEAST_SQUARES)
    if goals is resolved:
        return solved
    unheld = tuple(k for k, e in enumerate(resolved) if e.pin and any(goals[j].bone == e.bone for j in solved.unheld))
    out = finish(skeleton, solved.local, resolved, tol, solved.iterations, solved.method, solved.reason)
    return replace(out, unheld=unheld)


def _solve_branch(
    skeleton: Skeleton,
    local: np.ndarray,
    effector: Effector,
    method: str,
    tolerance: float | None,
    max_iterations: int | None,
    options: dict,
) -> SkeletonSolution:
    """One effector: its branch as a Chain through `solvers.solve`."""
    bones = skeleton.branch(effector.bone)
    frames, heads, ends = skeleton.forward(local)
    chain = Chain(
        np.concatenate((heads[bones], ends[bones[-1:]])),
        frames[bones],
        limits=None if skeleton.limits is None else skeleton.limits.subset(bones),
        reference=skeleton.reference[bones],
        base_frame=skeleton.base_frame,
    )
    goals = {"pole": effector.pole, "pole_angle": effector.pole_angle}
    if effector.orientation is not None:
        goals.update(target_rotation=effector.orientation, rotation_weight=effector.rotation_weight)
    sol = solve(
        chain, effector.position, method=method, tolerance=tolerance, max_iterations=max_iterations, **goals, **options
    )
    solved = np.array(local, dtype=float)
    new_frames = sol.frames(chain)
    parents = np.concatenate((skeleton.base_frame[None], new_frames[:-1]))
    solved[bones] = quat.multiply(quat.conjugate(quat.multiply(parents, skeleton.reference[bones])), new_frames)
    return SkeletonSolution(solved, np.array([sol.error]), sol.reached, sol.iterations, sol.method, sol.reason)
