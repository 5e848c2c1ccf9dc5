"""`chain_ik.bake_fk`: IK -> FK over a frame range (undoable).

Keys FK control bones so that, over the range, each follows the bone the IK chain drives (Rigify:
`upper_arm_fk.L` follows `ORG-upper_arm.L`), elbows and knees included; then the limb can be
switched to FK with no visible change.
"""

from __future__ import annotations

import bpy
from bpy.props import StringProperty

from ..app import bake as baking
from ..app.bake import fk_bake
from ..rig import fk_follow, selection
from .bake import BakeRangeArguments, bake_options
from .chain_args import SCRIPT_ONLY
from .solve import armature_poll


def selected_pairs(obj) -> list[tuple[str, str]]:
    """The selected (and shown) pose bones of `obj` with their Rigify partners."""
    names = [b.name for b in obj.pose.bones if selection.is_selected(b)]
    if not names:
        raise ValueError("select the FK control bones (Rigify: upper_arm_fk.L, forearm_fk.L, hand_fk.L), or name them")
    missing = [n for n in names if fk_follow.rigify_partner(n) is None]
    if missing:
        raise ValueError(
            f"no bone to follow for {', '.join(missing)}: select only '<name>_fk' controls or give 'fk:followed' pairs"
        )
    return [(n, fk_follow.rigify_partner(n)) for n in names]


class CHAINIK_OT_bake_fk(BakeRangeArguments, bpy.types.Operator):
    """Key the selected FK controls over the bake range so they follow the IK-driven chain (Rigify: the ORG bones)"""

    bl_idname = "chain_ik.bake_fk"
    bl_label = "Bake IK to FK"
    bl_options = {"REGISTER", "UNDO"}

    pairs: StringProperty(
        name="FK Bones",
        description="'fk_bone:followed_bone, ...'; a lone '<name>_fk.L' follows 'ORG-<name>.L' (empty: selected bones)",
        options=SCRIPT_ONLY,
    )

    @classmethod
    def poll(cls, context) -> bool:
        return armature_poll(cls, context)

    def execute(self, context):
        obj = context.object
        try:
            pairs = fk_follow.parse_pairs(self.pairs) if self.pairs.strip() else selected_pairs(obj)
            options = bake_options(context.scene, obj.chain_ik.bake, self.properties)
            with baking.Progress(context) as progress:
                result = fk_bake.bake_fk(context, obj, pairs, options, progress.update)
        except ValueError as exc:
            self.report({"ERROR"}, str(exc))
            return {"CANCELLED"}
        self.report(
            {"INFO"},
            f"baked {result.frames} frame(s) onto {', '.join(result.bones)}: {result.keys} keys;"
            f" {result.follow_line()}, {result.seconds:.2f} s",
        )
        if result.live:
            names = ", ".join(f"'{n}'" for n in result.live)
            self.report(
                {"INFO"},
                f"Live chain(s) {names} solved at every frame, from frame {result.first_frame} on and from their pose"
                " now, as a playback from here solves them: the keys follow that",
            )
        if result.worst_stretch > fk_bake.STRETCH_TOLERANCE:
            self.report(
                {"INFO"},
                f"the followed bones are stretched up to {result.worst_stretch:.2%} of their length more (or less) than"
                " the FK bones (IK Stretch or scale): rotation keys do not lengthen bones, so the tails part by that",
            )
        for warning in (result.miss_warning(), result.loop_warning()):
            if warning:
                self.report({"WARNING"}, warning)
        if result.driven:
            self.report({"WARNING"}, f"drivers on the rotation of {', '.join(result.driven)} override the baked keys")
        if result.live_off:
            names = ", ".join(f"'{n}'" for n in result.live_off)
            self.report({"WARNING"}, f"Live switched off on {names}: it posed FK bones, and would pose them again")
        return {"FINISHED"}


CLASSES = (CHAINIK_OT_bake_fk,)
