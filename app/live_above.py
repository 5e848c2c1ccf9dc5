"""The Live chains a bake must reckon with: those that pose a bone which bones the bake reads hang
from. Live is held off while a bake steps through frames (`live.set_busy`), so without care their
pose would stay as it is while playback moves it."""

from __future__ import annotations

from .. import rig


def with_ancestors(obj, name: str) -> set[str]:
    """Bone `name` of `obj` and every bone above it."""
    bone, out = obj.pose.bones.get(name), set()
    while bone is not None:
        out.add(bone.name)
        bone = bone.parent
    return out


def live_chains_above(obj, bones, riders=()) -> list[tuple[object, list[str]]]:
    """(chain item, the bones it poses among those) for each live, unmuted chain of `obj` that
    poses one of `bones` or a bone above one. `riders` (chain specs) add their own-armature target
    and pole bones to `bones`."""
    above = set().union(set(), *(with_ancestors(obj, name) for name in bones))
    for item in riders:
        for ob, bone in ((item.target, item.target_bone), (item.pole, item.pole_bone)):
            if ob == obj and bone:
                above |= with_ancestors(obj, bone)
    found = []
    for item in obj.chain_ik.chains:
        if not item.live or item.mute:
            continue
        try:
            chain = rig.chain_bone_names(obj, item.tip, item.chain_length, item.use_tail)
        except ValueError:
            continue  # it poses nothing (Live says why)
        posed = [name for name in chain if name in above]
        if posed:
            found.append((item, posed))
    return found
