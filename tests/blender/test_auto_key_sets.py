"""Auto-keying a Solve honours Blender's "Only Active Keying Set"; reports name chains by name."""

from __future__ import annotations

import bpy
import pytest
from builders import add_empty, straight_chain
from test_bake import fcurves


@pytest.fixture
def rig(scene):
    obj = straight_chain(3)
    bpy.ops.object.mode_set(mode="OBJECT")
    bpy.ops.object.armature_add()  # a second armature: its keys must never change
    bpy.context.view_layer.objects.active = obj
    bpy.ops.object.mode_set(mode="POSE")
    item = obj.chain_ik.chains.add()
    item.name, item.tip, item.chain_length, item.target = "Arm", "b2", 2, add_empty(location=(1, 0.5, 2))
    tool = bpy.context.scene.tool_settings
    tool.use_keyframe_insert_auto = True
    yield obj
    tool.use_keyframe_insert_auto = tool.use_keyframe_insert_keyingset = False


def _keyed(obj) -> set[tuple[str, str]]:
    return {(fc.data_path.split('"')[1], fc.data_path.rsplit(".", 1)[1]) for fc in fcurves(obj)}


def _activate(scene, idname: str) -> None:
    for ks in scene.keying_sets_all:
        if ks.bl_idname == idname:
            scene.keying_sets_all.active = ks
            return
    raise KeyError(idname)


def test_without_only_active_keying_set_the_rotations_are_keyed(rig, capfd):
    _activate(bpy.context.scene, "LocRotScale")  # active but not asked for
    assert bpy.ops.chain_ik.solve() == {"FINISHED"}
    assert _keyed(rig) == {("b1", "rotation_quaternion"), ("b2", "rotation_quaternion")}
    assert "chain 'Arm': triangulation, tip error" in capfd.readouterr().out


def test_builtin_keying_set_keys_its_channels_on_the_chain_bones(rig, capfd):
    scene = bpy.context.scene
    scene.tool_settings.use_keyframe_insert_keyingset = True
    _activate(scene, "LocRotScale")
    assert bpy.ops.chain_ik.solve() == {"FINISHED"}
    expected = {(b, p) for b in ("b1", "b2") for p in ("location", "rotation_quaternion", "scale")}
    assert _keyed(rig) == expected
    assert "auto-keyed with the keying set 'Location, Rotation & Scale'" in capfd.readouterr().out
    assert all(ob.animation_data is None for ob in bpy.data.objects if ob not in (rig,))


def test_absolute_keying_set_keys_only_its_paths_on_the_chain_bones(rig):
    scene = bpy.context.scene
    scene.tool_settings.use_keyframe_insert_keyingset = True
    ks = scene.keying_sets.new(idname="chain_test", name="Mine")
    ks.paths.add(rig, 'pose.bones["b2"].rotation_quaternion', index=-1)
    ks.paths.add(rig, 'pose.bones["b2"].location', index=2)
    ks.paths.add(rig, 'pose.bones["b0"].location', index=-1)  # not a chain bone: left alone
    scene.keying_sets.active = ks
    assert bpy.ops.chain_ik.solve() == {"FINISHED"}
    keyed = {(fc.data_path, fc.array_index) for fc in fcurves(rig)}
    path = 'pose.bones["b2"].'
    assert keyed == {(path + "rotation_quaternion", i) for i in range(4)} | {(path + "location", 2)}


def test_locked_curve_of_the_keying_set_is_refused_before_posing(rig):
    scene = bpy.context.scene
    scene.tool_settings.use_keyframe_insert_keyingset = True
    _activate(scene, "LocRotScale")
    rig.pose.bones["b1"].keyframe_insert("location", frame=1)
    locked = next(fc for fc in fcurves(rig) if fc.data_path.endswith("location"))
    locked.lock = True
    before = tuple(rig.pose.bones["b1"].rotation_quaternion)
    with pytest.raises(RuntimeError, match="locked F-Curves"):
        bpy.ops.chain_ik.solve()
    assert tuple(rig.pose.bones["b1"].rotation_quaternion) == before
