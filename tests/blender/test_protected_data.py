"""Data Blender would not let a user change is never written: linked armatures and actions,
locked F-Curves, an action another armature plays; editable library overrides work."""

from __future__ import annotations

import bpy
import numpy as np
import pytest
from builders import add_empty, make_armature, straight_chain


def keyed(action) -> dict:
    from chain_ik.rig.keys import action_fcurves

    return {(fc.data_path, fc.array_index): [tuple(k.co) for k in fc.keyframe_points] for fc in action_fcurves(action)}


def _keyed_rig(name="Rig"):
    """A 3-bone arm with a chain to 'Goal' and its rotations keyed on frames 1 and 5."""
    obj = straight_chain(3, name)
    bpy.ops.object.mode_set(mode="OBJECT")
    goal = bpy.data.objects.get("Goal") or add_empty("Goal", (1.0, 0.5, 2.0))
    item = obj.chain_ik.chains.add()
    item.name, item.tip, item.chain_length, item.target = "arm", "b2", 3, goal
    for frame in (1, 5):
        for pb in obj.pose.bones:
            pb.keyframe_insert("rotation_quaternion", frame=frame, group=pb.name)
    return obj


@pytest.fixture
def library(scene, tmp_path):
    """A library .blend holding the rig (in collection 'Char'), its action and the goal."""
    obj = _keyed_rig()
    char = bpy.data.collections.new("Char")
    bpy.context.scene.collection.children.link(char)
    char.objects.link(obj)
    bpy.context.scene.collection.objects.unlink(obj)
    obj.animation_data.action.name = "ArmAction"
    path = tmp_path / "library.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(path))
    bpy.ops.wm.read_homefile(use_empty=True)
    return path


def _link(path, **names):
    with bpy.data.libraries.load(str(path), link=True) as (_src, dst):
        for kind, items in names.items():
            setattr(dst, kind, items)
    return dst


def _bake_specs(obj):
    from chain_ik.app import spec

    return [spec.spec_from_item(item) for item in obj.chain_ik.chains]


def test_linked_armature_is_refused_by_solve_bake_and_add_chain(library):
    dst = _link(library, objects=["Rig", "Goal"])
    for ob in dst.objects:
        bpy.context.scene.collection.objects.link(ob)
    rig = bpy.data.objects["Rig"]
    bpy.context.view_layer.objects.active = rig
    before = keyed(rig.animation_data.action)
    for op, kwargs in (("solve", {}), ("bake", {"frame_start": 1, "frame_end": 3}), ("chain_add", {})):
        with pytest.raises(RuntimeError, match="linked from the library"):
            getattr(bpy.ops.chain_ik, op)(**kwargs)
    # The headless path (cli.py) calls the bake directly.
    from chain_ik.app import bake as bake_run

    options = bake_run.BakeOptions(1, 3)
    with pytest.raises(ValueError, match="armature object 'Rig' is linked from the library"):
        bake_run.bake(bpy.context, rig, _bake_specs(rig), options)
    assert keyed(rig.animation_data.action) == before and len(rig.chain_ik.chains) == 1


def test_linked_action_is_refused_by_bake_and_auto_keying(library):
    action = _link(library, actions=["ArmAction"]).actions[0]
    obj = _keyed_rig("Local")
    obj.animation_data.action = action
    before = keyed(action)
    with pytest.raises(RuntimeError, match="action 'ArmAction' is linked from the library"):
        bpy.ops.chain_ik.bake(frame_start=1, frame_end=3)
    bpy.context.scene.tool_settings.use_keyframe_insert_auto = True
    pose = [tuple(pb.rotation_quaternion) for pb in obj.pose.bones]
    with pytest.raises(RuntimeError, match="auto-keying: the action 'ArmAction' is linked"):
        bpy.ops.chain_ik.solve()
    assert keyed(action) == before
    assert [tuple(pb.rotation_quaternion) for pb in obj.pose.bones] == pose


def test_linked_action_is_refused_by_detect_and_clear_contacts(library):
    action = _link(library, actions=["ArmAction"]).actions[0]
    obj = _keyed_rig("Local")
    obj.animation_data.action = action
    before = keyed(action)
    for op in ("detect_contacts", "clear_contacts"):
        with pytest.raises(RuntimeError, match="action 'ArmAction' is linked from the library"):
            getattr(bpy.ops.chain_ik, op)(frame_start=1, frame_end=3)
    assert keyed(action) == before


def test_library_override_chains_solve_and_bake_and_survive_reload(library, tmp_path):
    char = _link(library, collections=["Char"]).collections[0]
    goal = _link(library, objects=["Goal"]).objects[0]
    bpy.context.scene.collection.objects.link(goal)
    override = char.override_hierarchy_create(bpy.context.scene, bpy.context.view_layer, do_fully_editable=True)
    rig = next(o for o in override.objects if o.type == "ARMATURE")
    assert rig.override_library is not None and rig.is_editable
    bpy.context.view_layer.objects.active = rig
    # Add Chain and Remove Chain: TypeError before (the settings were not overridable).
    assert bpy.ops.chain_ik.chain_add() == {"FINISHED"}
    assert len(rig.chain_ik.chains) == 2
    rig.chain_ik.chains[1].name = "added"
    assert bpy.ops.chain_ik.chain_add() == {"FINISHED"}
    assert bpy.ops.chain_ik.chain_remove() == {"FINISHED"}
    assert [c.name for c in rig.chain_ik.chains] == ["arm", "added"]
    # Blender lets an override remove only the items it added: the library's chain is refused.
    rig.chain_ik.active_index = 0
    with pytest.raises(RuntimeError, match="comes from the linked library"):
        bpy.ops.chain_ik.chain_remove()
    assert bpy.ops.chain_ik.solve(chain_index=0) == {"FINISHED"}
    assert rig.chain_ik.chains[0].result.error < 1e-4
    rig.override_library.is_system_override = True  # what Blender makes the rest of a hierarchy
    with pytest.raises(RuntimeError, match="non-editable library override"):
        bpy.ops.chain_ik.solve()
    rig.override_library.is_system_override = False
    # The library's action is linked: the override gets a local one to bake into.
    rig.animation_data.action = None
    assert bpy.ops.chain_ik.bake(chain_index=0, frame_start=1, frame_end=4) == {"FINISHED"}
    baked = keyed(rig.animation_data.action)
    path = tmp_path / "shot.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(path))
    bpy.ops.wm.open_mainfile(filepath=str(path))
    rig = next(o for o in bpy.data.objects if o.type == "ARMATURE" and o.override_library is not None)
    assert [c.name for c in rig.chain_ik.chains] == ["arm", "added"]
    assert keyed(rig.animation_data.action) == baked and baked


def test_locked_fcurves_are_refused_and_untouched(scene):
    from chain_ik.rig.keys import action_fcurves

    obj = _keyed_rig()
    bpy.context.view_layer.objects.active = obj
    for fc in action_fcurves(obj.animation_data.action):
        fc.lock = fc.data_path == 'pose.bones["b1"].rotation_quaternion' and fc.array_index in (0, 2)
    before = keyed(obj.animation_data.action)
    with pytest.raises(RuntimeError, match=r'locked F-Curves.*b1"\]\.rotation_quaternion\[0\], .*\[2\]'):
        bpy.ops.chain_ik.bake(frame_start=1, frame_end=5)
    bpy.context.scene.tool_settings.use_keyframe_insert_auto = True
    with pytest.raises(RuntimeError, match="auto-keying: locked F-Curves"):
        bpy.ops.chain_ik.solve()
    assert keyed(obj.animation_data.action) == before
    # A chain without locked curves bakes.
    assert bpy.ops.chain_ik.bake(tip="b0", chain_length=1, target="Goal", frame_start=1, frame_end=5) == {"FINISHED"}


def _share_action(source, other) -> None:
    """`other` plays `source`'s action (4.4+: through the same slot)."""
    other.animation_data_create()
    other.animation_data.action = source.animation_data.action
    if hasattr(other.animation_data, "action_slot"):
        other.animation_data.action_slot = source.animation_data.action_slot


def test_action_shared_with_another_armature_is_never_changed(scene):
    obj = _keyed_rig()
    other = straight_chain(3, "Other")
    bpy.ops.object.mode_set(mode="OBJECT")
    _share_action(obj, other)
    bpy.context.view_layer.objects.active = obj
    before = keyed(obj.animation_data.action)
    with pytest.raises(RuntimeError, match="also animates 'Other'"):
        bpy.ops.chain_ik.bake(frame_start=1, frame_end=5)
    assert keyed(obj.animation_data.action) == before
    # Its own copy of the action: baked, and the other armature's keys stay as they were.
    obj.animation_data.action = obj.animation_data.action.copy()
    assert bpy.ops.chain_ik.bake(frame_start=1, frame_end=5) == {"FINISHED"}
    assert keyed(other.animation_data.action) == before
    assert keyed(obj.animation_data.action) != before


@pytest.mark.skipif(not hasattr(bpy.types, "ActionSlot"), reason="action slots arrived in 4.4")
def test_shared_action_in_another_slot_bakes(scene):
    obj = _keyed_rig()
    other = straight_chain(3, "Other")
    bpy.ops.object.mode_set(mode="OBJECT")
    other.animation_data_create().action = obj.animation_data.action
    other.animation_data.action_slot = obj.animation_data.action.slots.new(id_type="OBJECT", name="Other")
    bpy.context.view_layer.objects.active = obj
    assert bpy.ops.chain_ik.bake(frame_start=1, frame_end=5) == {"FINISHED"}
    assert np.isfinite(obj.pose.bones["b0"].rotation_quaternion[0])


def test_live_leaves_a_linked_armature_alone(scene, tmp_path, capsys):
    obj = _keyed_rig()
    obj.animation_data_clear()
    obj.chain_ik.chains[0].live = True  # saved with Live on
    path = tmp_path / "live_library.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(path))
    obj.chain_ik.chains[0].live = False
    bpy.ops.wm.read_homefile(use_empty=True)
    capsys.readouterr()
    dst = _link(path, objects=["Rig", "Goal"])
    for ob in dst.objects:
        bpy.context.scene.collection.objects.link(ob)
    rig = bpy.data.objects["Rig"]
    rig.pose.bones["b1"].rotation_quaternion = (0.8, 0.6, 0, 0)  # in memory only, as a library pose is
    before = [tuple(pb.rotation_quaternion) for pb in rig.pose.bones]
    try:
        for _ in range(3):
            bpy.context.view_layer.update()
        assert [tuple(pb.rotation_quaternion) for pb in rig.pose.bones] == before
        assert capsys.readouterr().err.count("'Rig' not solved: the armature object 'Rig' is linked") == 1
    finally:
        bpy.ops.wm.read_homefile(use_empty=True)


def test_ik_to_fk_bake_refuses_locked_fcurves(scene):
    from chain_ik.rig.keys import action_fcurves

    rig = make_armature(
        [
            ("a1", (0, 0, 0), (0, 0, 1), None, False, 0.0),
            ("f1", (0, 0, 0), (0, 0, 1), None, False, 0.0),
        ]
    )
    rig.pose.bones["a1"].rotation_quaternion = (0.8, 0.6, 0, 0)
    rig.pose.bones["f1"].keyframe_insert("rotation_quaternion", frame=1)
    action = rig.animation_data.action
    keyed_before = keyed(action)
    action_fcurves(action)[1].lock = True
    with pytest.raises(RuntimeError, match=r'locked F-Curves.*f1"\]\.rotation_quaternion\[1\]'):
        bpy.ops.chain_ik.bake_fk(pairs="f1:a1", frame_start=1, frame_end=3)
    assert keyed(action) == keyed_before
