"""Targets and poles that Blender does not evaluate: objects disabled in viewports.

Blender's IK constraint follows such a target (the constraint's relation pulls it into the
depsgraph); Chain IK has no relation to it, so its evaluated copy does not exist and its
stored matrix_world is stale (never set, for one disabled before its first evaluation), and
frame changes do not even write its animation to its properties. `evaluated` then stands in
with the transform Blender would give it at the scene's frame: its own channels with its
active action's F-Curves evaluated, under its parent. What that cannot reproduce (constraints,
drivers, NLA, a bone parent, a bone target of an unevaluated armature) is refused by name.
"""

from __future__ import annotations

from dataclasses import dataclass

from mathutils import Euler, Matrix, Quaternion, Vector

from .keys import plays
from .sampling import active_curves

# The object channels that make matrix_basis (BKE_object_to_mat4), and their sizes.
CHANNELS = {
    "location": 3,
    "delta_location": 3,
    "rotation_euler": 3,
    "delta_rotation_euler": 3,
    "rotation_quaternion": 4,
    "delta_rotation_quaternion": 4,
    "rotation_axis_angle": 4,
    "scale": 3,
    "delta_scale": 3,
}


@dataclass(frozen=True)
class StandIn:
    """What the solve reads of an evaluated target object (rig.space, rig.ik_settings)."""

    name: str
    type: str
    matrix_world: Matrix
    pose: object = None


def evaluated(ob, depsgraph):
    """`ob.evaluated_get(depsgraph)`, or for an object disabled in viewports its stand-in at the
    depsgraph scene's frame (ValueError when it cannot be reproduced)."""
    ob_eval = ob.evaluated_get(depsgraph)
    if ob_eval.is_evaluated:
        return ob_eval
    scene = depsgraph.scene
    return StandIn(ob.name, ob.type, world_matrix(ob, depsgraph, scene.frame_current + scene.frame_subframe))


def refusal(ob, bone: str = "") -> str:
    """Why an unevaluated object's transform (or its `bone`'s) cannot be reproduced ('' when it can)."""
    if bone:
        return "is an armature whose bones are not posed there"
    if any(c.enabled and c.influence > 0.0 for c in ob.constraints):
        return "has constraints"
    if ob.rigid_body is not None:
        return "is simulated"
    if ob.parent is not None and ob.parent_type not in ("OBJECT",):
        return f"has a {ob.parent_type.lower()} parent"
    reason = active_curves(ob)[0]
    if reason:
        return f"has {reason}"
    return ""


def message(ob, reason: str) -> str:
    return (
        f"'{ob.name}' is disabled in viewports, so Blender does not evaluate it, and it {reason}:"
        " enable it in viewports (the monitor icon)"
    )


def world_matrix(ob, depsgraph, frame: float) -> Matrix:
    reason = refusal(ob)
    if reason:
        raise ValueError(message(ob, reason))
    values = {path: list(getattr(ob, path)) for path in CHANNELS}
    for fc in active_curves(ob)[1]:
        if plays(fc) and fc.data_path in values and fc.array_index < CHANNELS[fc.data_path]:
            values[fc.data_path][fc.array_index] = fc.evaluate(frame)
    basis = _basis(ob.rotation_mode, values)
    if ob.parent is None:
        return basis
    return evaluated(ob.parent, depsgraph).matrix_world @ ob.matrix_parent_inverse @ basis


def _basis(mode: str, v: dict) -> Matrix:
    """BKE_object_to_mat4: (delta rotation @ rotation) x (scale * delta scale), at location + delta."""
    if mode == "QUATERNION":
        rot = (
            Quaternion(v["delta_rotation_quaternion"]).normalized() @ Quaternion(v["rotation_quaternion"]).normalized()
        )
        rot = rot.to_matrix()
    elif mode == "AXIS_ANGLE":
        angle, *axis = v["rotation_axis_angle"]
        rot = Quaternion(Vector(axis), angle).to_matrix()
    else:
        rot = Euler(v["delta_rotation_euler"], mode).to_matrix() @ Euler(v["rotation_euler"], mode).to_matrix()
    scale = [a * b for a, b in zip(v["scale"], v["delta_scale"], strict=True)]
    m = rot @ Matrix.Diagonal(scale)
    out = m.to_4x4()
    out.translation = [a + b for a, b in zip(v["location"], v["delta_location"], strict=True)]
    return out
