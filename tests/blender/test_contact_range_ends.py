"""A planted bake over part of a clip (issue 21, user trial 14): a contact running across the range's
first or last frame eases from / back to the input inside the range, so the baked frames meet the
unbaked ones beside them without a jump (the hips too); keys outside the range are untouched; and a
contact keyed where the foot never comes down is dropped, not counted, and warned of."""

from __future__ import annotations

import bpy
import numpy as np
import pytest
from test_contact_bake import FIRST, LAST, built_walk, fcurve_state, toe_track

START, END = 10, 35  # cuts the built walk's contacts (6-17 and 30-40) and the hips' rise about 17


def _played(obj, frames) -> tuple[np.ndarray, np.ndarray]:
    """The leg's local rotations (F, 3, 4) and the hips' world head (F, 3) as they play."""
    scene, turns, hips = bpy.context.scene, [], []
    for frame in frames:
        scene.frame_set(int(frame))
        turns.append([np.array(obj.pose.bones[b].matrix_basis.to_quaternion()) for b in ("thigh", "shin", "foot")])
        hips.append(np.array(obj.matrix_world @ obj.pose.bones["hips"].head))
    scene.frame_set(FIRST)
    return np.array(turns), np.array(hips)


def _turns(rotations: np.ndarray) -> np.ndarray:
    """(F - 1,) the largest joint turn (degrees) from each frame to the next."""
    dots = np.abs(np.sum(rotations[:-1] * rotations[1:], axis=2)).clip(0.0, 1.0)
    return np.degrees(2.0 * np.arccos(dots)).max(axis=1)


@pytest.mark.parametrize("move_root", [True, False])
def test_a_bake_over_part_of_a_clip_meets_the_unbaked_frames_without_a_jump(scene, move_root):
    obj = built_walk(ground=-0.03, rise=0.06, knee=0.15)  # the ground snaps the holds 3 cm down
    obj.chain_ik.chains[0].move_root = move_root
    frames = np.arange(START - 3, END + 4)
    rotations_before, hips_before = _played(obj, frames)
    keys_before = fcurve_state(obj)
    assert bpy.ops.chain_ik.bake(frame_start=START, frame_end=END) == {"FINISHED"}
    rotations_after, hips_after = _played(obj, frames)
    own, turned = _turns(rotations_before), _turns(rotations_after)
    dz_own, dz = np.diff(hips_before[:, 2]), np.diff(hips_after[:, 2])
    for edge in (START - frames[0] - 1, END - frames[0]):  # the turn onto the range's first, off its last frame
        beside = max(turned[edge - 1], turned[edge + 1])
        assert turned[edge] <= max(own[edge], beside) + 0.5, (edge, turned, own)
        assert abs(dz[edge]) <= abs(dz_own[edge]) + 1e-3, (edge, dz, dz_own)
    # The bake did something inside the range, and nothing outside it.
    assert np.max(np.abs(rotations_after - rotations_before)) > 1e-3
    keys_after = fcurve_state(obj)
    for path, before in keys_before.items():
        if "contact" in path[0]:
            continue
        after = keys_after[path]
        outside = (before[:, 0] < START) | (before[:, 0] > END)
        kept = (after[:, 0] < START) | (after[:, 0] > END)
        assert np.array_equal(before[outside], after[kept]), path


def test_a_whole_clip_bake_holds_from_its_first_frame(scene):
    """Where the range starts at the scene's first frame no unbaked motion is met: the first contact
    is held from its first frame, as before (the bench's clips bake whole)."""
    obj = built_walk(ground=0.0)
    item = obj.chain_ik.chains[0]
    item.contact = True
    item.keyframe_insert("contact", frame=FIRST)  # the first contact now runs 1-17
    assert bpy.ops.chain_ik.bake(frame_start=FIRST, frame_end=LAST) == {"FINISHED"}
    assert item.contact_figures.startswith("2 contact(s)"), item.contact_figures
    assert "not held" not in item.contact_figures
    toe = toe_track(obj, [FIRST, FIRST + 1, FIRST + 4])
    assert np.max(np.linalg.norm(toe - toe[0], axis=1)) < 1e-4, toe


def test_a_contact_where_the_foot_never_comes_down_is_dropped_and_warned_of(scene):
    from chain_ik.app import bake as baking
    from chain_ik.app.bake import bake_report
    from chain_ik.app.spec import spec_from_item

    obj = built_walk()
    hips = obj.pose.bones["hips"]
    scene = bpy.context.scene
    for frame in range(20, LAST + 1):  # the hips (and the foot) rise fast from frame 20 to 28, then stay up
        scene.frame_set(frame)
        up = hips.location[1] + 0.05 * (min(frame, 28) - 20)
        hips.location = (hips.location[0], up, hips.location[2])
        hips.keyframe_insert("location", frame=frame)
    item = obj.chain_ik.chains[0]
    for frame, on in ((22, True), (26, False)):
        item.contact = on
        item.keyframe_insert("contact", frame=frame)
    for fc in obj.animation_data.action.fcurves if hasattr(obj.animation_data.action, "fcurves") else []:
        for key in fc.keyframe_points:
            if "contact" in fc.data_path:
                key.interpolation = "CONSTANT"
    result = baking.bake(bpy.context, obj, [spec_from_item(item)], baking.BakeOptions(FIRST, LAST))
    figures = result.chains[0].contacts
    assert figures["contacts"] == 2, figures
    assert [d[:2] for d in figures["dropped"]] == [[22, 25]], figures["dropped"]
    line = result.chains[0].line()
    assert "2 contact(s)" in line and "1 contact(s) not held: frames 22-25" in line and "never down" in line
    warning = bake_report.missed_warning(result.chains)
    assert "chain 'Foot'" in warning and "frames 22-25" in warning, warning
