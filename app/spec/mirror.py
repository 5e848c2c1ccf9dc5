"""A chain's .L <-> .R counterpart, by Blender's flip-name rules (the Mirror Chain operator's work)."""

from __future__ import annotations

import math

import bpy
from bpy.utils import flip_name

from . import add_chain

# Copied as they are; names, targets and the pole angle are mirrored (see _mirror).
SKIP = {
    "rna_type",
    "name",
    "tip",
    "target",
    "target_bone",
    "pole_target",
    "pole_subtarget",
    "pole_angle",
    "constraint",
    "result",
    "has_result",
    "comparison",
    "select",
    "aim_axis",
    "contact",
    "contact_figures",
}  # fmt: skip  (contacts: each side's own keys and bake figures)


def mirrored_pole_angle(angle: float) -> float:
    """The pole angle giving the mirrored bend on the other side. Blender's Symmetrize flips the
    roll, so a mirrored bone's X axis is minus the mirror of the original's: the angle that turns
    it toward the mirrored pole is pi - angle (Rigify's -90° stays -90°)."""
    mirrored = math.pi - angle
    return math.atan2(math.sin(mirrored), math.cos(mirrored))


def mirrored_aim_axis(axis: str) -> str:
    """The aim axis of the mirrored bone: its X axis is minus the mirror of the original's (see
    mirrored_pole_angle), its Y and Z the mirrors: +X and -X swap, the others stay."""
    return {"+X": "-X", "-X": "+X"}.get(axis, axis)


def _counterpart(ob, obj):
    """The object named as `ob` flipped; the armature itself stays (its bone is flipped instead)."""
    if ob is None or ob == obj:
        return ob, ""
    other = bpy.data.objects.get(flip_name(ob.name))
    return other, ("" if other is not None else flip_name(ob.name))


def mirrored_name(name: str, tip: str, flipped_tip: str) -> str:
    flipped = flip_name(name)
    if flipped != name:
        return flipped
    return name.replace(tip, flipped_tip) if tip and tip in name else flipped_tip


def _mirror(obj, src) -> dict:
    """The mirrored tip, target and pole of chain `src` (ValueError if a counterpart is missing)."""
    tip = flip_name(src.tip)
    if tip == src.tip:
        raise ValueError(f"bone '{src.tip}' has no side in its name (.L/.R, _L/_R, Left/Right): nothing to mirror")
    if tip not in obj.pose.bones:
        raise ValueError(f"armature '{obj.name}' has no bone '{tip}' to mirror '{src.tip}' onto")
    target, missing_target = _counterpart(src.target, obj)
    pole, missing_pole = _counterpart(src.pole_target, obj)
    missing = [f"object '{n}'" for n in (missing_target, missing_pole) if n]
    target_bone = flip_name(src.target_bone) if src.target_bone else ""
    pole_bone = flip_name(src.pole_subtarget) if src.pole_subtarget else ""
    for ob, bone in ((target, target_bone), (pole, pole_bone)):
        if ob is not None and ob.type == "ARMATURE" and bone and bone not in ob.data.bones:
            missing.append(f"bone '{bone}' of '{ob.name}'")
    if missing:
        raise ValueError(f"no counterpart for '{src.name}': {', '.join(missing)} not found")
    return {
        "tip": tip,
        "target": target,
        "target_bone": target_bone,
        "pole_target": pole,
        "pole_subtarget": pole_bone,
        "pole_angle": mirrored_pole_angle(src.pole_angle),
        "aim_axis": mirrored_aim_axis(src.aim_axis),
    }


def mirror_active(obj) -> tuple[str, bool, tuple[str, ...]]:
    """Make (or update) the active chain's counterpart and make it active: mirrored tip, targets,
    poles, pole angle and aim axis, the other settings copied. Returns (its name, whether it was
    made, the settings an update changed: the report names them, since an update overwrites what
    the user set there); ValueError if a counterpart is missing or the chain mirrors onto itself."""
    settings = obj.chain_ik
    src = settings.active
    values = _mirror(obj, src)
    name = mirrored_name(src.name, src.tip, values["tip"])
    index = next((i for i, c in enumerate(settings.chains) if c.name == name), None)
    if index is not None and settings.chains[index] == src:
        raise ValueError(f"chain '{src.name}' mirrors onto itself")
    source = settings.active_index
    if index is None:
        index, made = add_chain(obj), True  # the list's items may move in memory: both are fetched afresh
    else:
        made = False
    src, item = settings.chains[source], settings.chains[index]
    keys = [p.identifier for p in src.bl_rna.properties if p.identifier not in SKIP and not p.is_readonly]
    watched = [*keys, *(key for key in values if key not in keys and key != "name")]
    before = {key: _plain(getattr(item, key)) for key in watched}
    for key in keys:
        setattr(item, key, getattr(src, key))
    item.name = name
    for key, value in values.items():
        setattr(item, key, value)
    item.has_result = False
    settings.active_index = index
    props = src.bl_rna.properties
    changed = (
        ()
        if made
        else tuple(
            props[key].name or key
            for key in watched
            if not _same(_plain(getattr(item, key)), before[key], getattr(props[key], "unit", "NONE") == "ROTATION")
        )
    )
    return name, made, changed


def _same(a, b, angle: bool) -> bool:
    """Equal; an angle (mirrored, not copied: a pole angle mirrored twice comes back 1e-7 off)
    within float32 noise and a turn apart (-180 and 180 degrees are one angle)."""
    if angle:
        d = abs(a - b)
        return min(d, abs(d - 2.0 * math.pi)) <= 1e-6
    return a == b


def _plain(value):
    """A setting's value comparable after the item changed (arrays copied, ID blocks kept)."""
    return tuple(value) if hasattr(value, "__len__") and not isinstance(value, str) else value
