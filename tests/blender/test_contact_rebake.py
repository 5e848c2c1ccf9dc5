"""A re-bake with contacts bakes from the capture (issue 21 item 2, user12): the planted bake records
in the action what it wrote (app.bake.contact_record), and the next one takes its keys back first.
Detect or key, bake, edit the contacts, bake again gives the keys a bake of the capture with the
edited contacts gives; bake twice gives bake once; a baked key the user edited stays, as the
motion; the record survives save and reload and follows a copy of the action; a cancelled re-bake
puts the curves back."""

from __future__ import annotations

import bpy
import numpy as np
import pytest
from test_contact_bake import FIRST, LAST, built_walk

VARIANTS = {  # the capture: the hips alone keyed (the legs' curves made by the bake), or the shin too
    "hips-keyed": dict(rise=0.3),
    "knee-keyed": dict(rise=0.3, knee=0.4),
    "mixed-keys": dict(rise=0.3, knee=0.4),  # the shin's keys of several kinds (mixed_keys)
    "sparse-keys": dict(rise=0.3, knee=0.4),  # the shin keyed every third frame and between frames (sparse_keys)
}


def sparse_keys(obj) -> None:
    """The shin's keys on every third frame only, and one between frames (12.5): a bake's spans
    replace keys that are not on its frames (the curve rebuilt, not rewritten in place)."""
    from chain_ik.rig import keys

    for index in range(4):
        fc = keys.assigned_fcurve(obj, 'pose.bones["shin"].rotation_quaternion', index)
        for key in reversed(list(fc.keyframe_points)):
            if int(key.co[0]) % 3:
                fc.keyframe_points.remove(key)
        fc.keyframe_points.insert(12.5, fc.evaluate(12.5))
        fc.update()


def mixed_keys(obj) -> None:
    """The shin's W keys of every kind a capture may hold: LINEAR and CONSTANT interpolation, a
    breakdown, an ELASTIC key with its own settings, FREE and ALIGNED handles moved by hand."""
    from chain_ik.rig import keys

    fc = keys.assigned_fcurve(obj, 'pose.bones["shin"].rotation_quaternion', 0)
    for i, key in enumerate(fc.keyframe_points):
        if i % 3 == 1:
            key.interpolation = "LINEAR"
        if i % 7 == 2:
            key.interpolation = "CONSTANT"
        if i % 5 == 0:
            key.type = "BREAKDOWN"
        if i == 12:
            key.interpolation, key.easing, key.amplitude, key.period = "ELASTIC", "EASE_OUT", 0.3, 2.0
        if i in (9, 15):
            key.handle_left_type = key.handle_right_type = "FREE" if i == 9 else "ALIGNED"
            key.handle_left = (key.co[0] - 0.4, key.co[1] + 0.05)
            key.handle_right = (key.co[0] + 0.4, key.co[1] - 0.05)
    fc.update()


def unselected_keys(obj) -> None:
    """Some of the shin's keys unselected, each of the three flags on its own: a re-bake's take-back
    puts the kept ones back so (bake_record.rebuild writes the selection only where one is off)."""
    from chain_ik.rig import keys

    for index in range(4):
        fc = keys.assigned_fcurve(obj, 'pose.bones["shin"].rotation_quaternion', index)
        for i, key in enumerate(fc.keyframe_points):
            key.select_control_point = bool(i % 2)
            key.select_left_handle = bool(i % 3)
            key.select_right_handle = bool(i % 5)


def walk(variant: str):
    obj = built_walk(**VARIANTS[variant])
    if variant == "mixed-keys":
        mixed_keys(obj)
    if variant == "sparse-keys":
        sparse_keys(obj)
    return obj


def every_key(obj) -> dict:
    """Every attribute of every key of every F-Curve playing on `obj` (an empty curve left out)."""
    from chain_ik.rig import keys

    out = {}
    for fc in keys.assigned_fcurves(obj):
        count = len(fc.keyframe_points)
        for name, width, dtype in keys.KEY_ATTRIBUTES if count else ():
            values = np.empty(width * count, dtype=dtype)
            fc.keyframe_points.foreach_get(name, values)
            out[fc.data_path, fc.array_index, name] = values
    return out


def assert_same_keys(a: dict, b: dict, names=None) -> None:
    names = names or {k[2] for k in a}
    a = {k: v for k, v in a.items() if k[2] in names}
    b = {k: v for k, v in b.items() if k[2] in names}
    assert a.keys() == b.keys()
    differ = [k for k in a if a[k].tobytes() != b[k].tobytes()]
    assert not differ, differ[:4]


def assign(obj, action) -> None:
    """`obj` plays `action` (the capture copied before the bake), its legs' unkeyed channels at rest
    again, as built (the baked action's last evaluation left them posed)."""
    obj.animation_data.action = action
    for name in ("thigh", "shin", "foot"):
        obj.pose.bones[name].rotation_quaternion = (1.0, 0.0, 0.0, 0.0)
    if hasattr(obj.animation_data, "action_slot") and obj.animation_data.action_slot is None:
        obj.animation_data.action_slot = action.slots[0]


def drop_second_contact(obj) -> None:
    item = obj.chain_ik.chains[0]
    item.contact = False
    item.keyframe_insert("contact", frame=30)


def bake(move_root: bool) -> None:
    bpy.context.view_layer.objects.active = bpy.data.objects["Rig"]
    bpy.data.objects["Rig"].chain_ik.chains[0].move_root = move_root
    assert bpy.ops.chain_ik.bake(frame_start=FIRST, frame_end=LAST) == {"FINISHED"}


@pytest.mark.parametrize("move_root", [True, False])
@pytest.mark.parametrize("variant", list(VARIANTS))
def test_a_rebake_after_editing_the_contacts_is_a_bake_of_the_capture_with_the_edits(scene, variant, move_root):
    obj = walk(variant)
    capture = obj.animation_data.action.copy()
    bake(move_root)
    once = every_key(obj)
    if variant == "sparse-keys":  # the key between frames was replaced, and is in the record
        from chain_ik.rig import bake_record

        shin = [e for e in bake_record.load(obj.animation_data.action) if e.path.startswith('pose.bones["shin"]')]
        assert shin and all(12.5 in e.removed_frames and 12.5 not in e.frames for e in shin)
    bake(move_root)  # bake twice: the keys of bake once, every attribute
    assert_same_keys(every_key(obj), once)
    drop_second_contact(obj)
    bake(move_root)
    rebaked = every_key(obj)
    assign(obj, capture)  # the capture, the same contacts dropped, baked once
    drop_second_contact(obj)
    bake(move_root)
    assert_same_keys(rebaked, every_key(obj))


def test_bake_twice_keeps_the_selection_of_the_keys_it_does_not_bake(scene):
    """Bake twice is bake once with some keys unselected: the take-back's rebuild writes the
    selection where one is off (it leaves what keyframe_points.add() gives). The record keeps no
    selection: a key it puts back comes back selected, as the bake's keys are (so a re-bake after
    dropping a contact selects the capture's keys it brings back, unlike a bake of the capture)."""
    obj = built_walk(**VARIANTS["knee-keyed"])
    unselected_keys(obj)
    bake(True)
    once = every_key(obj)
    assert not once['pose.bones["shin"].rotation_quaternion', 0, "select_control_point"].all()
    bake(True)
    assert_same_keys(every_key(obj), once)


def test_the_record_survives_save_and_reload_and_follows_a_copy(scene, tmp_path):
    from chain_ik.rig import bake_record

    obj = walk("mixed-keys")
    bake(True)
    once = every_key(obj)
    record = bake_record.load(obj.animation_data.action)
    assert {(e.path.split(".")[-1], e.index) for e in record} >= {("rotation_quaternion", 0), ("location", 2)}
    copy = obj.animation_data.action.copy()
    assert len(bake_record.load(copy)) == len(record)
    path = str(tmp_path / "baked.blend")
    bpy.ops.wm.save_as_mainfile(filepath=path)
    bpy.ops.wm.open_mainfile(filepath=path)
    obj = bpy.data.objects["Rig"]
    again = bake_record.load(obj.animation_data.action)
    assert [(e.slot, e.path, e.index) for e in again] == [(e.slot, e.path, e.index) for e in record]
    for a, b in zip(again, record, strict=True):
        assert np.array_equal(a.frames, b.frames) and np.array_equal(a.values, b.values)
        assert a.removed.keys() == b.removed.keys()
        assert [n for n in a.removed if not np.array_equal(a.removed[n], b.removed[n])] == []
    bake(True)  # bake twice, across a reload: bake once
    assert_same_keys(every_key(obj), once)


def test_a_baked_key_the_user_edited_stays_as_the_motion(scene):
    """The shin's W key on a held frame set by hand after the bake: the re-bake keeps it as its
    input there (the bake plants the foot on it), and says so: the keys a bake of the capture with
    that key so edited gives, to float32."""
    from chain_ik.app import bake as baking
    from chain_ik.app.spec import spec_from_item
    from chain_ik.rig import keys

    path, frame = 'pose.bones["shin"].rotation_quaternion', 10.0
    obj = built_walk(**VARIANTS["knee-keyed"])
    capture = obj.animation_data.action.copy()
    bake(True)
    once = every_key(obj)

    def edit(obj, value: float) -> None:
        fc = keys.assigned_fcurve(obj, path, 0)
        key = next(k for k in fc.keyframe_points if k.co[0] == frame)
        key.co[1] = value
        fc.update()

    value = keys.assigned_fcurve(obj, path, 0).evaluate(frame) - 0.05
    edit(obj, value)
    specs = [spec_from_item(item) for item in obj.chain_ik.chains]
    result = baking.bake(bpy.context, obj, specs, baking.BakeOptions(FIRST, LAST))
    assert "kept 1 key(s) edited, moved or deleted since" in result.taken_back, result.taken_back
    rebaked = every_key(obj)
    assert rebaked[path, 0, "co"].tobytes() != once[path, 0, "co"].tobytes()  # the edit is the motion there
    assign(obj, capture)
    edit(obj, value)
    bake(True)
    assert_same_keys(rebaked, every_key(obj), {"co"})


def test_a_cancelled_rebake_puts_the_curves_back(scene):
    """Esc during a re-bake's reading (legs read frame by frame: the armature object is animated):
    the curves taken back are put back, every key and the record as the last bake left them."""
    from chain_ik.app import bake as baking
    from chain_ik.app.bake import bake_job
    from chain_ik.app.spec import spec_from_item
    from chain_ik.rig import bake_record

    obj = built_walk(**VARIANTS["knee-keyed"])
    for frame in (FIRST, LAST):
        obj.location = (0.0, 0.0, 0.001 * frame)
        obj.keyframe_insert("location", frame=frame)
    bake(True)
    drop_second_contact(obj)
    state = every_key(obj)
    record = bake_record.load(obj.animation_data.action)
    specs = [spec_from_item(item) for item in obj.chain_ik.chains]
    job = bake_job.BakeJob(bpy.context, obj, specs, baking.BakeOptions(FIRST, LAST))
    assert not job.step(0.0) and job.phase == "solve"
    assert job.cancel()
    job.end()
    assert_same_keys(every_key(obj), state)
    assert len(bake_record.load(obj.animation_data.action)) == len(record)
