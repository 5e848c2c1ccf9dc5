"""The Live chains a bake must reckon with: those that pose a bone the baked bones, their targets
and poles, or the armature object itself ride on, on any armature (through bone and object
parents, constraints and drivers: `checks.carried_by`, the check Live orders its units by). Live
is held off while a bake steps through frames (`live.set_busy`), so without care their pose would
stay as it is while playback moves it.
"""

from __future__ import annotations

from ... import rig
from .. import checks


def read_bones(starts) -> list[tuple[object, set[str]]]:
    """(armature, its bones) for every armature with a bone whose pose moves one of `starts`
    ((object, bone, location_only), as `checks.carried_by`)."""
    found: dict[int, tuple[object, set[str]]] = {}
    for ob, bone in checks.carried_by(starts):
        if bone and ob.type == "ARMATURE":
            found.setdefault(ob.as_pointer(), (ob, set()))[1].add(bone)
    return list(found.values())


def goal_starts(goals) -> list[tuple[object, str, bool]]:
    """`carried_by` starts for the targets and poles of `goals` (chain specs)."""
    starts = []
    for spec in goals:
        location_only = not (spec.use_rotation and spec.rotation_weight > 0.0)
        starts += [(spec.target, spec.target_bone, location_only), (spec.pole, spec.pole_bone, True)]
    return starts


def live_chains_above(obj, bones, goals=()) -> list[tuple[object, object, list[str]]]:
    """(armature, chain item, the bones it poses among those read) for each live, unmuted chain of
    any armature that poses a bone which `bones` of `obj`, the targets and poles of `goals`
    (chain specs) or the armature object `obj` itself ride on (`bones` included)."""
    starts = [(obj, name, False) for name in bones] + [(obj, "", False)] + goal_starts(goals)
    found = []
    for arm, names in read_bones(starts):
        for item in arm.chain_ik.chains:
            if not item.live or item.mute:
                continue
            try:
                chain = rig.chain_bone_names(arm, item.tip, item.chain_length, item.use_tail)
            except ValueError:
                continue  # it poses nothing (Live says why)
            posed = [name for name in chain if name in names]
            if posed:
                found.append((arm, item, posed))
    return found


def held_message(arm, item, posed: list[str], riders: str) -> str:
    """The refusal for a Live chain of another armature `arm` that `riders` ('... ride(s) on') names."""
    return (
        f"Live chain '{item.name}' of armature '{arm.name}' poses bone '{posed[0]}', which {riders}, and"
        " Live is held off while baking: the keys would follow a pose that playback moves. Bake that chain first"
        f" (Bake Chain IK on '{arm.name}'), or switch its Live off; nothing was keyed"
    )
