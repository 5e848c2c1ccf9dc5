"""Armatures and targets for the Blender tests, built with real bpy (no mocks)."""

from __future__ import annotations

import math

import bpy
import numpy as np
from mathutils import Matrix, Vector


def make_armature(
    bones: list[tuple[str, tuple, tuple, str | None, bool, float]],
    name: str = "Rig",
    matrix_world: Matrix | None = None,
):
    """bones: (name, head, tail, parent, use_connect, roll_degrees). Leaves the armature active in POSE mode."""
    arm = bpy.data.armatures.new(name)
    obj = bpy.data.objects.new(name, arm)
    bpy.context.scene.collection.objects.link(obj)
    if matrix_world is not None:
        obj.matrix_world = matrix_world
    bpy.context.view_layer.objects.active = obj
    obj.select_set(True)
    bpy.ops.object.mode_set(mode="EDIT")
    for bname, head, tail, parent, connect, roll in bones:
        eb = arm.edit_bones.new(bname)
        eb.head, eb.tail = head, tail
        eb.roll = math.radians(roll)
        if parent:
            eb.parent = arm.edit_bones[parent]
            eb.use_connect = connect
    bpy.ops.object.mode_set(mode="POSE")
    return obj


def straight_chain(n: int = 3, name: str = "Rig", matrix_world: Matrix | None = None):
    bones = [(f"b{i}", (0, 0, i), (0, 0, i + 1), f"b{i - 1}" if i else None, True, 0.0) for i in range(n)]
    return make_armature(bones, name, matrix_world)


def bent_rolled_disconnected(name: str = "Rig", matrix_world: Matrix | None = None):
    """A root bone, then a bent, rolled chain with a disconnected (offset) middle bone."""
    bones = [
        ("root", (0, 0, 0), (0, 0, 0.5), None, False, 0.0),
        ("upper", (0.1, 0, 0.6), (0.3, 0.2, 1.5), "root", False, 30.0),
        ("fore", (0.35, 0.25, 1.6), (0.2, 0.9, 2.2), "upper", False, -70.0),
        ("hand", (0.2, 0.9, 2.2), (0.25, 1.2, 2.4), "fore", True, 15.0),
        ("other", (0, 0, 0.5), (-1, 0, 0.5), "root", False, 0.0),
    ]
    return make_armature(bones, name, matrix_world)


def metarig(location=(1.0, -2.0, 0.3), turn: float = 0.6, scale: float = 1.3, tilt: float = 0.0):
    """Rigify's human metarig (the `rigify` fixture enables the add-on), moved, turned (about Z, and
    `tilt` about X) and scaled in the world so that armature space is not world space; POSE mode."""
    bpy.ops.wm.read_homefile(use_empty=True)
    bpy.ops.object.armature_human_metarig_add()
    obj = bpy.context.object
    obj.rotation_euler = (tilt, 0.0, turn)
    obj.location = location
    obj.scale = (scale, scale, scale)
    bpy.ops.object.mode_set(mode="POSE")
    return obj


def add_empty(name: str = "Target", location=(0, 0, 0)):
    obj = bpy.data.objects.new(name, None)
    bpy.context.scene.collection.objects.link(obj)
    obj.location = location
    return obj


def world_point(obj, bone_name: str, use_tail: bool = True) -> np.ndarray:
    """World location of a bone's tail/head after a depsgraph update."""
    bpy.context.view_layer.update()
    pb = obj.pose.bones[bone_name]
    p = obj.matrix_world @ (pb.tail if use_tail else pb.head)
    return np.array(p[:])


def pose_state(obj) -> dict[str, np.ndarray]:
    """Every bone's armature-space pose matrix (after an update)."""
    bpy.context.view_layer.update()
    return {pb.name: np.array([list(r) for r in pb.matrix]) for pb in obj.pose.bones}


def channel_state(obj) -> dict[str, tuple]:
    return {
        pb.name: (
            tuple(pb.location),
            tuple(pb.scale),
            tuple(pb.rotation_quaternion),
            tuple(pb.rotation_euler),
            tuple(pb.rotation_axis_angle),
            pb.rotation_mode,
        )
        for pb in obj.pose.bones
    }


def bone_lengths(obj) -> dict[str, float]:
    bpy.context.view_layer.update()
    return {pb.name: (pb.tail - pb.head).length for pb in obj.pose.bones}


def random_pose(obj, names, rng, max_angle: float = 0.8) -> None:
    """Random local rotations (in each bone's mode) on `names`: a valid FK pose."""
    from mathutils import Euler

    for n in names:
        pb = obj.pose.bones[n]
        e = Euler(tuple(rng.uniform(-max_angle, max_angle, 3)), "XYZ")
        q = e.to_quaternion()
        mode = pb.rotation_mode
        if mode == "QUATERNION":
            pb.rotation_quaternion = q
        elif mode == "AXIS_ANGLE":
            axis, angle = q.to_axis_angle()
            pb.rotation_axis_angle = (angle, *axis)
        else:
            pb.rotation_euler = q.to_euler(mode)


def reachable_target(obj, tip: str, names, rng, use_tail: bool = True) -> np.ndarray:
    """A world point the chain can reach: FK of a random pose, then the pose is put back."""
    saved = channel_state(obj)
    random_pose(obj, names, rng)
    p = world_point(obj, tip, use_tail)
    restore_channels(obj, saved)
    bpy.context.view_layer.update()
    return p


def restore_channels(obj, saved) -> None:
    for name, (loc, scale, q, e, aa, mode) in saved.items():
        pb = obj.pose.bones[name]
        pb.rotation_mode = mode
        pb.location, pb.scale = loc, scale
        pb.rotation_quaternion, pb.rotation_euler, pb.rotation_axis_angle = q, e, aa


def transform(location=(0, 0, 0), euler=(0, 0, 0), scale=(1, 1, 1)) -> Matrix:
    from mathutils import Euler

    return Matrix.LocRotScale(Vector(location), Euler(euler), Vector(scale))


def set_selected(pbone, state: bool) -> None:
    """Select a pose bone (PoseBone.select in 5.0+, Bone.select before)."""
    if "select" in pbone.bl_rna.properties:
        pbone.select = state
    else:
        pbone.bone.select = state


def playback_error(obj, tip: str, target, frames) -> float:
    """Largest world distance from bone `tip`'s tail to `target`'s origin over `frames` (played back)."""
    worst = 0.0
    for f in frames:
        bpy.context.scene.frame_set(f)
        worst = max(worst, float(np.linalg.norm(world_point(obj, tip) - np.array(target.matrix_world.translation))))
    return worst


def save_linked_chain(folder, goal=(1.0, 0.5, 2.0)):
    """Three files: libs/p2.blend (an empty 'P2'); libs/props1.blend, linking P2 by a relative
    path into its collection 'C1'; shots/shot.blend, a 3-bone 'Rig' and an empty 'Goal' at `goal`,
    linking C1 (so p2.blend only through props1). Returns (shot, props1, p2) paths; leaves an
    empty file open."""
    from pathlib import Path

    folder = Path(folder)
    (folder / "libs").mkdir(exist_ok=True)
    (folder / "shots").mkdir(exist_ok=True)
    shot = folder / "shots" / "shot.blend"
    props1, props2 = folder / "libs" / "props1.blend", folder / "libs" / "p2.blend"
    bpy.ops.wm.read_homefile(use_empty=True)
    add_empty("P2")
    bpy.ops.wm.save_as_mainfile(filepath=str(props2))
    bpy.ops.wm.read_homefile(use_empty=True)
    bpy.ops.wm.save_as_mainfile(filepath=str(props1))  # saved first: the link below is relative to it
    with bpy.data.libraries.load(str(props2), link=True, relative=True) as (_src, dst):
        dst.objects = ["P2"]
    collection = bpy.data.collections.new("C1")
    bpy.context.scene.collection.children.link(collection)
    collection.objects.link(dst.objects[0])
    bpy.ops.wm.save_as_mainfile(filepath=str(props1))
    bpy.ops.wm.read_homefile(use_empty=True)
    straight_chain(3)
    bpy.ops.object.mode_set(mode="OBJECT")
    add_empty("Goal", goal)
    with bpy.data.libraries.load(str(props1), link=True) as (_src, dst):
        dst.collections = ["C1"]
    bpy.context.scene.collection.children.link(dst.collections[0])
    bpy.context.scene.frame_start, bpy.context.scene.frame_end = 1, 4
    bpy.ops.wm.save_as_mainfile(filepath=str(shot))
    bpy.ops.wm.read_homefile(use_empty=True)
    return shot, props1, props2
