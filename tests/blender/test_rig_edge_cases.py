"""Rigs and scenes that once went wrong silently: a shared action's slots (5.0), NLA tweak mode,
Inherit Scale under an animated parent, targets outside the view layer or following the chain
through a constraint, long key reduction, and the Adjust Last Operation panel."""

from __future__ import annotations

import bpy
import numpy as np
import pytest
from builders import add_empty, make_armature, playback_error, straight_chain

TOL = 1e-4


def _key_rotation(pbone, frame: int, quaternion) -> None:
    pbone.rotation_quaternion = quaternion
    pbone.keyframe_insert("rotation_quaternion", frame=frame)


def _moving_target(first: tuple[int, tuple], last: tuple[int, tuple]):
    """An empty "T" keyed at two frames (its location in between is interpolated)."""
    target = add_empty("T", first[1])
    target.keyframe_insert("location", frame=first[0])
    target.location = last[1]
    target.keyframe_insert("location", frame=last[0])
    return target


@pytest.mark.skipif(not hasattr(bpy.types, "ActionSlot"), reason="4.4+: layered actions with slots")
def test_bake_never_takes_a_slot_another_object_animates_through(scene):
    rig_a = straight_chain(3, "RigA")
    bpy.ops.object.mode_set(mode="OBJECT")
    rig_b = straight_chain(3, "RigB")
    bpy.ops.object.mode_set(mode="OBJECT")
    _key_rotation(rig_b.pose.bones["b1"], 5, (0.9, 0.4, 0.0, 0.0))
    action = rig_b.animation_data.action
    rig_a.animation_data_create()
    rig_a.animation_data.action = action  # Blender assigns no slot: RigB's is in use
    add_empty("T", (1.0, 0.0, 2.0))
    bpy.context.view_layer.objects.active = rig_a
    assert bpy.ops.chain_ik.bake(tip="b2", chain_length=3, target="T", frame_start=1, frame_end=10) == {"FINISHED"}
    assert rig_a.animation_data.action_slot != rig_b.animation_data.action_slot
    assert rig_a.animation_data.action_slot.identifier == "OBRigA"
    bpy.context.scene.frame_set(5)
    np.testing.assert_allclose(rig_b.pose.bones["b1"].rotation_quaternion[:], (0.9, 0.4, 0.0, 0.0), atol=1e-6)


def test_bake_in_nla_tweak_mode_keys_the_strips_own_frames(scene):
    obj = straight_chain(3)
    pbone = obj.pose.bones["b0"]
    _key_rotation(pbone, 1, (1.0, 0.0, 0.0, 0.0))
    _key_rotation(pbone, 20, (1.0, 0.0, 0.0, 0.0))
    ad = obj.animation_data
    track = ad.nla_tracks.new()
    strip = track.strips.new("s", 101, ad.action)  # action frames 1..20 play at scene frames 101..120
    ad.action = None
    track.select = strip.select = True
    ad.use_tweak_mode = True
    target = _moving_target((101, (1.0, 0.0, 2.0)), (120, (0.5, 0.8, 1.9)))
    bpy.context.view_layer.objects.active = obj
    assert bpy.ops.chain_ik.bake(tip="b2", chain_length=3, target="T", frame_start=101, frame_end=120) == {"FINISHED"}
    from chain_ik.rig.keys import action_fcurves

    assert {round(k.co[0]) for fc in action_fcurves(ad.action) for k in fc.keyframe_points} == set(range(1, 21))
    assert playback_error(obj, "b2", target, range(101, 121)) < TOL


@pytest.mark.parametrize("inherit", ["NONE", "AVERAGE", "ALIGNED"])
def test_bake_follows_a_parent_whose_scale_is_animated(scene, inherit):
    bones = [("base", (0, 0, 0), (0, 0, 1), None, False, 0), ("a", (0, 0, 1), (0, 0, 2), "base", True, 0)]
    obj = make_armature(bones + [("b", (0, 0, 2), (0, 0, 3), "a", True, 0)])
    obj.data.bones["a"].inherit_scale = inherit
    base = obj.pose.bones["base"]
    for frame, s in ((1, 1.0), (20, 0.6)):
        base.scale = (s, s, s)
        base.keyframe_insert("scale", frame=frame)
    target = _moving_target((1, (0.8, 0.0, 1.6)), (20, (0.5, 0.3, 1.4)))
    bpy.context.view_layer.objects.active = obj
    assert bpy.ops.chain_ik.bake(tip="b", chain_length=2, target="T", frame_start=1, frame_end=20) == {"FINISHED"}
    assert playback_error(obj, "b", target, range(1, 21)) < TOL


@pytest.mark.parametrize("where", ["excluded collection", "not in the scene"])
def test_target_outside_the_view_layer_is_refused(scene, where):
    obj = straight_chain(3)
    target = bpy.data.objects.new("Away", None)
    target.location = (1.0, 0.0, 2.0)
    if where == "excluded collection":
        coll = bpy.data.collections.new("Excl")
        bpy.context.scene.collection.children.link(coll)
        coll.objects.link(target)
        bpy.context.view_layer.layer_collection.children["Excl"].exclude = True
    before = [tuple(pb.rotation_quaternion) for pb in obj.pose.bones]
    for op in (bpy.ops.chain_ik.solve, bpy.ops.chain_ik.bake):
        with pytest.raises(RuntimeError, match="not in the view layer"):
            op(tip="b2", chain_length=2, target="Away")
    assert [tuple(pb.rotation_quaternion) for pb in obj.pose.bones] == before
    assert obj.animation_data is None or obj.animation_data.action is None


def test_target_following_the_chain_through_a_constraint_is_refused(scene):
    obj = straight_chain(3)
    bpy.ops.object.mode_set(mode="OBJECT")
    target = add_empty("T", (0.5, 0.0, 0.0))
    con = target.constraints.new("COPY_LOCATION")
    con.target, con.subtarget, con.use_offset = obj, "b1", True
    bpy.context.view_layer.objects.active = obj
    with pytest.raises(RuntimeError, match="moves with the chain"):
        bpy.ops.chain_ik.solve(tip="b2", chain_length=2, target="T")
    con.subtarget = "b0"  # above the 2-bone chain: it does not move with it
    assert bpy.ops.chain_ik.solve(tip="b2", chain_length=2, target="T") == {"FINISHED"}


def _reduce_naive(frames, values, tol):
    """The greedy reduction checked segment by segment (quadratic): the reference."""
    n = len(frames)
    if n <= 2:
        return np.arange(n)
    keep, anchor, j = [0], 0, 2
    while j < n:
        t = frames[anchor + 1 : j]
        line = values[anchor] + (t - frames[anchor]) / (frames[j] - frames[anchor]) * (values[j] - values[anchor])
        if np.max(np.abs(line - values[anchor + 1 : j])) > tol:
            anchor = j - 1
            keep.append(anchor)
            j = anchor + 2
        else:
            j += 1
    return np.array(keep + [n - 1])


def test_key_reduction_equals_the_segment_by_segment_greedy(ext):
    from chain_ik.solvers import keyfit

    rng = np.random.default_rng(3)
    for trial in range(200):
        n = int(rng.integers(1, 150))
        frames = np.cumsum(rng.uniform(0.5, 2.0, n))
        values = np.cumsum(rng.normal(0.0, 0.01, n)) if trial % 2 else np.sin(frames / 7.0) + rng.normal(0, 1e-4, n)
        tol = float(rng.choice([1e-4, 1e-3, 1e-2]))
        np.testing.assert_array_equal(keyfit.reduce_keys(frames, values, tol), _reduce_naive(frames, values, tol))
    # A long hold reduces to its two ends (the quadratic version took seconds per channel here).
    assert keyfit.reduce_keys(np.arange(100_000.0), np.zeros(100_000), 1e-3).tolist() == [0, 99_999]


@pytest.mark.parametrize("op", ["solve", "bake"])
def test_script_arguments_stay_out_of_the_adjust_last_operation_panel(ext, op):
    """Editing one there after a panel Solve would redo it on the active chain alone."""
    rna = getattr(bpy.ops.chain_ik, op).get_rna_type()
    for name in ("tip", "chain_length", "target", "target_bone", "method", "pole", "pole_bone", "pole_angle"):
        assert rna.properties[name].is_hidden, name
        assert rna.properties[name].is_skip_save, name


def test_bake_names_bones_whose_rotation_a_driver_sets(scene, capsys):
    obj = straight_chain(3)
    fcurve = obj.pose.bones["b1"].driver_add("rotation_quaternion", 0)
    fcurve.driver.expression = "1.0"
    add_empty("T", (1.0, 0.0, 2.0))
    bpy.context.view_layer.objects.active = obj
    assert bpy.ops.chain_ik.bake(tip="b2", chain_length=3, target="T", frame_start=1, frame_end=5) == {"FINISHED"}
    assert "drivers on the rotation of b1 override the baked keys" in capsys.readouterr().out


def test_bake_warns_when_the_action_blends_over_nla_strips(scene, capsys):
    obj = straight_chain(3)
    _key_rotation(obj.pose.bones["b1"], 1, (0.9, 0.4, 0.0, 0.0))
    ad = obj.animation_data
    ad.nla_tracks.new().strips.new("below", 1, ad.action)
    ad.action = bpy.data.actions.new("Top")
    ad.action_blend_type = "COMBINE"
    _key_rotation(obj.pose.bones["b1"], 1, (1.0, 0.0, 0.0, 0.0))  # keyed on top (else refused: it would override)
    add_empty("T", (1.0, 0.0, 2.0))
    bpy.context.view_layer.objects.active = obj
    assert bpy.ops.chain_ik.bake(tip="b2", chain_length=3, target="T", frame_start=1, frame_end=5) == {"FINISHED"}
    assert "the action blends (combine" in capsys.readouterr().out


@pytest.mark.parametrize(
    "case", ["no action", "other channels", "keyed on top", "strip elsewhere", "nla off", "strip muted", "fk bake"]
)
def test_bake_over_nla_strips(scene, case):
    """An NLA strip playing the chain's rotations and no F-Curve of the active action for them (no
    action, or one keying other channels): the bake's new F-Curves would override the strip on
    every frame, beyond the range too, so the bake (and IK to FK) refuses and changes nothing. A
    channel the active action keys already overrides the strip; a strip that plays other channels,
    or does not play (NLA off, muted), is no reason."""
    from chain_ik.rig.keys import action_fcurves

    obj = straight_chain(3)
    pose = obj.pose.bones
    if case == "strip elsewhere":
        pose["b0"].location = (0.0, 0.1, 0.0)
        pose["b0"].keyframe_insert("location", frame=1)
    else:
        _key_rotation(pose["b1"], 1, (0.9, 0.4, 0.0, 0.0))
    ad = obj.animation_data
    strip = ad.nla_tracks.new().strips.new("below", 1, ad.action)
    ad.action = None
    if case in ("other channels", "keyed on top"):
        pose["b2"].location = (0.0, 0.1, 0.0)
        pose["b2"].keyframe_insert("location", frame=1)  # a new active action, keying b2's location
        if case == "keyed on top":
            _key_rotation(pose["b1"], 1, (1.0, 0.0, 0.0, 0.0))
    ad.use_nla = case != "nla off"
    strip.mute = case == "strip muted"
    action = ad.action
    keys_before = {fc.data_path for fc in action_fcurves(action)} if action else set()
    add_empty("T", (1.0, 0.0, 2.0))
    bpy.context.view_layer.objects.active = obj
    if case == "fk bake":  # b1 keyed to follow b0 (only the refusal matters here)
        call = lambda: bpy.ops.chain_ik.bake_fk(pairs="b1:b0", frame_start=1, frame_end=5)  # noqa: E731
    else:
        call = lambda: bpy.ops.chain_ik.bake(tip="b2", chain_length=3, target="T", frame_start=1, frame_end=5)  # noqa: E731
    if case in ("no action", "other channels", "fk bake"):
        with pytest.raises(RuntimeError, match=r"NLA strip 'below' plays pose.bones\[.b1.\].*not only 1-5"):
            call()
        assert ad.action is action
        assert ({fc.data_path for fc in action_fcurves(action)} if action else set()) == keys_before
    else:
        assert call() == {"FINISHED"}


def test_bake_refuses_a_scale_that_turns_non_uniform_part_way(scene):
    """Checked on every frame, not only the first: a parent scaled unevenly at frame 10 would
    shear the chain, so the bake stops there and keys nothing."""
    bones = [("base", (0, 0, 0), (0, 0, 1), None, False, 0), ("a", (0, 0, 1), (0, 0, 2), "base", True, 0)]
    obj = make_armature(bones + [("b", (0, 0, 2), (0, 0, 3), "a", True, 0)])
    base = obj.pose.bones["base"]
    for frame, scale in ((1, (1.0, 1.0, 1.0)), (10, (1.0, 1.6, 0.7))):
        base.scale = scale
        base.keyframe_insert("scale", frame=frame)
    _moving_target((1, (0.8, 0.0, 1.6)), (20, (0.5, 0.3, 1.4)))
    bpy.context.view_layer.objects.active = obj
    with pytest.raises(RuntimeError, match=r"non-uniform scale.*\(at frame \d+\)"):
        bpy.ops.chain_ik.bake(tip="b", chain_length=2, target="T", frame_start=1, frame_end=20)
    from chain_ik.rig.keys import action_fcurves

    assert not [fc for fc in action_fcurves(obj.animation_data.action) if "rotation" in fc.data_path]


def test_bake_refuses_a_repeated_strip_in_tweak_mode(scene):
    obj = straight_chain(3)
    _key_rotation(obj.pose.bones["b0"], 1, (1.0, 0.0, 0.0, 0.0))
    _key_rotation(obj.pose.bones["b0"], 10, (1.0, 0.0, 0.0, 0.0))
    ad = obj.animation_data
    track = ad.nla_tracks.new()
    strip = track.strips.new("s", 1, ad.action)
    ad.action = None
    strip.repeat = 3.0
    track.select = strip.select = True
    ad.use_tweak_mode = True
    _moving_target((1, (1.0, 0.0, 2.0)), (28, (0.5, 0.8, 1.9)))
    bpy.context.view_layer.objects.active = obj
    with pytest.raises(RuntimeError, match="repeats the tweaked action 3 times"):
        bpy.ops.chain_ik.bake(tip="b2", chain_length=3, target="T", frame_start=1, frame_end=28)


def _constrained_target(obj, kind: str, bone: str, **settings):
    target = add_empty("T", (1.0, 0.0, 2.5))
    con = target.constraints.new(kind)
    if kind == "ARMATURE":
        for sub, weight in settings.pop("targets"):
            t = con.targets.new()
            t.target, t.subtarget, t.weight = obj, sub, weight
    else:
        con.target, con.subtarget = obj, bone
    for key, value in settings.items():
        setattr(con, key, value)
    return target


@pytest.mark.parametrize(
    ("kind", "bone", "settings"),
    [
        ("DAMPED_TRACK", "b3", {}),  # turns the target only: its location does not follow the chain
        ("COPY_SCALE", "b2", {}),
        ("CHILD_OF", "b3", {"influence": 0.0}),
        ("COPY_LOCATION", "b2", {"enabled": False}),
        ("ARMATURE", "", {"targets": [("b0", 1.0), ("b3", 0.0)]}),  # a parent switch set away from the chain
    ],
)
def test_targets_whose_location_does_not_follow_the_chain_are_accepted(scene, kind, bone, settings):
    obj = straight_chain(4)
    bpy.ops.object.mode_set(mode="OBJECT")
    _constrained_target(obj, kind, bone, **settings)
    bpy.context.view_layer.objects.active = obj
    assert bpy.ops.chain_ik.solve(tip="b3", chain_length=2, target="T") == {"FINISHED"}


def test_a_target_turned_by_the_chain_is_refused_when_its_rotation_is_used(scene):
    obj = straight_chain(4)
    bpy.ops.object.mode_set(mode="OBJECT")
    target = _constrained_target(obj, "DAMPED_TRACK", "b3")
    bpy.context.view_layer.objects.active = obj
    item = obj.chain_ik.chains.add()
    item.tip, item.chain_length, item.target, item.use_rotation = "b3", 2, target, True
    with pytest.raises(RuntimeError, match="moves with the chain"):
        bpy.ops.chain_ik.solve()


def test_a_child_starting_at_its_parents_head_inside_a_chain_is_named(scene):
    """As Rigify's MCH-ROT-head under the head: the parent has length, the link to its child has
    none; the message names both and what to do (it named the parent 'zero length')."""
    obj = make_armature(
        [
            ("neck", (0, 0, 0), (0, 0, 1), None, False, 0.0),
            ("rot", (0, 0, 1), (0, 0.2, 1), "neck", True, 0.0),
            ("head", (0, 0, 1), (0, 0, 1.5), "rot", False, 0.0),
        ]
    )
    bpy.ops.object.mode_set(mode="OBJECT")
    add_empty("T", (0.5, 0.0, 1.2))
    bpy.context.view_layer.objects.active = obj
    match = r"bone 'head' starts at the head of its parent 'rot'.*start the chain at 'head'"
    with pytest.raises(RuntimeError, match=match):
        bpy.ops.chain_ik.solve(tip="head", chain_length=3, target="T")


def test_a_child_starting_at_its_parents_head_inside_a_group_is_named(scene):
    """The same in a group solved by triangulation's tree pass: its segment's own bone numbers once
    named other bones of the tree ('neck' starts at 'chest')."""
    obj = make_armature(
        [
            ("spine", (0, 0, 0), (0, 0, 1), None, False, 0.0),
            ("chest", (0, 0, 1), (0, 0, 2), "spine", True, 0.0),
            ("neck", (0, 0, 2), (0, 0, 2.3), "chest", True, 0.0),
            ("rot", (0, 0, 2.3), (0, 0.2, 2.3), "neck", True, 0.0),
            ("head", (0, 0, 2.3), (0, 0, 2.8), "rot", False, 0.0),
            ("arm", (0, 0, 2), (1, 0, 2), "chest", False, 0.0),
            ("hand", (1, 0, 2), (1.5, 0, 2), "arm", True, 0.0),
        ]
    )
    bpy.ops.object.mode_set(mode="OBJECT")
    chains = obj.chain_ik.chains
    for name, tip, length, at in (("Head", "head", 5, (0.5, 0, 2.6)), ("Arm", "hand", 4, (1.2, 0.3, 1.8))):
        item = chains.add()
        item.name, item.tip, item.chain_length, item.target = name, tip, length, add_empty(name, at)
    bpy.context.view_layer.objects.active = obj
    with pytest.raises(RuntimeError, match=r"bone 'head' starts at the head of its parent 'rot'"):
        bpy.ops.chain_ik.solve()
