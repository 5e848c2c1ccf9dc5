"""Which IK constraints Chains from IK Constraints switched off, and their own values before.

Kept with the constraint, not with its chain: one `ChainIKSwitchedOff` per constraint on the
armature's settings, found by bone and constraint name (Blender stores no custom properties on a
constraint). So adopting again recognises its own mute (or influence 0) whatever became of the
chain: removed, renamed, or never recorded. A record holds only while the constraint is still
off the way it says and nothing else (a driver, keys) sets that property; otherwise the rig has
taken it back and the record is dropped. Records are looked up afresh each time: an item of a
CollectionProperty moves in memory when the collection grows or shrinks.
"""

from __future__ import annotations

from ...rig import ik_constraints

PROPERTY = {"MUTE": "mute", "INFLUENCE": "influence"}


def find(settings, bone: str, constraint: str) -> int:
    """The index of the record of `constraint` on `bone`, or -1."""
    for index, record in enumerate(settings.switched_off):
        if record.bone == bone and record.constraint == constraint:
            return index
    return -1


def is_off(obj, con, how: str) -> bool:
    """`con` is off the way `how` says, and nothing but the user sets that property."""
    off = con.mute if how == "MUTE" else con.influence == 0.0
    return bool(off) and not ik_constraints.set_by(obj, con, PROPERTY[how])


def holding(obj, settings, bone: str, con) -> str:
    """How adoption switched `con` (on `bone`) off, 'MUTE' or 'INFLUENCE', while that still holds;
    ''. A record that no longer holds (switched back on by hand, or now driven) is dropped."""
    index = find(settings, bone, con.name)
    if index < 0:
        return ""
    how = settings.switched_off[index].how
    if is_off(obj, con, how):
        return how
    settings.switched_off.remove(index)
    return ""


def own_values(settings, bone: str, constraint: str) -> tuple[bool, float]:
    """The constraint's own (mute, influence) before adoption switched it off."""
    record = settings.switched_off[find(settings, bone, constraint)]
    return record.mute, record.influence


def add(settings, bone: str, constraint: str, how: str, mute: bool, influence: float) -> None:
    index = find(settings, bone, constraint)
    if index < 0:
        settings.switched_off.add()
        index = len(settings.switched_off) - 1
    record = settings.switched_off[index]
    record.bone, record.constraint, record.how = bone, constraint, how
    record.mute, record.influence = mute, influence


def switch_off(settings, bone: str, con, how: str) -> None:
    """Switch `con` off by `how` and record it with the values it had (kept from an earlier record
    while they still hold: those are the rig's, the current ones the adoption's)."""
    index = find(settings, bone, con.name)
    mute, influence = con.mute, con.influence
    if index >= 0:
        record = settings.switched_off[index]
        if record.how == "INFLUENCE":
            influence = record.influence  # its influence 0 is the earlier adoption's
            con.influence = influence  # back before muting instead (its mute no longer driven)
        if record.how == "MUTE":
            mute = record.mute
    add(settings, bone, con.name, how, mute, influence)
    if how == "MUTE":
        con.mute = True
    else:
        con.influence = 0.0


def forget(settings, bone: str, constraint: str) -> None:
    """Drop the record of a constraint that now says what its chain does (written back)."""
    index = find(settings, bone, constraint)
    if index >= 0:
        settings.switched_off.remove(index)


def prune(obj, settings) -> None:
    """Drop the records of constraints that are gone (bone or constraint removed or renamed)."""
    pose = obj.pose.bones
    for index in reversed(range(len(settings.switched_off))):
        record = settings.switched_off[index]
        pbone = pose.get(record.bone)
        con = pbone.constraints.get(record.constraint) if pbone is not None else None
        if con is None or con.type != "IK":
            settings.switched_off.remove(index)


def legacy_switch_off(obj, con, item, same_goal: bool) -> str:
    """For a file adopted before records were kept: how an earlier adoption left `con` off,
    recognised by the chain `item` made from it (same tip, constraint name and goal, `same_goal`)
    and the constraint being off the way adoption switches it off; else ''."""
    if item is None or not same_goal:
        return ""
    if ik_constraints.set_by(obj, con, "mute"):
        return "INFLUENCE" if is_off(obj, con, "INFLUENCE") else ""
    return "MUTE" if is_off(obj, con, "MUTE") else ""
