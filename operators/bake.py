"""`chain_ik.bake`: key the chains' solved rotations over a frame range (undoable)."""

from __future__ import annotations

import bpy
from bpy.props import BoolProperty, EnumProperty, FloatProperty, IntProperty

from ..properties import INTERPOLATION_ITEMS
from . import bake_run
from .chain_args import SCRIPT_ONLY, ChainArguments
from .solve import armature_poll

# Operator properties that, when a script sets them, override the panel's bake settings.
BAKE_OVERRIDES = ("frame_start", "frame_end", "step", "interpolation", "reduce", "reduce_tolerance")


def bake_options(scene, settings, props=None) -> bake_run.BakeOptions:
    """BakeOptions from the panel settings (scene range when asked), with set operator properties on top."""
    use_scene = settings.use_scene_range
    values = {
        "frame_start": scene.frame_start if use_scene else settings.frame_start,
        "frame_end": scene.frame_end if use_scene else settings.frame_end,
        "step": settings.step,
        "interpolation": settings.interpolation,
        "reduce": settings.reduce,
        "reduce_tolerance": settings.reduce_tolerance,
    }
    if props is not None:
        for key in BAKE_OVERRIDES:
            if props.is_property_set(key):
                values[key] = getattr(props, key)
    return bake_run.BakeOptions(**values)


class CHAINIK_OT_bake(ChainArguments, bpy.types.Operator):
    """Solve the active armature's IK chains at every frame of a range and key their bones' rotations"""

    bl_idname = "chain_ik.bake"
    bl_label = "Bake Chain IK"
    bl_options = {"REGISTER", "UNDO"}

    # Script arguments: ChainArguments (as chain_ik.solve), then the range and keying.
    chain_index: IntProperty(
        name="Chain",
        description="Bake only this chain of the list (-1: all)",
        default=-1,
        min=-1,
        options=SCRIPT_ONLY,
    )
    # Unset (not given by a script): taken from the panel's Bake settings.
    frame_start: IntProperty(name="Start", description="First frame", options=SCRIPT_ONLY)
    frame_end: IntProperty(name="End", description="Last frame", options=SCRIPT_ONLY)
    step: IntProperty(name="Step", description="Key every this many frames", default=1, min=1, options=SCRIPT_ONLY)
    interpolation: EnumProperty(name="Interpolation", items=INTERPOLATION_ITEMS, default="BEZIER", options=SCRIPT_ONLY)
    reduce: BoolProperty(name="Reduce Keys", description="Drop keys interpolation reproduces", options=SCRIPT_ONLY)
    reduce_tolerance: FloatProperty(
        name="Tolerance", description="Key reduction tolerance", default=1e-3, min=1e-7, options=SCRIPT_ONLY
    )

    @classmethod
    def poll(cls, context) -> bool:
        return armature_poll(cls, context)

    def execute(self, context):
        obj = context.object
        try:
            pairs = self.chain_specs(obj)
            options = bake_options(context.scene, obj.chain_ik.bake, self.properties)
            progress = bake_run.Progress(context)
            try:
                result = bake_run.bake(context, obj, [spec for _, spec in pairs], options, progress.update)
            finally:
                progress.end()
        except ValueError as exc:
            self.report({"ERROR"}, str(exc))
            return {"CANCELLED"}
        self.report(
            {"INFO"},
            f"baked {result.frames} frame(s) of {len(pairs)} chain(s): {result.keys} keys"
            f" on {len(result.bones)} bone(s), worst tip error {result.worst_error:.3g}, {result.seconds:.2f} s",
        )
        if result.locked:
            self.report({"WARNING"}, f"locked rotation channels kept on {', '.join(result.locked)}; the tip may miss")
        if result.constrained:
            self.report({"WARNING"}, f"bones with constraints may not follow: {', '.join(result.constrained)}")
        blend = bake_run.blend_warning(obj)
        if blend:
            self.report({"WARNING"}, blend)
        if result.driven:
            self.report({"WARNING"}, f"drivers on the rotation of {', '.join(result.driven)} override the baked keys")
        return {"FINISHED"}


CLASSES = (CHAINIK_OT_bake,)
