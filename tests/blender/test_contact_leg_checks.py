"""A planted leg Chain IK cannot bake as solved is refused up front, changing nothing (user13):
rotation locks it would turn through (unless the chain's Respect Locks is off; IK limits are
reported as not honoured), constraints that set a leg bone's pose over its keys, and a 'leg' whose middle bone is a
rig's helper (Rigify's generated rig: its FK foot hangs from MCH-foot_fk, not from the shin). And
what does bake: a range shorter than the knee swivel's window, and a leg with no contact in the
range (both crashed, user13)."""

from __future__ import annotations

import bpy
import numpy as np
import pytest
from test_contact_bake import FIRST, LAST, built_walk, fcurve_state


def _bake(obj):
    return bpy.ops.chain_ik.bake(frame_start=FIRST, frame_end=LAST)


def _refused(obj, words: str) -> None:
    state = fcurve_state(obj)
    with pytest.raises(RuntimeError, match=words):
        _bake(obj)
    after = fcurve_state(obj)
    assert after.keys() == state.keys()
    assert all((after[k] == state[k]).all() for k in state)


def _held_still(obj) -> float:
    """The largest move of the toe over each keyed contact's frames after the bake (world)."""
    from test_contact_bake import CONTACTS, toe_track

    return max(float(np.abs(toe_track(obj, range(a, b + 1)) - toe_track(obj, [a])).max()) for a, b in CONTACTS)


def test_a_locked_knee_is_refused_unless_respect_locks_is_off(scene):
    obj = built_walk(knee=0.3)
    obj.pose.bones["shin"].lock_rotation[0] = True
    _refused(obj, r"bone 'shin' has its rotation locked \(X\).*Respect Locks off")
    obj.chain_ik.chains[0].use_locks = False  # turned through: the held foot holds (review13)
    assert _bake(obj) == {"FINISHED"}
    assert _held_still(obj) < 1e-4


def test_ik_limits_are_not_honoured_and_the_report_says_so(scene):
    from chain_ik.app import bake as baking
    from chain_ik.app.spec import spec_from_item

    obj = built_walk()
    shin = obj.pose.bones["shin"]
    shin.use_ik_limit_x, shin.lock_ik_z = True, True  # IK solvers' settings: playback ignores them
    result = baking.bake(bpy.context, obj, [spec_from_item(obj.chain_ik.chains[0])], baking.BakeOptions(FIRST, LAST))
    assert "the IK limits and locks of 'shin' (limit X, lock Z) are not honoured" in result.reasons["Foot"]
    obj.chain_ik.chains[0].use_limits = False
    result = baking.bake(bpy.context, obj, [spec_from_item(obj.chain_ik.chains[0])], baking.BakeOptions(FIRST, LAST))
    assert "IK limits" not in result.reasons["Foot"]


def test_what_blender_ignores_is_not_refused(scene):
    """A constraint Blender marks invalid (no target) poses nothing; a W lock left on a bone
    now in an Euler mode is not a lock Blender shows or applies (review13)."""
    obj = built_walk()
    obj.pose.bones["thigh"].constraints.new("COPY_ROTATION")  # no target
    shin = obj.pose.bones["shin"]
    shin.lock_rotations_4d, shin.lock_rotation_w = True, True
    shin.rotation_mode = "XYZ"
    assert _bake(obj) == {"FINISHED"}


def test_a_constraint_setting_the_pose_is_refused_a_limit_is_not(scene):
    obj = built_walk()
    limit = obj.pose.bones["shin"].constraints.new("LIMIT_ROTATION")
    limit.use_limit_x, limit.min_x, limit.max_x = True, -3.0, 3.0  # clamps nothing here
    copy = obj.pose.bones["thigh"].constraints.new("COPY_ROTATION")
    copy.target, copy.subtarget = obj, "spine"
    _refused(obj, r"bone 'thigh' has constraints \('Copy Rotation'\) that set its pose over its keys")
    copy.mute = True
    assert _bake(obj) == {"FINISHED"}


def test_rigify_generated_legs_are_refused_with_a_reason(rigify_file):
    bpy.ops.wm.open_mainfile(filepath=rigify_file)
    rig = bpy.data.objects["rig"]
    bpy.context.view_layer.objects.active = rig
    cases = {
        "foot_fk.L": r"'shin_fk.L' \(0.454 long\) and 'MCH-foot_fk.L' \(0.0\d+\) are not a thigh and a shin",
        "DEF-foot.L": r"bone 'DEF-shin.L' has constraints .* that set its pose over its keys",
        "ORG-foot.L": r"bone 'ORG-thigh.L' has constraints .* that set its pose over its keys",
    }
    for tip, words in cases.items():
        rig.chain_ik.chains.clear()
        item = rig.chain_ik.chains.add()
        item.name, item.tip, item.chain_length = "Leg", tip, 3
        for frame, on in ((1, True), (10, False)):
            item.contact = on
            item.keyframe_insert("contact", frame=frame)
        state = fcurve_state(rig)
        with pytest.raises(RuntimeError, match=words):
            bpy.ops.chain_ik.bake(frame_start=1, frame_end=20)
        assert fcurve_state(rig).keys() == state.keys()


@pytest.mark.parametrize(
    "first, last, planted",
    [
        # inside the first contact: shorter than the knee swivel's window (user13: a crash); the unbaked
        # motion goes on either side, and a hold must ease from and back to it within contact_blend
        # frames (4 at 24 fps) of each end: no room left, nothing held, and the report says so (user14)
        (8, 12, False),
        (4, 16, True),  # room for a hold (frames 8-12) eased in and out
        (20, 28, False),  # between the contacts: nothing held
        (FIRST, LAST, False),  # every Contact key off: nothing held (user13: "zip() argument 2 is longer")
    ],
)
def test_short_ranges_and_legs_without_contacts_bake(scene, first, last, planted):
    from test_contact_bake import toe_track

    obj = built_walk()
    item = obj.chain_ik.chains[0]
    if (first, last) == (FIRST, LAST):
        from chain_ik.rig import keys

        for fc in keys.assigned_fcurves(obj):
            if fc.data_path.endswith("contact"):
                for key in fc.keyframe_points:
                    key.co[1] = 0.0
                fc.update()
    frames = list(range(first, last + 1))
    before = toe_track(obj, frames)
    assert bpy.ops.chain_ik.bake(frame_start=first, frame_end=last) == {"FINISHED"}
    after = toe_track(obj, frames)
    if planted:  # held where it was on the hold's first frame, contact_blend frames in
        held = after[8 - first : 13 - first]
        assert max(abs(held - held[0]).max(axis=1)) < 1e-4
        assert np.allclose(held[0], before[8 - first], atol=1e-5)
    else:
        assert abs(after - before).max() < 1e-5
    if (first, last) == (8, 12):
        assert "1 contact(s) not held: frames 8-12" in item.contact_figures, item.contact_figures
        assert "Contact Blend" in item.contact_figures
    assert item.name == "Foot"
