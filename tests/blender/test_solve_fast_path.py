"""The Solve path's plain-float shortcuts agree with the numpy definitions they replace."""

from __future__ import annotations

import math

import bpy
import numpy as np
import pytest
from builders import add_empty, bent_rolled_disconnected, random_pose, transform, world_point
from mathutils import Matrix

SOLVER_METHODS = ("triangulation", "fabrik", "ccd", "jacobian")


@pytest.fixture
def ck(ext):
    """The extension's modules (importable once the session fixture has loaded it)."""
    from chain_ik import rig, solvers
    from chain_ik.app import solve as run
    from chain_ik.rig import read

    return rig, solvers, run, read


def _spec(run, target, method="triangulation"):
    return run.ChainSpec(tip="hand", chain_length=3, target=target, method=method)


@pytest.mark.parametrize("method", SOLVER_METHODS)
def test_result_figures_match_the_numpy_definitions(scene, ck, method):
    rig, solvers, run, _ = ck
    obj = bent_rolled_disconnected(matrix_world=transform((1, 2, 3), (0.3, -0.2, 0.9), (1.5, -0.7, 2.0)))
    rng = np.random.default_rng(5)
    target = add_empty()
    for _ in range(4):
        random_pose(obj, ["upper", "fore", "hand"], rng)
        target.location = rng.uniform(-2, 2, 3)
        bpy.context.view_layer.update()
        (outcome,) = run.solve_unit(obj, [_spec(run, target, method)], bpy.context.evaluated_depsgraph_get())
        chain, solution, _ = outcome.solution.branch
        points = solution.points
        assert outcome.cost == pytest.approx(float(solvers.rotation_cost(chain, points)), rel=1e-9, abs=1e-6)
        tip_world = np.array(obj.matrix_world @ rig.space.vector(points[-1]))
        assert outcome.error == pytest.approx(float(np.linalg.norm(tip_world - np.array(target.location))), abs=1e-6)
        # The restore snapshot taken while computing is the pose before writing.
        assert outcome.write.before == rig.snapshot(obj, outcome.write.values)
        rig.apply(obj, outcome.write.values)
        bpy.context.view_layer.update()
        reached = world_point(obj, "hand")
        assert np.linalg.norm(reached - tip_world) < 1e-4


def test_read_chain_reports_constrained_bones_and_points_as_before(scene, ck):
    rig = ck[0]
    obj = bent_rolled_disconnected()
    obj.pose.bones["fore"].constraints.new("COPY_ROTATION").influence = 0.5
    muted = obj.pose.bones["upper"].constraints.new("COPY_ROTATION")
    muted.enabled = False
    bpy.context.view_layer.update()
    obj_eval = obj.evaluated_get(bpy.context.evaluated_depsgraph_get())
    chain = rig.read_chain(obj_eval, "hand", 3)
    assert chain.names == ("upper", "fore", "hand") and chain.constrained == ("fore",)
    heads = [obj_eval.pose.bones[n].head[:] for n in chain.names]
    assert np.allclose(chain.chain.points, heads + [obj_eval.pose.bones["hand"].tail[:]], atol=1e-7)
    assert chain.parent_matrix == obj_eval.pose.bones["root"].matrix
    unit = rig.unit.read_unit(obj, obj_eval, [("hand", 3, True)], False)
    assert unit.names == chain.names and unit.constrained == ("fore",)


def _reference_rigid(pose: Matrix, basis: Matrix, tolerance: float) -> bool:
    """The rigidity test in numpy, on the same float32 matrices."""
    inherited = np.array(pose.to_3x3()) @ np.linalg.inv(np.array(basis.to_3x3()))
    gram = inherited.T @ inherited
    c = np.trace(gram) / 3.0
    return bool(c > 0.0 and np.max(np.abs(gram - c * np.eye(3))) <= tolerance * c)


@pytest.mark.parametrize("stretch", [1.0, 1.0002, 1.002, 1.3])
def test_rigidity_check_matches_its_definition_near_the_tolerance(scene, ck, stretch):
    read = ck[3]
    obj = bent_rolled_disconnected()
    obj.pose.bones["root"].scale = (1.0, stretch, 1.0)
    obj.pose.bones["upper"].rotation_mode = "XYZ"
    obj.pose.bones["upper"].rotation_euler = (0.4, -0.3, 1.1)
    bpy.context.view_layer.update()
    pb = obj.evaluated_get(bpy.context.evaluated_depsgraph_get()).pose.bones["upper"]
    expected = _reference_rigid(pb.matrix, pb.matrix_basis, read.RIGID_TOLERANCE)
    if expected:
        assert read._check_rigid(pb, pb.matrix.copy()) is False
    else:
        with pytest.raises(ValueError, match="non-uniform scale"):
            read._check_rigid(pb, pb.matrix.copy())
    assert expected == (stretch < 1.001)


def test_object_space_checks_stay_exact(scene, ck):
    rig = ck[0]
    obj = bent_rolled_disconnected()
    obj.matrix_world = Matrix.Diagonal((3e38, 3e38, 3e38, 1.0))  # float32's largest scale: still finite
    assert rig.object_space(obj).stretch == pytest.approx(math.sqrt(3) * 3e38, rel=1e-6)
    obj.matrix_world = Matrix.Diagonal((math.inf, 1.0, 1.0, 1.0))
    with pytest.raises(ValueError, match="non-finite"):
        rig.object_space(obj)
    obj.matrix_world = Matrix.Diagonal((1.0, 0.0, 1.0, 1.0))
    with pytest.raises(ValueError, match="zero scale"):
        rig.object_space(obj)
    space = rig.object_space(bent_rolled_disconnected("Other", transform((1, 0, 0), (0, 0, 0.5), (2, 2, 2))))
    assert np.allclose(space.to_local([1.0, 0.0, 0.0]), [0, 0, 0], atol=1e-7)
    for bad in ([math.nan, 0, 0], [0, 0], "abc"):
        with pytest.raises(ValueError, match="not finite"):
            space.to_local(bad)
