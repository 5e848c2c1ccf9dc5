"""Many frames of one tree solve at once: solve_skeleton_many against solve_skeleton frame by frame."""

import math
from dataclasses import replace

import numpy as np
import pytest
import tree_shapes
from hypothesis import given, settings
from hypothesis import strategies as st
from test_tree_solvers import trees

import solvers
from solvers import quat
from solvers.common import tree_run_lanes as run_many


@pytest.fixture(params=[0, None], ids=["lanes", "tail"])
def tail(request, monkeypatch):
    """TAIL 0: every iteration on lanes; the default: the last frames go on in floats."""
    if request.param is not None:
        monkeypatch.setattr(run_many, "TAIL", request.param)
    return request.param


def frames_of(skeleton, local, bones, rng, m, far=0.3):
    """(m, k, 3): the bones' end points in random FK poses, some moved out of reach."""
    poses = quat.multiply(local[None], quat.from_rotation_vector(rng.uniform(-0.8, 0.8, (m, len(local), 3))))
    targets = np.array([skeleton.forward(p)[2][bones] for p in poses])
    out = rng.random(m) < far
    targets[out] *= rng.uniform(1.2, 2.0, (int(out.sum()), 1, 1))
    return targets


def per_frame(skeleton, local, effectors, positions, **kw):
    out = []
    for row in positions:
        frame = [e if e.pin else replace(e, position=p) for e, p in zip(effectors, row, strict=True)]
        out.append(solvers.solve_skeleton(skeleton, local, frame, **kw))
    return out


def assert_same(batch, ones, skeleton):
    assert batch.local.shape == (len(ones),) + ones[0].local.shape
    np.testing.assert_array_equal(batch.iterations, [s.iterations for s in ones])
    local = np.array([s.local for s in ones])
    sign = np.where(np.sum(local * batch.local, axis=-1, keepdims=True) < 0.0, -1.0, 1.0)
    np.testing.assert_allclose(batch.local * sign, local, rtol=0, atol=1e-9)
    np.testing.assert_allclose(batch.error, [s.error for s in ones], rtol=0, atol=1e-9 * float(skeleton.lengths.sum()))
    np.testing.assert_array_equal(batch.reached, [s.reached for s in ones])
    np.testing.assert_allclose(quat.norm(batch.local), 1.0, atol=1e-12)


@settings(max_examples=40, deadline=None)
@given(
    st.booleans().flatmap(lambda limited: trees(limited=limited)),
    st.integers(1, 30),
    st.booleans(),
    st.sampled_from([None, 0.3, 1.0]),
)
def test_fabrik_batch_is_fabrik_frame_by_frame(tree, m, pinned, turned):
    skeleton, local, bones, rng = tree
    if len(bones) == 1 and not pinned:
        bones = sorted({bones[0], int(rng.integers(skeleton.n_bones))})
    positions = frames_of(skeleton, local, bones, rng, m)
    weights = rng.uniform(0.5, 2.0, len(bones))
    effectors = [
        solvers.Effector(b, position=positions[0, k], weight=w)
        for k, (b, w) in enumerate(zip(bones, weights, strict=True))
    ]
    if turned is not None:  # an orientation goal on the last effector
        wanted = quat.from_rotation_vector(rng.uniform(-1.0, 1.0, 3))
        effectors[-1] = replace(effectors[-1], orientation=wanted, rotation_weight=turned)
    if pinned:
        effectors[0] = solvers.Effector(bones[0], pin=True)
        positions[:, 0] = np.nan
    if len(effectors) == 1 and not pinned:
        return
    for tail in (0, run_many.TAIL):
        saved, run_many.TAIL = run_many.TAIL, tail
        try:
            batch = solvers.solve_skeleton_many(skeleton, local, effectors, positions, method="fabrik")
        finally:
            run_many.TAIL = saved
        assert batch.method == "fabrik"
        assert batch.reason == (
            ""
            if m > tail
            else f"fabrik's batch tree kernel: {m} frames, too few to share lanes (at most {tail}): each solved alone"
        )
        assert_same(batch, per_frame(skeleton, local, effectors, positions, method="fabrik"), skeleton)


@pytest.mark.parametrize(
    "names",
    [
        ("forearm.L", "forearm.R"),
        ("forearm.L", "forearm.R", "head"),
        ("forearm.L", "forearm.R", "head", "shin.L", "shin.R"),
    ],
)
def test_humanoid_frames(names, tail):
    skeleton, local, index = tree_shapes.humanoid()
    bones = [index[n] for n in names]
    positions = frames_of(skeleton, local, bones, np.random.default_rng(3), 40)
    effectors = [solvers.Effector(b, position=positions[0, k]) for k, b in enumerate(bones)]
    batch = solvers.solve_skeleton_many(skeleton, local, effectors, positions, method="fabrik", tolerance=1e-5)
    assert batch.reason == ""
    assert_same(batch, per_frame(skeleton, local, effectors, positions, method="fabrik", tolerance=1e-5), skeleton)


def test_pin_holds_on_every_frame(tail):
    skeleton, local, index = tree_shapes.humanoid()
    bones = [index["forearm.L"], index["forearm.R"], index["shin.L"]]
    positions = frames_of(skeleton, local, bones, np.random.default_rng(4), 30, far=0.0)
    positions[:, 2] = np.nan
    effectors = [
        solvers.Effector(bones[0], position=positions[0, 0]),
        solvers.Effector(bones[1], position=positions[0, 1]),
        solvers.Effector(bones[2], pin=True),
    ]
    batch = solvers.solve_skeleton_many(skeleton, local, effectors, positions, method="fabrik")
    assert_same(batch, per_frame(skeleton, local, effectors, positions, method="fabrik"), skeleton)
    assert np.all(batch.error[:, 2] < 1e-3)


def _two_hands(limits=None):
    skeleton, local, index = tree_shapes.humanoid()
    if limits is not None:
        skeleton = solvers.Skeleton(
            skeleton.parents,
            skeleton.offsets,
            skeleton.links,
            skeleton.lengths,
            skeleton.reference,
            skeleton.base_frame,
            limits,
        )
    bones = [index["forearm.L"], index["forearm.R"]]
    positions = frames_of(skeleton, local, bones, np.random.default_rng(5), 4, far=0.0)
    return skeleton, local, bones, positions


@pytest.mark.parametrize(
    "case, why",
    [
        ("ccd", "ccd has no batch tree kernel"),
        ("one", "one effector: a chain, solved by solvers.solve"),
    ],
)
def test_declines_with_a_reason_and_solves_frame_by_frame(case, why):
    skeleton, local, bones, positions = _two_hands()
    kw = {"method": "ccd" if case == "ccd" else "fabrik"}
    effectors = [solvers.Effector(b, position=positions[0, k]) for k, b in enumerate(bones)]
    if case == "one":
        effectors, positions = effectors[:1], positions[:, :1]
    batch = solvers.solve_skeleton_many(skeleton, local, effectors, positions, **kw)
    assert batch.reason == why
    for f in range(len(positions)):
        frame = []
        for k, e in enumerate(effectors):
            frame.append(solvers.Effector(e.bone, position=positions[f, k], orientation=e.orientation))
        one = solvers.solve_skeleton(skeleton, local, frame, method=kw["method"])
        np.testing.assert_array_equal(batch.local[f], one.local)
        assert batch.iterations[f] == one.iterations


@pytest.mark.parametrize(
    "change, match",
    [
        ({"positions": np.zeros((3, 2))}, "positions must have shape"),
        ({"positions": np.zeros((0, 2, 3))}, "positions must have shape"),
        ({"positions": np.full((3, 2, 3), np.nan)}, "positions must be finite"),
        ({"positions": "x"}, "positions must be numbers"),
        ({"poles": np.zeros((2, 2, 3))}, "one row per frame"),
        ({"poles": np.array([[[0.0, np.nan, 0.0]] * 2] * 3)}, "pole row must be finite"),
        ({"local": np.zeros((3, 4))}, "local rotations must be finite"),
        ({"tolerance": -1.0}, "tolerance must be a positive distance"),
        ({"max_iterations": 0}, "max_iterations must be an integer"),
        ({"method": "nope"}, "unknown method"),
        ({"placement": "oops"}, "placement must be one of"),
        ({"effectors": []}, "no effectors"),
        ({"effectors": [solvers.Effector(99, position=(0, 0, 0))] * 2}, "effector bone 99"),
    ],
)
def test_bad_input_raises_naming_the_problem(change, match):
    skeleton, local, index = tree_shapes.humanoid()
    bones = [index["forearm.L"], index["forearm.R"]]
    kw = {
        "local": local,
        "effectors": [solvers.Effector(b, position=(0, 0, 1)) for b in bones],
        "positions": np.zeros((3, 2, 3)),
        "method": "fabrik",
        **change,
    }
    args = [kw.pop(name) for name in ("local", "effectors", "positions")]
    with pytest.raises(ValueError, match=match):
        solvers.solve_skeleton_many(skeleton, *args, **kw)


def test_unreached_frames_report_their_errors(tail):
    skeleton, local, index = tree_shapes.humanoid()
    bones = [index["forearm.L"], index["forearm.R"]]
    positions = np.array([[[5.0, 0.0, 1.45], [-5.0, 0.0, 1.45]], [[0.7, -0.02, 1.45], [-0.7, -0.02, 1.45]]] * 8)
    effectors = [solvers.Effector(b, position=positions[0, k]) for k, b in enumerate(bones)]
    batch = solvers.solve_skeleton_many(skeleton, local, effectors, positions, method="fabrik")
    assert list(batch.reached) == [False, True] * 8
    assert np.all(batch.error[0::2] > 3.0) and math.isfinite(batch.error.max())


@pytest.mark.parametrize("given", ["rows", "own"])
def test_poles_spin_each_frame_as_solve_skeleton(given, tail):
    skeleton, local, index = tree_shapes.humanoid()
    bones = [index["forearm.L"], index["forearm.R"], index["head"]]
    rng = np.random.default_rng(7)
    positions = frames_of(skeleton, local, bones, rng, 24)
    effectors = [solvers.Effector(b, position=positions[0, k]) for k, b in enumerate(bones)]
    poles = np.full(positions.shape, np.nan)
    if given == "rows":
        poles[:, 0] = positions[:, 0] + rng.normal(size=(24, 3))
        poles[::3, 1] = (-0.5, 1.0, 1.4)  # the right arm's pole on every third frame only
        kw = {"poles": poles}
    else:
        effectors[0] = solvers.Effector(bones[0], position=positions[0, 0], pole=(0.5, 1.0, 1.4), pole_angle=0.3)
        poles[:, 0] = (0.5, 1.0, 1.4)
        kw = {}
    batch = solvers.solve_skeleton_many(skeleton, local, effectors, positions, method="fabrik", **kw)
    assert batch.reason == ""
    ones = []
    for f in range(len(positions)):
        frame = [
            solvers.Effector(
                e.bone,
                position=positions[f, k],
                pole=poles[f, k] if np.isfinite(poles[f, k, 0]) else None,
                pole_angle=e.pole_angle,
            )
            for k, e in enumerate(effectors)
        ]
        ones.append(solvers.solve_skeleton(skeleton, local, frame, method="fabrik"))
    assert_same(batch, ones, skeleton)
    none = np.full(positions.shape, np.nan)
    unpoled = solvers.solve_skeleton_many(skeleton, local, effectors, positions, method="fabrik", poles=none)
    assert not np.allclose(batch.local, unpoled.local)  # the poles turned something


def test_limits_and_stiffness_hold_on_every_frame(tail):
    hinge = np.zeros((15, 3), dtype=bool)
    hinge[[7, 10]] = (False, True, True)  # the forearms: X only
    limits = solvers.make_limits(
        15,
        lock=hinge,
        use_limit=hinge[:, [1, 0, 0]],
        minimum=(-2.0, 0.0, 0.0),
        maximum=(0.1, 0.0, 0.0),
        cone=np.full(15, 1.2),
        stiffness=np.where(np.arange(15)[:, None] == 2, 0.4, 0.0) * np.ones(3),
    )
    skeleton, local, bones, positions = _two_hands(limits)
    positions = frames_of(skeleton, local, bones, np.random.default_rng(8), 40)
    effectors = [solvers.Effector(b, position=positions[0, k]) for k, b in enumerate(bones)]
    batch = solvers.solve_skeleton_many(skeleton, local, effectors, positions, method="fabrik")
    assert batch.reason == ""
    assert_same(batch, per_frame(skeleton, local, effectors, positions, method="fabrik"), skeleton)
    for f in range(len(positions)):
        np.testing.assert_allclose(
            np.abs(solvers.limits.clamp(limits, np.arange(15), batch.local[f])), np.abs(batch.local[f]), atol=1e-9
        )


@pytest.mark.parametrize("weight", [0.0, 0.4, 1.0])
def test_orientation_goals_on_every_frame(weight, tail):
    skeleton, local, index = tree_shapes.humanoid()
    bones = [index["forearm.L"], index["forearm.R"], index["head"]]
    rng = np.random.default_rng(9)
    positions = frames_of(skeleton, local, bones, rng, 30)
    wanted = quat.from_rotation_vector(rng.uniform(-0.5, 0.5, 3))
    effectors = [
        solvers.Effector(bones[0], position=positions[0, 0], orientation=wanted, rotation_weight=weight),
        solvers.Effector(bones[1], position=positions[0, 1]),
        solvers.Effector(bones[2], position=positions[0, 2], orientation=(1.0, 0.0, 0.0, 0.0)),
    ]
    batch = solvers.solve_skeleton_many(skeleton, local, effectors, positions, method="fabrik")
    assert batch.reason == ""
    ones = []
    for row in positions:
        frame = [replace(e, position=p) for e, p in zip(effectors, row, strict=True)]
        ones.append(solvers.solve_skeleton(skeleton, local, frame, method="fabrik"))
    assert_same(batch, ones, skeleton)
