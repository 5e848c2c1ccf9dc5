"""`chain_ik.solve`: pose the active armature's chains now (undoable)."""

from __future__ import annotations

import bpy
from bpy.props import IntProperty

from .. import rig
from ..app import solve as solving
from ..app.checks import keying
from ..app.solve import result
from ..app.spec import groups
from ..rig import protected
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


def chains_poll(cls, context, active: bool = False, message: str = "Add a chain first") -> bool:
    """armature_poll, and the panel has a chain (`active`: an active one)."""
    if not armature_poll(cls, context):
        return False
    settings = context.object.chain_ik
    if (settings.active is None) if active else not settings.chains:
        cls.poll_message_set(message)
        return False
    return True


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
                auto_keys = keying.check_keying(context.scene, obj, [spec for _, spec in pairs])
            outcomes = solving.solve_and_write(obj, [spec for _, spec in pairs], context.evaluated_depsgraph_get)
        except ValueError as exc:
            self.report({"ERROR"}, str(exc))
            return {"CANCELLED"}
        if auto_keys is not None:
            rig.keying_set.insert(obj, auto_keys, context.scene.frame_current)
            if auto_keys.keying_set:
                self.report({"INFO"}, f"auto-keyed with the keying set '{auto_keys.keying_set}'")
            else:  # rotations keyed: the Y scale IK stretch wrote too, and a moved root's location
                stretched = [name for o in outcomes for name in o.write.scales]
                rig.stretch.insert_keyframes(obj, stretched, context.scene.frame_current)
                self._key_roots(obj, outcomes, context.scene.frame_current)
        locked = [name for o in outcomes for name in o.write.locked]
        # On the written pose: locks, influence, constraints and drivers make it differ from the solver's.
        depsgraph = context.evaluated_depsgraph_get()
        for (item, _), outcome in zip(pairs, outcomes, strict=True):
            error = result.measured_error(depsgraph, obj, outcome.spec, outcome.goal_world)
            angle = result.measured_angle(depsgraph, obj, outcome.spec)
            if item is not None:
                result.store_result(item, outcome, error, obj, angle)
            self.report({"INFO"}, result.result_line(outcome, error, angle))
            moved = result.root_line(depsgraph, obj, outcome)
            if moved:
                self.report({"INFO"}, moved)
            missed = result.miss_warning(obj, outcome, error)
            if missed:
                self.report({"WARNING"}, missed)
        for chain, other in groups.left_out(obj, [item for item, _ in pairs if item is not None]):
            self.report({"WARNING"}, f"chain '{chain}' shares bones with '{other}', not solved now: solved without it")
        if locked:
            self.report({"WARNING"}, f"locked rotation channels kept on {', '.join(locked)}; the tip may miss")
        constrained = [name for o in outcomes for name in o.write.constrained]
        if constrained:
            self.report({"WARNING"}, f"bones with constraints may not follow: {', '.join(constrained)}")
        driven = rig.keys.playback_overrides(obj, [n for o in outcomes for n in o.write.values]).get("drivers")
        if driven:
            self.report({"WARNING"}, f"drivers on the rotation of {', '.join(driven)} override the solved pose")
        return {"FINISHED"}

    def _key_roots(self, obj, outcomes, frame) -> None:
        """Auto-keying: the location of every root Move Root moved (refused channels skipped, and said)."""
        roots = [name for o in outcomes for name in o.write.locations]
        paths = {rig.keys.data_path(n, "location") for n in roots}
        refusal = protected.keying_refusal(obj, roots, paths) if roots else ""
        if refusal:
            self.report({"WARNING"}, f"auto-keying: the moved root's location is not keyed: {refusal}")
            return
        rig.root_location.insert_keyframes(obj, roots, frame)


CLASSES = (CHAINIK_OT_solve,)
