"""Script arguments shared by chain_ik.solve and chain_ik.bake (one chain)."""

from __future__ import annotations

from bpy.props import IntProperty, StringProperty

from ..app import spec
from ..properties import ChainIKChain

# Script arguments: never remembered, and kept out of the Adjust Last Operation panel (see ChainArguments).
SCRIPT_ONLY = {"SKIP_SAVE", "HIDDEN"}
# Keywords of a panel setting a script argument does not take: callbacks and library-override flags.
PANEL_ONLY = ("update", "get", "set", "override", "options")
LIMITS = ("min", "max", "soft_min", "soft_max")


def script_argument(group, name: str, description: str = "", clamp: bool = True):
    """The script argument of panel setting `name` of PropertyGroup `group`: its type, name, items,
    unit and default come from the panel's declaration (each option is declared once). `clamp`
    False drops its limits: the app refuses a value outside them with a clear error, where bpy would
    clamp it silently. `description`: what the argument means when a script leaves it unset."""
    prop = group.__annotations__[name]
    keywords = {k: v for k, v in prop.keywords.items() if k not in PANEL_ONLY and (clamp or k not in LIMITS)}
    if description:
        keywords["description"] = description
    return prop.function(**keywords, options=SCRIPT_ONLY)


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
    pole_angle: script_argument(
        ChainIKChain, "pole_angle", "Pole angle (unset: the active chain's, or 0 with a Tip Bone)", clamp=False
    )
    softness: script_argument(
        ChainIKChain,
        "softness",
        "Soft IK, a share of the chain's reach (unset: each chain's own, or 0 with a Tip Bone; alone: over every"
        " chain's, as Solver); refused outside 0..1 (below 1), never clamped",
        clamp=False,
    )
    aim_axis: script_argument(
        ChainIKChain,
        "aim_axis",
        "Aim this axis of the tip bone at the target instead of reaching it, NONE: reach (unset: each chain's own,"
        " or NONE with a Tip Bone; alone: over every chain's, as Solver)",
    )
    aim_spread: script_argument(
        ChainIKChain,
        "aim_spread",
        "An aim's spread over the chain, 0 (the tip bone) to 1 (evenly) (unset: each chain's own, or the default"
        " with a Tip Bone); refused outside 0..1, never clamped",
        clamp=False,
    )
    move_root: script_argument(
        ChainIKChain,
        "move_root",
        "The unit's top bone may move to reach (unset: each chain's own, or off with a Tip Bone; alone: over every"
        " chain's, as Solver)",
    )
    root_stiffness: script_argument(
        ChainIKChain,
        "root_stiffness",
        "0 moves the root most, 1 never (unset: each chain's own, or 0.5 with a Tip Bone); refused outside 0..1,"
        " never clamped",
        clamp=False,
    )
    use_limits: script_argument(
        ChainIKChain, "use_limits", "The bones' own IK limits apply (unset: each chain's own, or on with a Tip Bone)"
    )
    use_locks: script_argument(
        ChainIKChain,
        "use_locks",
        "Keep locked rotation channels (unset: each chain's own, or on with a Tip Bone; off: turn through them, as"
        " Blender's IK constraint does)",
    )
    use_stretch: script_argument(
        ChainIKChain, "use_stretch", "Bones with IK Stretch lengthen (unset: each chain's own, or on with a Tip Bone)"
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
        switches = ("use_limits", "use_locks", "use_stretch")
        switches = {k: getattr(props, k) for k in switches if props.is_property_set(k)}
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
            **switches,
        )
