"""Chain settings: one PropertyGroup on the armature object, `Object.chain_ik`.

`ChainIKSettings.chains` holds one `ChainIKChain` per chain, shown in the
panel's UIList; results of the last solve and of "Compare solvers" are stored
on the chain so the panel can draw them (draw code must not compute).
"""

# No `from __future__ import annotations`: `overridable` edits the property annotations, which
# must be the bpy.props objects, not strings.
from collections.abc import Iterable

import bpy
from bpy.props import (
    BoolProperty,
    CollectionProperty,
    EnumProperty,
    FloatProperty,
    IntProperty,
    PointerProperty,
    StringProperty,
)

from .headless.frame_limit import MAX_FRAME
from .solvers import REGISTRY, Method, Option
from .solvers.model.aim_axis import AIM_AXES, DEFAULT_SPREAD, NO_AIM

# The aim axis of a chain's tip bone (solvers.model.aim_axis declares them), or none: the tip reaches.
AIM_AXIS_ITEMS = [(NO_AIM, "None", "The tip reaches the target (no aim)")] + [
    (axis, axis, f"The tip bone's {axis} axis (in its own frame, through its head) points at the target")
    for axis in AIM_AXES
]
# Identifiers are the solver names (scripts pass them as `method`); descriptions show as tooltips.
METHOD_ITEMS = [(m.name, m.label, m.description) for m in REGISTRY.values()]
# The armatures Live visits (app.live keeps this set): switching a chain to Live adds its armature
# here, so the next update solves it without looking over every object. Kept here, not in app/,
# so that the `live` property's update imports nothing from the layers above.
live_armatures: set[str] = set()


def method_options(item, method: str) -> dict:
    """The solver options of `method` from a chain item (or anything with its attributes); an
    option inactive with the others (the panel greys it out) gets its default. An unknown method
    has none (the chain checks refuse it by name)."""
    entry = REGISTRY.get(method)
    if entry is None:
        return {}
    values = {o.name: getattr(item, o.property_name) for o in entry.options}
    return {o.name: values[o.name] if o.active(values) else o.default for o in entry.options}


def option_property(option: Option):
    """The bpy property holding a method option, built from its registry declaration alone."""
    keywords = {"name": option.label, "description": option.description, "default": option.panel_default}
    if option.choices:
        return EnumProperty(items=option.choices, **keywords)
    if isinstance(option.default, bool):
        return BoolProperty(**keywords)
    limits = {"min": option.minimum, "max": option.maximum, "soft_max": option.soft_maximum}
    limits.update(subtype=option.subtype or None, unit=option.unit or None)
    keywords.update((key, value) for key, value in limits.items() if value is not None)
    if isinstance(option.default, int):
        return IntProperty(**keywords)
    if isinstance(option.default, float):
        return FloatProperty(**keywords)
    raise TypeError(f"option {option.name}: no property for a {type(option.default).__name__} default")


def option_properties(methods: Iterable[Method]) -> dict:
    """Property name -> bpy property, one per option of `methods` (an option that several
    methods declare alike shares one; declared differently, it is an error)."""
    found: dict = {}
    for method in methods:
        for option in method.options:
            prop = option_property(option)
            known = found.setdefault(option.property_name, prop)
            if (known.function, known.keywords) != (prop.function, prop.keywords):
                raise ValueError(f"option property {option.property_name!r} is declared twice, differently")
    return found


def with_method_options(cls):
    """`cls` with a property per method option of the registry (the panel's solver settings)."""
    options = option_properties(REGISTRY.values())
    clash = set(options) & set(cls.__annotations__)
    if clash:
        raise ValueError(f"method options named as chain settings: {', '.join(sorted(clash))}")
    cls.__annotations__.update(options)
    return cls


def overridable(cls):
    """Every property of `cls` editable in a library override (`chains` also takes new items
    there), so an overridden character's chains can be set up, solved and baked."""
    for prop in cls.__annotations__.values():
        keywords = getattr(prop, "keywords", None)
        if keywords is not None and "override" not in keywords:
            collection = prop.function is CollectionProperty
            keywords["override"] = {"LIBRARY_OVERRIDABLE", "USE_INSERTION"} if collection else {"LIBRARY_OVERRIDABLE"}
    return cls


@overridable
class ChainIKResult(bpy.types.PropertyGroup):
    """The four figures of one solve (the result line, and each Compare row)."""

    method: StringProperty(name="Method")
    error: FloatProperty(
        name="Tip Error", description="Distance from the tip to the target, world space", unit="LENGTH"
    )
    iterations: IntProperty(name="Iterations")
    cost: FloatProperty(name="Rotation Cost", description="Sum of bone-to-parent angles, degrees")
    time_ms: FloatProperty(name="Time", description="Read, solve and convert time in milliseconds")
    reached: BoolProperty(name="Reached")
    reason: StringProperty(
        name="Slower Path", description="Why a faster kernel did not serve the solve (empty when they all did)"
    )
    group: StringProperty(name="Group", description="The chains solved together with this one (empty: alone)")
    aimed: BoolProperty(name="Aimed", description="The chain aims (its Aim Axis): `angle` is what is left")
    angle: FloatProperty(
        name="Aim Angle", description="Degrees between the tip bone's aim axis and the line from its head to the target"
    )


def _live_changed(self, _context) -> None:
    if self.live:
        live_armatures.add(self.id_data.name)


@overridable
@with_method_options
class ChainIKChain(bpy.types.PropertyGroup):
    """One IK chain: which bones, which target, which solver (its options: `with_method_options`)."""

    name: StringProperty(name="Name", default="Chain")
    tip: StringProperty(name="Tip Bone", description="The last bone of the chain (its tail or head reaches)")
    chain_length: IntProperty(
        name="Chain Length",
        description="Bones counted up from the tip, like the IK constraint's Chain Length",
        default=2,
        min=1,
        soft_max=32,
    )
    use_tail: BoolProperty(
        name="Use Tail",
        description="The tip bone's tail reaches the target; off: its head reaches and the chain starts at its parent",
        default=True,
    )
    # No poll= filter: the armature itself is a valid target object when a bone of
    # it (outside the chain) is the target bone; Solve refuses the other cases.
    target: PointerProperty(name="Target", type=bpy.types.Object)
    target_bone: StringProperty(
        name="Target Bone", description="With an armature target: the bone whose head is the goal"
    )
    method: EnumProperty(name="Solver", items=METHOD_ITEMS, default="triangulation")
    tolerance: FloatProperty(
        name="Reach Tolerance",
        description="Tip distance to the target counted as reached, world space; 0: 1e-5 of the chain length",
        default=0.0,
        min=0.0,
        unit="LENGTH",
        precision=6,
    )
    max_iterations: IntProperty(
        name="Max Iterations", description="Iteration cap for iterative solvers; 0: solver default", default=0, min=0
    )
    influence: FloatProperty(
        name="Influence", description="Blend from the current pose (0) to the solved one (1)", default=1.0, min=0, max=1
    )
    live: BoolProperty(
        name="Live",
        description="Solve again whenever the target or the armature moves",
        default=False,
        update=_live_changed,
    )
    use_limits: BoolProperty(
        name="Use Bone IK Limits",
        description="Honour each chain bone's own IK locks, limits and stiffness (Bone > Inverse Kinematics)",
        default=True,
    )
    use_locks: BoolProperty(
        name="Respect Locks",
        description="Keep the bones' locked rotation channels, as Blender's transform tools do; off: turn"
        " through them, as the IK constraint does",
        default=True,
    )
    use_stretch: BoolProperty(
        name="Stretch",
        description="Bones with IK Stretch above 0 (Bone > Inverse Kinematics) lengthen along Y to reach a target"
        " beyond the chain's reach, as the IK constraint's Stretch",
        default=True,
    )
    softness: FloatProperty(
        name="Softness",
        description="Soft IK against the knee (elbow) pop: near full reach the tip eases toward the target instead"
        " of snapping the chain straight (a share of the chain's reach; 0: exact). With Stretch the chain"
        " stretches to reach, softened below it",
        default=0.0,
        min=0.0,
        max=0.99,
        soft_max=0.5,
        subtype="FACTOR",
    )
    # Blender's IK constraint convention: the root bone's X axis turned by the pole
    # angle about its Y axis points toward the pole.
    pole_target: PointerProperty(
        name="Pole Target", description="Object (or bone of an armature) the chain bends toward", type=bpy.types.Object
    )
    pole_subtarget: StringProperty(name="Pole Bone", description="With an armature pole target: the bone (its head)")
    pole_angle: FloatProperty(
        name="Pole Angle",
        description="Turn of the bend plane about the root-target line, as the IK constraint's Pole Angle",
        default=0.0,
        min=-3.141592653589793,
        max=3.141592653589793,
        subtype="ANGLE",
    )
    use_rotation: BoolProperty(
        name="Rotation", description="The tip bone turns to the target's orientation (as the IK constraint's Rotation)"
    )
    rotation_weight: FloatProperty(
        name="Rotation Weight",
        description="How far the tip bone turns from its reached orientation toward the target's",
        default=1.0,
        min=0.0,
        max=1.0,
    )
    # Chains that share bones are solved together as one group (app.spec.groups); these rank this
    # chain's tip among the group's. The group's first chain in the list sets its solver.
    weight: FloatProperty(
        name="Weight",
        description="In a group: this tip's share of the compromise when the group's targets cannot all be reached",
        default=1.0,
        min=1e-3,
        soft_max=10.0,
    )
    priority: IntProperty(
        name="Priority",
        description="In a group: 0 is met first; a higher number only as far as the lower ones allow"
        " (the Jacobian solves it in what they leave free, the others weigh each level a million times the next)",
        default=0,
        min=0,
        soft_max=3,
    )
    pin: BoolProperty(
        name="Pin",
        description="Hold the tip where the pose has it (a planted foot), above every target and priority, while"
        " the chains it shares bones with reach; needs no target",
        default=False,
    )
    mute: BoolProperty(
        name="Mute",
        description="Leave this chain out of Solve, Live, Bake and Compare (as a muted constraint)",
        default=False,
    )
    select: BoolProperty(name="Select", description="Part of the chains Solve, Live, Bake and Compare act on")
    # Keyed over time (CONSTANT keys: Detect Contacts writes them, the Dope Sheet edits them): the
    # frames on which this chain's tip bone (the foot) is planted. Its F-Curve's data path names the
    # chain by its index in the list (`chain_ik.chains[0].contact`, as Blender keys it).
    contact: BoolProperty(
        name="Contact",
        description="The foot (this chain's tip bone) is planted on the ground on this frame; key it over time"
        " (Detect Contacts keys it from the motion)",
        default=False,
    )
    constraint: StringProperty(
        name="IK Constraint",
        description="The tip bone's IK constraint this chain was made from, and Constraints from Chains writes",
    )
    result: PointerProperty(type=ChainIKResult)
    has_result: BoolProperty(default=False, options={"HIDDEN"})
    comparison: CollectionProperty(type=ChainIKResult)
    aim_axis: EnumProperty(
        name="Aim Axis",
        description="Point this axis of the tip bone at the target instead of reaching it (a head, a spine, a"
        " gun arm), the turn shared over the chain's bones; None: the tip reaches. Rigify's head faces +Z",
        items=AIM_AXIS_ITEMS,
        default=NO_AIM,
    )
    aim_spread: FloatProperty(
        name="Aim Spread",
        description="How an aim's turn spreads from the tip bone over the chain: 0 all on the tip bone, 1 evenly"
        " (weighed by each bone's IK stiffness)",
        default=DEFAULT_SPREAD,
        min=0.0,
        max=1.0,
        subtype="FACTOR",
    )
    # A movable root (issue 20 item 1; the chain leading the unit sets it for its whole group).
    move_root: BoolProperty(
        name="Move Root",
        description="The unit's top bone may move its location as well as the bones turn, so a target beyond"
        " reach is reached (the hips follow the hand); pins hold. Only where that bone is not connected to its"
        " parent. In a group the first chain's setting serves all",
        default=False,
    )
    root_stiffness: FloatProperty(
        name="Root Stiffness",
        description="How little the root moves once a target is beyond reach: 0 moves it most (the target comes"
        " within three quarters of its chain's reach), 0.5 to seven eighths, 1 never moves it",
        default=0.5,
        min=0.0,
        max=1.0,
        subtype="FACTOR",
    )
    # The last bake's contact figures for this chain (measured on playback), shown in the Contacts panel.
    contact_figures: StringProperty(name="Contact Figures", options={"HIDDEN"})


SWITCH_OFF_ITEMS = [
    ("MUTE", "Mute", "The constraint was muted"),
    ("INFLUENCE", "Influence", "The constraint's influence was set to 0 (a driver or keys set its mute)"),
]


@overridable
class ChainIKSwitchedOff(bpy.types.PropertyGroup):
    """An IK constraint that Chains from IK Constraints switched off, and its own values before: kept
    with the constraint (by bone and constraint name), not with its chain, so adopting again reads
    the rig's settings, not the adoption's, whatever became of the chain."""

    bone: StringProperty(name="Bone")
    constraint: StringProperty(name="IK Constraint")
    how: EnumProperty(name="Switched Off By", items=SWITCH_OFF_ITEMS, default="MUTE")
    mute: BoolProperty(name="Mute Before", description="The constraint's own mute before it was switched off")
    influence: FloatProperty(
        name="Influence Before", description="The constraint's own influence before it was switched off", default=1.0
    )


INTERPOLATION_ITEMS = [
    ("BEZIER", "Bezier", "Smooth curves through the keys (Blender's default)"),
    ("LINEAR", "Linear", "Straight lines between keys (key reduction's tolerance holds exactly)"),
    ("CONSTANT", "Constant", "Hold each key until the next"),
]


REDUCE_MODE_ITEMS = [
    ("TIP", "Tip Distance", "Each chain's tip stays within a world distance of the bake"),
    ("ANGLE", "Joint Angle", "Each baked joint stays within an angle of the bake"),
]


@overridable
class ChainIKBake(bpy.types.PropertyGroup):
    """How Bake keys this armature's chains (the Bake operator's defaults; scripts may override)."""

    use_scene_range: BoolProperty(
        name="Scene Range", description="Bake the scene's frame range; off: the range below", default=True
    )
    frame_start: IntProperty(name="Start", description="First frame to bake", default=1, min=-MAX_FRAME, max=MAX_FRAME)
    frame_end: IntProperty(name="End", description="Last frame to bake", default=250, min=-MAX_FRAME, max=MAX_FRAME)
    step: IntProperty(name="Step", description="Key every this many frames", default=1, min=1, soft_max=10)
    interpolation: EnumProperty(name="Interpolation", items=INTERPOLATION_ITEMS, default="BEZIER")
    reduce: BoolProperty(
        name="Reduce Keys",
        description="Keep only the keys (with fitted Bezier handles) that play back within the error below",
        default=False,
    )
    reduce_mode: EnumProperty(name="Reduce By", items=REDUCE_MODE_ITEMS, default="TIP")
    reduce_tolerance: FloatProperty(
        name="Max Tip Error",
        description="Furthest each chain's tip may play back from where the bake put it (world distance)",
        default=1e-3,
        min=1e-7,
        soft_max=0.1,
        unit="LENGTH",
        precision=5,
    )
    reduce_angle: FloatProperty(
        name="Max Joint Error",
        description="Largest rotation any baked joint may play back away from its baked rotation",
        default=0.0017453292519943296,
        min=1e-7,
        soft_max=0.1,
        subtype="ANGLE",
        precision=3,
    )
    # The last Bake's summary (frames, keys, worst tip error on playback, time), shown under the
    # Bake button: the Result panel shows the last Solve.
    last_bake: StringProperty(name="Last Bake", options={"HIDDEN"})


SCOPE_ITEMS = [
    ("ALL", "All Chains", "Every chain of the list that is not muted"),
    ("SELECTED", "Selected Chains", "The chains ticked in the list that are not muted"),
]


@overridable
class ChainIKSettings(bpy.types.PropertyGroup):
    """All chains of one armature object, and how they are baked."""

    chains: CollectionProperty(type=ChainIKChain)
    # Per armature, beside its chains: which frames and how to key them is a property of the rig's job.
    bake: PointerProperty(type=ChainIKBake)
    active_index: IntProperty(name="Active Chain", default=0, min=0)
    ground: PointerProperty(
        name="Ground",
        description="Mesh the feet stand on: Detect Contacts measures their height above it (straight down);"
        " none: above each foot's own lowest height",
        type=bpy.types.Object,
        poll=lambda _settings, obj: obj.type == "MESH",
    )
    # Issue 21 item 2: how a bake that honours contacts eases a planted foot back to its input pose.
    contact_blend: IntProperty(
        name="Blend Frames",
        description="Frames over which a foot eases back to its motion after a contact, in a bake;"
        " -1: about 0.15 s at the scene's frame rate",
        default=-1,
        min=-1,
        soft_max=60,
    )
    contact_align: BoolProperty(
        name="Align to Ground",
        description="In a bake, a planted foot tilts with the ground's surface under it (its normal), on top of its"
        " motion's pitch; off: only its motion's rotation",
        default=False,
    )

    # The IK constraints Chains from IK Constraints switched off (app.spec.adopt_records).
    switched_off: CollectionProperty(type=ChainIKSwitchedOff, options={"HIDDEN"})
    # False in files adopted before `switched_off` existed: adopting them again recognises its own
    # switch-off by the chain made from the constraint (app.spec.adopt_records.legacy_switch_off).
    switch_offs_recorded: BoolProperty(default=False, options={"HIDDEN"})
    scope: EnumProperty(
        name="Act On",
        description="Which chains Solve, Live, Bake and Compare act on (muted chains never)",
        items=SCOPE_ITEMS,
        default="ALL",
    )

    @property
    def active(self) -> ChainIKChain | None:
        if 0 <= self.active_index < len(self.chains):
            return self.chains[self.active_index]
        return None

    def in_scope(self) -> list:
        """The chains Solve, Live, Bake and Compare act on: all or the ticked ones, never the muted."""
        selected_only = self.scope == "SELECTED"
        return [c for c in self.chains if not c.mute and (c.select or not selected_only)]


CLASSES = (ChainIKResult, ChainIKChain, ChainIKBake, ChainIKSwitchedOff, ChainIKSettings)


def register_owner() -> None:
    bpy.types.Object.chain_ik = PointerProperty(type=ChainIKSettings, name="Chain IK", override={"LIBRARY_OVERRIDABLE"})


def unregister_owner() -> None:
    del bpy.types.Object.chain_ik
