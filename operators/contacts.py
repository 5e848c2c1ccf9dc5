"""`chain_ik.detect_contacts` and `chain_ik.clear_contacts`: a foot's `contact` keyed from the motion,
or its keys removed, on the chains in scope (undoable)."""

from __future__ import annotations

import bpy
from bpy.props import FloatProperty, IntProperty

from ..app.spec import contacts
from ..solvers.contacts import ContactSettings
from .bake import bake_options
from .chain_args import SCRIPT_ONLY
from .solve import armature_poll

# Unset (a panel click, or a script leaving them out): the panel's Bake range (the scene's by default).
RANGE_DESCRIPTION = " (unset: the Bake range, the scene's by default)"


def frame_range(op, context) -> tuple[int, int]:
    """The operator's frame_start/frame_end where set, else the panel's Bake range."""
    options = bake_options(context.scene, context.object.chain_ik.bake)
    props = op.properties
    first = props.frame_start if props.is_property_set("frame_start") else options.frame_start
    last = props.frame_end if props.is_property_set("frame_end") else options.frame_end
    return first, last


class _ContactOperator:
    @classmethod
    def poll(cls, context) -> bool:
        return armature_poll(cls, context)


class CHAINIK_OT_detect_contacts(_ContactOperator, bpy.types.Operator):
    """Key each foot's Contact (the chains in scope) from the motion: planted where its heel or toe is low and slow"""

    bl_idname = "chain_ik.detect_contacts"
    bl_label = "Detect Contacts"
    bl_options = {"REGISTER", "UNDO"}

    frame_start: IntProperty(name="Start", description="First frame" + RANGE_DESCRIPTION, options=SCRIPT_ONLY)
    frame_end: IntProperty(name="End", description="Last frame" + RANGE_DESCRIPTION, options=SCRIPT_ONLY)
    height: FloatProperty(
        name="Height",
        description="An end of the foot this close to its floor (its resting height, above the ground if any)"
        " may be planted; 0: 3% of the leg's length",
        default=0.0,
        min=0.0,
        unit="LENGTH",
        options={"SKIP_SAVE"},
    )
    speed: FloatProperty(
        name="Speed",
        description="An end of the foot slower than this (distance per second, over 1/30 s) may be planted;"
        " 0: 0.6 leg lengths per second",
        default=0.0,
        min=0.0,
        unit="VELOCITY",
        options={"SKIP_SAVE"},
    )
    min_duration: FloatProperty(
        name="Shortest Contact",
        description="Contacts shorter than this (seconds) are dropped",
        default=ContactSettings.min_duration,
        min=0.0,
        soft_max=1.0,
        unit="TIME_ABSOLUTE",
        options={"SKIP_SAVE"},
    )

    def execute(self, context):
        obj = context.object
        wm = context.window_manager
        has_window = not bpy.app.background and context.window is not None
        if has_window:
            wm.progress_begin(0, 1000)
        try:
            first, last = frame_range(self, context)
            result = contacts.detect(
                context,
                obj,
                first,
                last,
                self.height,
                self.speed,
                self.min_duration,
                (lambda fraction, _frame: wm.progress_update(int(1000 * fraction))) if has_window else None,
            )
        except ValueError as exc:
            self.report({"ERROR"}, str(exc))
            return {"CANCELLED"}
        finally:
            if has_window:
                wm.progress_end()
        where = f" above '{result.ground}'" if result.ground else ""
        found = "; ".join(f"'{c.name}' {c.contacts} contact(s), {c.planted} frame(s) planted" for c in result.chains)
        self.report(
            {"INFO"},
            f"contacts over frames {result.first}-{result.last}{where}: {found} ({result.seconds:.2f} s)",
        )
        for warning in result.warnings:
            self.report({"WARNING"}, warning)
        return {"FINISHED"}


class CHAINIK_OT_clear_contacts(_ContactOperator, bpy.types.Operator):
    """Remove the Contact keys of the chains in scope (all of them, or within the frames given)"""

    bl_idname = "chain_ik.clear_contacts"
    bl_label = "Clear Contacts"
    bl_options = {"REGISTER", "UNDO"}

    frame_start: IntProperty(name="Start", description="First frame (unset: all keys)", options=SCRIPT_ONLY)
    frame_end: IntProperty(name="End", description="Last frame (unset: all keys)", options=SCRIPT_ONLY)

    def execute(self, context):
        props = self.properties
        ranged = props.is_property_set("frame_start") or props.is_property_set("frame_end")
        try:
            first, last = frame_range(self, context) if ranged else (None, None)
            removed = contacts.clear(context.object, first, last)
        except ValueError as exc:
            self.report({"ERROR"}, str(exc))
            return {"CANCELLED"}
        counts = ", ".join(f"'{name}' {count}" for name, count in removed.items())
        self.report({"INFO"}, f"removed {sum(removed.values())} contact key(s): {counts}")
        return {"FINISHED"}


CLASSES = (CHAINIK_OT_detect_contacts, CHAINIK_OT_clear_contacts)
