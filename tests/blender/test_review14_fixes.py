"""Review14's findings fixed: a Contact key past the motion's end is no cut end; `meet` keeps a
locked channel; the re-bake record keeps a bone whose rest was edited, a twin with its old rest
(Rigify's ORG/DEF copies) not taking its place."""

from __future__ import annotations

import math

import bpy
import numpy as np
from test_contact_bake import FIRST, LAST, built_walk


def test_a_contact_key_past_the_motions_end_is_no_cut_end(scene):
    """The motion's keys end on the range's last frame; Detect over a longer scene range leaves a
    Contact key past it: the range's end was taken as cut (a contact dropped, 10 mm of slide)."""
    from chain_ik.app.bake import contact_eases

    obj = built_walk(ground=0.0)
    scene = bpy.context.scene
    scene.frame_end = LAST + 12  # the scene plays on past the motion
    item = obj.chain_ik.chains[0]
    item.contact = True
    item.keyframe_insert("contact", frame=LAST - 2)
    item.contact = False
    item.keyframe_insert("contact", frame=LAST + 10)
    assert contact_eases.cut_ends(bpy.context, obj, np.arange(FIRST, LAST + 1)) == (False, False)
    assert bpy.ops.chain_ik.bake(frame_start=FIRST, frame_end=LAST) == {"FINISHED"}
    assert "not held" not in item.contact_figures


def test_meet_keeps_a_locked_channel(ext):
    from chain_ik.rig import key_continuity, modes
    from mathutils import Euler

    lock = ((False, True, False), False, False)
    quats = np.array([Euler((x, 0.1, 0.0), "XYZ").to_quaternion()[:] for x in np.radians(np.linspace(0, 40, 8))])
    values = modes.series_values("XYZ", quats, (0.0, 0.0, 0.0), lock)
    after = np.array([math.radians(45.0), 0.3, 0.0])  # the key after holds another value in Y
    met = key_continuity.meet("XYZ", values, quats, np.zeros(3), after, lock)
    assert np.array_equal(met[:, 1], values[:, 1])


def test_the_record_keeps_a_bone_whose_rest_was_edited_beside_a_twin(scene):
    from chain_ik.app import bake as baking
    from chain_ik.app.spec import spec_from_item
    from chain_ik.rig import bake_record

    obj = built_walk(ground=0.0)
    bpy.context.view_layer.objects.active = obj
    bpy.ops.object.mode_set(mode="EDIT")
    bones = obj.data.edit_bones
    twin = bones.new("thigh_twin")  # the thigh's rest, as Rigify's copies share it
    twin.head, twin.tail, twin.roll = bones["thigh"].head, bones["thigh"].tail, bones["thigh"].roll
    twin.parent = bones["hips"]
    bpy.ops.object.mode_set(mode="OBJECT")
    item = obj.chain_ik.chains[0]
    baking.bake(bpy.context, obj, [spec_from_item(item)], baking.BakeOptions(FIRST, LAST))
    bpy.ops.object.mode_set(mode="EDIT")
    obj.data.edit_bones["thigh"].head.y += 0.002  # the thigh's rest edited a little
    bpy.ops.object.mode_set(mode="OBJECT")
    baking.bake(bpy.context, obj, [spec_from_item(item)], baking.BakeOptions(FIRST, LAST))
    paths = {e.path for e in bake_record.load(obj.animation_data.action)}
    assert not any("thigh_twin" in p for p in paths) and any('"thigh"' in p for p in paths), paths
