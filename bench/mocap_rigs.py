"""The shared motion capture clips (../shared/data/mocap) in Blender, for benchmarks and tests.

`load_clip` imports a clip with Blender's own BVH importer (the core add-on `io_anim_bvh`, in both
bpy wheels) at the scale its README gives, sets the scene's frame rate and range to the clip's
(without the T-pose frame some clips start with), and `add_leg_chains` gives the armature one Chain
IK chain per leg (thigh, shin, foot; the foot is the tip). `retarget` puts the motion on a
character with other leg proportions as a quick retarget does: the same local rotations, the
thigh and shin lengths scaled, the hips' path scaled by the ratio of the hip heights. Not part of
the extension.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import bpy
import numpy as np
from blender_bench import load_extension

MOCAP_DIR = Path(os.environ.get("CHAIN_IK_MOCAP", Path(__file__).resolve().parents[2] / "shared" / "data" / "mocap"))
# CMU's length unit is 1/0.45 inch (README of the clips).
CMU_UNIT = 0.056444


@dataclass(frozen=True)
class Clip:
    file: str
    scale: float
    first_frame: int  # the first frame of motion: 2 where frame 1 is a T-pose; 6 for the Daz file, whose
    # frame 1 is the rest pose and frames 2-5 blend from it into the motion (feet at 10-20 m/s)
    legs: dict[str, tuple[str, str, str]]  # side -> (thigh, shin, foot)
    kind: str  # "walk" or "run"


CLIPS = {
    "walk": Clip(
        "cmu_walk_delfem2.bvh",
        CMU_UNIT,
        2,
        {"Left": ("LeftUpLeg", "LeftLeg", "LeftFoot"), "Right": ("RightUpLeg", "RightLeg", "RightFoot")},
        "walk",
    ),
    "start_walk_stop": Clip(
        "cmu_131_01_start_walk_stop.bvh",
        CMU_UNIT,
        1,
        {"Left": ("LeftHip", "LeftKnee", "LeftAnkle"), "Right": ("RightHip", "RightKnee", "RightAnkle")},
        "walk",
    ),
    "run_leap": Clip(
        "cmu_49_04_run_leap.bvh",
        CMU_UNIT,
        2,
        {"Left": ("LeftUpLeg", "LeftLeg", "LeftFoot"), "Right": ("RightUpLeg", "RightLeg", "RightFoot")},
        "run",
    ),
    "run_jog": Clip(
        "cmu_02_03_run_jog_daz.bvh",
        0.01,
        6,
        {"Left": ("lThigh", "lShin", "lFoot"), "Right": ("rThigh", "rShin", "rFoot")},
        "run",
    ),
}


def clip_path(clip: Clip) -> Path:
    return MOCAP_DIR / clip.file


def require_clips(names: list[str]) -> None:
    """Exit with one line, before any work, when a clip of `names` is missing: the clips live outside
    the repository, and a script that reached the importer would end in a long traceback."""
    missing = [CLIPS[name].file for name in names if not clip_path(CLIPS[name]).is_file()]
    if missing:
        raise SystemExit(
            f"missing motion capture clips in {MOCAP_DIR}: {', '.join(missing)} (the shared CMU clips, outside"
            " the repository; set CHAIN_IK_MOCAP to the directory that holds them)"
        )


def _ensure_importer() -> None:
    if not hasattr(bpy.types, "IMPORT_ANIM_OT_bvh"):
        import addon_utils

        addon_utils.enable("io_anim_bvh", default_set=False)


def _action_of(obj):
    ad = obj.animation_data
    return None if ad is None else ad.action


def load_clip(name: str):
    """Import clip `name` (a key of CLIPS) into the current scene; returns the armature object. The
    scene's frame rate becomes the clip's (120 fps) and its range the clip's frames."""
    clip = CLIPS[name]
    _ensure_importer()
    scene = bpy.context.scene
    result = bpy.ops.import_anim.bvh(
        filepath=str(clip_path(clip)), global_scale=clip.scale, frame_start=1, update_scene_fps=True
    )
    if result != {"FINISHED"}:
        raise RuntimeError(f"importing {clip.file}: {result}")
    obj = bpy.context.object
    last = int(round(_action_of(obj).frame_range[1]))
    scene.frame_start, scene.frame_end = clip.first_frame, last
    scene.frame_set(clip.first_frame)
    return obj


def leg_length(obj, clip: Clip, side: str) -> float:
    """Rest length of a leg's thigh, shin and foot (world units)."""
    scale = obj.matrix_world.to_scale()[0]
    return scale * sum(obj.data.bones[n].length for n in clip.legs[side])


def add_leg_chains(obj, clip: Clip) -> list[str]:
    """One panel chain per leg (thigh, shin and foot, the foot its tip, Use Tail); their names."""
    names = []
    for side, (_, _, foot) in clip.legs.items():
        item = obj.chain_ik.chains.add()
        item.name, item.tip, item.chain_length, item.use_tail = f"{side} Foot", foot, 3, True
        names.append(item.name)
    return names


def _subtree(bone) -> list:
    return [bone, *bone.children_recursive]


def _rest_hip_height(obj, clip: Clip) -> float:
    """Height of the root bone's head above the lowest point of the legs, at rest (armature space)."""
    bones = obj.data.bones
    root = bones[clip.legs["Left"][0]].parent_recursive[-1]
    lowest = min(
        min(b.head_local.z, b.tail_local.z) for thigh, _, _ in clip.legs.values() for b in _subtree(bones[thigh])
    )
    return root.head_local.z - lowest


def retarget(source, clip: Clip, leg_scale: float, name: str | None = None):
    """A copy of armature `source` whose thighs and shins are `leg_scale` times as long, playing the
    same local rotations, with the root's location curves scaled by the ratio of the hip heights
    (new / old, at rest), as a quick retarget does. The copy gets its own action and data."""
    obj = source.copy()
    obj.name = name or f"{source.name}_legs{leg_scale:g}"
    obj.data = source.data.copy()
    bpy.context.scene.collection.objects.link(obj)
    action = _action_of(source).copy()
    obj.animation_data.action = action
    if hasattr(obj.animation_data, "action_slot") and obj.animation_data.action_slot is None:
        obj.animation_data.action_slot = action.slots[0]
    height_before = _rest_hip_height(obj, clip)
    _scale_legs(obj, clip, leg_scale)
    ratio = _rest_hip_height(obj, clip) / height_before
    root = obj.data.bones[clip.legs["Left"][0]].parent_recursive[-1]
    if root.head_local.length > 1e-9:
        raise ValueError(f"root bone '{root.name}' does not rest at the origin: scale its path another way")
    path = f'pose.bones["{root.name}"].location'
    for fc in load_extension("rig.keys").rig.keys.assigned_fcurves(obj):
        if fc.data_path == path:
            _scale_values(fc, ratio)
    return obj


def _scale_legs(obj, clip: Clip, leg_scale: float) -> None:
    """Lengthen each thigh and shin by `leg_scale` along itself; the bones below move with them."""
    previous = bpy.context.view_layer.objects.active
    if bpy.context.object is not None and bpy.context.object.mode != "OBJECT":
        bpy.ops.object.mode_set(mode="OBJECT")
    bpy.context.view_layer.objects.active = obj
    bpy.ops.object.mode_set(mode="EDIT")
    edit = obj.data.edit_bones
    scaled = {name for thigh, shin, _ in clip.legs.values() for name in (thigh, shin)}
    # From the old ends alone (a connected child's head follows its parent's tail as it is set):
    # each bone moves by what its scaled ancestors grew, and a scaled bone's tail by its own growth.
    grow = {name: (edit[name].tail - edit[name].head) * (leg_scale - 1.0) for name in scaled}
    ends = {}
    for bone in edit:
        shift = sum((grow[a.name] for a in bone.parent_recursive if a.name in scaled), bone.head * 0.0)
        own = grow.get(bone.name, bone.head * 0.0)
        ends[bone.name] = (bone.head + shift, bone.tail + shift + own)
    for bone in edit:  # parents come first in the list
        bone.head, bone.tail = ends[bone.name]
    bpy.ops.object.mode_set(mode="OBJECT")
    bpy.context.view_layer.objects.active = previous


def _scale_values(fc, ratio: float) -> None:
    kp = fc.keyframe_points
    for attribute in ("co", "handle_left", "handle_right"):
        data = np.empty(2 * len(kp), dtype=np.float32)
        kp.foreach_get(attribute, data)
        data[1::2] *= ratio
        kp.foreach_set(attribute, data)
    fc.update()
