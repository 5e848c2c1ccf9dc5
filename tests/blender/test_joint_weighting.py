"""The Jacobian's Joint Weighting (issue 20 item 3) in Blender: the chain item's property (built from
the registry's declaration), passed to the solver, and a Solve with MASS reaching on a built arm."""

from __future__ import annotations

import bpy
import numpy as np
from builders import add_empty, bent_rolled_disconnected, bone_lengths, reachable_target, world_point

TOL = 1e-4
CHAIN = ["upper", "fore", "hand"]


def _arm(weighting: str):
    obj = bent_rolled_disconnected()
    target = add_empty()
    bpy.context.view_layer.objects.active = obj
    item = obj.chain_ik.chains.add()
    item.tip, item.chain_length, item.target, item.method = "hand", 3, target, "jacobian"
    item.tolerance = 1e-6
    item.joint_weighting = weighting
    return obj, item, target


def test_the_property_reaches_the_solver(scene):
    from chain_ik import properties

    obj, item, _ = _arm("STIFFNESS")
    prop = item.bl_rna.properties["joint_weighting"]
    assert prop.type == "ENUM" and prop.default == "STIFFNESS"
    assert [i.identifier for i in prop.enum_items] == ["STIFFNESS", "MASS"]
    assert properties.method_options(item, "jacobian")["joint_weighting"] == "STIFFNESS"
    item.joint_weighting = "MASS"
    assert properties.method_options(item, "jacobian")["joint_weighting"] == "MASS"


def test_a_solve_with_mass_reaches_and_keeps_the_bones(scene):
    rng = np.random.default_rng(11)
    obj, item, target = _arm("MASS")
    lengths = bone_lengths(obj)
    for _ in range(3):
        goal = reachable_target(obj, "hand", CHAIN, rng)
        target.location = goal
        assert bpy.ops.chain_ik.solve() == {"FINISHED"}
        assert np.linalg.norm(world_point(obj, "hand") - goal) < TOL
        after = bone_lengths(obj)
        assert all(abs(after[n] - v) <= 1e-5 * v + 1e-6 for n, v in lengths.items())
        assert all(np.all(np.isfinite(obj.pose.bones[n].rotation_quaternion[:])) for n in CHAIN)
