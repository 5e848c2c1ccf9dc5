"""Aim goals inside the skeleton entry points (issue 20 item 4): an `Effector` with an `aim_axis`
is solved by the shared aim pass (common.aim) after the reaching effectors, in every method.

The rule (common.aim's "tree rule"), for one frame:
1. The reaching effectors and pins are solved as without the aims, by the method asked for
   (`solve_skeleton` and its many-frame forms, with its tolerance, iteration cap, limits).
2. Each aim, ancestors first, then turns the bones of its branch that no reaching effector,
   no pin and no aim solved before it depends on (common.aim.free_bones), starting from the
   frame's input rotations of those bones (so Solve and both Bake routes give the same pose:
   a function of the frame's target), with the skeleton's limits and the iteration cap asked for
   (default common.aim.DEFAULT_MAX_ITERATIONS). Every reach result stays exactly as solved.

Reached, declared once (`aim_tolerance`): an aim is reached when the ray from its tip bone's
head along the aim axis passes within the distance tolerance of the target (the method's
tolerance; default DEFAULT_RELATIVE_TOLERANCE x the length of the aim's branch): its remaining
angle is within asin(tolerance / d), d the distance from the tip bone's head to the target. The
solution's `error` for an aim is that miss distance (`aim_miss`), `angles` the remaining angle;
`iterations` the reach solve's plus the aim passes, `reason` the reach's and each aim's that stopped
short ("aim on bone i: joint limits block the aim").
A target on the tip bone's head (within the tolerance of it) is refused (ValueError): there is no
direction to aim along.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import replace

import numpy as np

from .. import quat
from ..model.aim_axis import axis_vector
from ..skeleton import Effector, Skeleton, SkeletonBatch, SkeletonSolution
from . import aim, root_move
from .chain_path import DEFAULT_RELATIVE_TOLERANCE


def aiming(effectors: list[Effector]) -> list[int]:
    """The indices of the effectors that aim."""
    return [k for k, e in enumerate(effectors) if e.aim_axis]


def aim_tolerance(tolerance: float, distance: float) -> float:
    """The angular tolerance (radians): the angle at which a ray passes `tolerance` from a target
    `distance` from its start."""
    return math.asin(min(1.0, tolerance / distance)) if distance > 0.0 else math.pi


def aim_miss(angle: float, distance: float) -> float:
    """How far the ray misses the target: distance x sin(angle), or the distance past a right
    angle (the ray then points away and its start is its nearest point)."""
    return distance * math.sin(angle) if angle <= math.pi / 2 else distance


def measure(skeleton: Skeleton, local: np.ndarray, effector: Effector) -> tuple[float, float]:
    """(remaining angle in radians, distance from the tip bone's head to the target) of an aim on
    the pose `local`."""
    frames, heads, _ = skeleton.forward(local)
    axis = quat.rotate(frames[effector.bone], axis_vector(effector.aim_axis))
    d = np.asarray(effector.position) - heads[effector.bone]
    dist = float(np.linalg.norm(d))
    angle = math.atan2(float(np.linalg.norm(np.cross(axis, d))), float(axis @ d))
    return angle, dist


def after_reach(
    skeleton: Skeleton,
    local: np.ndarray,
    effectors: list[Effector],
    reached: SkeletonSolution | None,
    *,
    tolerance: float | None,
    max_iterations: int | None,
    method: str,
) -> SkeletonSolution:
    """Step 2 of the rule: `effectors`' aims on the pose `reached` (the solution of the others,
    in their order; None when every effector aims) from the frame's input rotations `local`.
    A reach that moved the root (`root_shift`, common.root_move): the aims turn on the skeleton as
    moved, and the result carries the shift."""
    k = len(effectors)
    aims = aiming(effectors)
    reach = [j for j in range(k) if j not in aims]
    shift = None if reached is None else reached.root_shift
    if shift is not None:
        skeleton = root_move.shifted(skeleton, root_move.root_of(skeleton, [effectors[j] for j in reach]), shift)
    pose = np.array(local if reached is None else reached.local, dtype=float)
    error, angles = np.full(k, np.nan), np.full(k, np.nan)
    ok, iterations, reasons, unheld = True, 0, [], ()
    if reached is not None:
        error[reach] = reached.error
        ok, iterations, unheld = reached.reached, reached.iterations, tuple(reach[j] for j in reached.unheld)
        reasons.append(reached.reason)
        method = reached.method
    cap = aim.DEFAULT_MAX_ITERATIONS if max_iterations is None else max_iterations
    done = [effectors[j].bone for j in reach]
    for j in sorted(aims, key=lambda a: len(skeleton.branch(effectors[a].bone))):  # ancestors first
        e = effectors[j]
        bones = skeleton.branch(e.bone)
        free = [b for b, f in zip(bones, aim.free_bones(skeleton.parents, bones, done), strict=True) if f]
        pose[free] = np.asarray(local, dtype=float)[free]  # from the frame's input (module doc)
        tol = tolerance if tolerance is not None else DEFAULT_RELATIVE_TOLERANCE * float(skeleton.lengths[bones].sum())
        angle, dist = measure(skeleton, pose, e)
        if not dist > max(tol, aim.AT_HEAD * float(skeleton.lengths[bones].sum())):  # within the tolerance: on it
            raise ValueError(
                f"the aim target of the effector on bone {e.bone} is at its tip bone's head (within the tolerance,"
                f" {tol:.3g}): there is no direction to aim along"
            )
        # The tip bone's head moves at most the branch's head-to-head reach from the branch's first
        # head (which the aim does not move): the angle that keeps the ray within `tol` anywhere there.
        top = skeleton.forward(pose)[1][bones[0]]
        reach_above = float(sum(np.linalg.norm(skeleton.offsets[b]) for b in bones[1:]))
        within = aim_tolerance(tol, float(np.linalg.norm(e.position - top)) + reach_above)
        pose, solved = aim.aim_after_reach(
            skeleton, pose, bones, done, e.position, e.aim_axis,
            aim_spread=e.aim_spread, tolerance=within, max_iterations=cap,
        )  # fmt: skip
        angle, dist = measure(skeleton, pose, e)
        angles[j], error[j] = angle, aim_miss(angle, dist)
        ok = ok and error[j] <= tol
        iterations += solved.iterations
        if solved.reason and error[j] > tol:
            reasons.append(f"aim on bone {e.bone}: {solved.reason}")
        done.append(e.bone)
    reason = "; ".join(dict.fromkeys(r for r in reasons if r))
    return SkeletonSolution(pose, error, bool(ok), iterations, method, reason, unheld, angles, root_shift=shift)


def after_reach_frames(
    skeleton: Skeleton,
    local: np.ndarray,
    effectors: list[Effector],
    positions: np.ndarray,
    poles: np.ndarray,
    reach: Callable[[list[Effector], np.ndarray, np.ndarray], SkeletonBatch] | None,
    **settings: object,
) -> SkeletonBatch:
    """Many frames (rows as common.frames.frame_rows checked them): the reaching effectors'
    frames by `reach(effectors, positions, poles)` (a many-frame entry point; None: every
    effector aims), then each frame's aims (`after_reach`; `settings` its keywords, `tolerance`
    one distance or one per frame)."""
    aims = aiming(effectors)
    if np.any(np.isfinite(poles[:, aims])):
        raise ValueError("an aiming effector takes no pole")
    others = [j for j in range(len(effectors)) if j not in aims]
    batch = None
    if others:
        batch = reach([effectors[j] for j in others], positions[:, others], poles[:, others])
    m = len(positions)
    rows = []
    for f in range(m):
        frame = [replace(e, position=positions[f, j]) if e.aim_axis else e for j, e in enumerate(effectors)]
        solved = None
        if batch is not None:
            shift = None if batch.root_shift is None else batch.root_shift[f]
            solved = SkeletonSolution(
                batch.local[f],
                batch.error[f],
                bool(batch.reached[f]),
                int(batch.iterations[f]),
                batch.method,
                root_shift=shift,
            )
        tolerance = settings.get("tolerance")
        own = settings if np.ndim(tolerance) == 0 else {**settings, "tolerance": float(tolerance[f])}
        rows.append(after_reach(skeleton, local, frame, solved, **own))
    reasons = [batch.reason] if batch is not None else []
    reasons += [r.reason for r in rows]
    return SkeletonBatch(
        np.array([r.local for r in rows]),
        np.array([r.error for r in rows]),
        np.array([r.reached for r in rows]),
        np.array([r.iterations for r in rows]),
        rows[-1].method,
        "; ".join(dict.fromkeys(r for r in reasons if r)),
        np.array([r.angles for r in rows]),
        None if batch is None or batch.root_shift is None else np.array(batch.root_shift),
    )
