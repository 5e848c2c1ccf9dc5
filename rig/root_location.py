"""A movable root's location channels (issue 20 item 1): the solver's move of the root bone's head
(armature space, `SkeletonSolution.root_shift`) as the bone's own location values, and back.

A pose bone's head is `M @ location` with M = pose matrix @ matrix_basis^-1 (its parent's pose
and rest offset, which the location channel is expressed in; the bone's own rotation and scale act
after the translation in matrix_basis), so a move d of the head is a change M3^-1 d of the
location channel, M3 the 3x3 part. M is read from the evaluated pose before the solve: the root's
parent is outside the unit and does not move with it."""

from __future__ import annotations

import math

import numpy as np
from mathutils import Matrix, Vector


def channel_frame(obj, obj_eval, name: str) -> Matrix:
    """The 3x3 matrix taking the bone's location channel to its head's move in armature space."""
    basis = obj.pose.bones[name].matrix_basis
    try:
        inverse = basis.inverted()
    except ValueError:
        raise ValueError(f"bone '{name}' has a zero scale: its location cannot be solved for") from None
    return (obj_eval.pose.bones[name].matrix @ inverse).to_3x3()


def location_values(obj, obj_eval, name: str, shift, influence: float = 1.0) -> tuple[float, float, float]:
    """The bone's location channel moving its head by `shift` (3,) in armature space (times
    `influence`), from its current channel; ValueError where it would not be finite."""
    frame = channel_frame(obj, obj_eval, name)
    try:
        delta = frame.inverted() @ Vector(np.asarray(shift, dtype=float).tolist())
    except ValueError:
        raise ValueError(f"bone '{name}' has a degenerate parent or rest matrix: its location cannot move") from None
    current = obj.pose.bones[name].location
    values = tuple(float(c + influence * d) for c, d in zip(current, delta, strict=True))
    if not all(map(math.isfinite, values)):
        raise ValueError(f"the root's solved location on bone '{name}' is not finite; pose left unchanged")
    return values


def head_move(obj, obj_eval, name: str, location) -> np.ndarray:
    """The move (3,) of the bone's head in armature space were its location channel `location`."""
    change = channel_frame(obj, obj_eval, name) @ (Vector(location) - obj.pose.bones[name].location)
    return np.array(change[:], dtype=float)


def apply_locations(obj, values: dict[str, tuple[float, float, float]]) -> None:
    """Write location channels (a solve's, or the values before it to restore)."""
    pose = obj.pose.bones
    for name, vals in values.items():
        if tuple(pose[name].location) != tuple(vals):
            pose[name].location = vals


def insert_keyframes(obj, names, frame: float) -> None:
    """Auto-keying: key the location a Solve wrote on a moved root (that channel only)."""
    for name in names:
        obj.pose.bones[name].keyframe_insert("location", frame=frame, group=name)


def head_world(obj_eval, name: str) -> Vector:
    """The bone's head in world space (the evaluated pose)."""
    return obj_eval.matrix_world @ obj_eval.pose.bones[name].head


def played_locations(obj, name: str, action_frames: np.ndarray) -> np.ndarray:
    """(F, 3) the bone's location channel as it plays at `action_frames` (its keys, else its value)."""
    from .keys import data_path, played_fcurve
    from .sampling import curve_values

    path = data_path(name, "location")
    out = np.tile(np.array(obj.pose.bones[name].location, dtype=float), (len(action_frames), 1))
    seen: dict = {}  # the three curves mostly share their key times
    for index in range(3):
        fc = played_fcurve(obj, path, index)
        if fc is not None:
            # FCurve.evaluate's values to the bit, the keys' own read in one call on key frames
            out[:, index] = curve_values(fc, np.asarray(action_frames, dtype=float), seen)
    return out


def channel_frames(context, obj, name: str, frames: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """(F, 3, 3) the bone's channel frame (channel_frame) at scene `frames`, on the `rows` asked
    for (identity elsewhere): its rest matrix where it has no parent (no frame set), else evaluated
    frame by frame (its parent's pose moves it)."""
    out = np.tile(np.eye(3), (len(frames), 1, 1))
    bone = obj.data.bones[name]
    if bone.parent is None:
        out[rows] = np.array(bone.matrix_local.to_3x3())
        return out
    scene = context.scene
    frame0, subframe0 = scene.frame_current, scene.frame_subframe
    try:
        for row in np.flatnonzero(rows):
            scene.frame_set(int(frames[row]))
            obj_eval = obj.evaluated_get(context.evaluated_depsgraph_get())
            out[row] = np.array(channel_frame(obj, obj_eval, name))
    finally:
        scene.frame_set(frame0, subframe=subframe0)
    return out


def shift_map(obj, obj_eval, name: str, parent: str = "") -> tuple[np.ndarray, np.ndarray]:
    """(current (3,), A (3, 3)): the bone's location channel moving its head by d, a move in bone
    `parent`'s pose space ('' armature space; a unit carried there, rig.sequence.UnitSpace), is
    current + A @ d (`location_values` for many frames at once)."""
    frame = channel_frame(obj, obj_eval, name)
    to_armature = obj_eval.pose.bones[parent].matrix.to_3x3() if parent else Matrix.Identity(3)
    try:
        inverse = frame.inverted()
    except ValueError:
        raise ValueError(f"bone '{name}' has a degenerate parent or rest matrix: its location cannot move") from None
    return np.array(obj.pose.bones[name].location[:], dtype=float), np.array(inverse @ to_armature, dtype=float)
