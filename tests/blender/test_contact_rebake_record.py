"""The planted bake's record (rebake14): what a re-bake puts back, and when the record no longer
speaks for the keys. A capture key a re-bake brings back comes back selected or not as it was;
a bake without contacts ends the record on the curves it keys; a renamed bone or slot is followed,
a bone found no way is said in the report, its record dropped; a planted leg with IK Stretch keys no
scale (so none to record)."""

from __future__ import annotations

import bpy
import numpy as np
from builders import add_empty
from test_contact_bake import FIRST, LAST, built_walk
from test_contact_rebake import (
    VARIANTS,
    assert_same_keys,
    assign,
    bake,
    drop_second_contact,
    every_key,
    mixed_keys,
    unselected_keys,
)

SHIN = 'pose.bones["shin"].rotation_quaternion'


def _bake_result(obj):
    from chain_ik.app import bake as baking
    from chain_ik.app.spec import spec_from_item

    specs = [spec_from_item(item) for item in obj.chain_ik.chains]
    return baking.bake(bpy.context, obj, specs, baking.BakeOptions(FIRST, LAST))


def test_a_rebake_brings_the_capture_keys_back_selected_as_they_were(scene):
    """Some of the capture's keys unselected (each flag on its own) and of every kind: bake, drop a
    contact, bake again gives what a bake of the capture with that contact dropped gives, the
    selection too (the keys the first bake replaced there came back selected before rebake14)."""
    obj = built_walk(**VARIANTS["knee-keyed"])
    mixed_keys(obj)
    unselected_keys(obj)
    capture = obj.animation_data.action.copy()
    bake(True)
    drop_second_contact(obj)
    bake(True)
    rebaked = every_key(obj)
    assert not rebaked[SHIN, 0, "select_control_point"].all()
    assign(obj, capture)
    drop_second_contact(obj)
    bake(True)
    assert_same_keys(rebaked, every_key(obj))


def test_a_record_without_the_selection_still_takes_back(scene):
    """A record written before the selection was kept (no same_select_*): its keys come back
    selected, as they did; bake twice is still bake once but for that."""
    from chain_ik.rig import bake_record

    obj = built_walk(**VARIANTS["knee-keyed"])
    bake(True)
    once = every_key(obj)
    group = obj.animation_data.action[bake_record.RECORD]
    for name in [n for n in group.keys() if "select_" in n or n in ("slot_handles", "rests")]:
        del group[name]
    assert all(e.handle is None and e.rest is None for e in bake_record.load(obj.animation_data.action))
    bake(True)
    assert_same_keys(every_key(obj), once)


def _clear_contacts(obj) -> None:
    from chain_ik.rig import contacts

    item = obj.chain_ik.chains[0]
    contacts.clear_contacts(obj, item)
    item.contact = False


def test_a_bake_without_contacts_ends_the_record_on_the_curves_it_keys(scene):
    """Bake with contacts, clear them, bake the leg to a target (an ordinary bake): the record of the
    leg's curves is gone over the frames it keyed (its keys are the ordinary bake's now), the hips'
    stays (that bake did not key them); contacts keyed again, the next planted bake takes back the
    hips alone and counts no leg key as the user's."""
    from chain_ik.rig import bake_record

    obj = built_walk(**VARIANTS["knee-keyed"])
    bake(True)
    paths = {e.path for e in bake_record.load(obj.animation_data.action)}
    assert SHIN in paths and 'pose.bones["hips"].location' in paths
    _clear_contacts(obj)
    target = add_empty("Goal", (0.1, -0.3, 0.05))
    obj.chain_ik.chains[0].target = target
    bake(False)
    left = bake_record.load(obj.animation_data.action)
    assert {e.path for e in left} == {'pose.bones["hips"].location'}
    assert all(e.frames.min() >= FIRST and e.frames.max() <= LAST for e in left)
    item = obj.chain_ik.chains[0]
    item.target = None
    for frame, on in ((FIRST, False), (5, True), (12, False)):
        item.contact = on
        item.keyframe_insert("contact", frame=frame)
    result = _bake_result(obj)
    assert "kept" not in result.taken_back and "F-Curve(s)" in result.taken_back, result.taken_back
    assert result.taken_back.startswith("re-bake: the last planted bake's keys taken back to the motion it read on 3 ")


def test_a_bake_without_contacts_of_another_range_keeps_the_record_outside_it(scene):
    from chain_ik.rig import bake_record

    obj = built_walk(**VARIANTS["knee-keyed"])
    bake(True)
    before = {(e.path, e.index): e for e in bake_record.load(obj.animation_data.action)}
    _clear_contacts(obj)
    obj.chain_ik.chains[0].target = add_empty("Goal", (0.1, -0.3, 0.05))
    bpy.context.view_layer.objects.active = obj
    assert bpy.ops.chain_ik.bake(frame_start=FIRST, frame_end=10) == {"FINISHED"}
    after = {(e.path, e.index): e for e in bake_record.load(obj.animation_data.action)}
    shin = before[SHIN, 0]
    assert np.array_equal(after[SHIN, 0].frames, shin.frames[shin.frames > 10.0 + 1e-3])
    hips = 'pose.bones["hips"].location', 2
    assert np.array_equal(after[hips].frames, before[hips].frames)


def _rebaked(rename: bool) -> dict:
    """Bake, drop a contact, bake again; with `rename`, the shin (and on 4.4+ the slot) renamed
    between the bakes and the shin's keys read back under its first name."""
    obj = built_walk(**VARIANTS["knee-keyed"])
    mixed_keys(obj)
    bake(True)
    if rename:
        obj.data.bones["shin"].name = "shin.renamed"
        slot = getattr(obj.animation_data, "action_slot", None)
        if slot is not None:
            slot.name_display = "Renamed"
    drop_second_contact(obj)
    result = _bake_result(obj)
    assert "could not be used" not in result.taken_back, result.taken_back
    assert "kept" not in result.taken_back, result.taken_back
    keys = every_key(obj)
    if rename:
        obj.data.bones["shin.renamed"].name = "shin"
        keys = {(p.replace("shin.renamed", "shin"), i, n): v for (p, i, n), v in keys.items()}
    return keys


def test_a_renamed_bone_and_slot_are_followed(scene):
    """The shin renamed (Blender renames its curves) and the slot renamed after the bake: the re-bake
    finds them by the shin's rest and the slot's handle, and gives the keys it gives without them."""
    renamed = _rebaked(True)
    bpy.ops.wm.read_homefile(use_empty=True)
    assert_same_keys(renamed, _rebaked(False))


def test_a_bone_found_no_way_is_said_and_its_record_dropped(scene):
    """The shin renamed, and the record of it without a rest (as before rebake14; or its rest
    edited too): nothing is written on any curve for it, the report says the record of 'shin' could
    not be used, and the record of it is dropped; the other bones' entries are used."""
    from chain_ik.app.bake import contact_record
    from chain_ik.app.spec import spec_from_item
    from chain_ik.rig import bake_record

    obj = built_walk(**VARIANTS["knee-keyed"])
    bake(True)
    action = obj.animation_data.action
    entries = bake_record.load(action)
    for entry in entries:
        entry.rest = None
    bake_record.store(action, entries)
    obj.data.bones["shin"].name = "shin.renamed"
    renamed = 'pose.bones["shin.renamed"]'
    before = every_key(obj)
    taken = contact_record.take_back(obj, [spec_from_item(i) for i in obj.chain_ik.chains], np.arange(FIRST, LAST + 1))
    assert taken.lost == ["shin"] * 4 and taken.restored  # the thigh, foot and hips taken back
    after = every_key(obj)
    shin = {k for k in before if renamed in k[0]}
    assert_same_keys({k: after[k] for k in shin}, {k: before[k] for k in shin})
    taken.put_back()
    assert_same_keys(every_key(obj), before)
    result = _bake_result(obj)
    assert "record of bone(s) 'shin' could not be used" in result.taken_back, result.taken_back
    assert not [e for e in bake_record.load(action) if '"shin"' in e.path]
    again = _bake_result(obj)
    assert "could not be used" not in again.taken_back


def test_a_planted_leg_with_ik_stretch_keys_no_scale(scene):
    """IK Stretch on the leg's bones: the planted bake (analytic two-bone solve) keys rotations and
    the hips' location only, no scale, so there is no scale key to record or take back."""
    from chain_ik.rig import keys

    obj = built_walk(**VARIANTS["knee-keyed"])
    for name in ("thigh", "shin", "foot"):
        obj.pose.bones[name].ik_stretch = 0.5
    bake(True)
    bake(True)
    assert not [fc.data_path for fc in keys.assigned_fcurves(obj) if fc.data_path.endswith(".scale")]


def test_an_ik_to_fk_bake_ends_the_record_on_the_curves_it_keys(scene):
    """IK -> FK keying the shin (to follow the spine): the record of the shin's curves is gone over
    its range, the thigh's stays."""
    from chain_ik.rig import bake_record

    obj = built_walk(**VARIANTS["knee-keyed"])
    bake(True)
    assert bpy.ops.chain_ik.bake_fk(pairs="shin:spine", frame_start=FIRST, frame_end=LAST) == {"FINISHED"}
    paths = {e.path for e in bake_record.load(obj.animation_data.action)}
    assert SHIN not in paths and 'pose.bones["thigh"].rotation_quaternion' in paths, paths


def test_every_contact_dropped_a_rebake_gives_the_capture_back_as_it_was(scene):
    """Every Contact key turned off after a bake: the re-bake takes every planted key back and plants
    nothing, and every key is the capture's again, every attribute (selection, handles of every
    type, interpolation, easing) as it was before the first bake."""
    from chain_ik.rig import contacts

    obj = built_walk(**VARIANTS["knee-keyed"])
    mixed_keys(obj)
    unselected_keys(obj)
    motion = {k for k in every_key(obj) if "chain_ik" not in k[0]}  # (not the Contact keys)
    capture = every_key(obj)
    bake(True)
    baked = every_key(obj)
    assert [k for k in motion if baked[k].tobytes() != capture[k].tobytes()]
    for point in contacts.contact_curve(obj, obj.chain_ik.chains[0]).keyframe_points:
        point.co[1] = 0.0
    bake(True)
    after = every_key(obj)
    assert {k for k in after if "chain_ik" not in k[0]} == motion
    assert_same_keys({k: after[k] for k in motion}, {k: capture[k] for k in motion})
