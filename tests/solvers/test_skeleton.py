"""The skeleton model: a chain is a one-branch skeleton; one effector solves as `solve` does."""

import dataclasses
import importlib.util
import inspect
from pathlib import Path

import numpy as np
import pytest

import solvers
from solvers import quat
from solvers.skeleton import Effector, SkeletonSolution
from solvers.skeleton_effectors import resolve_pins

_spec = importlib.util.spec_from_file_location("_goal_chains", Path(__file__).with_name("test_goals.py"))
goal_chains = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(goal_chains)


@pytest.mark.parametrize("limited", [False, True])
def test_chain_round_trips_through_the_skeleton(limited):
    chain = goal_chains.bent_chain([1.0, 0.8, 0.5], [0.4, 0.3], knee_hinges=limited)
    skeleton, local = solvers.Skeleton.from_chain(chain)
    assert skeleton.parents == (-1, 0, 1)
    frames, heads, ends = skeleton.forward(local)
    np.testing.assert_allclose(heads, chain.points[:-1], atol=1e-12)
    np.testing.assert_allclose(ends[-1], chain.points[-1], atol=1e-12)
    np.testing.assert_allclose(np.abs(np.sum(frames * chain.frames, axis=1)), 1.0, atol=1e-12)


@pytest.mark.parametrize("method", list(solvers.REGISTRY))
@pytest.mark.parametrize("limited", [False, True])
def test_one_effector_solves_as_solve(method, limited):
    chain = goal_chains.bent_chain([1.0, 0.8, 0.5], [0.4, 0.3], knee_hinges=limited)
    skeleton, local = solvers.Skeleton.from_chain(chain)
    (target, pole), *_ = goal_chains.pole_targets(chain, 1, seed=5)
    effector = solvers.Effector(bone=2, position=target, pole=pole, pole_angle=0.2)
    got = solvers.solve_skeleton(skeleton, local, [effector], method=method)
    want = solvers.solve(chain, target, method=method, pole=pole, pole_angle=0.2)
    _, _, ends = skeleton.forward(got.local)
    np.testing.assert_allclose(ends[-1], want.points[-1], atol=1e-9 * chain.total_length)
    assert got.error[0] == pytest.approx(want.error) and got.reached == want.reached
    assert np.allclose(quat.norm(got.local), 1.0)


def test_several_effectors_and_bad_trees_are_refused():
    chain = goal_chains.bent_chain([1.0, 0.8], [0.4])
    skeleton, local = solvers.Skeleton.from_chain(chain)
    two = [solvers.Effector(1, [0.0, 1.0, 0.5]), solvers.Effector(0, [0.0, 0.5, 0.5])]
    no_tree = [m.name for m in solvers.REGISTRY.values() if m.tree is None]
    for method in no_tree:
        with pytest.raises(ValueError, match="one chain at a time"):
            solvers.solve_skeleton(skeleton, local, two, method=method)
    with pytest.raises(ValueError, match="needs a position"):
        solvers.Effector(1)
    with pytest.raises(ValueError, match="priority"):
        solvers.Effector(1, [0.0, 1.0, 0.0], priority=-1)
    with pytest.raises(ValueError, match="parent"):
        solvers.Skeleton(
            (1, -1), skeleton.offsets, skeleton.links, skeleton.lengths, skeleton.reference, skeleton.base_frame
        )
    with pytest.raises(ValueError, match="weight"):
        solvers.Effector(1, [0.0, 1.0, 0.0], weight=0.0)


def test_from_bones_puts_heads_and_tails_where_given():
    tree_shapes = _load("tree_shapes")
    skeleton, local, bones = tree_shapes.humanoid()
    frames, heads, ends = skeleton.forward(local)
    assert skeleton.parents[bones["forearm.L"]] == bones["upper_arm.L"]
    np.testing.assert_allclose(heads[bones["thigh.R"]], [-0.1, 0, 1.0], atol=1e-12)
    np.testing.assert_allclose(ends[bones["forearm.L"]], [0.7, -0.02, 1.45], atol=1e-12)
    np.testing.assert_allclose(
        quat.rotate(frames, np.array([0.0, 1.0, 0.0])), (ends - heads) / skeleton.lengths[:, None], atol=1e-12
    )


def test_pins_take_the_input_pose():
    tree_shapes = _load("tree_shapes")
    skeleton, local, (left, right) = tree_shapes.y_tree()
    targets, posed = tree_shapes.fk_targets(skeleton, local, [left, right], np.random.default_rng(1))
    pins = resolve_pins(skeleton, posed, [solvers.Effector(left, pin=True), solvers.Effector(right, targets[1])])
    frames, _, ends = skeleton.forward(posed)
    np.testing.assert_allclose(pins[0].position, ends[left])
    np.testing.assert_allclose(pins[0].orientation, frames[left])
    assert pins[1].position is not None and not pins[1].pin


def _load(name):
    spec = importlib.util.spec_from_file_location(f"_{name}", Path(__file__).with_name(f"{name}.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("limited", [False, True])
def test_a_skeleton_read_by_a_rig_is_the_checked_one(limited):
    """Skeleton.read (a rig's reading, checked by its reader) holds what the checking constructor
    holds, field by field, and solves the same to the bit."""
    chain = goal_chains.bent_chain([1.0, 0.8, 0.5], [0.4, 0.3], knee_hinges=limited)
    checked, local = solvers.Skeleton.from_chain(chain)
    fields = [getattr(checked, f) for f in ("parents", "offsets", "links", "lengths", "reference", "base_frame")]
    read = solvers.Skeleton.read(*fields, checked.limits)
    for f in ("offsets", "links", "lengths", "reference", "base_frame"):
        np.testing.assert_array_equal(getattr(read, f), getattr(checked, f))
    assert read.parents == checked.parents and read.radii is None and checked.radii is None
    assert read.limits is checked.limits and read.n_bones == checked.n_bones
    (target, _), *_ = goal_chains.pole_targets(chain, 1, seed=2)
    effector = [solvers.Effector(bone=2, position=target)]
    a = solvers.solve_skeleton(read, local, effector, method="fabrik")
    b = solvers.solve_skeleton(checked, local, effector, method="fabrik")
    np.testing.assert_array_equal(a.local, b.local)


@pytest.mark.parametrize("limited", [False, True])
def test_a_skeleton_read_lazily_builds_its_rows_once_on_first_use(limited):
    """Skeleton.read_lazily (a lone chain's reading, rig.tree) holds the rows its `geometry()` gives,
    built on first use of any of them and once; a lone chain's solve from the pose as read (rows
    of floats, as the rig reads them) needs none and gives the array pose's numbers to the bit."""
    chain = goal_chains.bent_chain([1.0, 0.8, 0.5], [0.4, 0.3], knee_hinges=limited)
    checked, local = solvers.Skeleton.from_chain(chain)
    names = ("offsets", "links", "lengths", "reference", "base_frame")
    calls = []

    def geometry():
        calls.append(1)
        return tuple(getattr(checked, f).copy() for f in names)

    lazy = solvers.Skeleton.read_lazily(checked.parents, geometry, checked.limits)
    assert lazy.n_bones == checked.n_bones and lazy.limits is checked.limits and lazy.radii is None
    with pytest.raises(AttributeError):
        getattr(lazy, "no_such_field")  # noqa: B009 (the attribute lookup is the test)
    (target, _), *_ = goal_chains.pole_targets(chain, 1, seed=2)
    effector = [solvers.Effector(bone=2, position=target)]
    frames, heads, ends = solvers.skeleton_solve.chain_pose(chain)
    rows = (frames.tolist(), [tuple(h) for h in heads.tolist()], [tuple(e) for e in ends.tolist()])
    got = solvers.solve_skeleton(lazy, local, effector, method="fabrik", pose=rows)
    want = solvers.solve_skeleton(checked, local, effector, method="fabrik", pose=(frames, heads, ends))
    assert calls == [] or limited  # limits bring the rest (`reference`) into the branch's chain
    np.testing.assert_array_equal(got.error, want.error)
    np.testing.assert_array_equal(got.local, want.local)
    for f in names:
        np.testing.assert_array_equal(getattr(lazy, f), getattr(checked, f))
    assert calls == [1]


@pytest.mark.parametrize("cls", [Effector, SkeletonSolution])
def test_the_written_init_takes_the_dataclass_fields(cls):
    """Effector's and SkeletonSolution's __init__ are written out (a solve makes them per call):
    the same parameters as the fields, in order, with the same defaults, and every field set."""
    params = list(inspect.signature(cls.__init__).parameters.values())[1:]
    assert [p.name for p in params] == [f.name for f in dataclasses.fields(cls)]
    for p, f in zip(params, dataclasses.fields(cls), strict=True):
        assert p.default == (inspect.Parameter.empty if f.default is dataclasses.MISSING else f.default)
    if cls is SkeletonSolution:  # (Effector's values are checked: its own test below)
        values = [object() for _ in params]
        made = cls(*values)
        assert [getattr(made, f.name) for f in dataclasses.fields(cls)] == values


def test_an_effector_keeps_its_checks_and_its_position_array():
    p = np.array([0.1, 0.2, 0.3])
    e = Effector(2, position=p)
    assert e.position is p and e == Effector(2, position=p) and dataclasses.replace(e, bone=3).bone == 3
    for bad in (
        {"position": np.array([np.nan, 0.0, 0.0])},
        {"position": np.array([0.0, 0.0])},
        {"position": p, "weight": 0.0},
        {"position": p, "weight": np.inf},
        {"position": p, "rotation_weight": 1.5},
        {"position": p, "priority": -1},
        {"position": p, "softness": 1.0},
    ):
        with pytest.raises(ValueError):
            Effector(2, **bad)
    assert Effector(2, position=[1, 2, 3]).position.dtype == float  # converted as before
    assert Effector(2, position=p, weight=2).weight == 2
    with pytest.raises(dataclasses.FrozenInstanceError):
        e.bone = 3
