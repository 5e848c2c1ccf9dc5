"""Script arguments shared by chain_ik.solve and chain_ik.bake (one chain)."""

from __future__ import annotations

from bpy.props import BoolProperty, EnumProperty, FloatProperty, IntProperty, StringProperty

from ..app import spec
from ..properties import AIM_AXIS_ITEMS

# Script arguments: never remembered, and kept out of the Adjust Last Operation panel (see ChainArguments).
SCRIPT_ONLY = {"SKIP_SAVE", "HIDDEN"}


class ChainArguments:
    """Mixin: `tip` (with `target`) names one chain made of these arguments alone, every
    other setting at a new panel chain's default; without `tip`, the others apply to the
    panel's active chain, and `method` alone to all the panel's chains (see
    app.spec.specs_from_arguments). SKIP_SAVE: never remembered. HIDDEN: not in the Adjust
    Last Operation panel, where editing one after a panel Solve would redo it on the
    active chain alone (the panel holds the settings)."""

    tip: StringProperty(
        name="Tip Bone",
        description="The chain's tip bone: a chain of these arguments alone (needs Target)",
        options=SCRIPT_ONLY,
    )
    chain_length: IntProperty(
        name="Chain Length",
        description="Bones counted up from the tip (0: the active chain's, or 2 with a Tip Bone)",
        min=0,
        options=SCRIPT_ONLY,
    )
    target: StringProperty(
        name="Target", description="Target object name (with no Tip Bone: over the active chain's)", options=SCRIPT_ONLY
    )
    target_bone: StringProperty(name="Target Bone", description="Bone of an armature target", options=SCRIPT_ONLY)
    method: StringProperty(
        name="Solver", description="Solver name (alone: for every chain of the list)", options=SCRIPT_ONLY
    )
    pole: StringProperty(name="Pole Target", description="Pole object name", options=SCRIPT_ONLY)
    pole_bone: StringProperty(name="Pole Bone", description="Bone of an armature pole", options=SCRIPT_ONLY)
    pole_angle: FloatProperty(
        name="Pole Angle",
        description="Pole angle (unset: the active chain's, or 0 with a Tip Bone)",
        subtype="ANGLE",
        options=SCRIPT_ONLY,
    )
    softness: FloatProperty(
        name="Softness",
        description="Soft IK, a share of the chain's reach (unset: each chain's own, or 0 with a Tip Bone;"
        " alone: over every chain's, as Solver); refused outside 0..1 (below 1), never clamped",
        options=SCRIPT_ONLY,
    )
    aim_axis: EnumProperty(
        name="Aim Axis",
        description="Aim this axis of the tip bone at the target instead of reaching it, NONE: reach (unset: each"
        " chain's own, or NONE with a Tip Bone; alone: over every chain's, as Solver)",
        items=AIM_AXIS_ITEMS,
        options=SCRIPT_ONLY,
    )
    aim_spread: FloatProperty(
        name="Aim Spread",
        description="An aim's spread over the chain, 0 (the tip bone) to 1 (evenly) (unset: each chain's own, or"
        " the default with a Tip Bone); refused outside 0..1, never clamped",
        options=SCRIPT_ONLY,
    )

    move_root: BoolProperty(
        name="Move Root",
        description="The unit's top bone may move to reach (unset: each chain's own, or off with a Tip Bone;"
        " alone: over every chain's, as Solver)",
        options=SCRIPT_ONLY,
    )
    root_stiffness: FloatProperty(
        name="Root Stiffness",
        description="0 moves the root most, 1 never (unset: each chain's own, or 0.5 with a Tip Bone); refused"
        " outside 0..1, never clamped",
        options=SCRIPT_ONLY,
    )

    def chain_specs(self, obj) -> list[tuple[object, spec.ChainSpec]]:
        """(panel item or None, ChainSpec) per chain to work on: these arguments over the panel.

        The operator class defines `chain_index`. Read through `properties`: each
        `self.<name>` goes through bpy's Python-level attribute lookup (~1 µs)."""
        props = self.properties
        angle = props.pole_angle if props.is_property_set("pole_angle") else None
        softness = props.softness if props.is_property_set("softness") else None
        aim_axis = props.aim_axis if props.is_property_set("aim_axis") else None
        aim_spread = props.aim_spread if props.is_property_set("aim_spread") else None
        move_root = props.move_root if props.is_property_set("move_root") else None
        root_stiffness = props.root_stiffness if props.is_property_set("root_stiffness") else None
        return spec.specs_from_arguments(
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
            softness=softness,
            aim_axis=aim_axis,
            aim_spread=aim_spread,
            move_root=move_root,
            root_stiffness=root_stiffness,
        )
