"""`chain_ik.solve`: pose the active armature's chains now (undoable)."""

from __future__ import annotations

import math

import bpy
from bpy.props import IntProperty

from .. import rig, solvers
from ..rig import protected
from . import run
from .chain_args import SCRIPT_ONLY, ChainArguments


def armature_poll(cls, context) -> bool:
    """Shared poll: an armature object is active and not in edit mode."""
    obj = context.object
    if obj is None or obj.type != "ARMATURE":
        cls.poll_message_set("The active object must be an armature")
        return False
    if obj.mode == "EDIT":
        cls.poll_message_set("Leave Edit Mode first: IK poses the armature")
        return False
    refusal = protected.pose_refusal(obj)
    if refusal:
        cls.poll_message_set(refusal[0].upper() + refusal[1:])
        return False
    return True


def store_result(item, outcome: run.ChainOutcome, error: float | None = None, obj=None) -> None:
    """The panel's result. `error`: measured on the written pose (with `obj`, the armature): then
    "reached" also needs that error within the chain's tolerance, not only the solver's word."""
    r = item.result
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
        reached = error <= world_tolerance(obj, outcome.spec)
    if r.reached != reached:
        r.reached = reached
    if not item.has_result:
        item.has_result = True


def result_line(outcome: run.ChainOutcome, error: float) -> str:
    return (
        f"chain '{outcome.spec.label}': {outcome.spec.method}, tip error {error:.3g},"
        f" {outcome.iterations} iteration(s), rotation cost {outcome.cost:.1f}°, {outcome.time_ms:.2f} ms"
    )


class CHAINIK_OT_solve(ChainArguments, bpy.types.Operator):
    """Pose the active armature's IK chains so their tips reach their targets"""

    bl_idname = "chain_ik.solve"
    bl_label = "Solve Chain IK"
    bl_options = {"REGISTER", "UNDO"}

    chain_index: IntProperty(
        name="Chain",
        description="Solve only this chain of the list (-1: all)",
        default=-1,
        min=-1,
        options=SCRIPT_ONLY,
    )

    @classmethod
    def poll(cls, context) -> bool:
        return armature_poll(cls, context)

    def execute(self, context):
        obj = context.object
        auto_keys = None
        try:
            pairs = self.chain_specs(obj)
            if context.scene.tool_settings.use_keyframe_insert_auto:
                auto_keys = check_keying(context.scene, obj, [spec for _, spec in pairs])
            outcomes = run.solve_and_write(obj, [spec for _, spec in pairs], context.evaluated_depsgraph_get)
        except ValueError as exc:
            self.report({"ERROR"}, str(exc))
            return {"CANCELLED"}
        if auto_keys is not None:
            rig.keying_set.insert(obj, auto_keys, context.scene.frame_current)
            if auto_keys.keying_set:
                self.report({"INFO"}, f"auto-keyed with the keying set '{auto_keys.keying_set}'")
            else:  # rotations keyed: the Y scale IK stretch wrote too
                stretched = [name for o in outcomes for name in o.write.scales]
                rig.stretch.insert_keyframes(obj, stretched, context.scene.frame_current)
        locked = [name for o in outcomes for name in o.write.locked]
        # On the written pose: locks, influence, constraints and drivers make it differ from the solver's.
        depsgraph = context.evaluated_depsgraph_get()
        for (item, _), outcome in zip(pairs, outcomes, strict=True):
            error = measured_error(depsgraph, obj, outcome.spec)
            if item is not None:
                store_result(item, outcome, error, obj)
            self.report({"INFO"}, result_line(outcome, error))
        if locked:
            self.report({"WARNING"}, f"locked rotation channels kept on {', '.join(locked)}; the tip may miss")
        constrained = [name for o in outcomes for name in o.write.constrained]
        if constrained:
            self.report({"WARNING"}, f"bones with constraints may not follow: {', '.join(constrained)}")
        driven = rig.keys.playback_overrides(obj, [n for o in outcomes for n in o.write.values]).get("drivers")
        if driven:
            self.report({"WARNING"}, f"drivers on the rotation of {', '.join(driven)} override the solved pose")
        return {"FINISHED"}


def check_keying(scene, obj, specs: list[run.ChainSpec]) -> rig.keying_set.AutoKeys:
    """With auto-keying on: what it keys (the active keying set's channels when Blender's "Only
    Active Keying Set" is on), which must be allowed before anything is posed (ValueError)."""
    names = list(dict.fromkeys(n for s in specs for n in rig.chain_bone_names(obj, s.tip, s.chain_length, s.use_tail)))
    keys = rig.keying_set.auto_keys(scene, obj, names)
    refusal = protected.keying_refusal(obj, names, keys.paths)
    if refusal:
        raise ValueError(f"auto-keying: {refusal}")
    return keys


def world_tolerance(obj, spec: run.ChainSpec) -> float:
    """The chain's tolerance as a world distance (0 in the settings: the solver's default share of
    the chain's length), with room for the written pose's float32 channels."""
    if spec.tolerance > 0.0:
        return spec.tolerance * (1.0 + 1e-6)
    names = rig.chain_bone_names(obj, spec.tip, spec.chain_length, spec.use_tail)
    length = sum(obj.data.bones[n].length for n in names) * max(map(abs, obj.matrix_world.to_scale()))
    return solvers.DEFAULT_RELATIVE_TOLERANCE * length * (1.0 + 1e-3)


def measured_error(depsgraph, obj, spec: run.ChainSpec) -> float:
    """World tip error of the written pose (`depsgraph` evaluated after the write; plain mathutils:
    this runs on every Solve)."""
    obj_eval = obj.evaluated_get(depsgraph)
    bone = obj_eval.pose.bones[spec.tip]
    tip = obj_eval.matrix_world @ (bone.tail if spec.use_tail else bone.head)
    return math.dist(tip, rig.space.target_world_point(rig.evaluated(spec.target, depsgraph), spec.target_bone))


CLASSES = (CHAINIK_OT_solve,)
