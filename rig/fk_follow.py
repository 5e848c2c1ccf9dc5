"""FK controls that follow another chain's world pose: the IK -> FK transfer behind chain_ik.bake_fk.

Each FK control bone is paired with the bone it should follow (Rigify: `upper_arm_fk.L` follows
`ORG-upper_arm.L`, which the IK chain drives). Per frame every FK bone gets the local rotation that
gives it its partner's armature-space orientation, keeping the offset the two have at rest (zero for
Rigify's copies), so elbows and knees point where the IK chain put them. Bones are solved parent
first, each against its parent's *new* pose: where an unpaired bone sits between two FK bones
(Rigify's `MCH-hand_fk.L`), it is carried rigidly by its nearest re-posed ancestor.

Rotation channels only: locations and scales stay as keyed. The result is measured on playback
(`follow_error`), never assumed.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from mathutils import Matrix, Quaternion

from ..solvers import quat
from . import modes
from .write import apply, snapshot

# Rigify's FK control -> the ORG bone it matches: "upper_arm_fk.L" -> "ORG-upper_arm.L".
_RIGIFY_FK = re.compile(r"^(?P<base>.+)_fk(?P<side>[._-][LRlr](?:\.\d+)?)?$")


def rigify_partner(fk_name: str) -> str | None:
    """The ORG bone a Rigify FK control follows, or None for a name that is not `<base>_fk[.side]`."""
    m = _RIGIFY_FK.match(fk_name)
    if m is None:
        return None
    return f"ORG-{m.group('base')}{m.group('side') or ''}"


def parse_pairs(text: str) -> list[tuple[str, str]]:
    """'fk:follow, fk:follow' -> [(fk, follow), ...]; a lone name takes its Rigify partner."""
    pairs = []
    for item in (part.strip() for part in text.split(",")):
        if not item:
            continue
        fk, sep, follow = (s.strip() for s in item.partition(":"))
        if not sep:
            follow = rigify_partner(fk) or ""
            if not follow:
                raise ValueError(f"'{fk}' names no bone to follow: write it as '{fk}:<bone to follow>'")
        if not fk or not follow:
            raise ValueError(f"'{item}' is not 'fk_bone:followed_bone'")
        pairs.append((fk, follow))
    if not pairs:
        raise ValueError("no FK bones given")
    return pairs


def _rotation(m: Matrix) -> Quaternion:
    """The rotation of a 4x4 or 3x3 matrix with its scale taken out."""
    return m.to_3x3().normalized().to_quaternion()


@dataclass(frozen=True)
class FollowPlan:
    """FK bones in parent-first order with what each frame's solve needs from the rest pose."""

    pairs: tuple[tuple[str, str], ...]  # (fk, follow), parents before children
    rest_rel: tuple[Quaternion, ...]  # fk bone's rest rotation relative to its parent's (armature's if not inherited)
    offset: tuple[Quaternion, ...]  # follow rest -> fk rest (identity for Rigify's copies)
    inherits: tuple[bool, ...]  # fk bone inherits its parent's rotation
    parent: tuple[str | None, ...]  # fk bone's parent bone name
    carrier: tuple[str | None, ...]  # nearest ancestor (parent included) that is an FK bone of the plan

    @property
    def fk_names(self) -> tuple[str, ...]:
        return tuple(fk for fk, _ in self.pairs)


def make_plan(obj, pairs: list[tuple[str, str]]) -> FollowPlan:
    """Check the pairs against `obj`'s bones and order them parent first (ValueError naming the problem)."""
    bones = obj.data.bones
    seen: set[str] = set()
    for fk, follow in pairs:
        for name, what in ((fk, "FK bone"), (follow, "bone to follow")):
            if name not in bones:
                raise ValueError(f"{what} '{name}' is not a bone of '{obj.name}'")
        if fk == follow:
            raise ValueError(f"'{fk}' cannot follow itself")
        if fk in seen:
            raise ValueError(f"FK bone '{fk}' is given twice")
        seen.add(fk)
        if bones[follow] in bones[fk].children_recursive:
            raise ValueError(f"'{follow}' is a child of '{fk}': it moves with it and cannot lead it")
    fk_set = {fk for fk, _ in pairs}
    ordered = sorted(pairs, key=lambda p: len(bones[p[0]].parent_recursive))
    rest_rel, offset, inherits, parent, carrier = [], [], [], [], []
    for fk, follow in ordered:
        bone = bones[fk]
        rest = _rotation(bone.matrix_local)
        par = bone.parent
        inherit = par is not None and bone.use_inherit_rotation
        # Without inherited rotation Blender orients the bone from its armature-space rest alone.
        rest_rel.append(_rotation(par.matrix_local).inverted() @ rest if inherit else rest)
        offset.append(_rotation(bones[follow].matrix_local).inverted() @ rest)
        inherits.append(inherit)
        parent.append(par.name if par else None)
        carrier.append(next((a.name for a in bone.parent_recursive if a.name in fk_set), None))
    return FollowPlan(tuple(ordered), tuple(rest_rel), tuple(offset), tuple(inherits), tuple(parent), tuple(carrier))


def solve_frame(obj_eval, plan: FollowPlan) -> dict[str, Quaternion]:
    """FK bone -> the local (basis) rotation that makes it follow its partner at this evaluated frame."""
    pose = obj_eval.pose.bones
    old: dict[str, Quaternion] = {}  # evaluated armature-space rotations, read once

    def evaluated(name: str) -> Quaternion:
        if name not in old:
            old[name] = _rotation(pose[name].matrix)
        return old[name]

    new: dict[str, Quaternion] = {}
    out: dict[str, Quaternion] = {}
    for (fk, follow), rest_rel, offset, inherits, parent, carrier in zip(
        plan.pairs, plan.rest_rel, plan.offset, plan.inherits, plan.parent, plan.carrier, strict=True
    ):
        goal = evaluated(follow) @ offset  # where the FK bone must point, in armature space
        new[fk] = goal
        if not inherits:
            out[fk] = (rest_rel.inverted() @ goal).normalized()
            continue
        if carrier is None:
            parent_now = evaluated(parent)
        else:  # the parent rides on a re-posed FK bone: carry its evaluated pose along
            parent_now = new[carrier] @ evaluated(carrier).inverted() @ evaluated(parent)
        out[fk] = ((parent_now @ rest_rel).inverted() @ goal).normalized()
    return out


def _rotation64(m: Matrix) -> np.ndarray:
    """The rotation of a pose matrix as a float64 unit quaternion (w, x, y, z), its scale taken out."""
    r = np.array(m.to_3x3(), dtype=float)
    return quat.from_matrix(r / np.linalg.norm(r, axis=0))


def follow_error(obj_eval, plan: FollowPlan, world: Matrix) -> tuple[float, float, float]:
    """(largest angle in degrees between each FK bone's orientation and its goal, largest world
    distance between their tails, largest difference of their stretch: posed over rest length) at
    this evaluated frame: what playback actually shows. The angle in float64 from the relative rotation (Blender's
    float32 matrices leave about 1e-5 degrees of noise; 2 acos |dot| in float32 would leave 0.04)."""
    pose = obj_eval.pose.bones
    have = np.array([_rotation64(pose[fk].matrix) for fk, _ in plan.pairs])
    offsets = np.array([offset[:] for offset in plan.offset], dtype=float)
    goal = quat.multiply(np.array([_rotation64(pose[follow].matrix) for _, follow in plan.pairs]), offsets)
    worst_angle = math.degrees(float(np.max(quat.angle_between(have, goal))))
    worst_dist = worst_stretch = 0.0
    for fk, follow in plan.pairs:
        a, b = pose[fk], pose[follow]
        worst_dist = max(worst_dist, ((world @ a.tail) - (world @ b.tail)).length)
        worst_stretch = max(worst_stretch, abs(a.length / a.bone.length - b.length / b.bone.length))
    return worst_angle, worst_dist, worst_stretch


# A followed bone whose pose matrix moves this much (armature units / matrix entries) when the FK
# bones are turned depends on them (a limb switched to FK): following it would chase its own tail.
DEPENDENCY_EPSILON = 1e-6
_NUDGE = Quaternion((1.0, 0.0, 0.0), 0.5)  # half a radian about each FK bone's own X axis


def moving_with_fk(obj, plan: FollowPlan, evaluate: Callable[[], object]) -> list[str]:
    """The followed bones that move when the FK bones turn: each FK bone is turned through its own
    rotation channels (location and scale untouched, locks ignored) and `evaluate()` (the scene
    brought up to date: the evaluated armature) shows what moved. The FK bones' channels are put
    back exactly as they were, value for value, either way."""
    pose = obj.pose.bones
    follows = [follow for _, follow in plan.pairs]
    saved = snapshot(obj, plan.fk_names)

    def matrices() -> list[Matrix]:
        evaluated = evaluate().pose.bones
        return [evaluated[name].matrix.copy() for name in follows]

    before = matrices()
    try:
        for name, values in saved.items():
            pbone = pose[name]
            mode = pbone.rotation_mode
            turned = modes.to_quaternion(mode, values) @ _NUDGE
            modes.set_values(pbone, modes.values_in_mode(mode, turned, values, *modes.NO_LOCKS))
        after = matrices()
    finally:
        apply(obj, saved)
    return [
        name
        for name, m0, m1 in zip(follows, before, after, strict=True)
        if max(abs(a - b) for r0, r1 in zip(m0, m1, strict=True) for a, b in zip(r0, r1, strict=True))
        > DEPENDENCY_EPSILON
    ]
