"""Blender's IK constraints <-> Chain IK chain settings (plain values; app.spec.adopt fills the panel).

What a chain cannot do that a constraint asks for is listed in `ConstraintChain.unsupported`
(reports say it), never dropped silently. A constraint that poses nothing (Blender marks it
invalid) or names what does not exist is not read at all: `read` says why instead.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from . import keys


@dataclass
class ConstraintChain:
    """One IK constraint read as chain settings."""

    bone: str  # the constrained bone (the chain's tip)
    constraint: str  # the constraint's name on that bone
    name: str  # the chain's name in the list
    use_tail: bool
    chain_length: int
    target: object  # bpy Object
    target_bone: str
    pole: object  # bpy Object or None
    pole_bone: str
    pole_angle: float
    use_rotation: bool
    rotation_weight: float
    influence: float
    max_iterations: int
    muted: bool  # the constraint is off now (muted, or its mute driven off)
    use_stretch: bool = True  # the constraint's Stretch: bones with IK Stretch lengthen (rig.stretch)
    use_locks: bool = False  # the constraint turns bones through their rotation locks
    weight: float = 1.0  # the constraint's position Weight: its share among the targets of one tree
    unsupported: list[str] = field(default_factory=list)


# The IK constraint's position Weight range (Blender's RNA): a chain's Weight is written into it.
CONSTRAINT_WEIGHT_MIN, CONSTRAINT_WEIGHT_MAX = 0.01, 1.0


def chain_name(bone: str, constraint: str) -> str:
    return bone if constraint == "IK" else f"{bone} ({constraint})"


def _length_to_root(pbone, use_tail: bool) -> int:
    """chain_count 0: every bone up to the root (with Use Tail off, from the tip's parent)."""
    bone, count = (pbone if use_tail else pbone.parent), 0
    while bone is not None:
        count, bone = count + 1, bone.parent
    return count


def _chain_bones(pbone, use_tail: bool, length: int) -> list:
    bone, bones = (pbone if use_tail else pbone.parent), []
    while bone is not None and len(bones) < length:
        bones.append(bone)
        bone = bone.parent
    return bones


def ik_constraints(obj) -> list[tuple[object, object]]:
    """(pose bone, constraint) for every IK constraint of armature `obj`, in bone order."""
    return [(pb, c) for pb in obj.pose.bones for c in pb.constraints if c.type == "IK"]


def goal_problem(obj, target, target_bone: str, pole, pole_bone: str) -> str:
    """Why a target (armature `obj`'s own or another object, with its bone) and a pole cannot make
    a working IK goal, or '': Blender marks an IK constraint invalid (it poses nothing) without a
    target, with its own armature and no bone, or with a bone that does not exist; Chain IK
    refuses the same, and a missing bone of another armature too."""
    if target is None:
        return "it has no target"
    for what, ob, bone in (("target", target, target_bone), ("pole target", pole, pole_bone)):
        if ob is None or ob.type != "ARMATURE":
            continue  # another object: its origin (a mesh's subtarget is a vertex group)
        if not bone and ob is obj:
            return f"its {what} is the armature itself without a bone"
        if bone and ob.pose.bones.get(bone) is None:
            return f"its {what} '{ob.name}' has no bone '{bone}'"
    return ""


def read(obj, pbone, con) -> ConstraintChain | str:
    """The chain settings of IK constraint `con` on `pbone`, or why it cannot become a chain."""
    where = f"'{con.name}' on '{pbone.name}'"
    if con.ik_type != "COPY_POSE":
        return f"{where}: the Distance IK type is not a chain goal"
    pole = con.pole_target
    target_bone = con.subtarget if con.target is not None and con.target.type == "ARMATURE" else ""
    pole_bone = con.pole_subtarget if pole is not None and pole.type == "ARMATURE" else ""
    problem = goal_problem(obj, con.target, target_bone, pole, pole_bone)
    if not problem and not con.use_tail and pbone.parent is None:
        problem = "Use Tail is off on a root bone"
    if problem or not con.is_valid:
        # Blender does not evaluate an invalid constraint: as a chain it could never solve.
        invalid = "" if con.is_valid else "Blender marks it invalid, so it poses nothing"
        return f"{where}: {'; '.join(p for p in (problem, invalid) if p)}"
    # chain_count beyond the root: Blender's IK takes the bones there are, and so does the chain.
    to_root = _length_to_root(pbone, con.use_tail)
    length = min(con.chain_count, to_root) if con.chain_count else to_root
    chain = ConstraintChain(
        bone=pbone.name,
        constraint=con.name,
        name=chain_name(pbone.name, con.name),
        use_tail=con.use_tail,
        chain_length=length,
        target=con.target,
        target_bone=target_bone,
        pole=pole,
        pole_bone=pole_bone,
        pole_angle=con.pole_angle if pole is not None else 0.0,
        use_rotation=con.use_rotation,
        rotation_weight=con.orient_weight,
        influence=con.influence,
        max_iterations=con.iterations,
        muted=con.mute,
        use_stretch=con.use_stretch,
        weight=con.weight,
    )
    chain.unsupported = _unsupported(obj, pbone, con, length)
    return chain


def _unsupported(obj, pbone, con, length: int) -> list[str]:
    """What the chain will not do as the constraint does."""
    notes = []
    if con.target.type != "ARMATURE" and con.subtarget:
        notes.append(f"vertex group target '{con.subtarget}' (the chain reaches the object's origin)")
    if con.pole_target is not None and con.pole_target.type != "ARMATURE" and con.pole_subtarget:
        notes.append(f"vertex group pole '{con.pole_subtarget}' (the pole is the object's origin)")
    if not con.use_location:
        notes.append("Position off (the chain always reaches the target's position)")
    stretchy = [b.name for b in _chain_bones(pbone, con.use_tail, length) if b.ik_stretch > 0.0]
    if con.use_stretch and stretchy:
        notes.append(
            f"IK Stretch within reach on {', '.join(reversed(stretchy))} (the chain lengthens them only to reach"
            " beyond its length; Blender's IK also does a little within reach)"
        )
    if obj.pose.ik_solver == "ITASC":
        notes.append("the iTaSC solver's settings (Chain IK solves with its own)")
    return notes


def set_by(obj, con, prop: str) -> str:
    """What sets `prop` of the constraint on playback besides the user ('' for nothing): a driver
    in use, or keys (the active action or an NLA strip's). A value set by hand would not last."""
    ad = obj.animation_data
    if ad is None:
        return ""
    path = f"{con.path_from_id()}.{prop}"
    if any(d.data_path == path and not d.mute for d in ad.drivers):
        return "a driver"
    actions = [ad.action] + [strip.action for track in ad.nla_tracks for strip in track.strips]
    for action in actions:
        if action is not None and any(fc.data_path == path and not fc.mute for fc in keys.action_fcurves(action)):
            return f"keys in action '{action.name}'"
    return ""


def write(pbone, con, item, weight: float) -> None:
    """Set IK constraint `con` (on the chain's tip bone `pbone`) from chain item `item`, with the
    position Weight `weight` (the chain's, brought into the constraint's range by the caller)."""
    con.use_tail = item.use_tail
    con.chain_count = item.chain_length
    con.target = item.target
    con.subtarget = item.target_bone if item.target is not None and item.target.type == "ARMATURE" else ""
    con.pole_target = item.pole_target
    con.pole_subtarget = (
        item.pole_subtarget if item.pole_target is not None and item.pole_target.type == "ARMATURE" else ""
    )
    con.pole_angle = item.pole_angle
    con.use_location = True
    con.weight = weight
    con.use_rotation = item.use_rotation
    con.orient_weight = item.rotation_weight
    con.use_stretch = item.use_stretch
    con.influence = item.influence
    if item.max_iterations:
        con.iterations = item.max_iterations
    con.mute = item.mute
