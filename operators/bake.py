"""`chain_ik.bake`: key the chains' solved rotations over a frame range (undoable)."""

from __future__ import annotations

import bpy
from bpy.props import BoolProperty, IntProperty

from .. import rig
from ..app import bake as baking
from ..app.bake import bake_job, bake_report
from ..app.bake.contact_figures import stray_note
from ..app.spec import groups
from ..properties import ChainIKBake
from .chain_args import SCRIPT_ONLY, ChainArguments, script_argument
from .solve import armature_poll

# Operator properties that, when a script sets them, override the panel's bake settings.
BAKE_OVERRIDES = (
    "frame_start", "frame_end", "step", "interpolation", "reduce", "reduce_mode", "reduce_tolerance", "reduce_angle"
)  # fmt: skip


def bake_options(scene, settings, props=None) -> baking.BakeOptions:
    """BakeOptions from the panel settings (scene range when asked), with set operator properties on top."""
    use_scene = settings.use_scene_range
    values = {
        "frame_start": scene.frame_start if use_scene else settings.frame_start,
        "frame_end": scene.frame_end if use_scene else settings.frame_end,
        "step": settings.step,
        "interpolation": settings.interpolation,
        "reduce": settings.reduce,
        "reduce_mode": settings.reduce_mode,
        "reduce_tolerance": settings.reduce_tolerance,
        "reduce_angle": settings.reduce_angle,
    }
    if props is not None:
        for key in BAKE_OVERRIDES:
            if props.is_property_set(key):
                values[key] = getattr(props, key)
        values["measure"] = getattr(props, "measure", True)  # Bake IK to FK shares these settings
    return baking.BakeOptions(**values)


class BakeRangeArguments:
    """Mixin for the baking operators: the range and keying script arguments. Unset (not given
    by a script): taken from the panel's Bake settings (see `bake_options`)."""

    frame_start: script_argument(ChainIKBake, "frame_start", "First frame", clamp=False)
    frame_end: script_argument(ChainIKBake, "frame_end", "Last frame", clamp=False)
    step: script_argument(ChainIKBake, "step")
    interpolation: script_argument(ChainIKBake, "interpolation")
    reduce: script_argument(ChainIKBake, "reduce")
    reduce_mode: script_argument(ChainIKBake, "reduce_mode")
    reduce_tolerance: script_argument(ChainIKBake, "reduce_tolerance")
    reduce_angle: script_argument(ChainIKBake, "reduce_angle")


class CHAINIK_OT_bake(ChainArguments, BakeRangeArguments, bpy.types.Operator):
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
    measure: BoolProperty(
        name="Measure",
        description="Report per chain, measured by playing the keys back at every baked frame (a second pass)",
        default=True,
        options=SCRIPT_ONLY,
    )

    @classmethod
    def poll(cls, context) -> bool:
        return armature_poll(cls, context)

    def execute(self, context):
        obj = context.object
        try:
            specs, options = self._prepare(context, obj)
            with baking.Progress(context) as progress:
                result = baking.bake(context, obj, specs, options, progress.update)
        except ValueError as exc:
            self.report({"ERROR"}, str(exc))
            return {"CANCELLED"}
        self._report(obj, specs, result)
        return {"FINISHED"}

    def invoke(self, context, event):
        """From the UI: bake in steps on a timer (modal), so Esc can cancel it; scripts use execute."""
        if bpy.app.background or context.window is None:
            return self.execute(context)
        obj = context.object
        try:
            specs, options = self._prepare(context, obj)
        except ValueError as exc:
            self.report({"ERROR"}, str(exc))
            return {"CANCELLED"}
        self._job = bake_job.BakeJob(context, obj, specs, options)
        wm = context.window_manager
        self._timer = wm.event_timer_add(0.01, window=context.window)
        wm.modal_handler_add(self)
        return {"RUNNING_MODAL"}

    def modal(self, context, event):
        job = self._job
        if event.type == "ESC" and event.value == "PRESS" and job.cancel():
            self._stop(context)
            self.report({"INFO"}, "bake cancelled: nothing was keyed")
            return {"CANCELLED"}
        if event.type != "TIMER":
            return {"RUNNING_MODAL"}  # swallow the rest: nothing may change the rig mid-bake
        try:
            done = job.step(0.05)
        except ValueError as exc:
            self._stop(context)
            self.report({"ERROR"}, str(exc))
            return {"CANCELLED"}
        except BaseException:
            self._stop(context)  # never leave the timer and the status text behind
            raise
        if not done:
            context.workspace.status_text_set(job.status())
            return {"RUNNING_MODAL"}
        self._stop(context)
        self._report(job.obj, job.specs, job.result)
        return {"FINISHED"}

    def _stop(self, context) -> None:
        context.window_manager.event_timer_remove(self._timer)
        context.workspace.status_text_set(None)
        self._job.end()

    def _prepare(self, context, obj) -> tuple[list, baking.BakeOptions]:
        pairs = self.chain_specs(obj)
        specs = [spec for _, spec in pairs]
        self._left_out = groups.left_out(obj, [item for item, _ in pairs if item is not None])
        return specs, bake_options(context.scene, obj.chain_ik.bake, self.properties)

    _left_out: list = []

    def _report(self, obj, specs, result: baking.BakeResult) -> None:
        for chain, other in self._left_out:
            self.report({"WARNING"}, f"chain '{chain}' shares bones with '{other}', not baked now: baked without it")
        if result.chains:
            error = f"worst tip error {max(chain.worst_error for chain in result.chains):.3g} on playback"
        else:
            error = f"worst tip error {result.worst_error:.3g} as solved (not measured)"
        reduced = f" (reduced from {result.keys_before})" if result.reduced else ""
        # The time a user waited, the playback pass measuring the figures a part of it.
        measured = f" (measured in {result.measure_seconds:.2f} s)" if result.chains else ""
        summary = (
            f"baked {result.frames} frame(s) of {len(specs)} chain(s): {result.keys} keys{reduced}"
            f" on {len(result.bones)} bone(s), {error}{measured}, {result.seconds + result.measure_seconds:.2f} s"
        )
        self.report({"INFO"}, summary)
        obj.chain_ik.bake.last_bake = summary  # the Bake panel shows it
        for chain in result.chains:
            self.report({"INFO"}, chain.line())
            if chain.contacts:  # the Contacts panel shows the last bake's figures
                item = obj.chain_ik.chains.get(chain.name)
                if item is not None:
                    item.contact_figures = bake_report.contact_line(chain.contacts)
                if chain.contacts.get("strayed"):  # app.bake.contact_figures.STRAY_SHARE
                    self.report({"WARNING"}, f"chain '{chain.name}': {stray_note(chain.contacts['strayed'])}")
        if result.taken_back:
            self.report({"INFO"}, result.taken_back)
        for name, moved in result.root_moved.items():
            self.report({"INFO"}, bake_report.moved_root_line(name, moved))
        if not result.chains:  # not measured: the paths alone (a measured chain's line says it)
            for label, why in result.reasons.items():
                self.report({"INFO"}, f"chain '{label}': {why}")
        missed = bake_report.missed_warning(result.chains)
        if missed:
            self.report({"WARNING"}, missed)
        jump = bake_report.jump_warning(result.chains)
        if jump:
            self.report({"WARNING"}, jump)
        if result.live_off:
            names = ", ".join(f"'{n}'" for n in result.live_off)
            self.report({"WARNING"}, f"Live switched off on {names}: it would solve over the baked keys")
        if result.locked:
            self.report({"WARNING"}, f"locked rotation channels kept on {', '.join(result.locked)}; the tip may miss")
        if result.constrained:
            self.report({"WARNING"}, f"bones with constraints may not follow: {', '.join(result.constrained)}")
        blend = baking.blend_warning(obj)
        if blend:
            self.report({"WARNING"}, blend)
        if result.driven:
            self.report({"WARNING"}, f"drivers on the rotation of {', '.join(result.driven)} override the baked keys")
        for cause, names in rig.keys.playback_overrides(obj, result.bones).items():
            if cause != "drivers":
                self.report({"WARNING"}, f"{cause} on {', '.join(names)}: playback will not follow the baked keys")


CLASSES = (CHAINIK_OT_bake,)
