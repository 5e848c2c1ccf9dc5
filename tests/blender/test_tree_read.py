"""rig.tree on Rigify's human metarig: the skeleton read from Blender reproduces Blender's pose
(heads and tails of every bone, before and after writing new local rotations), in every
rotation mode, for trees with one root, roots under different parents and chains to the root."""

from __future__ import annotations

import bpy
import numpy as np
import pytest
from builders import channel_state, metarig
from mathutils import Euler

TOL = 1e-5
MODES = ("QUATERNION", "AXIS_ANGLE", "XYZ", "XZY", "YXZ", "YZX", "ZXY", "ZYX")
TWO_HANDS = [("hand.L", 6, True), ("hand.R", 6, True)]  # both down to spine.002
TWO_ARMS = [("forearm.L", 2, True), ("forearm.R", 2, True)]  # roots under shoulder.L and shoulder.R
FROM_HIPS = [
    ("hand.L", 0, False),
    ("hand.R", 0, False),
    ("spine.006", 0, True),
    ("shin.L", 0, True),
    ("shin.R", 0, True),
]


@pytest.fixture
def tree(ext):
    from chain_ik.rig import tree

    return tree


def _set_rotation(pb, q) -> None:
    if pb.rotation_mode == "QUATERNION":
        pb.rotation_quaternion = q
    elif pb.rotation_mode == "AXIS_ANGLE":
        axis, angle = q.to_axis_angle()
        pb.rotation_axis_angle = (angle, *axis)
    else:
        pb.rotation_euler = q.to_euler(pb.rotation_mode)


def _pose_randomly(obj, rng, mode: str | None) -> None:
    """Every bone (inside the tree and above it) in `mode` (None: a random mode per bone), randomly turned."""
    for pb in obj.pose.bones:
        pb.rotation_mode = mode or MODES[int(rng.integers(len(MODES)))]
        _set_rotation(pb, Euler(tuple(rng.uniform(-0.8, 0.8, 3))).to_quaternion())


def _evaluated(obj):
    depsgraph = bpy.context.evaluated_depsgraph_get()
    depsgraph.update()
    return obj.evaluated_get(depsgraph)


def _blender_points(tree, obj, obj_eval, names, chains) -> tuple[np.ndarray, np.ndarray]:
    """Blender's heads and end points of `names` (an end bone of a chain without Use Tail ends at its tip's head)."""
    pose = obj_eval.pose.bones
    ends = {n: pose[n].tail for n in names}
    for (tip, _, use_tail), end in zip(chains, tree.end_bones(obj, chains), strict=True):
        if not use_tail:
            ends[end] = pose[tip].head
    return np.array([pose[n].head[:] for n in names]), np.array([ends[n][:] for n in names])


def _check_forward(tree, obj, chains):
    """Read the tree, compare forward(local) with Blender's pose; returns (skeleton, local, names)."""
    obj_eval = _evaluated(obj)
    skeleton, local, names = tree.read_tree(obj, obj_eval, chains)
    _, heads, ends = skeleton.forward(local)
    want_heads, want_ends = _blender_points(tree, obj, obj_eval, names, chains)
    assert np.abs(heads - want_heads).max() < TOL
    assert np.abs(ends - want_ends).max() < TOL
    return skeleton, local, names


@pytest.mark.parametrize("mode", [*MODES, None])
@pytest.mark.parametrize("chains", [TWO_HANDS, TWO_ARMS, FROM_HIPS], ids=["two hands", "two arms", "from hips"])
def test_forward_reproduces_blender(scene, rigify, tree, chains, mode):
    obj = metarig(tilt=0.2)
    rng = np.random.default_rng(len(chains) * 10 + (MODES.index(mode) if mode else 9))
    _pose_randomly(obj, rng, mode)
    skeleton, local, names = _check_forward(tree, obj, chains)
    assert all(p == -1 or p < i for i, p in enumerate(skeleton.parents))
    # New local rotations written into the channels: Blender's pose is the skeleton's forward kinematics.
    for _ in range(2):
        new = np.array([Euler(tuple(rng.uniform(-1.0, 1.0, 3))).to_quaternion()[:] for _ in names])
        tree.write_tree(obj, names, new)
        _, heads, ends = skeleton.forward(new)
        want_heads, want_ends = _blender_points(tree, obj, _evaluated(obj), names, chains)
        assert np.abs(heads - want_heads).max() < TOL
        assert np.abs(ends - want_ends).max() < TOL


def test_roots_under_different_parents_fold_into_reference(scene, rigify, tree):
    obj = metarig(tilt=0.2)
    _pose_randomly(obj, np.random.default_rng(3), None)
    skeleton, local, names = _check_forward(tree, obj, TWO_ARMS)
    assert names == ("upper_arm.L", "forearm.L", "upper_arm.R", "forearm.R")
    assert skeleton.parents == (-1, 0, -1, 2)
    np.testing.assert_array_equal(skeleton.base_frame, [1.0, 0.0, 0.0, 0.0])
    # One shared parent (both hands down to spine.002): base_frame is spine.001's evaluated pose.
    obj_eval = _evaluated(obj)
    skeleton, _, names = tree.read_tree(obj, obj_eval, TWO_HANDS)
    want = np.array(obj_eval.pose.bones["spine.001"].matrix.to_quaternion().normalized()[:])
    assert min(np.abs(skeleton.base_frame - want).max(), np.abs(skeleton.base_frame + want).max()) < 1e-7
    assert names[:2] == ("spine.002", "spine.003")


@pytest.mark.parametrize("mode", [*MODES, None])
def test_write_after_read_round_trips_exactly(scene, rigify, tree, mode):
    obj = metarig(tilt=0.2)
    _pose_randomly(obj, np.random.default_rng(7), mode)
    before = channel_state(obj)
    skeleton, local, names = tree.read_tree(obj, _evaluated(obj), FROM_HIPS)
    tree.write_tree(obj, names, local)
    assert channel_state(obj) == before


def test_limits_and_end_bones(scene, rigify, tree):
    obj = metarig(tilt=0.2)
    shin = obj.pose.bones["shin.L"]
    shin.lock_ik_y, shin.use_ik_limit_x, shin.ik_min_x, shin.ik_max_x = True, True, 0.0, 2.5
    skeleton, _, names = tree.read_tree(obj, _evaluated(obj), FROM_HIPS)
    assert tree.end_bones(obj, FROM_HIPS) == ("forearm.L", "forearm.R", "spine.006", "shin.L", "shin.R")
    assert skeleton.limits is not None and skeleton.limits.n_bones == len(names)
    i = names.index("shin.L")
    assert skeleton.limits.active[i]


def test_refusals_name_the_problem(scene, rigify, tree):
    obj = metarig(tilt=0.2)
    obj_eval = _evaluated(obj)
    # forearm.L's chain (2 bones) hangs from spine.003's chain through shoulder.L, which neither holds.
    with pytest.raises(ValueError, match="through 'shoulder.L'"):
        tree.read_tree(obj, obj_eval, [("forearm.L", 2, True), ("spine.004", 2, True)])
    with pytest.raises(ValueError, match="no bone 'nope'"):
        tree.read_tree(obj, obj_eval, [("nope", 2, True)])
    with pytest.raises(ValueError, match="no chains"):
        tree.read_tree(obj, obj_eval, [])
    # hand.L's head (use_tail off) and forearm.L's tail coincide (connected): the same point, accepted.
    tree.read_tree(obj, obj_eval, [("hand.L", 2, False), ("forearm.L", 2, True)])
    with pytest.raises(ValueError, match="not finite"):
        tree.write_tree(obj, ("hand.L",), np.full((1, 4), np.nan))
    obj.pose.bones["upper_arm.L"].rotation_mode = "XYZ"
    obj.pose.bones["upper_arm.L"].rotation_euler = (float("nan"), 0.0, 0.0)
    with pytest.raises(ValueError, match="the pose of bone '(upper_arm|forearm).L' is not finite"):
        tree.read_tree(obj, _evaluated(obj), [("forearm.L", 2, True)])


def test_layout_read_matches_plain_read(scene, rigify, tree):
    """A layout built once (a bake) reads the same skeleton as a fresh read, pose after pose."""
    obj = metarig(tilt=0.2)
    layout = tree.tree_layout(obj, FROM_HIPS)
    assert [layout.names[i] for i in layout.effectors] == list(tree.end_bones(obj, FROM_HIPS))
    rng = np.random.default_rng(11)
    for _ in range(2):
        _pose_randomly(obj, rng, None)
        obj_eval = _evaluated(obj)
        a, local_a, names_a = tree.read_tree(obj, obj_eval, FROM_HIPS, layout)
        b, local_b, names_b = tree.read_tree(obj, obj_eval, FROM_HIPS)
        assert names_a == names_b
        np.testing.assert_array_equal(local_a, local_b)
        np.testing.assert_allclose(a.forward(local_a)[2], b.forward(local_b)[2], atol=1e-9)


def test_non_uniform_inherited_scale_is_refused(scene, rigify, tree):
    obj = metarig(tilt=0.2)
    obj.pose.bones["spine.001"].scale = (1.0, 2.0, 1.0)
    with pytest.raises(ValueError, match="non-uniform scale"):
        tree.read_tree(obj, _evaluated(obj), TWO_HANDS)


def test_solved_tree_written_is_what_blender_shows(scene, rigify, tree):
    """read_tree -> solve_skeleton (any method with a tree kernel) -> write_tree: Blender's tips are
    where the solution puts them (the bridge adds no error to the solver's)."""
    from chain_ik import solvers

    methods = [m.name for m in solvers.registry.METHOD_LIST if m.tree is not None]
    if not methods:
        pytest.skip("no tree kernel yet")
    obj = metarig(tilt=0.2)
    layout = tree.tree_layout(obj, TWO_HANDS)
    skeleton, local, names = tree.read_tree(obj, _evaluated(obj), TWO_HANDS, layout)
    rng = np.random.default_rng(5)
    for method in methods:
        goal_pose = solvers.quat.multiply(
            local, solvers.quat.from_rotation_vector(rng.uniform(-0.5, 0.5, (len(names), 3)))
        )
        goals = skeleton.forward(goal_pose)[2][list(layout.effectors)]
        effectors = [solvers.skeleton.Effector(b, position=p) for b, p in zip(layout.effectors, goals, strict=True)]
        sol = solvers.solve_skeleton(skeleton, local, effectors, method=method)
        tree.write_tree(obj, names, sol.local)
        obj_eval = _evaluated(obj)
        tips = np.array([obj_eval.pose.bones[tip].tail[:] for tip, _, _ in TWO_HANDS])
        np.testing.assert_allclose(tips, skeleton.forward(sol.local)[2][list(layout.effectors)], atol=TOL)
        assert np.all(np.linalg.norm(tips - goals, axis=1) <= sol.error + TOL)
        tree.write_tree(obj, names, local)


def test_layout_hands_out_the_same_skeleton_while_the_geometry_holds(scene, rigify, tree):
    """Frame after frame with only the tree's own rotations changing, a layout's read gives the
    same Skeleton (the tree kernels keep their plans per skeleton); a moved parent gives a new one."""
    obj = metarig(tilt=0.2)
    layout = tree.tree_layout(obj, TWO_HANDS)
    first, local, names = tree.read_tree(obj, _evaluated(obj), TWO_HANDS, layout)
    rng = np.random.default_rng(2)
    new = np.array([Euler(tuple(rng.uniform(-1.0, 1.0, 3))).to_quaternion()[:] for _ in names])
    tree.write_tree(obj, names, new)
    again, local_again, _ = tree.read_tree(obj, _evaluated(obj), TWO_HANDS, layout)
    assert again is first
    np.testing.assert_allclose(local_again, new, atol=1e-6)  # the local rotations are read fresh
    obj.pose.bones["spine.001"].rotation_mode = "QUATERNION"
    obj.pose.bones["spine.001"].rotation_quaternion = Euler((0.3, 0.0, 0.2)).to_quaternion()
    moved, local_moved, _ = tree.read_tree(obj, _evaluated(obj), TWO_HANDS, layout)
    assert moved is not first
    _, heads, _ = moved.forward(local_moved)
    want, _ = _blender_points(tree, obj, _evaluated(obj), names, TWO_HANDS)
    assert np.abs(heads - want).max() < TOL
