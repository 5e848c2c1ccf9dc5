"""Script arguments shared by chain_ik.solve and chain_ik.bake (one chain)."""

from __future__ import annotations

from bpy.props import FloatProperty, IntProperty, StringProperty

from . import run


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

    def chain_specs(self, obj) -> list[tuple[object, run.ChainSpec]]:
        """(panel item or None, ChainSpec) per chain to work on: these arguments over the panel.

        The operator class defines `chain_index`. Read through `properties`: each
        `self.<name>` goes through bpy's Python-level attribute lookup (~1 µs)."""
        props = self.properties
        angle = props.pole_angle if props.is_property_set("pole_angle") else None
        return run.specs_from_arguments(
            obj,
            props.tip,
            props.chain_length,
            props.target,
            props.target_bone,
            props.method,
            props.chain_index,
            pole=props.pole,
            pole_bone=props.pole_bone,
            pole_angle=angle,
        )
