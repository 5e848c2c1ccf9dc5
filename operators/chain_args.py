"""Script arguments shared by chain_ik.solve and chain_ik.bake (one chain)."""

from __future__ import annotations

from bpy.props import FloatProperty, IntProperty, StringProperty


class ChainArguments:
    """Mixin: any of these set works on one chain, taking the rest from the
    active chain of the panel (if any). SKIP_SAVE: never remembered."""

    tip: StringProperty(name="Tip Bone", description="Override: the chain's tip bone", options={"SKIP_SAVE"})
    chain_length: IntProperty(
        name="Chain Length",
        description="Override: bones counted up from the tip (0: panel)",
        min=0,
        options={"SKIP_SAVE"},
    )
    target: StringProperty(name="Target", description="Override: target object name", options={"SKIP_SAVE"})
    target_bone: StringProperty(
        name="Target Bone", description="Override: bone of an armature target", options={"SKIP_SAVE"}
    )
    method: StringProperty(name="Solver", description="Override: solver name", options={"SKIP_SAVE"})
    pole: StringProperty(name="Pole Target", description="Override: pole object name", options={"SKIP_SAVE"})
    pole_bone: StringProperty(name="Pole Bone", description="Override: bone of an armature pole", options={"SKIP_SAVE"})
    pole_angle: FloatProperty(
        name="Pole Angle", description="Override: pole angle (unset: panel)", subtype="ANGLE", options={"SKIP_SAVE"}
    )
