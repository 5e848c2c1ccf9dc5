"""chain_ik.chain_mirror: the .L <-> .R counterpart of a chain poses the mirrored bones as the
mirror image of the original's solve (names, targets, poles and pole angle flipped)."""

from __future__ import annotations

import math

import bpy
import numpy as np
import pytest
from builders import add_empty, make_armature

LEFT = [
    ("root", (0, 0, 1.0), (0, 0, 1.3), None, False, 0.0),
    ("upper.L", (0.2, 0.05, 1.4), (0.6, 0.1, 1.3), "root", False, 25.0),
    ("fore.L", (0.6, 0.1, 1.3), (0.95, -0.05, 1.25), "upper.L", True, -40.0),
    ("hand.L", (0.95, -0.05, 1.25), (1.1, -0.05, 1.2), "fore.L", True, 10.0),
    ("ik.L", (1.0, -0.3, 1.0), (1.0, -0.3, 1.2), "root", False, 0.0),
]


def _mirror_x(v):
    return (-v[0], v[1], v[2])


def _rig():
    """Left bones as listed, right bones made by Blender's Symmetrize (mirrored rolls)."""
    obj = make_armature(LEFT)
    bpy.ops.object.mode_set(mode="EDIT")
    for eb in obj.data.edit_bones:
        eb.select = eb.select_head = eb.select_tail = eb.name.endswith(".L")
    bpy.ops.armature.symmetrize()
    bpy.ops.object.mode_set(mode="POSE")
    assert {"upper.R", "fore.R", "hand.R", "ik.R"} <= set(obj.data.bones.keys())
    return obj


def _world(obj, names):
    obj_eval = obj.evaluated_get(bpy.context.evaluated_depsgraph_get())
    mw = obj_eval.matrix_world
    return {n: [np.array((mw @ getattr(obj_eval.pose.bones[n], end))[:]) for end in ("head", "tail")] for n in names}


@pytest.mark.parametrize("method", ["triangulation", "fabrik"])
@pytest.mark.parametrize("pole_angle", [0.0, 0.7, -1.5708])
def test_mirrored_chain_solves_to_the_mirror_image(scene, method, pole_angle):
    obj = _rig()
    add_empty("Goal.L", (0.7, -0.4, 1.0)), add_empty("Goal.R", _mirror_x((0.7, -0.4, 1.0)))
    add_empty("Pole.L", (0.5, 0.8, 1.6)), add_empty("Pole.R", _mirror_x((0.5, 0.8, 1.6)))
    bpy.context.view_layer.objects.active = obj
    item = obj.chain_ik.chains.add()
    item.name, item.tip, item.chain_length, item.method = "Arm.L", "hand.L", 3, method
    item.target, item.pole_target, item.pole_angle = bpy.data.objects["Goal.L"], bpy.data.objects["Pole.L"], pole_angle
    item.tolerance, item.max_iterations, item.influence = 1e-7, 500, 0.9
    assert bpy.ops.chain_ik.chain_mirror() == {"FINISHED"}
    mirrored = obj.chain_ik.chains["Arm.R"]
    assert obj.chain_ik.active == mirrored
    assert (mirrored.tip, mirrored.chain_length, mirrored.method) == ("hand.R", 3, method)
    assert (mirrored.target.name, mirrored.pole_target.name) == ("Goal.R", "Pole.R")
    assert (mirrored.tolerance, mirrored.max_iterations) == (pytest.approx(1e-7), 500)
    assert mirrored.influence == pytest.approx(0.9)
    expected = math.atan2(math.sin(math.pi - pole_angle), math.cos(math.pi - pole_angle))
    assert mirrored.pole_angle == pytest.approx(expected, abs=1e-6)
    assert bpy.ops.chain_ik.solve() == {"FINISHED"}
    left = _world(obj, ["upper.L", "fore.L", "hand.L"])
    right = _world(obj, ["upper.R", "fore.R", "hand.R"])
    for name, ends in left.items():
        for a, b in zip(ends, right[name[:-1] + "R"], strict=True):
            assert np.linalg.norm(np.array(_mirror_x(a)) - b) < 1e-4


def test_bone_targets_flip_and_a_second_mirror_updates(scene):
    obj = _rig()
    item = obj.chain_ik.chains.add()
    item.name, item.tip, item.chain_length, item.target, item.target_bone = "Arm", "hand.L", 2, obj, "ik.L"
    assert bpy.ops.chain_ik.chain_mirror() == {"FINISHED"}
    mirrored = obj.chain_ik.chains["hand.R"]  # a name without a side takes the mirrored tip's
    assert (mirrored.target, mirrored.target_bone) == (obj, "ik.R")
    item.chain_length = 3
    obj.chain_ik.active_index = 0
    assert bpy.ops.chain_ik.chain_mirror() == {"FINISHED"}
    assert len(obj.chain_ik.chains) == 2 and obj.chain_ik.chains["hand.R"].chain_length == 3


def test_missing_counterparts_are_refused_and_nothing_is_added(scene):
    obj = _rig()
    item = obj.chain_ik.chains.add()
    item.name, item.tip, item.target = "Arm.L", "hand.L", add_empty("Goal.L", (1, 0, 1))
    with pytest.raises(RuntimeError, match="object 'Goal.R' not found"):
        bpy.ops.chain_ik.chain_mirror()
    item.target = add_empty("Goal", (0, -1, 1))  # no side: both chains share it
    item.tip = "root"
    with pytest.raises(RuntimeError, match="bone 'root' has no side"):
        bpy.ops.chain_ik.chain_mirror()
    assert len(obj.chain_ik.chains) == 1
    item.tip = "hand.L"
    assert bpy.ops.chain_ik.chain_mirror() == {"FINISHED"}
    assert obj.chain_ik.chains["Arm.R"].target.name == "Goal"


@pytest.mark.parametrize("count", [1, 4, 8])
def test_mirroring_onto_a_new_chain_copies_the_source_as_the_list_grows(scene, count):
    """The new chain makes the list grow (its items move in memory): the source is read afresh,
    whatever the list's length (was: read through the item held from before)."""
    obj = _rig()
    goal = add_empty("Goal.L", (0.7, -0.4, 1.0))
    add_empty("Goal.R", _mirror_x((0.7, -0.4, 1.0)))
    bpy.context.view_layer.objects.active = obj
    chains = obj.chain_ik.chains
    for k in range(count):
        chains.add()
        chains[k].name, chains[k].tip, chains[k].chain_length = f"Arm{k}.L", "hand.L", 2
        chains[k].target, chains[k].method, chains[k].influence = goal, "fabrik", 0.5 + 0.01 * k
    obj.chain_ik.active_index = 0
    assert bpy.ops.chain_ik.chain_mirror() == {"FINISHED"}
    new = chains["Arm0.R"]
    assert (new.tip, new.chain_length, new.target.name, new.method) == ("hand.R", 2, "Goal.R", "fabrik")
    assert new.influence == pytest.approx(0.5) and obj.chain_ik.active == new
    assert [c.name for c in chains] == [f"Arm{k}.L" for k in range(count)] + ["Arm0.R"]


def test_mirroring_back_onto_a_set_chain_says_what_it_overwrote(scene, capfd):
    """Mirror makes the new chain active; pressed again there, it updates the first chain from it:
    the report is a warning naming the settings it overwrote (Undo brings them back)."""
    obj = _rig()
    goal = add_empty("Goal.L", (0.7, -0.4, 1.0))
    bpy.context.view_layer.objects.active = obj
    item = obj.chain_ik.chains.add()
    item.name, item.tip, item.chain_length = "Arm.L", "hand.L", 2
    assert bpy.ops.chain_ik.chain_mirror() == {"FINISHED"}
    assert "Info: chain 'Arm.R' made from 'Arm.L'" in capfd.readouterr().out
    left = obj.chain_ik.chains["Arm.L"]
    left.target, left.method = goal, "fabrik"
    assert obj.chain_ik.active.name == "Arm.R"
    assert bpy.ops.chain_ik.chain_mirror() == {"FINISHED"}
    out = capfd.readouterr().out
    assert "Warning: chain 'Arm.L' updated from 'Arm.R': Solver, Target overwritten" in out, out
    assert (left.target, left.method) == (None, "triangulation")
    assert bpy.ops.chain_ik.chain_mirror() == {"FINISHED"}  # again, from Arm.L: the same values
    assert "Info: chain 'Arm.R' updated from 'Arm.L': nothing changed" in capfd.readouterr().out
