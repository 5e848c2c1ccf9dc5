"""A solve's figures: the tip error measured on the written pose, the result stored on the
panel chain, and the line reports print."""

from __future__ import annotations

import math

import numpy as np

from ... import rig, solvers
from ...solvers.common.aim_goals import aim_miss
from ...solvers.model.aim_axis import AIM_AXES
from ..spec import ChainSpec
from .outcome import ChainOutcome


def store_result(item, outcome: ChainOutcome, error: float | None = None, obj=None, angle: float | None = None) -> None:
    """The panel's result. `error`: measured on the written pose (with `obj`, the armature): then
    "reached" also needs that error within the chain's tolerance, not only the solver's word.
    `angle`: an aiming chain's angle left (degrees) measured there (`measured_angle`)."""
    r = item.result
    aimed = outcome.angle is not None
    if r.aimed != aimed:
        r.aimed = aimed
    if aimed:
        r.angle = outcome.angle if angle is None else angle
    # Fields that usually repeat are compared first: a property read costs a fraction of a write.
    if r.method != outcome.spec.method:
        r.method = outcome.spec.method
    r.error = outcome.error if error is None else error
    if r.iterations != outcome.iterations:
        r.iterations = outcome.iterations
    r.cost = outcome.cost
    r.time_ms = outcome.time_ms
    reached = outcome.reached
    if reached and error is not None and obj is not None:
        reached = error <= world_tolerance(obj, outcome.spec, outcome.names)
    if r.reached != reached:
        r.reached = reached
    reason = outcome.reason
    if r.reason != reason:
        r.reason = reason
    if r.group != outcome.group:
        r.group = outcome.group
    if not item.has_result:
        item.has_result = True


def miss_warning(obj, outcome: ChainOutcome, error: float) -> str:
    """The WARNING for a chain whose tip ended farther than its tolerance from its goal, measured on
    the written pose: a target missed, a pin that did not hold; '' otherwise, and for an aiming
    chain (its result line gives the angle left)."""
    tolerance = world_tolerance(obj, outcome.spec, outcome.names)
    if outcome.spec.aims or error <= tolerance:
        return ""
    if outcome.spec.pin:
        return (
            f"pinned chain '{outcome.spec.label}' could not hold: its tip is {error:.3g} from where it was pinned"
            " (out of reach of its bones, or kept by their limits)"
        )
    spec = outcome.spec
    # The possible causes, as alternatives: which one holds is not known here.
    why = ["out of its bones' reach"]
    why += ["held by their limits or locks"] if spec.use_limits or spec.use_locks else []
    why += ["held short by Softness"] if spec.softness > 0.0 else []
    why += [f"blended by Influence {spec.influence:g}"] if spec.influence < 1.0 else []
    causes = why[0] if len(why) == 1 else ", ".join(why[:-1]) + " or " + why[-1]
    return f"chain '{spec.label}' misses its target by {error:.3g} (tolerance {tolerance:.3g}): {causes}"


def result_line(outcome: ChainOutcome, error: float, angle: float | None = None) -> str:
    """The Solve report's line; it ends with why a faster kernel did not serve, if one did not.
    An aiming chain's: the angle left (`angle`, measured, else the solver's) and the ray's miss."""
    reason = outcome.reason
    together = f" (group {outcome.group})" if outcome.group else ""
    what = "pinned, tip moved" if outcome.spec.pin else "tip error"
    if outcome.angle is not None:  # the angle left, and how far the aim ray misses the target
        left = outcome.angle if angle is None else angle
        what = f"aims {outcome.spec.aim_axis} {left:.3g}° off the target, its ray misses by"
    return (
        f"chain '{outcome.spec.label}'{together}: {outcome.spec.method}, {what} {error:.3g},"
        f" {outcome.iterations} iteration(s), rotation cost {outcome.cost:.1f}°, {outcome.time_ms:.2f} ms"
        + (f" ({reason})" if reason else "")
    )


def world_tolerance(obj, spec: ChainSpec, names=None) -> float:
    """The chain's tolerance as a world distance (0 in the settings: the solver's default share of
    the chain's length), with room for the written pose's float32 channels. `names`: the chain's
    bones when known (the solve read them)."""
    if spec.tolerance > 0.0:
        return spec.tolerance * (1.0 + 1e-6)
    if names is None:
        names = rig.chain_bone_names(obj, spec.tip, spec.chain_length, spec.use_tail)
    length = sum(obj.data.bones[n].length for n in names) * max(map(abs, obj.matrix_world.to_scale()))
    return solvers.DEFAULT_RELATIVE_TOLERANCE * length * (1.0 + 1e-3)


def measured_error(depsgraph, obj, spec: ChainSpec, goal_world=None) -> float:
    """World tip error of the written pose (`depsgraph` evaluated after the write; plain mathutils:
    this runs on every Solve). `goal_world`: the point the tip should be at when it is not the
    target (a pinned chain's held point)."""
    if spec.aims:
        return measured_aim(depsgraph, obj, spec)[1]
    obj_eval = obj.evaluated_get(depsgraph)
    bone = obj_eval.pose.bones[spec.tip]
    tip = obj_eval.matrix_world @ (bone.tail if spec.use_tail else bone.head)
    if goal_world is None:
        goal_world = rig.space.target_world_point(rig.evaluated(spec.target, depsgraph), spec.target_bone)
    return math.dist(tip, goal_world)


def measured_aim(depsgraph, obj, spec: ChainSpec) -> tuple[float, float]:
    """An aiming chain on the written pose: (degrees between its tip bone's aim axis and the line
    from the bone's head to the target, the world distance by which that ray misses the target:
    the error "reached" compares with the tolerance, solvers.common.aim_goals)."""
    target = rig.space.target_world_point(rig.evaluated(spec.target, depsgraph), spec.target_bone)
    return aim_figures(obj.evaluated_get(depsgraph), spec, target)


def aim_figures(obj_eval, spec: ChainSpec, target_world) -> tuple[float, float]:
    """`measured_aim`'s figures on the evaluated armature `obj_eval`, the target at `target_world`
    (in float64, atan2: mathutils' single-precision acos reads 0 below ~0.03 degrees)."""
    matrix = np.array(obj_eval.matrix_world @ obj_eval.pose.bones[spec.tip].matrix, dtype=float)
    axis = matrix[:3, :3] @ np.array(AIM_AXES[spec.aim_axis])
    to_target = np.asarray(target_world, dtype=float) - matrix[:3, 3]
    dist = float(np.linalg.norm(to_target))
    angle = math.atan2(float(np.linalg.norm(np.cross(axis, to_target))), float(axis @ to_target))
    return math.degrees(angle), aim_miss(angle, dist)


def measured_angle(depsgraph, obj, spec: ChainSpec) -> float | None:
    """`measured_aim`'s angle (degrees) for an aiming chain, None for one that reaches."""
    return measured_aim(depsgraph, obj, spec)[0] if spec.aims else None


def root_line(depsgraph, obj, outcome: ChainOutcome) -> str:
    """The report's line for a movable root that moved, measured on the written pose ('' if none)."""
    if outcome.root_moved is None:
        return ""
    name, before = outcome.root_moved
    moved = math.dist(rig.root_location.head_world(obj.evaluated_get(depsgraph), name), before)
    return f"chain '{outcome.spec.label}': Move Root moved bone '{name}' by {moved:.3g} (world units)"
