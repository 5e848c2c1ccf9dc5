"""Issue 22 §7: adopting IK constraints as a careful animator would try it. Adopting again updates
(never mutes the chains it made), a constraint that could never solve is named and left alone,
drivers or keys on a constraint's mute and influence are never claimed undone, a pinned chain is
not written back as an invalid constraint, and the position Weight goes both ways."""

from __future__ import annotations

import bpy
import pytest
from builders import add_empty, make_armature, straight_chain, world_point
from test_constraint_chains import LIMBS, _chain_bones, _open, _world_pose, _worst


def _rig():
    obj = straight_chain(4)
    bpy.context.view_layer.objects.active = obj
    bpy.ops.object.mode_set(mode="POSE")
    return obj


def _ik(obj, bone: str, target, **settings):
    con = obj.pose.bones[bone].constraints.new("IK")
    con.target = target
    for key, value in settings.items():
        setattr(con, key, value)
    return con


def _record(obj) -> list[tuple]:
    """What the armature records adoption switched off: (bone, constraint, how, own mute, own influence)."""
    return [(r.bone, r.constraint, r.how, r.mute, r.influence) for r in obj.chain_ik.switched_off]


def _adopt(capfd, **kwargs) -> str:
    capfd.readouterr()
    assert bpy.ops.chain_ik.chains_from_constraints(**kwargs) == {"FINISHED"}
    return capfd.readouterr().out


def test_adopting_twice_updates_and_never_mutes_the_chains(scene, capfd):
    obj = _rig()
    goal = add_empty("Goal", (1.0, 0.5, 2.5))
    con = _ik(obj, "b3", goal, chain_count=3)
    _adopt(capfd)
    item = obj.chain_ik.chains["b3"]
    assert con.mute and not item.mute and _record(obj) == [("b3", "IK", "MUTE", False, 1.0)]
    out = _adopt(capfd)  # the constraint is muted now: by the first adoption, not by the rig
    assert "0 chain(s) made, 1 updated" in out and len(obj.chain_ik.chains) == 1
    assert not item.mute and con.mute
    assert bpy.ops.chain_ik.solve() == {"FINISHED"}
    assert ((world_point(obj, "b3") - goal.location[:]) ** 2).sum() ** 0.5 < 1e-4
    # The chain's own mute is its own: kept when adopting again.
    item.mute = True
    _adopt(capfd)
    assert item.mute and con.mute
    # Unmuted by hand since: the rig's setting again (read, and switched off once more).
    item.mute, con.mute = False, False
    con.chain_count = 2
    _adopt(capfd)
    assert (item.mute, item.chain_length, con.mute) == (False, 2, True)


def test_a_constraint_muted_by_the_rig_stays_a_muted_chain_on_every_adoption(scene, capfd):
    obj = _rig()
    con = _ik(obj, "b3", add_empty("Goal", (1.0, 0.5, 2.5)), chain_count=2)
    con.mute = True  # off in the rig itself (say a switch the animator set)
    for _ in range(2):
        _adopt(capfd, mute_constraints=False)
        item = obj.chain_ik.chains["b3"]
        assert item.mute and _record(obj) == []


@pytest.mark.parametrize("pole", [False, True])
def test_rigify_adopted_twice_poses_as_the_constraints_did(rigify_file, pole, capfd):
    rig = _open(rigify_file, pole)
    names = _chain_bones(rig)
    for n in names:
        rig.pose.bones[n].ik_stretch = 0.0
    bpy.context.view_layer.update()
    by_constraints = _world_pose(rig, names)
    _adopt(capfd)
    first = {c.name: (c.mute, c.influence) for c in rig.chain_ik.chains}
    out = _adopt(capfd)  # influence 0 now on every replaced constraint: not read back into the chains
    assert "0 chain(s) made, 8 updated" in out and "not adopted" not in out
    assert {c.name: (c.mute, c.influence) for c in rig.chain_ik.chains} == first
    assert all(influence == 1.0 for _, influence in first.values())
    for tip in LIMBS:
        assert all(c.influence == 0.0 for c in rig.pose.bones[tip].constraints if c.type == "IK")
    assert bpy.ops.chain_ik.solve() == {"FINISHED"}
    assert _worst(_world_pose(rig, names), by_constraints) < 1e-4


def _other_armature():
    other = make_armature([("x", (3, 0, 0), (3, 0, 1), None, False, 0.0)], name="Other")
    return other


# (what is set on the constraint of b3, the reason reported); each could never be solved.
INVALID = [
    (lambda obj: {"target": None}, "it has no target; Blender marks it invalid, so it poses nothing"),
    (lambda obj: {"target": obj}, "its target is the armature itself without a bone; Blender marks it invalid"),
    (lambda obj: {"target": obj, "subtarget": "nope"}, "its target 'Rig' has no bone 'nope'; Blender marks it"),
    (lambda obj: {"target": _other_armature(), "subtarget": "nope"}, "its target 'Other' has no bone 'nope'"),
    (
        lambda obj: {"target": add_empty("Goal"), "pole_target": obj},
        "its pole target is the armature itself without a bone; Blender marks it invalid",
    ),
    (
        lambda obj: {"target": add_empty("Goal"), "pole_target": obj, "pole_subtarget": "nope"},
        "its pole target 'Rig' has no bone 'nope'",
    ),
    # Valid for Blender (a dependency cycle), refused by Solve: the target rides on the chain.
    (lambda obj: {"target": obj, "subtarget": "b2"}, "the target moves with the chain (through bone 'b2')"),
]


@pytest.mark.parametrize(("settings", "reason"), INVALID)
def test_a_constraint_that_could_never_solve_is_not_adopted_and_says_why(scene, capfd, settings, reason):
    obj = _rig()
    bpy.ops.object.mode_set(mode="OBJECT")  # the other armature is made in its own edit mode
    values = settings(obj)
    bpy.context.view_layer.objects.active = obj
    con = obj.pose.bones["b3"].constraints.new("IK")
    for key, value in values.items():
        setattr(con, key, value)
    good = _ik(obj, "b1", add_empty("Goal.001", (1, 0, 1)), chain_count=1)  # a valid one beside it
    out = _adopt(capfd)
    assert f"not adopted: 'IK' on 'b3': {reason}" in out, out
    assert "1 chain(s) made, 0 updated from IK constraints, 1 not adopted" in out
    assert [c.tip for c in obj.chain_ik.chains] == ["b1"]
    assert not con.mute and con.influence == 1.0  # left as it was
    assert good.mute


def test_use_tail_off_on_a_root_bone_and_a_chain_longer_than_the_rig(scene, capfd):
    obj = _rig()
    root = _ik(obj, "b0", add_empty("Goal", (1, 0, 1)), use_tail=False)
    long = _ik(obj, "b2", add_empty("Goal.001", (1, 0.5, 2)), chain_count=9)  # Blender takes the 3 there are
    out = _adopt(capfd)
    assert "not adopted: 'IK' on 'b0': Use Tail is off on a root bone" in out and not root.mute
    item = obj.chain_ik.chains["b2"]
    assert item.chain_length == 3 and long.mute
    assert bpy.ops.chain_ik.solve() == {"FINISHED"}


def _drive(con, prop: str, value: int):
    fcurve = con.driver_add(prop)
    fcurve.driver.type = "SCRIPTED"
    fcurve.driver.expression = str(value)  # a simple expression: evaluated without Python scripts
    return fcurve


def _key(con, prop: str, value) -> None:
    setattr(con, prop, value)
    con.keyframe_insert(prop, frame=1)


@pytest.mark.parametrize("how", [_drive, _key])
def test_what_sets_the_mute_is_left_and_the_influence_set_to_0_for_good(scene, capfd, how):
    obj = _rig()
    con = _ik(obj, "b3", add_empty("Goal", (1.0, 0.5, 2.5)), chain_count=2)
    how(con, "mute", 0)
    bpy.context.view_layer.update()
    out = _adopt(capfd)
    by = "a driver" if how is _drive else "keys in action"
    assert f"chain 'b3': {by}" in out and "sets the mute of 'IK', so its influence was set to 0 instead" in out
    for frame in (1, 2):
        bpy.context.scene.frame_set(frame)
        assert con.influence == 0.0 and not con.mute
    assert obj.chain_ik.chains["b3"].influence == 1.0 and _record(obj) == [("b3", "IK", "INFLUENCE", False, 1.0)]
    out = _adopt(capfd)  # again: the chain keeps its influence (the 0 is the adoption's)
    assert obj.chain_ik.chains["b3"].influence == 1.0 and "1 updated" in out


@pytest.mark.parametrize("how", [_drive, _key])
def test_a_driven_or_keyed_influence_is_muted_instead(scene, capfd, how):
    obj = _rig()
    con = _ik(obj, "b3", add_empty("Goal", (1.0, 0.5, 2.5)), chain_count=2)
    how(con, "influence", 1)
    bpy.context.view_layer.update()
    out = _adopt(capfd)
    assert "influence was set to 0" not in out and "not adopted" not in out
    bpy.context.scene.frame_set(2)
    assert con.mute and con.influence == 1.0


@pytest.mark.parametrize("how", [_drive, _key])
def test_a_constraint_whose_mute_and_influence_are_both_set_is_not_claimed_switched_off(scene, capfd, how):
    obj = _rig()
    con = _ik(obj, "b3", add_empty("Goal", (1.0, 0.5, 2.5)), chain_count=2)
    how(con, "mute", 0)
    how(con, "influence", 1)
    bpy.context.view_layer.update()
    out = _adopt(capfd)
    by = "a driver" if how is _drive else "keys in action 'RigAction'"
    assert f"not adopted: 'IK' on 'b3': {by} sets its mute and {by} its influence, so it cannot be" in out, out
    assert "influence set to 0" not in out and "influence was set to 0" not in out
    assert len(obj.chain_ik.chains) == 0 and not con.mute and con.influence == 1.0
    # Asked to leave the constraints on, it is adopted beside it, and nothing claims otherwise.
    out = _adopt(capfd, mute_constraints=False)
    assert "1 chain(s) made" in out and "influence" not in out
    assert not con.mute and con.influence == 1.0


def test_a_pinned_chain_is_not_written_back_as_an_invalid_constraint(scene, capfd):
    obj = _rig()
    chains = obj.chain_ik.chains
    arm = chains.add()
    arm.name, arm.tip, arm.chain_length, arm.target = "Arm", "b3", 2, add_empty("Goal", (1, 0.5, 2.5))
    foot = chains.add()
    foot.name, foot.tip, foot.chain_length, foot.pin = "Foot", "b1", 1, True
    capfd.readouterr()
    assert bpy.ops.chain_ik.constraints_from_chains() == {"FINISHED"}
    out = capfd.readouterr().out
    assert "not written: chain 'Foot': it is pinned, and an IK constraint cannot hold a tip" in out
    assert "IK constraints written for 'Arm'" in out
    assert len(obj.pose.bones["b1"].constraints) == 0 and obj.pose.bones["b3"].constraints[0].is_valid
    # Only pinned, or without a target: nothing to write, said as an error; no constraint made.
    arm.target = None
    with pytest.raises(RuntimeError, match="no IK constraint written: chain 'Arm': it has no target, and Blender"):
        bpy.ops.chain_ik.constraints_from_chains()
    obj.chain_ik.scope, foot.select = "SELECTED", True
    with pytest.raises(RuntimeError, match="chain 'Foot': it is pinned"):
        bpy.ops.chain_ik.constraints_from_chains()
    assert len(obj.pose.bones["b1"].constraints) == 0


def test_weights_go_both_ways_and_keep_their_ratio_in_a_group(scene, capfd):
    obj = make_armature(
        [
            ("root", (0, 0, 0), (0, 0, 1), None, False, 0.0),
            ("a", (0, 0, 1), (0.5, 0, 2), "root", True, 0.0),
            ("b", (0, 0, 1), (-0.5, 0, 2), "root", True, 0.0),
        ]
    )
    a = _ik(obj, "a", add_empty("GoalA", (1, 0, 2)), chain_count=2, weight=0.3)
    b = _ik(obj, "b", add_empty("GoalB", (-1, 0, 2)), chain_count=2, weight=0.6)
    _adopt(capfd)
    chains = obj.chain_ik.chains
    assert (chains["a"].weight, chains["b"].weight) == (pytest.approx(0.3), pytest.approx(0.6))
    chains["a"].weight, chains["b"].weight = 8.0, 2.0  # beyond the constraint's 0.01-1: ratio 4:1
    capfd.readouterr()
    assert bpy.ops.chain_ik.constraints_from_chains() == {"FINISHED"}
    out = capfd.readouterr().out
    assert (a.weight, b.weight) == (pytest.approx(1.0), pytest.approx(0.25))
    assert "chain 'a': Weight 8 written as 1 (an IK constraint's Weight is 0.01 to 1" in out
    assert "chain 'b': Weight 2 written as 0.25" in out
    chains["a"].weight = 1e-3  # below the constraint's range
    assert bpy.ops.chain_ik.constraints_from_chains() == {"FINISHED"}
    assert a.weight == pytest.approx(0.01)


def test_many_constraints_adopted_at_once_each_name_their_own_chain(scene, capfd):
    """The chain list grows (its items move in memory) while adopting: nothing is read through an
    item held from before. Was: 8 false 'on again' warnings naming chain 'Chain'."""
    obj = straight_chain(12)
    bpy.context.view_layer.objects.active = obj
    bpy.ops.object.mode_set(mode="POSE")
    cons = [_ik(obj, f"b{i}", add_empty(f"Goal{i}", (1, 0, i)), chain_count=1) for i in range(1, 12)]
    out = _adopt(capfd)
    assert "on again" not in out and "Warning" not in out, out
    assert "11 chain(s) made, 0 updated" in out
    assert [(c.name, c.tip, c.constraint, c.target.name) for c in obj.chain_ik.chains] == [
        (f"b{i}", f"b{i}", "IK", f"Goal{i}") for i in range(1, 12)
    ]
    assert all(con.mute for con in cons) and not any(c.mute for c in obj.chain_ik.chains)
    assert [r[0] for r in _record(obj)] == [f"b{i}" for i in range(1, 12)]
    out = _adopt(capfd)  # and again, updating every one
    assert "0 chain(s) made, 11 updated" in out and "Warning" not in out
    assert not any(c.mute for c in obj.chain_ik.chains)


def test_a_removed_chain_comes_back_unmuted_saved_and_reopened_too(scene, capfd, tmp_path):
    obj = _rig()
    goal = add_empty("Goal", (1.0, 0.5, 2.5))
    con = _ik(obj, "b3", goal, chain_count=3)
    _adopt(capfd)
    path = str(tmp_path / "adopted.blend")
    bpy.ops.wm.save_as_mainfile(filepath=path)
    bpy.ops.wm.open_mainfile(filepath=path)
    obj, goal = bpy.data.objects["Rig"], bpy.data.objects["Goal"]
    con = obj.pose.bones["b3"].constraints["IK"]
    bpy.context.view_layer.objects.active = obj
    assert bpy.ops.chain_ik.chain_remove() == {"FINISHED"} and len(obj.chain_ik.chains) == 0
    out = _adopt(capfd)  # the constraint is muted: by the first adoption, which the armature recorded
    assert "1 chain(s) made" in out and "muted" not in out, out
    item = obj.chain_ik.chains["b3"]
    assert not item.mute and con.mute and _record(obj) == [("b3", "IK", "MUTE", False, 1.0)]
    assert bpy.ops.chain_ik.solve() == {"FINISHED"}
    assert ((world_point(obj, "b3") - goal.location[:]) ** 2).sum() ** 0.5 < 1e-4
    # Written back: the constraint says what the chain does, so the record goes.
    assert bpy.ops.chain_ik.constraints_from_chains() == {"FINISHED"}
    assert not con.mute and _record(obj) == []


def test_rigify_chains_removed_come_back_with_the_constraints_influence(rigify_file, capfd):
    rig = _open(rigify_file, True)
    names = _chain_bones(rig)
    for n in names:
        rig.pose.bones[n].ik_stretch = 0.0
    bpy.context.view_layer.update()
    by_constraints = _world_pose(rig, names)
    _adopt(capfd)
    first = {c.name: (c.mute, c.influence) for c in rig.chain_ik.chains}
    while rig.chain_ik.chains:
        assert bpy.ops.chain_ik.chain_remove() == {"FINISHED"}
    out = _adopt(capfd)
    assert "8 chain(s) made, 0 updated" in out and "influence 0 (not set" not in out
    assert {c.name: (c.mute, c.influence) for c in rig.chain_ik.chains} == first
    assert all(influence == 1.0 for _, influence in first.values())
    assert bpy.ops.chain_ik.solve() == {"FINISHED"}
    assert _worst(_world_pose(rig, names), by_constraints) < 1e-4


def _as_before_records(obj) -> None:
    """The armature as a file adopted before adoption recorded its switch-offs has it."""
    obj.chain_ik.switched_off.clear()
    obj.chain_ik.switch_offs_recorded = False


def test_a_file_adopted_before_records_is_recognised_by_its_chain(scene, capfd):
    obj = _rig()
    goal = add_empty("Goal", (1.0, 0.5, 2.5))
    con = _ik(obj, "b3", goal, chain_count=3)
    _adopt(capfd)
    _as_before_records(obj)
    out = _adopt(capfd)
    item = obj.chain_ik.chains["b3"]
    assert "0 chain(s) made, 1 updated" in out and not item.mute and con.mute
    assert "taken as switched off by an earlier adoption (this file is from before adoption recorded it)" in out
    assert _record(obj) == [("b3", "IK", "MUTE", False, 1.0)] and obj.chain_ik.switch_offs_recorded
    assert bpy.ops.chain_ik.solve() == {"FINISHED"}
    # The chain removed, or reaching for something else than the constraint: nothing shows the mute was
    # the adoption's, so the chain is muted, and the report says so and how to switch it on.
    for change in ("remove", "target"):
        _as_before_records(obj)
        if change == "remove":
            bpy.ops.chain_ik.chain_remove()
        else:
            obj.chain_ik.chains["b3"].target = add_empty("Elsewhere", (0, 1, 2))
        out = _adopt(capfd)
        assert obj.chain_ik.chains["b3"].mute, change
        assert "chain 'b3': 'IK' on 'b3' is muted (not by an adoption on record), so the chain is muted too:" in out
        assert "untick the chain's Mute to use it" in out
        obj.chain_ik.chains["b3"].mute = False
        assert bpy.ops.chain_ik.solve() == {"FINISHED"}


def test_a_rigify_file_adopted_before_records_keeps_its_chains_on(rigify_file, capfd):
    rig = _open(rigify_file, False)
    _adopt(capfd)
    first = {c.name: (c.mute, c.influence) for c in rig.chain_ik.chains}
    _as_before_records(rig)
    out = _adopt(capfd)
    assert "0 chain(s) made, 8 updated" in out and out.count("taken as switched off by an earlier adoption") == 8
    assert {c.name: (c.mute, c.influence) for c in rig.chain_ik.chains} == first
    assert bpy.ops.chain_ik.solve() == {"FINISHED"}
