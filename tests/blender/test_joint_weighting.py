"""The Jacobian's Joint Weighting (issue 20 item 3) in Blender: the chain item's property (built from
the registry's declaration), passed to the solver, a Solve with MASS reaching on a built arm, and
the capsules' radii read from the bones' B-Bone size (rig.capsules): a fat bone weighs more and
turns less; Rigify's metarig's rest values give a finite, symmetric positive definite M."""

from __future__ import annotations

import bpy
import numpy as np
from builders import add_empty, bent_rolled_disconnected, bone_lengths, metarig, reachable_target, world_point

TOL = 1e-4
CHAIN = ["upper", "fore", "hand"]


def _arm(weighting: str, name: str = "Rig"):
    obj = bent_rolled_disconnected(name)
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


def _turns(obj) -> dict[str, float]:
    """Each chain bone's turn from its rest (radians)."""
    return {n: obj.pose.bones[n].matrix_basis.to_quaternion().angle for n in CHAIN}


def test_a_fat_bone_weighs_more_and_the_mass_solve_turns_it_less(scene):
    from chain_ik.rig import capsules, tree
    from chain_ik.solvers.common import mass

    rigs = {}
    for weighting in ("MASS", "STIFFNESS"):
        for build in ("thin", "fat"):
            obj, item, target = _arm(weighting, f"{weighting} {build}")
            if build == "fat":  # the upper arm's B-Bone 4x as wide (a new bone's is 0.1 x 0.1)
                obj.data.bones["upper"].bbone_x, obj.data.bones["upper"].bbone_z = 0.4, 0.4
            target.location = (0.6, 0.9, 1.2)
            rigs[weighting, build] = obj, item
    radii = {}
    for build in ("thin", "fat"):
        obj = rigs["MASS", build][0]
        radii[build] = tree.tree_layout(obj, [("hand", 3, True)]).radii
        assert radii[build].tolist() == [capsules.bone_radius(obj.data.bones[n]) for n in CHAIN]
    length = rigs["MASS", "thin"][0].data.bones["upper"].length
    assert radii["thin"][0] == np.float32(0.1) and radii["fat"][0] == np.float32(0.4)
    assert np.array_equal(radii["thin"][1:], radii["fat"][1:])
    thin_mass, fat_mass = (mass.capsule_terms(length, radii[b][0])[0] for b in ("thin", "fat"))
    assert fat_mass > 10.0 * thin_mass  # r^2 L for the cylinder, r^3 for the caps
    turns = {}
    for key, (obj, item) in rigs.items():
        bpy.context.view_layer.objects.active = obj
        assert bpy.ops.chain_ik.solve() == {"FINISHED"}
        assert item.result.reached, key
        turns[key] = _turns(obj)
    # The heavy upper arm turns less under the mass weighting; the stiffness weighting reads no radius.
    assert turns["MASS", "fat"]["upper"] < 0.8 * turns["MASS", "thin"]["upper"], turns
    assert turns["STIFFNESS", "fat"] == turns["STIFFNESS", "thin"]


def test_a_bone_without_a_b_bone_size_falls_back_to_a_share_of_its_length(scene):
    from chain_ik.rig import capsules
    from chain_ik.solvers.common import mass

    obj, _, _ = _arm("MASS")
    bone = obj.data.bones["fore"]
    bone.bbone_x = 0.0
    assert capsules.bone_radius(bone) == mass.DEFAULT_RADIUS_SHARE * bone.length
    bone.bbone_x, bone.bbone_z = 0.2, 0.05  # an elliptic section: the circle of its area
    assert capsules.bone_radius(bone) == np.sqrt(np.float32(0.2) * np.float32(0.05))


def test_the_metarigs_rest_values_give_a_symmetric_positive_definite_mass_matrix(scene, rigify):
    from chain_ik.rig import tree
    from chain_ik.solvers.common import mass

    obj = metarig()
    chains = [(tip, 0, True) for tip in ("forearm.L", "forearm.R", "spine.006", "shin.L", "shin.R")]
    layout = tree.tree_layout(obj, chains)
    skeleton, local, names = tree.read_tree(obj, obj.evaluated_get(bpy.context.evaluated_depsgraph_get()), chains)
    bones = obj.data.bones
    want = [np.sqrt(bones[n].bbone_x * bones[n].bbone_z) for n in names]
    np.testing.assert_allclose(layout.radii, want, rtol=1e-6)
    np.testing.assert_allclose(skeleton.radii, want, rtol=1e-6)
    assert np.all(layout.radii > 0.0)  # Rigify sets each bone's B-Bone size: 0.05 x its length
    np.testing.assert_allclose(layout.radii, 0.05 * np.array([bones[n].length for n in names]), rtol=1e-4)
    frames, heads, ends = skeleton.forward(local)
    for root_translation in (False, True):
        m = mass.mass_matrix(heads, ends, skeleton.parents, skeleton.radii, root_translation=root_translation)
        assert np.all(np.isfinite(m)) and np.array_equal(m, m.T)
        assert np.linalg.eigvalsh(m).min() > 0.0
        np.linalg.cholesky(mass.normalized(m, 3 if root_translation else 0))
    # And a mass-weighted group solve of the five chains reaches what Blender's pose reaches.
    bpy.context.view_layer.objects.active = obj
    rng = np.random.default_rng(5)
    for tip, _, _ in chains:
        bones_here = tree.chain_bones(obj, tip, 0)[0]
        item = obj.chain_ik.chains.add()
        item.name, item.tip, item.chain_length, item.method = tip, tip, len(bones_here), "jacobian"
        item.joint_weighting, item.tolerance, item.max_iterations = "MASS", 1e-5, 500
        item.target = add_empty(f"Goal {tip}", reachable_target(obj, tip, [b.name for b in bones_here[-2:]], rng))
    assert bpy.ops.chain_ik.solve() == {"FINISHED"}
    for item in obj.chain_ik.chains:
        assert item.result.reached, (item.tip, item.result.error)
