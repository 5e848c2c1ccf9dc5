"""Data Blender would not let a user change: linked (library) data-blocks, non-editable
overrides, locked F-Curves, and an action (or 4.4+ action slot) another object plays.

Chain IK refuses these before any work, naming what is protected: a pose or key written
into linked data is gone on reload, a locked F-Curve is the user's "do not touch", and keys
in a shared action would move the other character too. Editable library overrides are
ordinary data here: Blender saves their pose and actions with the shot file.
"""

from __future__ import annotations

import bpy

from .keys import action_fcurves, data_path, rotation_property


def id_refusal(id_data, what: str) -> str:
    """Why `id_data` cannot be edited ('' when it can): linked from a library, or an override
    Blender keeps non-editable (a system override: `is_editable` does not say so)."""
    if id_data is None:
        return ""
    if id_data.library is not None and not id_data.is_editable:
        return (
            f"the {what} '{id_data.name}' is linked from the library '{id_data.library.filepath}': changes to it"
            " are lost on reload; make a library override (Object > Library Override > Make) and work on that"
        )
    override = id_data.override_library
    if override is not None and override.is_system_override:
        return (
            f"the {what} '{id_data.name}' is a non-editable library override: make it editable"
            " (Object > Library Override > Make Editable) first"
        )
    return ""


def pose_refusal(obj) -> str:
    """Why the pose of armature `obj` cannot be written ('' when it can)."""
    return id_refusal(obj, "armature object")


def keying_refusal(obj, bones, paths: set[str] | None = None) -> str:
    """Why rotation keys of `bones` cannot go into `obj`'s action ('' when they can): the object
    or its action is linked, another object plays the same action (slot), or an F-Curve of
    those rotations (or of the data `paths` given) is locked."""
    refusal = pose_refusal(obj)
    ad = obj.animation_data
    action = ad.action if ad is not None else None
    if refusal or action is None:
        return refusal
    refusal = id_refusal(action, "action")
    if refusal:
        return refusal + " (or assign a local action)"
    others = sorted(_sharing_objects(obj, action))
    if others:
        return (
            f"the action '{action.name}' also animates {', '.join(repr(n) for n in others)}: baking into it would"
            f" change their keys too; give '{obj.name}' an action of its own (click the action's user count"
            " to make a single-user copy)"
        )
    locked = locked_curves(obj, action, bones, paths)
    if locked:
        return f"locked F-Curves (the padlock) on {', '.join(locked)}: unlock them to key these bones"
    return ""


def nla_override_refusal(obj, bones, paths: set[str] | None = None, frames: tuple[int, int] = (0, 0)) -> str:
    """Why a bake over `frames` (first, last) cannot key `bones`' rotations (or `paths`) on `obj`
    ('' when it can): an NLA strip that plays plays one of those channels and the active action
    (its slot) has no F-Curve for it yet. The bake's new F-Curve would replace the strip's values
    on every frame, not only the baked ones (it holds its end keys beyond the range), changing
    playback the user did not ask for. A channel the active action keys already overrides the
    strips, and keeps doing so."""
    ad = obj.animation_data
    if ad is None or ad.use_tweak_mode or not ad.use_nla or not len(ad.nla_tracks):
        return ""
    wanted = _keyed_paths(obj, bones, paths)
    own = set()
    if ad.action is not None:
        own = {(fc.data_path, fc.array_index) for fc in _slot_fcurves(ad.action, _slot(ad))}
    solo = [track for track in ad.nla_tracks if track.is_solo]
    for track in solo or ad.nla_tracks:
        if track.mute and not track.is_solo:
            continue
        for strip in _playing_strips(track.strips):
            channel = next(
                (
                    (fc.data_path, fc.array_index)
                    for fc in _slot_fcurves(strip.action, _slot(strip))
                    if fc.data_path in wanted and (fc.data_path, fc.array_index) not in own
                ),
                None,
            )
            if channel is not None:
                who = f"'{obj.name}' has no active action"
                if ad.action is not None:
                    who = f"the active action '{ad.action.name}' does not key it"
                return (
                    f"the NLA strip '{strip.name}' plays {channel[0]}[{channel[1]}] and {who}: the"
                    f" baked keys would override the strip on every frame, not only {frames[0]}-{frames[1]} (they"
                    " hold beyond the range). Bake into the strip instead (NLA editor: select it, Tab for tweak"
                    " mode), or key that channel in the active action first"
                )
    return ""


def _playing_strips(strips):
    """The unmuted strips with an action, those inside meta strips too."""
    for strip in strips:
        if strip.mute:
            continue
        if strip.type == "META":
            yield from _playing_strips(strip.strips)
        elif strip.action is not None:
            yield strip


def _keyed_paths(obj, bones, paths: set[str] | None) -> set[str]:
    """The data paths a bake keys: `paths` when given, else `bones`' rotation channels."""
    return paths if paths is not None else {data_path(n, rotation_property(obj.pose.bones[n])) for n in bones}


def _slot(ad):
    return getattr(ad, "action_slot", None)  # 4.4+; None before (one animation per action)


def _same_slot(a, b) -> bool:
    """Two slots (None before 4.4) animate the same channels: before 4.4 every user of an action
    plays all of it; from 4.4 an object without a slot yet is given a free one when keyed."""
    if a is None or b is None:
        return not hasattr(bpy.types, "ActionSlot")
    return a.handle == b.handle


def _sharing_objects(obj, action):
    """Names of the other objects that play `action` in `obj`'s slot (active action or NLA strip)."""
    mine = _slot(obj.animation_data)
    for other in bpy.data.objects:
        ad = other.animation_data
        if other == obj or ad is None:
            continue
        plays = [(ad.action, _slot(ad))] + [(s.action, _slot(s)) for t in ad.nla_tracks for s in t.strips]
        if any(act == action and _same_slot(mine, slot) for act, slot in plays):
            yield other.name


def locked_curves(obj, action, bones, paths: set[str] | None = None) -> list[str]:
    """'path[index]' of the locked F-Curves among `bones`' rotation channels (or the data `paths`
    given) in `obj`'s slot."""
    wanted = _keyed_paths(obj, bones, paths)
    mine = _slot(obj.animation_data)
    found = []
    for fc in _slot_fcurves(action, mine):
        if fc.lock and fc.data_path in wanted:
            found.append(f"{fc.data_path}[{fc.array_index}]")
    return sorted(found)


def _slot_fcurves(action, slot) -> list:
    if slot is None or not hasattr(action, "layers"):
        return action_fcurves(action)
    return [
        fc
        for layer in action.layers
        for strip in layer.strips
        for bag in strip.channelbags
        if bag.slot_handle == slot.handle
        for fc in bag.fcurves
    ]
