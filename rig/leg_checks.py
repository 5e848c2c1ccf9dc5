"""What a planted leg (a chain with contacts, app.bake.contact_targets) cannot honour, checked
before the bake: its thigh and shin are turned freely by the two-bone leg solve and keyed, so a
bone that is not really a thigh or a shin, whose pose a constraint sets over its keys, or whose
rotation the user locked (Respect Locks on: the locked channel would be kept and the foot slide)
would be keyed into a result that does not play as solved (user13: Rigify's generated rig baked
"finished" with feet 89 mm below the ground and 114 degree pops). IK limits and locks bind IK
solvers only, not playback: the planted leg does not honour them, and the report says so
(`leg_note`)."""

from __future__ import annotations

from . import plant_read
from .read import chain_pose_bones

# Constraints that leave a bone's pose to its keys: they change its scale only, or clamp it (a
# knee's Limit Rotation mostly clamps nothing a walk does; where it does, the figures, measured
# on playback, show the slide).
KEYS_KEPT = frozenset({"COPY_SCALE", "LIMIT_SCALE", "MAINTAIN_VOLUME", "LIMIT_ROTATION", "LIMIT_LOCATION"})
# Thigh and shin within this ratio of each other's length: a bone far shorter than the other
# (a Rigify MCH bone between shin and foot) is not a leg segment the two-bone solve can bend.
SEGMENT_RATIO = 0.2
AXES = "XYZ"


def leg_refusal(obj, names: tuple[str, str, str], use_locks: bool) -> str:
    """Why the leg `names` (thigh, shin, foot) cannot be planted as solved ('' when it can);
    `use_locks`: the chain's Respect Locks (off: the user lets the bake turn through them)."""
    pose = obj.pose.bones
    thigh, shin = pose[names[0]].bone.length, pose[names[1]].bone.length
    if min(thigh, shin) < SEGMENT_RATIO * max(thigh, shin):
        return (
            f"'{names[0]}' ({thigh:.3g} long) and '{names[1]}' ({shin:.3g}) are not a thigh and a shin: a planted"
            " leg is three bones, thigh, shin and foot, each the child of the one before (a rig's helper bone"
            " between them, as Rigify's MCH-foot_fk, breaks that)"
        )
    for name in names:
        pbone = pose[name]
        moving = [
            c.name
            for c in pbone.constraints
            # (one Blender marks invalid, e.g. without its target, poses nothing)
            if c.enabled and c.influence > 0.0 and c.is_valid and c.type not in KEYS_KEPT
        ]
        if moving:
            listed = ", ".join(f"'{n}'" for n in moving)
            return (
                f"bone '{name}' has constraints ({listed}) that set its pose over its keys: the planted keys"
                " would not play as solved (plant the bones they follow, or mute the constraints)"
            )
        locked = _locked_channels(pbone)
        if use_locks and locked:
            return (
                f"bone '{name}' has its rotation locked ({locked}) and a planted leg turns its bones freely:"
                " unlock it, or turn the chain's Respect Locks off to turn through the lock"
            )
    return ""


def leg_note(obj, names: tuple[str, str, str], use_limits: bool) -> str:
    """What the report says the planted leg did not honour ('' when nothing): the bones' IK limits
    and locks, where the chain's Limits is on."""
    if not use_limits:
        return ""
    pose = obj.pose.bones
    parts = []
    for name in names:
        limited = [f"{kind} {a}" for kind, a in _ik_settings(pose[name])]
        if limited:
            parts.append(f"'{name}' ({', '.join(limited)})")
    if not parts:
        return ""
    return (
        f"the IK limits and locks of {', '.join(parts)} are not honoured: a planted leg is solved as a two-bone"
        " leg (they bind IK solvers, not the keys)"
    )


def _locked_channels(pbone) -> str:
    """The bone's locked rotation channels as the user sees them ('' when none)."""
    four = pbone.rotation_mode in ("QUATERNION", "AXIS_ANGLE")  # (Euler modes ignore a W lock left over)
    locked = [a for a, on in zip(AXES, pbone.lock_rotation, strict=True) if on]
    if four and pbone.lock_rotations_4d and pbone.lock_rotation_w:
        locked.insert(0, "W")
    return ", ".join(locked)


def _ik_settings(pbone) -> list[tuple[str, str]]:
    """(kind, axis) of each IK lock or limit the bone sets (Bone > Inverse Kinematics)."""
    out = []
    for a in AXES:
        if getattr(pbone, f"lock_ik_{a.lower()}"):
            out.append(("lock", a))
        if getattr(pbone, f"use_ik_limit_{a.lower()}"):
            out.append(("limit", a))
    return out


def planted_leg(obj, tip: str, chain_length: int, use_tail: bool, use_locks: bool) -> tuple[tuple[str, ...], str]:
    """A chain's thigh, shin and foot (its tip bone) and '' where a bake with contacts can plant it;
    else () and why not, to follow "chain 'X' has contacts but " (the bake refuses with it, Detect
    warns with it)."""
    try:
        bones, end = chain_pose_bones(obj, tip, chain_length, use_tail)
    except ValueError as exc:
        return (), str(exc)
    names = [b.name for b in bones]
    if end.name not in names:
        names.append(end.name)
    try:
        plant_read.check_leg(obj, names)
    except ValueError as exc:
        return (), f"is not a leg it can plant: {exc}"
    why = leg_refusal(obj, tuple(names), use_locks)
    return ((), why) if why else (tuple(names), "")
