"""What the extension leaves in a file, as plain JSON values: the outcome corpus's state.

`state()` reads, without changing anything: every armature's pose (each bone not at its
default channel values: location, all three rotation forms and the mode, scale, matrix_basis,
constraints), its Chain IK settings (chains, results, comparison rows; time figures left out),
its assigned action and slot, and every action's F-Curves (each slot's channelbag on 4.4+, the
plain list on 4.2): data path, index, group, keys (co, handles, interpolation, handle types).
Floats are Blender's float32 values as Python floats, exact in JSON (`repr` round-trips).

Run as a script on a .blend (`python outcome_state.py FILE`), it prints that file's state:
the corpus records what cli.py saved this way, without opening the file in the test's session.
Reads only bpy: nothing of the extension, so it reads a refactored extension's files the same.
"""

from __future__ import annotations

import array
import json
import os
import re
import sys

import bpy

# Figures that measure time, not outcome: left out of the corpus (they differ on every run).
TIME_NAMES = re.compile(r"(^|_)(seconds|ms)$")
TIME_TEXT = re.compile(r"\b\d+(?:\.\d+)? (ms|s)\b")
CLOCK_TEXT = re.compile(r"^\d\d:\d\d\.\d\d\d(?= )", re.MULTILINE)  # Blender's log lines: "00:00.641  blend | ..."
_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")

_CHANNELS = (  # (property, size, default) of a pose bone, read with foreach_get
    ("location", 3, (0.0, 0.0, 0.0)),
    ("rotation_quaternion", 4, (1.0, 0.0, 0.0, 0.0)),
    ("rotation_euler", 3, (0.0, 0.0, 0.0)),
    ("rotation_axis_angle", 4, (0.0, 0.0, 1.0, 0.0)),
    ("scale", 3, (1.0, 1.0, 1.0)),
)


def is_time_name(name: str) -> bool:
    return bool(TIME_NAMES.search(name))


def normal_text(text: str, replacements: tuple[tuple[str, str], ...] = ()) -> str:
    """A message as the corpus keeps it: time figures ("0.12 s", "3.40 ms") and the clock that
    starts Blender's log lines as "<t>", the run's temporary and checkout paths by name, object
    addresses dropped."""
    for old, new in replacements:
        if old:
            text = text.replace(old, new)
    text = CLOCK_TEXT.sub("<t>", TIME_TEXT.sub(r"<t> \1", text))
    return _ADDRESS.sub("", text)


def _floats(collection, prop: str, size: int) -> list[float]:
    values = array.array("f", [0.0]) * (len(collection) * size)
    collection.foreach_get(prop, values)
    return values.tolist()


def pose_state(obj) -> dict:
    """Every pose bone away from its default channels (or constrained), by name."""
    bones = obj.pose.bones
    read = {prop: _floats(bones, prop, size) for prop, size, _ in _CHANNELS}
    matrices = _floats(bones, "matrix_basis", 16)
    out = {}
    for i, pbone in enumerate(bones):
        channels = {prop: read[prop][i * size : (i + 1) * size] for prop, size, _ in _CHANNELS}
        moved = any(tuple(channels[prop]) != default for prop, _, default in _CHANNELS)
        if not moved and not pbone.constraints:
            continue
        entry = {"rotation_mode": pbone.rotation_mode, **channels, "matrix_basis": matrices[i * 16 : (i + 1) * 16]}
        if pbone.constraints:
            entry["constraints"] = [_constraint(c) for c in pbone.constraints]
        out[pbone.name] = entry
    return out


def _constraint(con) -> dict | list:
    """An IK constraint in full (Chain IK writes and reads them); any other in brief."""
    if con.type == "IK":
        return rna_values(con, depth=0)
    target = getattr(con, "target", None)
    return [con.type, con.name, con.mute, con.influence, target.name if target else None]


def rna_values(struct, depth: int = 3) -> dict:
    """A struct's RNA properties as plain values (time figures left out); ID pointers by name,
    other pointers and collections to `depth`."""
    out = {}
    for prop in struct.bl_rna.properties:
        name = prop.identifier
        if name == "rna_type" or is_time_name(name):
            continue
        kind = prop.type
        if kind == "POINTER":
            value = getattr(struct, name)
            if value is None or isinstance(value, bpy.types.ID):
                out[name] = None if value is None else value.name
            elif depth > 0:
                out[name] = rna_values(value, depth - 1)
        elif kind == "COLLECTION":
            if depth > 0:
                out[name] = [rna_values(v, depth - 1) for v in getattr(struct, name)]
        else:
            out[name] = plain(getattr(struct, name))
    return out


def plain(value):
    """An RNA value as JSON: arrays and matrices as (nested) lists, enum sets sorted."""
    if isinstance(value, (bool, int, float, str)) or value is None:
        return value
    if isinstance(value, (set, frozenset)):
        return sorted(value)
    try:
        return [plain(v) for v in value]
    except TypeError:
        return repr(value)


def _keys(fcurve) -> dict:
    points = fcurve.keyframe_points
    n = len(points)
    ints = {}
    for prop in ("interpolation", "handle_left_type", "handle_right_type", "easing", "type"):
        values = array.array("i", [0]) * n
        points.foreach_get(prop, values)
        ints[prop] = values.tolist()
    return {
        "co": _floats(points, "co", 2),
        "handle_left": _floats(points, "handle_left", 2),
        "handle_right": _floats(points, "handle_right", 2),
        **ints,
    }


def _curve(fcurve) -> dict:
    return {
        "group": fcurve.group.name if fcurve.group else None,
        "mute": fcurve.mute,
        "lock": fcurve.lock,
        "extrapolation": fcurve.extrapolation,
        "modifiers": [m.type for m in fcurve.modifiers],
        **_keys(fcurve),
    }


def action_state(action) -> dict:
    """The action's F-Curves by "slot|data_path[index]" (4.2: no slot)."""
    curves = {}
    if hasattr(action, "layers"):
        for layer in action.layers:
            for strip in layer.strips:
                for bag in strip.channelbags:
                    slot = bag.slot.identifier if bag.slot else ""
                    for fc in bag.fcurves:
                        curves[f"{layer.name}|{slot}|{fc.data_path}[{fc.array_index}]"] = _curve(fc)
    else:
        for fc in action.fcurves:
            curves[f"{fc.data_path}[{fc.array_index}]"] = _curve(fc)
    return curves


def armature_state(obj) -> dict:
    ad = obj.animation_data
    out = {"pose": pose_state(obj), "action": None}
    if ad is not None and ad.action is not None:
        out["action"] = ad.action.name
        slot = getattr(ad, "action_slot", None)
        if slot is not None:
            out["slot"] = slot.identifier
    settings = getattr(obj, "chain_ik", None)  # absent when the extension is not registered
    if settings is not None:
        out["chain_ik"] = rna_values(settings)
    return out


def state() -> dict:
    """The whole file's outcome state (see the module's docstring)."""
    return {
        "frame": bpy.context.scene.frame_current if bpy.context.scene else None,
        "armatures": {o.name: armature_state(o) for o in bpy.data.objects if o.type == "ARMATURE" and o.pose},
        "actions": {a.name: action_state(a) for a in bpy.data.actions},
    }


def main(argv: list[str]) -> int:
    bpy.ops.wm.open_mainfile(filepath=argv[0])
    sys.stdout.write("\n" + json.dumps(state()) + "\n")
    return 0


if __name__ == "__main__":
    status = main(sys.argv[1:])
    sys.stdout.flush()
    os._exit(status)  # the 4.x wheel can crash at interpreter exit; nothing is left to finalise
