"""Write baked rotation keys in bulk, on 4.2 actions and 4.4+/5.0 layered actions.

Keys go in with `keyframe_points.add(count)` and `foreach_set` (one call per
attribute and F-Curve, never one `keyframe_insert` per key), then
`FCurve.update()` sorts them and recomputes the auto handles. Only the F-Curves
of the given bones' rotation channels are touched; on those, keys inside the
baked frame range are replaced and keys outside it are kept with all their
attributes (handles, interpolation, easing...).
"""

from __future__ import annotations

import bpy
import numpy as np

from .key_reads import (
    HANDLE_TYPES,
    HANDLES,
    KEY_ATTRIBUTES,
    REPLACED,
    drop_placed_handles,
    filled,
    keep_replaced,
    read_handles,
    read_keys,
    scratch,
    shared_row,
)

ROTATION_PATHS = {"QUATERNION": "rotation_quaternion", "AXIS_ANGLE": "rotation_axis_angle"}
INTERPOLATIONS = tuple(bpy.types.Keyframe.bl_rna.properties["interpolation"].enum_items.keys())
# What keyframe_points.add() gives whatever the preferences say (4.2 and 5.0).
NEW_KEY_INTERPOLATION = INTERPOLATIONS.index("BEZIER")
# Half a subframe: keys at fractional frames just outside the range are kept.
FRAME_EPSILON = 1e-4


def rotation_property(pbone) -> str:
    return ROTATION_PATHS.get(pbone.rotation_mode, "rotation_euler")


def data_path(bone_name: str, prop: str) -> str:
    return f'pose.bones["{bpy.utils.escape_identifier(bone_name)}"].{prop}'


def _ensure_slot(obj, action):
    """The action slot animating `obj` (4.4+); when none is assigned, a suitable slot no
    other data-block uses (the one named after `obj` first), else a new one. A slot another
    object animates through is never taken: its keys would be overwritten."""
    ad = obj.animation_data
    slot = ad.action_slot
    if slot is None:
        free = [s for s in ad.action_suitable_slots if not [u for u in s.users() if u != obj]]
        own = [s for s in free if s.identifier == "OB" + obj.name]
        slot = (own or free or [None])[0] or action.slots.new(id_type="OBJECT", name=obj.name)
        ad.action_slot = slot
    return slot


def _channelbag(action, slot):
    try:
        from bpy_extras.anim_utils import action_ensure_channelbag_for_slot
    except ImportError:  # 4.4: no helper yet
        layer = action.layers[0] if action.layers else action.layers.new("Layer")
        strip = layer.strips[0] if layer.strips else layer.strips.new(type="KEYFRAME")
        return strip.channelbag(slot, ensure=True)
    return action_ensure_channelbag_for_slot(action, slot)


class FCurves:
    """Find-or-create F-Curves of an object's action, whichever action API this Blender has."""

    def __init__(self, obj) -> None:
        ad = obj.animation_data or obj.animation_data_create()
        if ad.action is None:
            ad.action = bpy.data.actions.new(f"{obj.name}Action")
        self.action = ad.action
        if hasattr(self.action, "layers"):  # 4.4+: layered actions
            self._curves = _channelbag(self.action, _ensure_slot(obj, self.action)).fcurves
            self._layered = True
        else:
            self._curves = self.action.fcurves
            self._layered = False

    def find(self, path: str, index: int):
        """The F-Curve at (`path`, `index`), or None."""
        return self._curves.find(path, index=index)

    def ensure(self, path: str, index: int, group: str):
        fc = self._curves.find(path, index=index)
        if fc is not None:
            return fc
        if not self._layered:
            return self._curves.new(path, index=index, action_group=group)
        try:
            return self._curves.new(path, index=index, group_name=group)
        except TypeError:  # 4.4/4.5: no group_name argument
            return self._curves.new(path, index=index)


def action_fcurves(action) -> list:
    """Every F-Curve of an action: 4.2's list, or every channelbag's of 4.4+'s layered actions."""
    if hasattr(action, "layers"):
        return [
            fc for layer in action.layers for strip in layer.strips for bag in strip.channelbags for fc in bag.fcurves
        ]
    return list(action.fcurves)


def assigned_fcurves(obj) -> list:
    """The F-Curves that animate `obj` through its active action (4.4+: its assigned slot's)."""
    curves = _assigned_collection(obj)
    return [] if curves is None else list(curves)


def assigned_fcurve(obj, path: str, index: int = 0):
    """The F-Curve of `assigned_fcurves(obj)` at (`path`, `index`), or None: looked up by Blender
    (`find`), not by reading every curve's path from Python."""
    curves = _assigned_collection(obj)
    return None if curves is None else curves.find(path, index=index)


def played_fcurve(obj, path: str, index: int = 0):
    """`assigned_fcurve` where playback evaluates it (`plays`); None where it does not, playback
    leaving the property as it is."""
    fc = assigned_fcurve(obj, path, index)
    return fc if fc is not None and plays(fc) else None


def plays(fc) -> bool:
    """Whether playback evaluates action F-Curve `fc`: not muted, nor in a muted group on 4.2's
    actions (4.4+'s layered actions play a muted group's curves: Blender 5.0.1 checked)."""
    return not fc.mute and (fc.group is None or not fc.group.mute or hasattr(fc.id_data, "layers"))


def _assigned_collection(obj):
    """The F-Curve collection that animates `obj` through its active action (its assigned slot's
    channelbag's on 4.4+), or None."""
    ad = obj.animation_data
    if ad is None or ad.action is None:
        return None
    if hasattr(ad.action, "layers"):
        from bpy_extras.anim_utils import animdata_get_channelbag_for_assigned_slot

        bag = animdata_get_channelbag_for_assigned_slot(ad)
        return None if bag is None else bag.fcurves
    return ad.action.fcurves


def playback_overrides(obj, bones) -> dict[str, tuple[str, ...]]:
    """Those of `bones` whose rotation on playback is not what their keys say, by cause:
    "drivers" (a driver in use sets it), "muted F-Curves" (a muted curve or group is skipped),
    "F-Curve modifiers" (a modifier in use reshapes the curve). Empty causes are left out."""
    if obj.animation_data is None:  # nothing animates the rig (Solve asks after every solve)
        return {}
    paths = _rotation_paths(obj, bones)
    found: dict[str, set[str]] = {"drivers": set(), "muted F-Curves": set(), "F-Curve modifiers": set()}
    found["drivers"].update(_driven(obj.animation_data, paths))
    curves = _assigned_collection(obj)
    # Each bone's rotation curves looked up by Blender (a few per bone), not every curve of the action read.
    for path, name in paths.items() if curves is not None else ():
        for index in range(4 if path.endswith(("rotation_quaternion", "rotation_axis_angle")) else 3):
            fc = curves.find(path, index=index)
            if fc is None:
                continue
            if not plays(fc):
                found["muted F-Curves"].add(name)
            if any(not m.mute for m in fc.modifiers):
                found["F-Curve modifiers"].add(name)
    return {cause: tuple(sorted(names)) for cause, names in found.items() if names}


def driven_rotations(obj, bones) -> tuple[str, ...]:
    """Those of `bones` with a driver in use on their rotation channel (drivers win over keys):
    `playback_overrides`' "drivers" alone (a bake asks after keying); no curve looked up."""
    if obj.animation_data is None:
        return ()
    return tuple(sorted(_driven(obj.animation_data, _rotation_paths(obj, bones))))


def _rotation_paths(obj, bones) -> dict[str, str]:
    pose = obj.pose.bones
    return {data_path(n, rotation_property(pose[n])): n for n in bones}


def _driven(ad, paths: dict[str, str]) -> set[str]:
    """The bones of `paths` (data path -> bone) a driver in use sets."""
    return {paths[d.data_path] for d in ad.drivers if not d.mute and d.data_path in paths}


def animated_paths(obj) -> set[str]:
    """Data paths animated on `obj` by its action, its NLA strips or its drivers (conservative: all slots)."""
    ad = obj.animation_data
    if ad is None:
        return set()
    paths = {d.data_path for d in ad.drivers}
    actions = [ad.action] + [strip.action for track in ad.nla_tracks for strip in track.strips]
    for action in actions:
        if action is not None:
            paths.update(fc.data_path for fc in action_fcurves(action))
    return paths


def animated_channels(obj) -> set[tuple[str, int]]:
    """(data path, array index) of every channel animated on `obj` by its action, its NLA strips or
    its drivers (conservative: all slots)."""
    ad = obj.animation_data
    if ad is None:
        return set()
    channels = {(d.data_path, d.array_index) for d in ad.drivers}
    actions = [ad.action] + [strip.action for track in ad.nla_tracks for strip in track.strips]
    for action in actions:
        if action is not None:
            channels.update((fc.data_path, fc.array_index) for fc in action_fcurves(action))
    return channels


def tweak_refusal(obj) -> str:
    """Why keys cannot be baked into the NLA strip being tweaked ('' when they can): a repeated
    strip plays its action once per repeat, so no key can hold a different pose per repeat.
    Any strip playing the tweaked action counts (the tweaked one is not always flagged active,
    and keys in a shared action play in every strip of it)."""
    ad = obj.animation_data
    if ad is None or not ad.use_tweak_mode:
        return ""
    for track in ad.nla_tracks:
        for strip in track.strips:
            if strip.action == ad.action and abs(strip.repeat - 1.0) > 1e-6:
                return (
                    f"the NLA strip '{strip.name}' repeats the tweaked action {strip.repeat:g} times:"
                    " set Repeat to 1 or leave tweak mode to bake"
                )
    return ""


def action_frames(obj, frames: np.ndarray) -> np.ndarray:
    """Scene frames as frames of the action the keys go into: the same, except in NLA tweak
    mode, where the tweaked strip maps (offsets, scales) the action's time line (a repeated
    strip is refused beforehand: see tweak_refusal)."""
    ad = obj.animation_data
    if ad is None or not ad.use_tweak_mode:
        return np.asarray(frames, dtype=float)
    return np.array([ad.nla_tweak_strip_time_to_scene(float(f), invert=True) for f in frames])


def write_keys(
    fc,
    frames: np.ndarray,
    values: np.ndarray,
    frame_range: tuple[float, float],
    interpolation: str,
    handles: tuple[np.ndarray, np.ndarray] | None = None,
) -> int:
    """Replace `fc`'s keys within `frame_range` (inclusive) by (frames, values); returns keys written.
    `handles`: fitted (left, right) handle points of the new keys, (n, 2) each, kept as ALIGNED
    handles (else the new keys get Blender's auto-clamped ones)."""
    return write_keys_in(fc, frames, values, [frame_range], interpolation, handles)


def write_keys_in(
    fc,
    frames: np.ndarray,
    values: np.ndarray,
    frame_ranges: list[tuple[float, float]],
    interpolation: str,
    handles: tuple[np.ndarray, np.ndarray] | None = None,
    seen: dict | None = None,
    co: np.ndarray | None = None,
    replaced: dict | None = None,
) -> int:
    """`write_keys` over several ranges at once (a bake that changed some spans of frames only, e.g.
    a planted foot's contacts): `fc`'s keys inside any of `frame_ranges` are replaced by (frames,
    values), all of which lie inside them, and every other key is kept with all its attributes,
    in one rebuild of the F-Curve. `seen` (a dict, one per `frames` and `frame_ranges`): which keys
    lie inside the ranges, by the curves' key times already looked at (a bone's curves mostly
    share them). `co`: the curve's keys' co (float32, 2 per key) as the caller read them with nothing
    written since (rig.sampling.curve_values' `read`), not read again; it is written over.
    `replaced` (a dict): filled with the keys replaced, as the write reads them (rig.bake_record
    keeps them to put back): "co" (m, 2); each one-value attribute, the selection too (m, 1), or
    (1, 1) where every key of the curve shares it; "handle_left" and "handle_right" (m, 2) unless
    every replaced key's handle types are ones FCurve.update() places (key_reads.PLACED_HANDLES). Nothing
    replaced: left empty."""
    frames = np.asarray(frames, dtype=np.float32)
    values = np.asarray(values, dtype=np.float32)
    if not np.isfinite(values).all():
        raise ValueError(f"refusing to key non-finite values on {fc.data_path}[{fc.array_index}]")
    kp = fc.keyframe_points
    old = len(kp)
    kept: dict[str, np.ndarray] = {}
    rebuild = False
    if old:
        if co is None or len(co) != 2 * old:  # (a read of another length is stale: read again)
            co = np.empty(2 * old, dtype=np.float32)
            kp.foreach_get("co", co)
        t = co[0::2]
        key = t.tobytes() if seen is not None else b""
        found = seen.get(key) if seen is not None else None
        if found is None:
            keep = _outside(t, frame_ranges)
            rows = (~keep).nonzero()[0]  # the keys to replace
            found = keep, rows, 0 < len(rows) < old and _same_frames(t[rows], frames)
            if seen is not None:
                seen[key] = found
        keep, rows, in_place = found
        rebuild = len(rows) > 0
        if in_place and handles is None:
            # The keys to replace sit on the new frames (a capture keyed on every frame): overwrite
            # them where they are, as new keys, instead of rebuilding the curve (a third of the time).
            return _overwrite(fc, co, rows, values, interpolation, replaced)
        if rebuild and not keep.any():
            # Re-baking the same range: nothing to carry over, so skip reading every key attribute
            # (but what `replaced` keeps).
            if replaced is not None:
                replaced.update(read_keys(fc, rows, co))
            kp.clear()
            old = 0
        elif rebuild:
            if replaced is not None:
                replaced["co"] = co.reshape(old, 2)[rows]
            for name, width, dtype in KEY_ATTRIBUTES:
                a = np.empty(width * old, dtype=dtype)
                kp.foreach_get(name, a)
                kept[name] = a.reshape(old, width)[keep].ravel()
                if replaced is not None and (name in REPLACED or name in HANDLES):
                    keep_replaced(replaced, name, a, rows)
            if replaced is not None:
                drop_placed_handles(replaced)
            old = int(np.count_nonzero(keep))
            kp.clear()
            kp.add(old)
            for name, _, _ in KEY_ATTRIBUTES:
                kp.foreach_set(name, kept[name])
    new = len(frames)
    kp.add(new)  # new keys come as BEZIER with AUTO_CLAMPED handles, which update() places
    total = old + new
    co = np.empty(2 * total, dtype=np.float32)
    if old:
        kp.foreach_get("co", co)
    co[2 * old :: 2] = frames
    co[2 * old + 1 :: 2] = values
    kp.foreach_set("co", co)
    code = INTERPOLATIONS.index(interpolation)
    if code != NEW_KEY_INTERPOLATION:
        interp = np.empty(total, dtype=np.int32)
        if old:
            kp.foreach_get("interpolation", interp)
        interp[old:] = code
        kp.foreach_set("interpolation", interp)
    if handles is not None:
        _set_handles(kp, old, total, handles)
    if old or np.any(frames[1:] <= frames[:-1]):
        fc.update()  # kept and new keys interleave (or a reversed NLA strip): sort, then the handles
    else:
        kp.handles_recalc()  # new keys only, already in frame order: handles alone (~40% cheaper)
    return new


# What keyframe_points.add() gives a new key besides its co and handles (4.2 and 5.0; its handles,
# AUTO_CLAMPED, are placed by FCurve.update()): a KEYFRAME, AUTO easing, 0 for the
# elastic and back easings' settings, selected (tests/blender/test_keys_overwrite.py).
NEW_KEY = {
    "handle_left_type": 4,
    "handle_right_type": 4,
    "type": 0,
    "easing": 0,
    "back": 0.0,
    "amplitude": 0.0,
    "period": 0.0,
    "select_control_point": 1,
    "select_left_handle": 1,
    "select_right_handle": 1,
}


def _same_frames(old: np.ndarray, new: np.ndarray) -> bool:
    """The keys to replace are exactly the new keys' frames, both in increasing order."""
    return len(old) == len(new) and bool((old == new).all()) and bool((new[1:] > new[:-1]).all())


def _overwrite(fc, co: np.ndarray, rows: np.ndarray, values: np.ndarray, interpolation: str, replaced=None) -> int:
    """write_keys_in where the keys replaced are at the new frames (`rows` of the curve's keys,
    `co` its keys' co): their values set and every other attribute as a new key's, the same curve
    the rebuild gives; one read and at most one write per attribute (`replaced`: write_keys_in's,
    kept from those reads)."""
    kp = fc.keyframe_points
    count = len(kp)
    if replaced is not None:
        replaced["co"] = co.reshape(count, 2)[rows]  # a copy: `co` is written over next
    co[2 * rows + 1] = values
    kp.foreach_set("co", co)
    # Each attribute read in the type Blender stores it in, which it copies in one pass (the enums
    # as bytes, the flags as booleans; as int32, every key is converted on its own: ~5x slower for
    # an enum), then compared on every key at once as bytes with a new key's value (mostly no key
    # differs at all: no numpy call, and `replaced` keeps a new key's value as the row all share);
    # one that differs somewhere is looked at on the replaced keys alone, and written back only
    # where they differ.
    placed = True  # the replaced keys' handle types all a new key's (placed by update())
    code = INTERPOLATIONS.index(interpolation)
    for name, wanted, dtype, kept in (("interpolation", code, np.uint8, True), *_NEW_ATTRIBUTES):
        column = scratch(dtype, count)  # reused: only copies of it are kept
        kp.foreach_get(name, column)
        same = column.tobytes() == filled(wanted, dtype, count)
        if replaced is not None and kept:
            if same:
                replaced[name] = shared_row(wanted, dtype)
            else:
                keep_replaced(replaced, name, column, rows)
                placed = placed and name not in HANDLE_TYPES
            if name == "handle_right_type" and not placed:  # read before update() places them
                read_handles(kp, count, rows, replaced)
        if same:
            continue
        if (column[rows] != wanted).any():
            column[rows] = wanted
            kp.foreach_set(name, column)
    fc.update()
    return len(rows)


def _outside(t: np.ndarray, frame_ranges: list[tuple[float, float]]) -> np.ndarray:
    """(n,) the key times `t` outside every one of `frame_ranges` (inclusive, FRAME_EPSILON of slack)."""
    if not frame_ranges:
        return np.ones(len(t), dtype=bool)
    bounds = np.asarray(frame_ranges, dtype=float)
    # In the times' dtype, as a comparison with a Python float is made (the bounds rounded to it).
    low = (bounds[:, 0] - FRAME_EPSILON).astype(t.dtype)
    high = (bounds[:, 1] + FRAME_EPSILON).astype(t.dtype)
    outside = np.ones(len(t), dtype=bool)
    for below, above in zip(low, high, strict=True):  # a few ranges: a loop over them beats a (keys, ranges) table
        outside &= ~((t >= below) & (t <= above))
    return outside


# The attributes _overwrite sets on the keys it replaces besides the interpolation (its handles are
# placed by FCurve.update() from the keys' co alone: AUTO_CLAMPED): (name, a new key's value, the
# numpy type Blender's storage copies in one pass, whether `replaced` keeps it).
_NEW_ATTRIBUTES = tuple(
    (
        name,
        NEW_KEY[name],
        np.bool_ if name.startswith("select_") else np.uint8 if dtype is np.int32 else np.float32,
        name in REPLACED,  # kept in `replaced`
    )
    for name, _, dtype in KEY_ATTRIBUTES[4:]
)


def _set_handles(kp, old: int, total: int, handles: tuple[np.ndarray, np.ndarray]) -> None:
    """Fitted handles on keys old..total: ALIGNED, which update() keeps as they are (collinear)."""
    aligned = bpy.types.Keyframe.bl_rna.properties["handle_left_type"].enum_items["ALIGNED"].value
    for name, points in zip(("handle_left", "handle_right"), handles, strict=True):
        data = np.empty(2 * total, dtype=np.float32)
        kinds = np.empty(total, dtype=np.int32)
        kp.foreach_get(name, data)
        kp.foreach_get(name + "_type", kinds)
        data[2 * old :] = np.asarray(points, dtype=np.float32).ravel()
        kinds[old:] = aligned
        kp.foreach_set(name + "_type", kinds)
        kp.foreach_set(name, data)
