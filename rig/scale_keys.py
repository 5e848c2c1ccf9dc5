"""Where a refused bone's inherited non-uniform scale comes from, when keys make it: the rigidity
check (rig.read) names its parents' keyed scale channels and their frames, and how to clear them.

An IK Stretch bake keys `scale[1]` on the stretched bones (app.bake); a later bake with Stretch off
cannot tell those keys from the user's own (nothing records which keys a bake wrote), so it keeps
them, and the chain they shear is refused with this note rather than with its keys silently lost.
"""

from __future__ import annotations

from . import keys

AXES = ("X", "Y", "Z")
# Frame groups named before the list is cut short ("...").
SHOWN = 6


def note(pbone) -> str:
    """'' or, for the parents `pbone` (an evaluated or original pose bone) inherits scale from (up
    to one that inherits none) whose scale is non-uniform, its keyed axes off the other two's
    middle value: '; that scale comes from keys: 'upper_arm.L' Y Scale (scale[1]) keyed on frames
    1-40 (...how to clear them)'."""
    obj = getattr(pbone.id_data, "original", None) or pbone.id_data
    found = []
    child = pbone
    for parent in pbone.parent_recursive:
        if child.bone.inherit_scale in ("NONE", "NONE_LEGACY"):
            break  # nothing above reaches the bone's scale
        child = parent
        lo, hi = min(parent.scale), max(parent.scale)
        if hi - lo <= 1e-6 * max(abs(hi), abs(lo)):
            continue  # uniform here: not what shears the bone
        middle = sorted(parent.scale)[1]
        for index, axis in enumerate(AXES):
            if abs(parent.scale[index] - middle) <= 1e-6 * max(abs(hi), abs(lo)):
                continue  # keyed perhaps, but not the odd one out
            fc = keys.assigned_fcurve(obj, keys.data_path(parent.name, "scale"), index)
            if fc is not None and len(fc.keyframe_points):
                frames = [k.co[0] for k in fc.keyframe_points]
                found.append(f"'{parent.name}' {axis} Scale (scale[{index}]) keyed on frames {_ranges(frames)}")
    if not found:
        return ""
    return (
        f"; that scale comes from keys: {', '.join(found)} (a bake with IK Stretch keys Y Scale on the bones it"
        " stretches, and a later bake keeps them: it cannot tell them from yours): delete those keys (Dope"
        " Sheet or Graph Editor, the bone's Scale channel) and set that scale back to 1"
    )


def _ranges(frames: list[float]) -> str:
    """'1-40' for consecutive whole frames; '1, 5-7, 12.5'; cut short after SHOWN groups."""
    groups: list[list[float]] = []
    for f in sorted(frames):
        if groups and f == int(f) and groups[-1][-1] == int(groups[-1][-1]) and f - groups[-1][-1] == 1.0:
            groups[-1].append(f)
        else:
            groups.append([f])
    text = [_frame(g[0]) if len(g) == 1 else f"{_frame(g[0])}-{_frame(g[-1])}" for g in groups[:SHOWN]]
    return ", ".join(text) + (", ..." if len(groups) > SHOWN else "")


def _frame(f: float) -> str:
    return str(int(f)) if f == int(f) else f"{f:g}"
