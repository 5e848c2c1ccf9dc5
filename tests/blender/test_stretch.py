"""IK stretch (issue 12 item 2) in Blender: PoseBone.ik_stretch and the chain's Stretch option,
against Blender's own IK constraint with Stretch on the same chain."""

from __future__ import annotations

import bpy
import numpy as np
import pytest
from builders import add_empty, make_armature, world_point

WEIGHTS = {"b0": 0.0, "b1": 1.0, "b2": 0.5}
FAR = (0.6, 0.4, 4.6)  # 4.66 from the root, beyond the chain's reach of 2.94
NEAR = (0.8, 0.2, 2.0)
TOL = 1e-4


def _bent(name: str):
    bones = [
        ("b0", (0, 0, 0), (0, 0, 1), None, False, 0.0),
        ("b1", (0, 0, 1), (0.6, 0, 1.8), "b0", True, 20.0),
        ("b2", (0.6, 0, 1.8), (0.2, 0.3, 2.6), "b1", True, -40.0),
    ]
    obj = make_armature(bones, name)
    for n, w in WEIGHTS.items():
        obj.pose.bones[n].ik_stretch = w
        obj.pose.bones[n].rotation_mode = "QUATERNION"
    return obj


def _chain(obj, target, method: str = "triangulation", use_stretch: bool = True):
    item = obj.chain_ik.chains.add()
    item.tip, item.chain_length, item.target, item.method = "b2", 3, target, method
    item.use_stretch = use_stretch
    return item


def _world_y_scales(obj) -> dict[str, float]:
    bpy.context.view_layer.update()
    return {n: obj.pose.bones[n].matrix.col[1].xyz.length for n in WEIGHTS}


def _solve(obj) -> None:
    bpy.context.view_layer.objects.active = obj
    assert bpy.ops.chain_ik.solve() == {"FINISHED"}


@pytest.mark.parametrize("method", ["triangulation", "fabrik", "jacobian"])
def test_far_target_reached_with_stretch_only(scene, method):
    obj = _bent("Rig")
    target = add_empty("Goal", FAR)
    _chain(obj, target, method)
    _solve(obj)
    assert np.linalg.norm(world_point(obj, "b2") - np.array(FAR)) < TOL
    scales = {n: tuple(obj.pose.bones[n].scale) for n in WEIGHTS}
    assert scales["b0"] == (1.0, 1.0, 1.0)  # ik_stretch 0: never scaled
    assert scales["b1"][0] == scales["b1"][2] == scales["b2"][0] == scales["b2"][2] == 1.0  # along Y only
    world = _world_y_scales(obj)  # b2's channel divides out what it inherits from b1
    assert world["b0"] == pytest.approx(1.0, abs=1e-6)
    assert world["b1"] > world["b2"] > 1.0  # ik_stretch 1 stretches more than 0.5
    # Stretch off (on a fresh rig): the same target is missed by the overshoot, nothing scales.
    off = _bent("Off")
    _chain(off, target, method, use_stretch=False)
    _solve(off)
    assert np.linalg.norm(world_point(off, "b2") - np.array(FAR)) > 0.5
    assert all(tuple(off.pose.bones[n].scale) == (1.0, 1.0, 1.0) for n in WEIGHTS)


def test_back_within_reach_resets_stretch_and_rereads_rest_lengths(scene):
    obj = _bent("Rig")
    target = add_empty("Goal", FAR)
    _chain(obj, target)
    _solve(obj)
    _solve(obj)  # a second solve on the stretched chain must not stretch further
    assert np.linalg.norm(world_point(obj, "b2") - np.array(FAR)) < TOL
    target.location = NEAR
    _solve(obj)
    assert np.linalg.norm(world_point(obj, "b2") - np.array(NEAR)) < TOL
    for n in WEIGHTS:
        assert tuple(obj.pose.bones[n].scale) == pytest.approx((1.0, 1.0, 1.0), abs=1e-7)


def test_no_stretchable_bone_behaves_as_before(scene):
    obj = _bent("Rig")
    for n in WEIGHTS:
        obj.pose.bones[n].ik_stretch = 0.0
    target = add_empty("Goal", FAR)
    _chain(obj, target)
    _solve(obj)
    assert all(tuple(obj.pose.bones[n].scale) == (1.0, 1.0, 1.0) for n in WEIGHTS)
    assert np.linalg.norm(world_point(obj, "b2") - np.array(FAR)) > 0.5


def test_against_blender_ik_constraint_with_stretch(scene):
    """The same chain and target under Blender's IK constraint (Stretch on, same ik_stretch)."""
    ours = _bent("Ours")
    ref = _bent("Ref")
    target = add_empty("Goal", FAR)
    _chain(ours, target)
    con = ref.pose.bones["b2"].constraints.new("IK")
    con.target, con.chain_count, con.use_stretch, con.iterations = target, 3, True, 500
    _solve(ours)
    tip_ours = np.linalg.norm(world_point(ours, "b2") - np.array(FAR))
    tip_ref = np.linalg.norm(world_point(ref, "b2") - np.array(FAR))
    s_ours, s_ref = _world_y_scales(ours), _world_y_scales(ref)
    print(f"\nIK stretch vs Blender IK (target {FAR}, reach 2.94, ik_stretch {WEIGHTS}):")
    print(f"  tip error: Chain IK {tip_ours:.2e}, Blender IK {tip_ref:.2e}")
    for n in WEIGHTS:
        print(f"  {n}: Y scale Chain IK {s_ours[n]:.4f}  Blender IK {s_ref[n]:.4f}")
    assert tip_ours < TOL
    assert s_ours["b0"] == pytest.approx(1.0, abs=1e-6) and s_ref["b0"] == pytest.approx(1.0, abs=1e-3)
    # Both stretch the ik_stretch 1 bone more than the 0.5 one.
    assert s_ours["b1"] > s_ours["b2"] > 1.0 and s_ref["b1"] > s_ref["b2"]


def _keyed_target():
    """Within reach at frames 1 and 21, beyond it around frame 11 (linear keys)."""
    target = add_empty("Goal", NEAR)
    for frame, where in ((1, NEAR), (11, FAR), (21, NEAR)):
        target.location = where
        target.keyframe_insert("location", frame=frame)
    ad = target.animation_data
    curves = ad.action.fcurves if hasattr(ad.action, "fcurves") else None
    if curves is None:
        from bpy_extras.anim_utils import animdata_get_channelbag_for_assigned_slot

        curves = animdata_get_channelbag_for_assigned_slot(ad).fcurves
    for fc in curves:
        for k in fc.keyframe_points:
            k.interpolation = "LINEAR"
    return target


@pytest.mark.parametrize("method", ["triangulation", "fabrik"])
def test_bake_keys_scale_on_stretched_bones_only_and_plays_back(scene, method):
    from test_bake import fcurves

    obj = _bent("Rig")
    target = _keyed_target()
    bpy.context.view_layer.objects.active = obj
    result = bpy.ops.chain_ik.bake(
        tip="b2", chain_length=3, target=target.name, method=method, frame_start=1, frame_end=21
    )
    assert result == {"FINISHED"}
    scale_curves = sorted((fc.data_path, fc.array_index) for fc in fcurves(obj) if fc.data_path.endswith(".scale"))
    assert scale_curves == [('pose.bones["b1"].scale', 1), ('pose.bones["b2"].scale', 1)]
    scene = bpy.context.scene
    stretched = 0
    for frame in range(1, 22):
        scene.frame_set(frame)
        goal = np.array(target.matrix_world.translation[:])
        assert np.linalg.norm(world_point(obj, "b2") - goal) < TOL, frame
        world = _world_y_scales(obj)
        assert world["b0"] == pytest.approx(1.0, abs=1e-6)
        stretched += world["b1"] > 1.0 + 1e-6
    assert 0 < stretched < 21  # stretched around the far frames only
    scene.frame_set(1)
    assert tuple(obj.pose.bones["b1"].scale) == pytest.approx((1.0, 1.0, 1.0), abs=1e-6)  # back within reach


def test_live_stretches_and_comes_back(scene, ext):
    from chain_ik.app import live

    obj = _bent("Rig")
    target = add_empty("Goal", NEAR)
    item = _chain(obj, target)
    item.live = True
    for location in (FAR, NEAR, FAR):
        target.location = location
        bpy.context.view_layer.update()  # the handler solves
        bpy.context.view_layer.update()  # the written pose evaluates
        assert np.linalg.norm(world_point(obj, "b2") - np.array(location)) < TOL
    assert obj.pose.bones["b1"].scale[1] > 1.0
    # Its own stretch write is not a change of input: nothing to solve again.
    assert live.solve_live(bpy.context.scene, bpy.context.evaluated_depsgraph_get()) == 0
    item.live = False


def test_auto_keying_keys_the_written_y_scale_only(scene):
    from test_bake import keyed

    obj = _bent("Rig")
    target = add_empty("Goal", FAR)
    _chain(obj, target)
    scene.tool_settings.use_keyframe_insert_auto = True
    try:
        _solve(obj)
    finally:
        scene.tool_settings.use_keyframe_insert_auto = False
    paths = sorted(k for k in keyed(obj) if k[0].endswith(".scale"))
    assert paths == [('pose.bones["b1"].scale', 1), ('pose.bones["b2"].scale', 1)]


def test_blender_scales_stretched_bones_uniformly(scene):
    """The documented difference: Blender's IK stretch scales X and Z too; Chain IK only Y."""
    ours, ref = _bent("Ours"), _bent("Ref")
    target = add_empty("Goal", FAR)
    _chain(ours, target)
    con = ref.pose.bones["b2"].constraints.new("IK")
    con.target, con.chain_count, con.use_stretch = target, 3, True
    _solve(ours)
    bpy.context.view_layer.update()
    m_ref, m_ours = ref.pose.bones["b1"].matrix, ours.pose.bones["b1"].matrix
    assert m_ref.col[0].xyz.length == pytest.approx(m_ref.col[1].xyz.length, rel=1e-4)
    assert m_ours.col[0].xyz.length == pytest.approx(1.0, abs=1e-6)
    assert m_ours.col[1].xyz.length > 1.5


def test_compare_solvers_on_a_stretched_chain(scene):
    """Compare Solvers starts from the rest pose; a chain stretched by a Solve is not refused,
    and every solver reaches the far target by the same stretch."""
    obj = _bent("Rig")
    target = add_empty("Goal", FAR)
    item = _chain(obj, target)
    _solve(obj)
    before = {n: tuple(obj.pose.bones[n].scale) for n in WEIGHTS}
    assert bpy.ops.chain_ik.compare() == {"FINISHED"}
    assert {n: tuple(obj.pose.bones[n].scale) for n in WEIGHTS} == before  # Compare writes nothing
    rows = {r.method: r.error for r in item.comparison}
    print("\ncompare on a stretched chain:", rows)
    assert len(rows) == 4 and rows["triangulation"] < TOL and rows["fabrik"] < TOL


def test_constraint_stretch_is_the_chain_stretch(scene):
    """chains_from_constraints carries the IK constraint's Stretch; constraints_from_chains writes it back."""
    obj = _bent("Rig")
    target = add_empty("Goal", FAR)
    con = obj.pose.bones["b2"].constraints.new("IK")
    con.target, con.chain_count, con.use_stretch = target, 3, False
    assert bpy.ops.chain_ik.chains_from_constraints() == {"FINISHED"}
    item = obj.chain_ik.chains[0]
    assert item.use_stretch is False
    item.use_stretch = True
    assert bpy.ops.chain_ik.constraints_from_chains() == {"FINISHED"}
    assert [c.use_stretch for c in obj.pose.bones["b2"].constraints if c.type == "IK"] == [True]


# Issue 22 class 5: IK Stretch on the chain's root bone. The bones below inherit its Y scale;
# Blender applies it along the root's axis, so they must stay in line with it (the straight
# chain at full stretch), which every method's pose now is, to float64 rounding.
ROOT_WEIGHTS = [{"b0": 1.0}, {"b0": 0.5}, {"b0": 1.0, "b1": 0.5}, {"b0": 0.3, "b2": 1.0}]
METHODS = ["triangulation", "fabrik", "ccd", "jacobian"]
EXACT = 2e-6  # float32 pose storage, as every method reaches without stretch


def _weighted(name: str, weights: dict[str, float]):
    obj = _bent(name)
    for n in WEIGHTS:
        obj.pose.bones[n].ik_stretch = weights.get(n, 0.0)
    return obj


@pytest.mark.parametrize("weights", ROOT_WEIGHTS, ids=lambda w: "-".join(f"{k}{v}" for k, v in w.items()))
@pytest.mark.parametrize("method", METHODS)
def test_stretch_on_the_root_bone_reaches_as_every_method_does(scene, method, weights):
    obj = _weighted("Rig", weights)
    target = add_empty("Goal", FAR)
    item = _chain(obj, target, method)
    _solve(obj)
    error = np.linalg.norm(world_point(obj, "b2") - np.array(FAR))
    assert error < EXACT, (method, weights, error)
    assert item.result.error < EXACT  # the figure the panel shows: the written pose's
    assert obj.pose.bones["b0"].scale[1] > 1.0  # the root did stretch
    _solve(obj)  # again from the stretched pose: the same
    assert np.linalg.norm(world_point(obj, "b2") - np.array(FAR)) < EXACT


@pytest.mark.parametrize("method", ["triangulation", "fabrik"])
def test_root_stretch_bake_plays_back_on_target(scene, method):
    obj = _weighted("Rig", {"b0": 1.0, "b1": 0.5})
    target = _keyed_target()
    bpy.context.view_layer.objects.active = obj
    assert bpy.ops.chain_ik.bake(
        tip="b2", chain_length=3, target=target.name, method=method, frame_start=1, frame_end=21
    ) == {"FINISHED"}
    stretched = 0
    for frame in range(1, 22):
        bpy.context.scene.frame_set(frame)
        goal = np.array(target.matrix_world.translation[:])
        error = np.linalg.norm(world_point(obj, "b2") - goal)
        if obj.pose.bones["b0"].scale[1] > 1.0 + 1e-6:  # beyond reach: straight, exact
            stretched += 1
            assert error < EXACT, frame
        else:  # within reach: the solver's tolerance (1e-5 of the length)
            assert error < TOL, frame
    assert 0 < stretched < 21


@pytest.mark.parametrize("inherit", ["ALIGNED", "NONE", "NONE_LEGACY"])
def test_inheritance_the_plan_follows_reaches(scene, inherit):
    obj = _weighted("Rig", {"b0": 1.0})
    for bone in obj.data.bones:
        bone.inherit_scale = inherit
    target = add_empty("Goal", FAR)
    _chain(obj, target)
    _solve(obj)
    assert np.linalg.norm(world_point(obj, "b2") - np.array(FAR)) < EXACT


def _gap_rig():
    from builders import bent_rolled_disconnected

    obj = bent_rolled_disconnected()  # 'fore' sits off the tail of 'upper': a gap sideways of it
    obj.pose.bones["upper"].ik_stretch = 1.0
    return obj


@pytest.mark.parametrize(
    ("case", "bone", "why"),
    [
        ("FIX_SHEAR", "b1", "shears it: it does not rest along its parent"),
        ("AVERAGE", "b1", "scales it uniformly"),
        ("gap", "fore", "its link or its parent's does not run along the bone"),
    ],
)
def test_stretch_blender_would_shear_is_refused_naming_the_bone(scene, case, bone, why):
    """Where Blender would shear (or uniformly scale) a bone inheriting the stretch, the planned
    lengths are not what plays: Solve refuses, naming the bone and the fix, and changes nothing.
    Within reach nothing stretches, and the same chain solves."""
    if case == "gap":
        obj, tip, far, near = _gap_rig(), "hand", (0.5, 2.5, 3.5), (0.3, 0.9, 2.0)
    else:
        obj, tip, far, near = _weighted("Rig", {"b0": 1.0}), "b2", FAR, NEAR
        for b in obj.data.bones:
            b.inherit_scale = case
    target = add_empty("Goal", far)
    item = _chain(obj, target)
    item.tip = tip
    before = {pb.name: (tuple(pb.rotation_quaternion), tuple(pb.scale)) for pb in obj.pose.bones}
    bpy.context.view_layer.objects.active = obj
    with pytest.raises(RuntimeError, match=f"bone '{bone}' inherits the stretch") as exc:
        bpy.ops.chain_ik.solve()
    assert why in str(exc.value) and "Inherit Scale to Aligned or None" in str(exc.value)
    assert {pb.name: (tuple(pb.rotation_quaternion), tuple(pb.scale)) for pb in obj.pose.bones} == before
    target.location = near
    _solve(obj)
    assert np.linalg.norm(world_point(obj, tip) - np.array(near)) < 1e-4
    if case == "gap":  # Aligned inheritance follows the plan, gap or not
        obj.data.bones["fore"].inherit_scale = "ALIGNED"
        obj.data.bones["hand"].inherit_scale = "ALIGNED"
        target.location = far
        _solve(obj)
        assert np.linalg.norm(world_point(obj, tip) - np.array(far)) < EXACT


@pytest.mark.parametrize("method", ["triangulation", "fabrik"])
def test_rigify_ik_arm_stretches_from_its_root(rigify_file, method):
    """Rigify's IK arm: IK Stretch 0.1 on both bones, the root (upper_arm_ik) included, Inherit
    Scale Full, the forearm disconnected at the upper arm's tail."""
    bpy.ops.wm.open_mainfile(filepath=rigify_file)
    rig = bpy.data.objects["rig"]
    bpy.context.view_layer.objects.active = rig
    bpy.ops.object.mode_set(mode="POSE")
    assert bpy.ops.chain_ik.chains_from_constraints() == {"FINISHED"}
    item = rig.chain_ik.chains["MCH-forearm_ik.L"]
    assert item.use_stretch and rig.pose.bones["upper_arm_ik.L"].ik_stretch > 0.0
    bpy.context.view_layer.update()
    shoulder = rig.matrix_world @ rig.pose.bones["upper_arm_ik.L"].head
    far = shoulder + (rig.matrix_world.to_3x3() @ rig.pose.bones["upper_arm_ik.L"].vector).normalized() * 1.2
    goal = add_empty("Far", far)
    item.target, item.target_bone, item.method = goal, "", method
    for other in rig.chain_ik.chains:
        other.mute = other != item
    assert bpy.ops.chain_ik.solve() == {"FINISHED"}
    bpy.context.view_layer.update()
    tip = rig.matrix_world @ rig.pose.bones["MCH-forearm_ik.L"].tail
    assert (tip - far).length < EXACT, (tip - far).length
    assert rig.pose.bones["upper_arm_ik.L"].scale[1] > 1.0
