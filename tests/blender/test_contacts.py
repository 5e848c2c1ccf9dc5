"""Detect Contacts / Clear Contacts on a small built walk: contacts keyed where the foot was built to
stand, as CONSTANT keys of `chain_ik.chains[i].contact` replacing only their own keys in the range;
ground by raycast; keys survive save and reload; bad input refused, changing nothing."""

from __future__ import annotations

import bpy
import numpy as np
import pytest
from builders import add_empty, make_armature

# The built walk (24 fps): the armature object stands still on frames 1-12, 20-32, 40-52, 60-72 and
# steps 0.6 forward (15 cm up at mid-swing) in between. Expected contacts: the standing frames; the
# speed over 1/30 s (one frame at 24 fps, looking back) sees the landing frame still moving.
STANCES = [(1, 12), (20, 32), (40, 52), (60, 72)]
FIRST, LAST = 1, 72


def walking_leg(name: str = "Rig"):
    """A leg (thigh, shin, foot; the foot's head the ankle 10 cm up, its tail the toe on the floor)
    whose armature object steps as STANCES say; one chain 'Foot' (thigh to foot)."""
    obj = make_armature(
        [
            ("hips", (0.1, 0, 1.0), (0.1, 0, 1.1), None, False, 0.0),
            ("thigh", (0.1, 0, 1.0), (0.1, 0, 0.55), "hips", False, 0.0),
            ("shin", (0.1, 0, 0.55), (0.1, 0, 0.1), "thigh", True, 0.0),
            ("foot", (0.1, 0, 0.1), (0.1, -0.2, 0.0), "shin", True, 0.0),
        ],
        name,
    )
    bpy.ops.object.mode_set(mode="OBJECT")
    scene = bpy.context.scene
    scene.render.fps, scene.render.fps_base = 24, 1.0
    scene.frame_start, scene.frame_end = FIRST, LAST
    y = 0.0
    for k, (start, end) in enumerate(STANCES):
        for frame in (start, end):
            obj.location = (0.0, y, 0.0)
            obj.keyframe_insert("location", frame=frame)
        if k + 1 < len(STANCES):
            obj.location = (0.0, y - 0.3, 0.15)
            obj.keyframe_insert("location", frame=(end + STANCES[k + 1][0]) // 2)
            y -= 0.6
    for fc in fcurves(obj):
        for key in fc.keyframe_points:
            key.interpolation = "LINEAR"
    item = obj.chain_ik.chains.add()
    item.name, item.tip, item.chain_length = "Foot", "foot", 3
    scene.frame_set(FIRST)
    return obj


def fcurves(obj) -> list:
    from chain_ik.rig import keys

    return keys.assigned_fcurves(obj)


def contact_keys(obj, index: int = 0) -> list[tuple[float, float, str]]:
    path = f"chain_ik.chains[{index}].contact"
    curve = next((fc for fc in fcurves(obj) if fc.data_path == path), None)
    return [] if curve is None else [(k.co[0], k.co[1], k.interpolation) for k in curve.keyframe_points]


def played(obj, item_index: int = 0) -> list[int]:
    """The frames on which the chain's contact is on, by playing the scene."""
    scene = bpy.context.scene
    on = []
    for frame in range(FIRST, LAST + 1):
        scene.frame_set(frame)
        if obj.chain_ik.chains[item_index].contact:
            on.append(frame)
    return on


def built_frames(slack_start: int = 0) -> set[int]:
    return {f for start, end in STANCES for f in range(start + (slack_start if start > FIRST else 0), end + 1)}


@pytest.fixture
def leg(scene):
    return walking_leg()


def test_contacts_are_keyed_where_the_foot_stands(leg):
    assert bpy.ops.chain_ik.detect_contacts() == {"FINISHED"}
    assert set(played(leg)) == built_frames(slack_start=1)
    keyed = contact_keys(leg)
    assert {interp for _, _, interp in keyed} == {"CONSTANT"}
    # Keys where the contact changes, and at both ends of the range: 4 contacts, 3 swings.
    assert [(f, v) for f, v, _ in keyed] == [
        (1, 1), (13, 0), (21, 1), (33, 0), (41, 1), (53, 0), (61, 1), (72, 1)
    ]  # fmt: skip
    # The motion's own keys are untouched.
    assert {fc.data_path for fc in fcurves(leg)} == {"location", "chain_ik.chains[0].contact"}


def test_the_contact_curve_is_an_animation_channel(leg):
    bpy.ops.chain_ik.detect_contacts()
    curve = next(fc for fc in fcurves(leg) if fc.data_path.endswith(".contact"))
    assert curve.group is not None and curve.group.name == "Chain IK Contacts"
    assert leg.path_resolve(curve.data_path) in (True, False)
    prop = leg.chain_ik.chains[0].bl_rna.properties["contact"]
    assert prop.is_animatable
    # A user keys it like any property; the key lands on the same F-Curve.
    item = leg.chain_ik.chains[0]
    item.contact = False
    assert item.keyframe_insert("contact", frame=5)
    assert (5.0, 0.0) in [(f, v) for f, v, _ in contact_keys(leg)]


def test_detection_replaces_only_its_own_keys_in_the_range(leg):
    item = leg.chain_ik.chains[0]
    for frame, value in ((1, True), (30, False), (70, True)):
        item.contact = value
        item.keyframe_insert("contact", frame=frame)
    location = [[tuple(k.co) for k in fc.keyframe_points] for fc in fcurves(leg) if fc.data_path == "location"]
    assert bpy.ops.chain_ik.detect_contacts(frame_start=15, frame_end=45) == {"FINISHED"}
    keyed = [(f, v) for f, v, _ in contact_keys(leg)]
    assert (1.0, 1.0) in keyed and (70.0, 1.0) in keyed and (30.0, 0.0) not in keyed
    assert all(f in (1.0, 70.0) or 15 <= f <= 45 for f, _ in keyed)
    assert [[tuple(k.co) for k in fc.keyframe_points] for fc in fcurves(leg) if fc.data_path == "location"] == location
    # Inside the range, the detected contacts play back.
    assert {f for f in played(leg) if 15 <= f <= 45} == {f for f in built_frames(1) if 15 <= f <= 45}


def test_scope_and_muted_chains(leg):
    other = leg.chain_ik.chains.add()
    other.name, other.tip, other.chain_length = "Other", "foot", 2
    other.mute = True
    assert bpy.ops.chain_ik.detect_contacts() == {"FINISHED"}
    assert contact_keys(leg, 0) and not contact_keys(leg, 1)
    leg.chain_ik.scope = "SELECTED"
    other.mute, other.select = False, True
    assert bpy.ops.chain_ik.detect_contacts() == {"FINISHED"}
    assert contact_keys(leg, 1)


def test_contact_keys_survive_save_and_reload(leg, tmp_path):
    bpy.ops.chain_ik.detect_contacts()
    before = contact_keys(leg)
    path = str(tmp_path / "walk.blend")
    bpy.ops.wm.save_as_mainfile(filepath=path)
    bpy.ops.wm.open_mainfile(filepath=path)
    obj = bpy.data.objects["Rig"]
    assert contact_keys(obj) == before
    assert set(played(obj)) == built_frames(slack_start=1)


def test_ground_by_raycast(leg):
    """A ground plane under the walk: the same contacts, measured as heights above it."""
    bpy.ops.mesh.primitive_plane_add(size=20.0, location=(0.0, 0.0, 0.0))
    plane = bpy.context.object
    bpy.context.view_layer.objects.active = leg
    leg.chain_ik.ground = plane
    assert bpy.ops.chain_ik.detect_contacts() == {"FINISHED"}
    assert set(played(leg)) == built_frames(slack_start=1)


def test_ground_rays_start_where_mathutils_puts_them(scene):
    """rig.ground's rays start from the points lifted in one numpy call (`_lifted`): to the bit the
    origins mathutils makes (Vector(p) + Vector((0, 0, reach)), 32-bit), so heights and normals are
    the ray casts from those origins, NaN where no face is below."""
    from chain_ik.rig import ground
    from mathutils import Vector

    rng = np.random.default_rng(4)
    points = np.concatenate((rng.normal(0.0, 3.0, (40, 3)), rng.normal(0.0, 3.0, (40, 3)) + [0.0, 0.0, 1e4]))
    for reach in (0.25, 0.1, 1e-3):
        made = [Vector(p) + Vector((0.0, 0.0, reach)) for p in points.tolist()]
        assert np.array_equal(ground._lifted(points, reach), np.array(made, dtype=np.float32))
    mesh = bpy.data.meshes.new("Slope")
    mesh.from_pydata([(-5, -5, -1), (5, -5, 1), (5, 5, 1.5), (-5, 5, -0.5)], [], [(0, 1, 2, 3)])
    slope = bpy.data.objects.new("Slope", mesh)
    bpy.context.scene.collection.objects.link(slope)
    probe = ground.GroundProbe(bpy.context, slope)
    points[:, 2] = rng.uniform(-1.0, 2.0, len(points))
    heights, normals = probe.heights_below(points, 0.25), probe.normals_below(points, 0.25)
    for p, height, normal in zip(points.tolist(), heights.tolist(), normals.tolist(), strict=True):
        hit, face_normal = probe.tree.ray_cast(Vector(p) + Vector((0.0, 0.0, 0.25)), ground.DOWN)[:2]
        if hit is None:
            assert np.isnan(height) and np.isnan(normal).all()
        else:
            assert height == hit.z and normal[2] > 0.0
            assert np.allclose(normal, face_normal.normalized() * np.sign(face_normal.z), atol=1e-7)
    assert np.isnan(heights).any() and not np.isnan(heights).all()


@pytest.mark.parametrize("muted", ["curve", "group"])
def test_muted_curves_are_read_as_they_play(leg, muted):
    """Playback skips a muted F-Curve (and, on 4.2's actions, a curve of a muted group; 5.0's
    layered actions play it), leaving the property as it is: the Contacts and the hips' location
    are read as playback has them (rig.contacts.read_contacts and played_contacts, which the
    planted bake reads, root_location.played_locations), not from keys it skips."""
    from chain_ik.rig import contacts, keys, root_location

    item = leg.chain_ik.chains[0]
    contacts.write_contacts(leg, item, np.arange(1, 15), np.arange(1, 15) > 5)
    hips = leg.pose.bones["hips"]
    for frame, z in ((1, 0.0), (20, 0.3)):
        hips.location = (0.0, 0.0, z)
        hips.keyframe_insert("location", frame=frame, group="hips")
    curves = [contacts.contact_curve(leg, item), keys.assigned_fcurve(leg, keys.data_path("hips", "location"), 2)]
    for curve in curves:
        if muted == "curve":
            curve.mute = True
        elif curve.group is not None:
            curve.group.mute = True
    assert curves[1].group is not None and (muted == "curve" or curves[1].group.mute)
    item.contact, hips.location = False, (0.0, 0.0, 0.05)
    frames = np.arange(1.0, 16.0)
    played, located = [], []
    for frame in frames.tolist():
        bpy.context.scene.frame_set(int(frame))
        played.append(item.contact)
        located.append(tuple(hips.location))
    assert contacts.read_contacts(leg, item, frames).tolist() == played
    assert contacts.played_contacts(leg, contacts.contact_path(item), frames).tolist() == played
    assert np.array_equal(root_location.played_locations(leg, "hips", frames), np.array(located, dtype=np.float32))
    assert (muted == "curve") <= (not any(played) and len(set(located)) == 1)  # (the muted keys do not play)


def _played(obj, frames) -> np.ndarray:
    from chain_ik.rig import contacts

    return contacts.read_contacts(obj, obj.chain_ik.chains[0], frames)


@pytest.mark.parametrize(("start", "end"), [(15, 45), (5, 8), (10, 25), (12, 20), (1, 30), (33, 39), (50, 100)])
def test_clear_contacts_takes_off_only_its_frames(leg, start, end):
    """Clear over a range: its frames off, every other frame playing as before (user14: an off key
    removed inside the range ran a contact on past it, an on key removed lost the rest of it)."""
    bpy.ops.chain_ik.detect_contacts()
    frames = np.arange(FIRST - 3, LAST + 4)
    before = _played(leg, frames)
    assert bpy.ops.chain_ik.clear_contacts(frame_start=start, frame_end=end) == {"FINISHED"}
    inside = (frames >= start) & (frames <= end)
    after = _played(leg, frames)
    assert not after[inside].any()
    assert np.array_equal(after[~inside], before[~inside]), (start, end)
    assert all(kind == "CONSTANT" for _, _, kind in contact_keys(leg))


def test_clear_contacts(leg):
    bpy.ops.chain_ik.detect_contacts()
    assert bpy.ops.chain_ik.clear_contacts(frame_start=15, frame_end=45) == {"FINISHED"}
    assert all(not 15 < f <= 45 for f, _, _ in contact_keys(leg))  # (an off key on 15 where needed)
    assert bpy.ops.chain_ik.clear_contacts() == {"FINISHED"}
    assert contact_keys(leg) == [] and not leg.chain_ik.chains[0].contact
    assert {fc.data_path for fc in fcurves(leg)} == {"location"}


def test_removing_a_chain_carries_the_keys_of_the_chains_after_it(leg):
    second = leg.chain_ik.chains.add()
    second.name, second.tip, second.chain_length = "Second", "foot", 2
    third = leg.chain_ik.chains.add()
    third.name, third.tip, third.chain_length = "Third", "foot", 1
    for i, item in enumerate(leg.chain_ik.chains):
        item.contact = bool(i % 2)
        item.keyframe_insert("contact", frame=10 + i)
    bpy.context.view_layer.objects.active = leg
    leg.chain_ik.active_index = 1
    assert bpy.ops.chain_ik.chain_remove() == {"FINISHED"}
    assert [c.name for c in leg.chain_ik.chains] == ["Foot", "Third"]
    assert [(f, v) for f, v, _ in contact_keys(leg, 0)] == [(10.0, 0.0)]
    assert [(f, v) for f, v, _ in contact_keys(leg, 1)] == [(12.0, 0.0)]
    assert not contact_keys(leg, 2)


def _state(obj) -> tuple:
    ad = obj.animation_data
    curves = sorted((fc.data_path, tuple(tuple(k.co) for k in fc.keyframe_points)) for fc in fcurves(obj))
    return (ad.action.name if ad and ad.action else None, curves, [c.contact for c in obj.chain_ik.chains])


@pytest.mark.parametrize(
    ("setup", "arguments", "message"),
    [
        (lambda obj: None, {"frame_start": 20, "frame_end": 10}, "no frames"),
        (lambda obj: None, {"frame_start": 1, "frame_end": 2_000_000}, "beyond Blender's limit"),
        (lambda obj: None, {"height": float("nan")}, "height threshold must be a finite number"),
        (lambda obj: None, {"speed": float("inf")}, "speed threshold must be a finite number"),
        (lambda obj: setattr(obj.chain_ik.chains[0], "tip", ""), {}, "chain 'Foot': no tip bone set"),
        (lambda obj: setattr(obj.chain_ik.chains[0], "tip", "hand"), {}, "has no bone 'hand'"),
        (lambda obj: setattr(obj.chain_ik.chains[0], "chain_length", 9), {}, "longer than the hierarchy"),
        (lambda obj: obj.chain_ik.chains.clear(), {}, "no chains"),
        (lambda obj: setattr(obj.chain_ik.chains[0], "mute", True), {}, "muted"),
        (
            lambda obj: setattr(obj.chain_ik, "ground", add_empty("NotMesh")),
            {},
            "'NotMesh' is not a mesh \\(its type is EMPTY\\)",
        ),
        (lambda obj: setattr(obj.chain_ik, "ground", _faceless()), {}, "no faces"),
        (lambda obj: setattr(obj.chain_ik, "ground", _small_plane()), {}, "not above the ground 'Small' at frame"),
        (lambda obj: _lock_contact_curve(obj), {}, "locked F-Curves"),
    ],
)
def test_bad_input_is_refused_changing_nothing(leg, setup, arguments, message):
    setup(leg)
    bpy.context.view_layer.objects.active = leg
    bpy.context.scene.frame_set(5)
    before = _state(leg)
    with pytest.raises(RuntimeError, match=message):
        bpy.ops.chain_ik.detect_contacts(**arguments)
    assert _state(leg) == before
    assert bpy.context.scene.frame_current == 5


def _faceless():
    mesh = bpy.data.meshes.new("Points")
    mesh.from_pydata([(0, 0, 0), (1, 0, 0)], [], [])
    obj = bpy.data.objects.new("Points", mesh)
    bpy.context.scene.collection.objects.link(obj)
    return obj


def _small_plane():
    mesh = bpy.data.meshes.new("Small")
    mesh.from_pydata([(-0.5, -0.5, 0), (0.5, -0.5, 0), (0.5, 0.5, 0), (-0.5, 0.5, 0)], [], [(0, 1, 2, 3)])
    obj = bpy.data.objects.new("Small", mesh)
    bpy.context.scene.collection.objects.link(obj)
    return obj


def test_a_ground_blender_does_not_evaluate_is_refused(leg):
    """Disabled in viewports (and pulled into the scene's evaluation by nothing): Blender does not
    evaluate it, so its mesh and place would be stale."""
    from chain_ik.rig.ground import GroundProbe, ground_refusal

    plane = _small_plane()
    bpy.context.view_layer.update()
    assert ground_refusal(bpy.context, plane) == ""
    plane.hide_viewport = True
    assert "disabled in viewports" in ground_refusal(bpy.context, plane)
    with pytest.raises(ValueError, match="disabled in viewports"):
        GroundProbe(bpy.context, plane)


def _lock_contact_curve(obj) -> None:
    item = obj.chain_ik.chains[0]
    item.keyframe_insert("contact", frame=1)
    next(fc for fc in fcurves(obj) if fc.data_path.endswith(".contact")).lock = True


def test_the_report_counts_contacts_per_chain(leg, capsys):
    """Measured on the written keys: 4 contacts; the frames planted."""
    from chain_ik.app.spec import contacts

    result = contacts.detect(bpy.context, leg, FIRST, LAST)
    assert [(c.name, c.contacts, c.planted) for c in result.chains] == [("Foot", 4, len(built_frames(1)))]
    assert result.chains[0].settings.height == pytest.approx(0.03 * sum((0.45, 0.45, np.hypot(0.2, 0.1))))


def test_undo_flags(ext):
    from chain_ik.operators import contacts

    for cls in contacts.CLASSES:
        assert {"REGISTER", "UNDO"} <= cls.bl_options


@pytest.mark.parametrize("variant", ["constant", "user key", "linear", "modifier", "fractional"])
def test_played_flags_are_the_curve_as_it_plays(leg, variant):
    """rig.contacts.played_flags reads CONSTANT 0/1 keys in one call: on every frame the same flags as
    `FCurve.evaluate(frame) > 0.5`, before the first key, after the last, on keys and near them
    (fractional frames); other curves (a LINEAR key, a modifier) evaluated frame by frame."""
    from chain_ik.rig import contacts, keys

    item = leg.chain_ik.chains[0]
    planted = np.array([f in (3, 4, 5, 9, 10, 11, 12) for f in range(1, 15)])
    contacts.write_contacts(leg, item, np.arange(1, 15), planted)
    curve = contacts.contact_curve(leg, item)
    if variant == "user key":
        item.contact = True
        assert item.keyframe_insert("contact", frame=7)
    elif variant == "linear":
        curve.keyframe_points[1].interpolation = "LINEAR"
    elif variant == "modifier":
        curve.modifiers.new("NOISE")
    elif variant == "fractional":
        curve.keyframe_points[2].co.x += 0.5
        curve.keyframe_points[3].co.x -= 0.0004
    frames = np.concatenate((np.arange(-2.0, 18.0), np.arange(-2.0, 18.0, 0.25), [2.9995, 3.0004, 8.5, 8.5001]))
    expected = [curve.evaluate(float(f)) > 0.5 for f in frames]
    assert contacts.played_flags(curve, frames).tolist() == expected
    assert (contacts.step_keys(curve) is None) == (variant in ("linear", "modifier"))
    assert keys.INTERPOLATIONS[contacts.CONSTANT] == "CONSTANT"


def test_contact_plays_on_a_chain_added_from_a_script(leg):
    """A chain added from a script is not in the evaluated copy until the object is made again:
    Detect tags it, so playback sets the keyed Contact (user13: it stayed as it was until reopened)."""
    source = leg.chain_ik.chains[0]
    bpy.context.view_layer.update()  # the evaluated copy made before the chain is added
    item = leg.chain_ik.chains.add()
    item.name, item.tip, item.chain_length = "Again", source.tip, source.chain_length
    assert bpy.ops.chain_ik.detect_contacts() == {"FINISHED"}
    assert set(played(leg, 1)) == set(played(leg, 0)) == built_frames(slack_start=1)


def test_detect_warns_of_a_chain_a_bake_will_refuse(leg):
    """Detect keys a two-bone chain's contacts (its foot's), and says a bake with them will refuse
    it (user13: found only when baking)."""
    from chain_ik.app.spec import contacts as found

    leg.chain_ik.chains[0].chain_length = 2
    result = found.detect(bpy.context, leg, FIRST, LAST)
    assert result.chains[0].contacts >= 1
    (warning,) = result.warnings
    assert warning.startswith("chain 'Foot' has contacts but is not a leg it can plant: a chain with contacts")
    assert warning.endswith(": a bake with them will refuse it (its contacts are keyed)")
    leg.chain_ik.chains[0].chain_length = 3
    assert not found.detect(bpy.context, leg, FIRST, LAST).warnings


def test_detect_warns_of_frames_beyond_the_motion(leg):
    """Frames past the clip's keys hold the pose still: a foot there reads as planted, which Detect
    says (user13: 1,001 frames planted past a clip's end, no word)."""
    from chain_ik.app.spec import contacts as found

    assert not found.detect(bpy.context, leg, FIRST, LAST).warnings
    (warning,) = found.detect(bpy.context, leg, FIRST, LAST + 10).warnings
    assert warning.startswith("10 of the 82 frames lie beyond the motion's keys (frames 1-72 of its action)")


def test_no_beyond_warning_where_the_motion_goes_on(leg):
    """A cycle (an F-Curve modifier) or NLA strips play past the action's keys: no warning there
    (review13b: both warned)."""
    from chain_ik.app.spec import contacts as found
    from chain_ik.rig import keys

    motion = [fc for fc in keys.assigned_fcurves(leg) if not fc.data_path.startswith("chain_ik.")]
    for fc in motion:
        fc.modifiers.new("CYCLES")
    assert not found.detect(bpy.context, leg, FIRST, LAST + 10).warnings
    for fc in motion:
        fc.modifiers.remove(fc.modifiers[0])
    assert found.detect(bpy.context, leg, FIRST, LAST + 10).warnings
    track = leg.animation_data.nla_tracks.new()
    track.strips.new("Walk", FIRST, leg.animation_data.action)
    assert not found.detect(bpy.context, leg, FIRST, LAST + 10).warnings


def test_a_bake_of_a_chain_whose_contacts_were_cleared_says_how_to_plant_it(leg):
    """user14: after Clear Contacts the bake said only 'has no target object'."""
    bpy.ops.chain_ik.detect_contacts()
    assert bpy.ops.chain_ik.clear_contacts() == {"FINISHED"}
    from chain_ik.app import bake as baking
    from chain_ik.app.spec import spec_from_item

    with pytest.raises(ValueError, match="no target object, no pin and no contacts: .* Detect Contacts"):
        baking.bake(bpy.context, leg, [spec_from_item(leg.chain_ik.chains[0])], baking.BakeOptions(FIRST, LAST))
