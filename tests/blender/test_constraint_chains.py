"""chain_ik.chains_from_constraints / constraints_from_chains on Rigify's generated rig: its IK
constraints become chains that pose the limbs as the constraints did, and back."""

from __future__ import annotations

import bpy
import pytest
from builders import add_empty, straight_chain

TOL = 1e-4
LIMBS = ("MCH-forearm_ik.L", "MCH-forearm_ik.R", "MCH-shin_ik.L", "MCH-shin_ik.R")
# Rigify's IK controls, moved so every limb bends (all within reach).
MOVES = {"hand_ik.L": (-0.1, -0.15, 0.1), "hand_ik.R": (0.05, 0.1, 0.1), "foot_ik.L": (0.05, -0.1, 0.2),
         "foot_ik.R": (-0.05, -0.15, 0.15)}  # fmt: skip


def _open(path, pole: bool):
    bpy.ops.wm.open_mainfile(filepath=path)
    rig = bpy.data.objects["rig"]
    bpy.context.view_layer.objects.active = rig
    bpy.ops.object.mode_set(mode="POSE")
    for name, offset in MOVES.items():
        rig.pose.bones[name].location = offset
    if pole:  # Rigify's IK pole switch (a driver mutes one constraint of each pair)
        for parent in ("upper_arm_parent.L", "upper_arm_parent.R", "thigh_parent.L", "thigh_parent.R"):
            rig.pose.bones[parent]["pole_vector"] = True
    bpy.context.view_layer.update()
    return rig


def modes_locked(pbone) -> bool:
    return any(pbone.lock_rotation) or (pbone.lock_rotations_4d and pbone.lock_rotation_w)


def _chain_bones(rig) -> list[str]:
    return [n for tip in LIMBS for n in (tip, rig.pose.bones[tip].parent.name)]


def _world_pose(rig, names) -> dict:
    rig_eval = rig.evaluated_get(bpy.context.evaluated_depsgraph_get())
    mw = rig_eval.matrix_world
    return {n: (mw @ rig_eval.pose.bones[n].head, mw @ rig_eval.pose.bones[n].tail) for n in names}


def _worst(a: dict, b: dict) -> float:
    return max((a[n][i] - b[n][i]).length for n in a for i in (0, 1))


@pytest.mark.parametrize("pole", [False, True])
def test_rigify_ik_constraints_become_chains_that_pose_as_they_did(rigify_file, pole, capfd):
    rig = _open(rigify_file, pole)
    names = _chain_bones(rig)
    # Blender's IK constraint turns Rigify's IK bones through their rotation locks, and so do the adopted
    # chains (Respect Locks off). It also stretches them (IK Stretch 0.1: by up to 2.5 cm here, even within
    # reach), where Chain IK stretches beyond reach only, so IK Stretch is off here.
    assert any(modes_locked(rig.pose.bones[n]) for n in names)  # the locks are really there
    for n in names:
        rig.pose.bones[n].ik_stretch = 0.0
    bpy.context.view_layer.update()
    by_constraints = _world_pose(rig, names)
    capfd.readouterr()
    assert bpy.ops.chain_ik.chains_from_constraints() == {"FINISHED"}
    out = capfd.readouterr().out
    chains = {c.name: c for c in rig.chain_ik.chains}
    assert len(chains) == 8  # Rigify: per limb one IK constraint without a pole, one with
    for tip in LIMBS:
        plain, with_pole = chains[tip], chains[f"{tip} (IK.001)"]
        assert (plain.tip, plain.chain_length, plain.use_tail, plain.constraint) == (tip, 2, True, "IK")
        assert plain.target == rig and plain.target_bone.startswith("MCH-")
        assert plain.target_bone.endswith("_target" + tip[-2:])
        assert plain.pole_target is None
        assert with_pole.pole_target == rig and with_pole.pole_subtarget == plain.target_bone[4:]
        assert with_pole.pole_angle == pytest.approx(-1.5708, abs=1e-4)
        # The chains are on where the constraints were (the pole switch picks one of each pair).
        assert (plain.mute, with_pole.mute) == ((True, False) if pole else (False, True))
        # Replaced constraints: a driver sets their mute, so their influence is 0 instead.
        assert all(c.influence == 0.0 for c in rig.pose.bones[tip].constraints if c.type == "IK")
    assert "rotation locks" not in out and "IK Stretch" not in out  # IK Stretch off above
    assert not any(c.use_locks for c in rig.chain_ik.chains)  # they turn through the locks, as the constraints
    assert "8 chain(s) made, 0 updated from IK constraints" in out
    bpy.context.view_layer.update()
    assert _worst(_world_pose(rig, names), by_constraints) > 0.05  # the constraints no longer pose them
    assert bpy.ops.chain_ik.solve() == {"FINISHED"}
    assert _worst(_world_pose(rig, names), by_constraints) < TOL  # measured: 4e-5 (Blender's IK converges to that)


def test_rigify_unsupported_settings_are_reported(rigify_file, capfd):
    rig = _open(rigify_file, False)
    capfd.readouterr()
    assert bpy.ops.chain_ik.chains_from_constraints(mute_constraints=False) == {"FINISHED"}
    out = capfd.readouterr().out
    for tip in LIMBS:
        parent = rig.pose.bones[tip].parent.name
        # Locks: the chains turn through them too. Stretch: carried, but not Blender's within reach.
        assert f"chain '{tip}': not supported, IK Stretch within reach on {parent}, {tip}" in out
        assert all(c.use_stretch for c in rig.chain_ik.chains)
    assert all(c.influence == 1.0 for c in rig.pose.bones["MCH-forearm_ik.L"].constraints)
    # Again: the same chains are updated, none added.
    assert bpy.ops.chain_ik.chains_from_constraints() == {"FINISHED"}
    assert len(rig.chain_ik.chains) == 8 and "0 chain(s) made, 8 updated" in capfd.readouterr().out


def test_rigify_round_trip_writes_the_constraints_back(rigify_file):
    rig = _open(rigify_file, False)
    names = _chain_bones(rig)
    before = _world_pose(rig, names)
    assert bpy.ops.chain_ik.chains_from_constraints() == {"FINISHED"}
    assert bpy.ops.chain_ik.constraints_from_chains() == {"FINISHED"}
    for tip in LIMBS:
        ik = [c for c in rig.pose.bones[tip].constraints if c.type == "IK"]
        assert [c.name for c in ik] == ["IK", "IK.001"]  # updated in place, none added
        assert [c.influence for c in ik] == [1.0, 1.0]
    bpy.context.view_layer.update()
    assert _worst(_world_pose(rig, names), before) < 1e-6


def _plain_rig():
    obj = straight_chain(4)
    bpy.context.view_layer.objects.active = obj
    bpy.ops.object.mode_set(mode="POSE")
    return obj


def test_every_constraint_setting_is_carried_and_written_back(scene, capfd):
    obj = _plain_rig()
    goal, pole = add_empty("Goal", (1.0, 0.5, 2.0)), add_empty("Pole", (0, -2, 1))
    con = obj.pose.bones["b3"].constraints.new("IK")
    con.target, con.pole_target, con.pole_angle = goal, pole, 0.3
    con.chain_count, con.use_tail, con.use_rotation, con.orient_weight = 0, False, True, 0.4
    con.influence, con.iterations, con.weight, con.use_location = 0.7, 80, 0.5, False
    bpy.context.view_layer.objects.active = obj
    capfd.readouterr()
    assert bpy.ops.chain_ik.chains_from_constraints() == {"FINISHED"}
    out = capfd.readouterr().out
    item = obj.chain_ik.chains["b3"]
    # chain_count 0 with Use Tail off: every bone above b3 (b0, b1, b2).
    assert (item.tip, item.chain_length, item.use_tail) == ("b3", 3, False)
    assert (item.target, item.pole_target, item.use_rotation) == (goal, pole, True)
    assert item.pole_angle == pytest.approx(0.3) and item.rotation_weight == pytest.approx(0.4)
    assert (item.influence, item.max_iterations) == (pytest.approx(0.7), 80)
    assert con.mute
    assert "not supported, Position off" in out and "position weight" not in out
    assert item.weight == pytest.approx(0.5)  # the constraint's position Weight is the chain's Weight
    item.chain_length, item.pole_angle, item.mute, item.weight = 2, -0.5, False, 0.25
    assert bpy.ops.chain_ik.constraints_from_chains() == {"FINISHED"}
    assert (con.chain_count, con.pole_angle, con.mute) == (2, pytest.approx(-0.5), False)
    assert con.weight == pytest.approx(0.25) and "Weight" not in capfd.readouterr().out  # in range: as it is
    assert len(obj.pose.bones["b3"].constraints) == 1


def test_no_constraints_and_untargeted_ones_are_reported(scene, capfd):
    obj = _plain_rig()
    with pytest.raises(RuntimeError, match="armature 'Rig' has no IK constraints"):
        bpy.ops.chain_ik.chains_from_constraints()
    obj.pose.bones["b2"].constraints.new("IK")  # no target
    capfd.readouterr()
    assert bpy.ops.chain_ik.chains_from_constraints() == {"FINISHED"}
    assert "not adopted: 'IK' on 'b2': it has no target" in capfd.readouterr().out
    assert len(obj.chain_ik.chains) == 0


def test_constraints_from_new_chains(scene):
    obj = _plain_rig()
    item = obj.chain_ik.chains.add()
    item.name, item.tip, item.chain_length, item.target = "Arm", "b3", 3, add_empty("Goal", (1, 0, 2))
    assert bpy.ops.chain_ik.constraints_from_chains() == {"FINISHED"}
    (con,) = obj.pose.bones["b3"].constraints
    assert (con.type, con.target.name, con.chain_count, item.constraint) == ("IK", "Goal", 3, con.name)


def test_readme_adoption_snippet_runs_on_rigify(rigify_file, capfd):
    import re

    from conftest import REPO

    readme = (REPO / "README.md").read_text(encoding="utf-8")
    section = readme[readme.index("### Adopting a rig's IK constraints") :]
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    rig = _open(rigify_file, False)
    capfd.readouterr()
    exec(code, {"bpy": bpy})
    out = capfd.readouterr().out
    assert "on again" not in out and "'Chain'" not in out, out  # was: 4 false warnings naming chain 'Chain'
    chains = rig.chain_ik.chains
    assert len(chains) == 8 and chains["MCH-forearm_ik.L"].mute
    assert rig.pose.bones["MCH-shin_ik.L"].constraints["IK"].influence == 1.0  # written back
    assert rig.pose.bones["MCH-shin_ik.R"].constraints["IK"].influence == 0.0  # still replaced
