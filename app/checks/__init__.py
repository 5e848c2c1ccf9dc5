"""Checks on a chain's settings before any frame is solved: the solver exists, the target and
pole are in the scene's evaluation, and neither moves with the chain (through parents or
constraints), which would make it chase itself and loop forever in Live mode."""

from __future__ import annotations

import math
import re
from typing import TYPE_CHECKING

import bpy

from ... import rig, solvers
from ...solvers.model.aim_axis import AIM_AXES, NO_AIM

if TYPE_CHECKING:
    from ..spec import ChainSpec


def check_spec(obj, spec: ChainSpec) -> None:
    """Refuse settings no frame could solve (ValueError with the reason)."""
    if spec.method not in solvers.METHODS:
        raise ValueError(f"unknown solver '{spec.method}'; choose one of: {', '.join(solvers.METHODS)}")
    if not 0.0 <= spec.influence <= 1.0:  # NaN too
        raise ValueError(f"influence must be within 0..1, got {spec.influence}")
    # Refused, not read as "off" or "the default" (a NaN compares false with everything).
    if not (math.isfinite(spec.tolerance) and spec.tolerance >= 0.0):
        raise ValueError(f"the reach tolerance must be a finite distance >= 0 (0: the default), got {spec.tolerance:g}")
    if not 0.0 <= spec.rotation_weight <= 1.0:
        raise ValueError(f"the rotation weight must be within 0..1, got {spec.rotation_weight:g}")
    if not 0.0 <= spec.softness < 1.0:  # the core's range (solvers.common.soft); NaN too
        raise ValueError(f"softness must be a share of the chain's reach within 0..1 (below 1), got {spec.softness:g}")
    if not 0.0 <= spec.root_stiffness <= 1.0:  # the core's range (solvers.common.root_move); NaN too
        got = spec.root_stiffness
        raise ValueError(f"root stiffness must be within 0..1 (0 moves most, 1 never moves), got {got:g}")
    if not (math.isfinite(spec.weight) and spec.weight > 0.0):
        raise ValueError(f"the chain's weight must be a finite number > 0, got {spec.weight:g}")
    if spec.max_iterations < 0:
        raise ValueError(f"max iterations must be >= 0 (0: the solver's default), got {spec.max_iterations}")
    if spec.aim_axis != NO_AIM and spec.aim_axis not in AIM_AXES:
        raise ValueError(f"unknown aim axis '{spec.aim_axis}'; choose one of: {NO_AIM}, {', '.join(AIM_AXES)}")
    if not 0.0 <= spec.aim_spread <= 1.0:  # NaN too
        raise ValueError(f"aim spread must be within 0..1, got {spec.aim_spread:g}")
    if spec.aims and not spec.use_tail:
        raise ValueError(f"chain '{spec.label}' aims with Use Tail off: its tip bone aims, so it must be in the chain")
    if spec.aims and spec.pin:
        raise ValueError(f"chain '{spec.label}' is pinned and aims: a pin holds its tip, an aim turns it")
    if spec.target is None and not spec.pin:
        raise ValueError(f"chain '{spec.label or '?'}' has no target object")
    if spec.target is obj and not spec.target_bone:
        raise ValueError("the armature cannot be its own target (pick a bone of it, or another object)")
    if spec.pole is not None and spec.pole is obj and not spec.pole_bone:
        raise ValueError("the armature cannot be its own pole target (pick a bone of it, or another object)")
    # With Rotation on, the target's orientation is read too: what turns it counts.
    rotation_read = spec.use_rotation and spec.rotation_weight > 0.0 and not spec.aims
    if spec.target is not None:
        _refuse_target_moving_with_chain(obj, spec, spec.target, spec.target_bone, "target", not rotation_read)
    if spec.pole is not None and not spec.aims:  # an aim has no pole (app.solve.goals)
        _refuse_target_moving_with_chain(obj, spec, spec.pole, spec.pole_bone, "pole target")


def changed_mid_bake(obj, specs: list[ChainSpec], bones, exc: Exception) -> str:
    """What a frame handler removed or renamed while the chains were being baked: `bones` are
    the chain bones' names at the start, `exc` the ReferenceError or KeyError that stopped it."""
    what = [("armature", obj)]
    for spec in specs:
        what += [(f"target of chain '{spec.label}'", spec.target), (f"pole target of chain '{spec.label}'", spec.pole)]
    for label, ob in what:
        try:
            getattr(ob, "name", None)
        except ReferenceError:
            return f"the {label} was deleted during the bake (by a frame handler?)"
    missing = [name for name in bones if name not in obj.pose.bones]
    if missing:
        return f"bone '{missing[0]}' was renamed or removed during the bake (by a frame handler?)"
    return f"the scene changed during the bake (by a frame handler?): {exc}"


def check_in_view_layer(obj, spec: ChainSpec, depsgraph) -> None:
    """The armature, target and pole must be evaluated with the scene: an object outside the view
    layer (in an excluded collection, or not linked to the scene) has no evaluated copy, and its
    stored matrix may be stale (identity for a new object), which would pose silently wrong.
    An armature disabled in viewports is not evaluated either: its pose and transform are stale."""
    if not obj.evaluated_get(depsgraph).is_evaluated:
        raise ValueError(
            f"the armature '{obj.name}' is disabled in viewports or not in the view layer, so Blender does not"
            " evaluate it and its pose would be stale: enable it in viewports (the monitor icon) first"
        )
    for what, ob, bone in (("target", spec.target, spec.target_bone), ("pole target", spec.pole, spec.pole_bone)):
        if ob is None or ob.evaluated_get(depsgraph).is_evaluated:
            continue
        if depsgraph.view_layer.objects.get(ob.name) == ob:
            # Disabled in viewports: followed as Blender's constraint does (rig.unevaluated).
            reason = rig.unevaluated.refusal(ob, bone)
            if reason:
                raise ValueError(f"the {what} {rig.unevaluated.message(ob, reason)}")
        else:
            raise ValueError(
                f"the {what} '{ob.name}' is not in the view layer (its collection is excluded, or it is"
                " not linked to the scene): it has no evaluated location"
            )


# Constraints that turn or scale their owner without moving its origin: they move what rides on
# the owner (its children, a bone's tail), not the owner's own location.
TURN_ONLY = frozenset(
    {
        "DAMPED_TRACK",
        "LOCKED_TRACK",
        "TRACK_TO",
        "COPY_ROTATION",
        "COPY_SCALE",
        "LIMIT_ROTATION",
        "LIMIT_SCALE",
        "MAINTAIN_VOLUME",
        "STRETCH_TO",
    }
)


def _constraint_targets(constraints, location_only: bool):
    """(object, bone) pairs that the constraints in effect read; with `location_only`, only those
    of constraints that can move the owner's origin. Off, zero-influence and invalid constraints,
    and zero-weight Armature targets, read nothing."""
    for con in constraints:
        if not con.enabled or con.influence <= 0.0 or not con.is_valid:
            continue
        if location_only and con.type in TURN_ONLY:
            continue
        for t in getattr(con, "targets", ()):  # Armature constraint
            if getattr(t, "weight", 1.0) > 0.0:
                yield t.target, t.subtarget
        target = getattr(con, "target", None)
        if isinstance(target, bpy.types.Object):
            yield target, getattr(con, "subtarget", "") or ""
        pole = getattr(con, "pole_target", None)
        if isinstance(pole, bpy.types.Object):
            yield pole, getattr(con, "pole_subtarget", "") or ""


def _carriers(ob, bone: str, location_only: bool):
    """What moves (ob, bone), as (object, bone, location_only) to follow further: the bone's parent
    and constraints, the object's parent and constraints. `location_only`: only the origin of
    (ob, bone) is read (a target's or pole's location), so constraints that only turn it are left
    out; whatever carries it matters whole (turning a parent moves the child)."""
    if bone and ob.type == "ARMATURE":
        pbone = ob.pose.bones.get(bone)
        if pbone is not None:
            if pbone.parent is not None:
                yield ob, pbone.parent.name, False
            for target in _constraint_targets(pbone.constraints, location_only):
                yield *target, False
        location_only = False  # the armature object turning moves the bone's head
    if ob.parent is not None:
        yield ob.parent, ob.parent_bone if ob.parent_type == "BONE" else "", False
    for target in _constraint_targets(ob.constraints, location_only):
        yield *target, False


def carried_by(starts, memo: dict | None = None) -> list[tuple[object, str]]:
    """Every (object, bone) whose pose moves one of `starts` ((object, bone, location_only); bone ''
    for the object itself), through bone parents, object parents, constraints and drivers
    (`_driven_by`); `starts` included. What a chain, a target or a pole reads from the scene.
    `memo`: a dict kept over several calls while no parent, constraint or driver changes (Live's
    units in one update share bones)."""
    drivers = {} if memo is None else memo  # per object, what its drivers read (`_driver_reads`)
    todo, seen, out = list(starts), set(), []
    while todo:
        ob, bone, own = todo.pop()
        if ob is None:
            continue
        key = (ob.as_pointer(), bone, own)
        if key in seen:
            continue
        seen.add(key)
        out.append((ob, bone))
        found = None if memo is None else memo.get(key)
        if found is None:
            found = [*_carriers(ob, bone, own), *_driven_by(ob, bone, drivers)]
            if memo is not None:
                memo[key] = found
        todo.extend(found)
    return out


_POSE_BONE = re.compile(r"""pose\.bones\[(?:"((?:[^"\\]|\\.)*)"|'((?:[^'\\]|\\.)*)')\]""")  # a path's pose bone


def _bone_in_path(path: str) -> str | None:
    """The pose bone a data path names (`pose.bones["name"]...`), unescaped; None if it names none."""
    named = _POSE_BONE.match(path)
    if named is None:
        return None
    return re.sub(r"\\(.)", r"\1", named.group(1) if named.group(1) is not None else named.group(2))


def _driven_by(ob, bone: str, index: dict):
    """(object, bone, False) that the drivers moving (ob, bone) read: the drivers of `ob`'s own
    properties (its transform moves all of it) and, for a bone, those of that pose bone's."""
    key = ("drivers", ob.as_pointer())
    reads = index.get(key)
    if reads is None:
        reads = index[key] = _driver_reads(ob)
    yield from reads.get("", ())
    if bone:
        yield from reads.get(bone, ())


def _driver_reads(ob) -> dict[str, list[tuple[object, str, bool]]]:
    """What `ob`'s drivers read, by what they drive: a pose bone's name, or '' for the object itself
    (a property not of a named pose bone: taken as moving all of it). Reads of objects only (a pose
    moves nothing else); a property of a pose bone read by path is that bone, of an armature's pose
    by index every bone, anything else of an object the object."""
    animation = getattr(ob, "animation_data", None)
    out: dict[str, list] = {}
    for fcurve in animation.drivers if animation is not None else ():
        driven = _bone_in_path(fcurve.data_path) or ""
        reads = out.setdefault(driven, [])
        for var in fcurve.driver.variables:
            for target in var.targets:
                read = target.id
                if not isinstance(read, bpy.types.Object):
                    continue
                if var.type != "SINGLE_PROP":  # a transform channel, distance or rotation difference
                    reads.append((read, target.bone_target or "", False))
                    continue
                path = target.data_path
                named = _bone_in_path(path)
                if named is not None:
                    reads.append((read, named, False))
                elif path.startswith("pose") and read.type == "ARMATURE":  # a bone by index: any of them
                    reads += [(read, name, False) for name in read.pose.bones.keys()]
                else:
                    reads.append((read, "", False))
    return out


def check_no_stretch_scale(obj, bones) -> None:
    """`bones` do not stretch in this solve (no chain holding them has Stretch on); one still holding
    the Y scale an earlier stretched solve gave it would shear the bones below it: say so, rather
    than the generic non-uniform scale refusal."""
    for name in bones:
        pb = obj.pose.bones[name]
        if pb.ik_stretch > 0.0 and abs(pb.scale[1] - 1.0) > 1e-6 and pb.scale[0] == pb.scale[2] == 1.0:
            raise ValueError(
                f"bone '{name}' keeps the Y scale {pb.scale[1]:.4g} an IK-stretched solve gave it, and no chain"
                " solved with it stretches (Stretch off): set its Y scale back to 1, or turn its chain's Stretch on"
            )


def check_group(obj, specs: list[ChainSpec], bones) -> None:
    """A group's chains move all of `bones` (the union of theirs): no member's target or pole may
    ride on any of them (check_spec checks each chain's own bones)."""
    for spec in specs:
        location_only = not (spec.use_rotation and spec.rotation_weight > 0.0)
        if spec.target is not None:
            _refuse_target_moving_with_chain(obj, spec, spec.target, spec.target_bone, "target", location_only, bones)
        if spec.pole is not None:
            _refuse_target_moving_with_chain(obj, spec, spec.pole, spec.pole_bone, "pole target", bones=bones)


def _refuse_target_moving_with_chain(
    obj, spec: ChainSpec, carrier, bone: str, what: str, location_only: bool = True, bones=None
) -> None:
    """A target (or pole) carried by the chain (or by `bones`, its group's), through parents or
    constraints, would chase itself (and loop forever in Live mode)."""
    names = None if bones is None else set(bones)
    todo, seen = [(carrier, bone, location_only)], set()
    while todo:
        ob, b, own = todo.pop()
        if ob is None or (ob.name, b, own) in seen:
            continue
        seen.add((ob.name, b, own))
        if ob is obj and b:
            names = names or rig.chain_bone_names(obj, spec.tip, spec.chain_length, spec.use_tail)
        if ob is obj and b and b in names:
            if bones is None:
                raise ValueError(f"the {what} moves with the chain (through bone '{b}'): pick another {what}")
            raise ValueError(
                f"the {what} of chain '{spec.label}' moves with the chains it is solved with (through bone"
                f" '{b}'): pick another {what}"
            )
        todo.extend(_carriers(ob, b, own))


def check_movable_root(obj, bone: str, label: str) -> None:
    """Refuse Move Root where the unit's top bone `bone` cannot move its location: connected to its
    parent (its head is the parent's tail), or a location channel locked (never written unasked)."""
    if obj.data.bones[bone].use_connect:
        raise ValueError(
            f"Move Root on '{label}': bone '{bone}', the top of the chains it moves, is connected to its parent, so"
            " its head cannot move; turn Move Root off, lengthen the chain to a bone that is not connected, or"
            " disconnect the bone"
        )
    locked = [axis for axis, lock in zip("XYZ", obj.pose.bones[bone].lock_location, strict=True) if lock]
    if locked:
        raise ValueError(
            f"Move Root on '{label}': bone '{bone}' has its location locked ({', '.join(locked)}); unlock it or turn"
            " Move Root off"
        )
