"""Job specs: everything one chain's solve or bake needs, as frozen plain values, made from a
panel chain item or from an operator's (or cli.py's) script arguments."""

from __future__ import annotations

from dataclasses import dataclass, field
from operator import attrgetter

import bpy

from ... import properties
from ...rig import contacts as rig_contacts
from ...solvers.model.aim_axis import DEFAULT_SPREAD, NO_AIM
from . import scope


@dataclass(frozen=True)
class ChainSpec:
    """Everything one solve needs, as plain values (from a chain item or script arguments).

    Frozen: a bake or a Live solve holds it while the panel may change; `dataclasses.replace`
    makes a changed copy."""

    tip: str
    chain_length: int
    target: object  # bpy Object (original) or None
    target_bone: str = ""
    method: str = "triangulation"
    use_tail: bool = True
    tolerance: float = 0.0  # world distance; 0 = solver default
    max_iterations: int = 0  # 0 = solver default
    options: dict = field(default_factory=dict)
    influence: float = 1.0
    use_limits: bool = True  # the bones' own IK settings (Bone > Inverse Kinematics)
    pole: object = None  # bpy Object (original) or None
    pole_bone: str = ""
    pole_angle: float = 0.0  # radians, Blender's IK pole angle
    use_rotation: bool = False  # the tip bone turns to the target's orientation
    rotation_weight: float = 1.0
    use_locks: bool = True  # keep locked rotation channels (off: turn through them, as the IK constraint)
    use_stretch: bool = True  # bones with ik_stretch > 0 lengthen to reach (the IK constraint's Stretch)
    softness: float = 0.0  # soft IK (solvers.common.soft): a share of the chain's reach, 0 exact
    name: str = ""  # the panel chain's name (reports); '' for a chain given by script arguments
    # In a group (chains sharing bones, app.spec.groups): this chain's effector against the others.
    weight: float = 1.0  # its share of the least-squares compromise when targets conflict
    priority: int = 0  # 0 highest; a lower level is met only as far as the higher ones allow
    pin: bool = False  # hold the tip where the pose has it (a planted foot); no target needed
    # Aim (solvers.common.aim_goals): the tip bone's axis (properties.AIM_AXIS_ITEMS) points at the
    # target, the turn spread over the chain by aim_spread; NO_AIM: the tip reaches.
    aim_axis: str = NO_AIM
    aim_spread: float = DEFAULT_SPREAD

    @property
    def aims(self) -> bool:
        """The chain aims its tip bone's axis instead of reaching (no pole, tip rotation, softness, stretch)."""
        return self.aim_axis != NO_AIM

    # The data path of the chain's keyed Contact (issue 21) when it has contacts, else '': a bake
    # then plants its foot on the contacts (app.bake.contact_targets) and needs no target.
    contacts: str = ""
    # A movable root (solvers.common.root_move): the unit's top bone moves its head too (the lead's serves a group).
    move_root: bool = False
    root_stiffness: float = 0.5  # 0 moves most, 1 never moves

    @property
    def label(self) -> str:
        """How reports name the chain: its panel name, else its tip bone."""
        return self.name or self.tip

    def local_tolerance(self, space) -> float | None:
        """The reach tolerance in the armature's space (`rig.ObjectSpace`); None: the solver's default."""
        return space.distance_to_local(self.tolerance) if self.tolerance > 0.0 else None

    def solver_arguments(self, tolerance: float | None) -> dict:
        """The solver's method, tolerance (armature space), iteration cap and options, as keywords
        of solvers.solve, solve_skeleton, solve_skeleton_next and solve_skeleton_sequence."""
        cap = self.max_iterations or None
        return {"method": self.method, "tolerance": tolerance, "max_iterations": cap, **self.options}

    def root_arguments(self) -> dict:
        """solve_skeleton's movable-root keywords ({} when the root stays)."""
        return {"move_root": True, "root_stiffness": float(self.root_stiffness)} if self.move_root else {}


# Spec field <- chain item property, read with one C-level getter (Live reads every live chain's
# spec on each update; attribute by attribute in Python cost twice as much).
_ITEM_FIELDS = (
    ("tip", "tip"), ("chain_length", "chain_length"), ("target", "target"), ("target_bone", "target_bone"),
    ("method", "method"), ("use_tail", "use_tail"), ("tolerance", "tolerance"),
    ("max_iterations", "max_iterations"), ("influence", "influence"), ("use_limits", "use_limits"),
    ("pole", "pole_target"), ("pole_bone", "pole_subtarget"), ("pole_angle", "pole_angle"),
    ("use_rotation", "use_rotation"), ("rotation_weight", "rotation_weight"), ("use_locks", "use_locks"),
    ("use_stretch", "use_stretch"), ("softness", "softness"), ("name", "name"), ("weight", "weight"),
    ("priority", "priority"), ("pin", "pin"), ("aim_axis", "aim_axis"), ("aim_spread", "aim_spread"),
    ("move_root", "move_root"), ("root_stiffness", "root_stiffness"),
)  # fmt: skip
_FIELD_NAMES = tuple(name for name, _ in _ITEM_FIELDS)
_read_item = attrgetter(*(prop for _, prop in _ITEM_FIELDS))


def spec_from_item(item, **overrides) -> ChainSpec:
    """A ChainSpec from a ChainIKChain item; keyword arguments override its fields."""
    fields = dict(zip(_FIELD_NAMES, _read_item(item), strict=True))
    method = overrides.get("method") or fields["method"]
    fields.update(method=method, options=method_options(item, method), contacts=contact_channel(item))
    fields.update((key, value) for key, value in overrides.items() if key != "method" and value is not None)
    return ChainSpec(**fields)


def specs_from_arguments(
    obj,
    tip: str,
    chain_length: int,
    target: str,
    target_bone: str,
    method: str,
    chain_index: int,
    pole: str = "",
    pole_bone: str = "",
    pole_angle: float | None = None,
    softness: float | None = None,
    aim_axis: str | None = None,
    aim_spread: float | None = None,
    move_root: bool | None = None,
    root_stiffness: float | None = None,
    use_limits: bool | None = None,
    use_locks: bool | None = None,
    use_stretch: bool | None = None,
) -> list[tuple[object, ChainSpec]]:
    """(chain item or None, spec) pairs for an operator's script arguments (Solve, Bake).

    - `tip` given: one chain made of the arguments alone (it needs `target`); every other
      setting is the default a new panel chain has, never the active chain's, and no panel
      chain's stored result is touched (item None).
    - no `tip`, but a chain length, target or pole argument: the panel's active chain with
      those arguments over its settings.
    - only `method` (or nothing): the panel's chains in scope (all or the ticked ones, never
      the muted ones; see app.spec.scope) or the one at chain_index, with `method` over their
      solver when given.
    `softness` goes with whichever chains these are (like `method`: alone, over every chain's).
    `pole_angle`, `softness` None: not given (the panel's, or 0). `aim_axis`, `aim_spread`,
    `move_root`, `root_stiffness`, `use_limits`, `use_locks` and `use_stretch` as `softness`
    (None: the panel's; or no aim, Move Root off, stiffness 0.5, limits, locks and stretch on
    with `tip`)."""
    settings = obj.chain_ik
    overrides = _overrides(target, target_bone, pole, pole_bone, pole_angle)
    per_chain = {"softness": softness, "aim_axis": aim_axis, "aim_spread": aim_spread}
    per_chain.update(move_root=move_root, root_stiffness=root_stiffness)
    per_chain.update(use_limits=use_limits, use_locks=use_locks, use_stretch=use_stretch)
    overrides.update(per_chain)
    if tip:
        if not target:
            raise ValueError(f"tip '{tip}' given with no target: pass target (and target_bone for a bone)")
        method = method or "triangulation"
        given = {key: value for key, value in overrides.items() if value is not None}
        # Every other setting as a new panel chain would have it.
        options = method_options(_PanelDefaults(), method)
        return [(None, ChainSpec(tip=tip, chain_length=chain_length or 2, method=method, options=options, **given))]
    if chain_length or target or target_bone or pole or pole_bone or pole_angle is not None:
        item = settings.active
        if item is None:
            raise ValueError("no active chain to apply the arguments to: pass tip, chain_length and target")
        scope.check_not_muted(item)
        overrides.update(chain_length=chain_length or None, method=method or None)
        return [(item, spec_from_item(item, **overrides))]
    if chain_index >= 0:
        if chain_index >= len(settings.chains):
            raise ValueError(f"there is no chain {chain_index} (the list has {len(settings.chains)})")
        items = [settings.chains[chain_index]]
        scope.check_not_muted(items[0])
    else:
        items = scope.scoped_items(settings)
    return [(item, spec_from_item(item, method=method or None, **per_chain)) for item in items]


def _overrides(target: str, target_bone: str, pole: str, pole_bone: str, pole_angle: float | None) -> dict:
    """Spec fields named by script arguments (None: not given)."""
    # A target given by name brings its own bone (or none), never the panel's; so does a pole.
    overrides: dict = {"target_bone": target_bone or ("" if target else None), "pole_angle": pole_angle}
    if target:
        target_obj = bpy.data.objects.get(target)
        if target_obj is None:
            raise ValueError(f"no object named '{target}'")
        overrides["target"] = target_obj
    if pole:
        pole_obj = bpy.data.objects.get(pole)
        if pole_obj is None:
            raise ValueError(f"no pole object named '{pole}'")
        overrides["pole"] = pole_obj
        overrides["pole_bone"] = pole_bone
    elif pole_bone:
        overrides["pole_bone"] = pole_bone
    return overrides


class _PanelDefaults:
    """A chain item's settings at their defaults, for scripts that name a chain without a panel entry."""

    def __getattr__(self, name: str):
        return properties.ChainIKChain.bl_rna.properties[name].default


def method_options(item, method: str) -> dict:
    """See properties.method_options (the solver registry's options from a chain item)."""
    return properties.method_options(item, method)


def add_chain(obj) -> int:
    """A new chain at the end of `obj`'s list, and its index. The object is tagged: its evaluated
    copy then gets the chain too, so playback sets the chain's keyed Contact (user13: a chain added
    and keyed in one session did not follow its keys)."""
    obj.chain_ik.chains.add()
    obj.update_tag()
    return len(obj.chain_ik.chains) - 1


def contact_channel(item) -> str:
    """The data path of chain `item`'s Contact when it has contacts (keys, or Contact on), else ''."""
    obj = item.id_data
    if getattr(obj, "type", None) != "ARMATURE":
        return ""
    if rig_contacts.contact_curve(obj, item) is not None or item.contact:
        return rig_contacts.contact_path(item)
    return ""
