"""solve_sequence: each step from the previous solution, as solving one target
after another and rebuilding the chain from each solution would."""

from __future__ import annotations

import math

import ik_strategies as ik
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import solvers
from solvers import quat


@st.composite
def chain_with_frames_and_path(draw, max_bones: int = 12):
    chain = draw(ik.chains(max_bones=max_bones))
    rolls = draw(st.lists(st.floats(-math.pi, math.pi), min_size=chain.n_bones, max_size=chain.n_bones))
    framed = solvers.Chain(chain.points, ik.frames_along(chain.directions, rolls))
    # A smooth path through the reachable region, sometimes beyond it, sometimes through the root.
    a, b = draw(ik.reachable_targets(framed)), draw(ik.reachable_targets(framed))
    kind = draw(st.sampled_from(["line", "through_root", "far"]))
    s = np.linspace(0.0, 1.0, draw(st.integers(2, 25)))[:, None]
    if kind == "through_root":
        b = 2.0 * framed.root - a
    elif kind == "far":
        b = framed.root + 3.0 * (b - framed.root)
    return framed, a + s * (b - a)


def stepwise(chain: solvers.Chain, targets, **kw):
    """The reference: solve, rebuild the chain from the solution, repeat."""
    points, frames = [], []
    current = chain
    for t in targets:
        sol = solvers.solve(current, t, **kw)
        solved = sol.frames(current)
        points.append(sol.points)
        frames.append(solved)
        keep = {"reference": chain.reference, "base_frame": chain.base_frame} if chain.frames is not None else {}
        current = solvers.Chain(sol.points, solved, limits=chain.limits, **keep)
    return np.array(points), np.array(frames)


def same_rotations(a: np.ndarray, b: np.ndarray, atol: float) -> bool:
    return bool(np.all(np.abs(np.abs(np.sum(a * b, axis=-1)) - 1.0) <= atol))


@pytest.mark.parametrize("options", [{}, {"smooth_fold": 1.0}, {"fold_angle": 90.0}])
@settings(max_examples=60)
@given(case=chain_with_frames_and_path())
def test_triangulation_sequence_equals_stepwise_solves(options, case):
    chain, targets = case
    ik.describe(chain, targets)
    seq = solvers.solve_sequence(chain, targets, method="triangulation", **options)
    points, frames = stepwise(chain, targets, method="triangulation", **options)
    scale = max(1.0, chain.total_length, float(np.abs(targets).max()))
    # The two carry the previous pose differently (state vs a chain rebuilt from points), so they
    # start a frame ~1e-13 apart; a fold near the root solves through acos near 1, which turns
    # that into up to sqrt(eps) x scale (found: 5e-8 on a 13-long chain through its root).
    assert np.allclose(seq.points, points, rtol=0.0, atol=1e-7 * scale)
    assert same_rotations(seq.frames, frames, 1e-9)
    assert np.all(seq.iterations == 1)
    assert np.allclose(seq.error, np.linalg.norm(points[:, -1] - targets, axis=1), atol=1e-9 * scale)


@pytest.mark.parametrize("method", ["fabrik", "ccd", "jacobian"])
@settings(max_examples=8)
@given(case=chain_with_frames_and_path(max_bones=6))
def test_iterative_sequence_equals_stepwise_solves(method, case):
    chain, targets = case
    seq = solvers.solve_sequence(chain, targets[:6], method=method, max_iterations=30)
    points, frames = stepwise(chain, targets[:6], method=method, max_iterations=30)
    assert np.array_equal(seq.points, points)
    assert same_rotations(seq.frames, frames, 1e-12)


def test_limits_hold_at_every_step():
    rng = np.random.default_rng(3)
    chain = solvers.Chain(
        [[0, 0, 0], [0, 1, 0], [0, 2, 0], [0, 2.5, 0]],
        np.tile([1.0, 0.0, 0.0, 0.0], (3, 1)),
        limits=solvers.make_limits(
            3, lock=[False, True, True], use_limit=[True, False, False], minimum=[0.0, 0, 0], maximum=[2.0, 0, 0]
        ),
    )
    targets = rng.uniform(-2.0, 2.0, size=(20, 3))
    for method in solvers.METHODS:
        seq = solvers.solve_sequence(chain, targets, method=method)
        for k in range(len(targets)):
            local = quat.multiply(
                quat.conjugate(np.concatenate(([[1.0, 0.0, 0.0, 0.0]], seq.frames[k, :-1]))), seq.frames[k]
            )
            # Hinge about X within [0, 2] rad: no Y or Z component, angle in range.
            assert np.allclose(local[:, 2:], 0.0, atol=1e-9), (method, k)
            angle = 2.0 * np.arctan2(local[:, 1], local[:, 0])
            assert np.all(angle >= -1e-9) and np.all(angle <= 2.0 + 1e-9), (method, k, angle)


def test_per_step_tolerance_and_progress():
    chain = solvers.Chain([[0, 0, 0], [0, 1, 0], [0, 2, 0]])
    targets = np.array([[0.5, 1.0, 0.0], [0.6, 1.0, 0.1], [5.0, 0.0, 0.0]])
    seen = []
    seq = solvers.solve_sequence(chain, targets, method="fabrik", tolerance=[1e-3, 1e-6, 1e-3], progress=seen.append)
    assert seen == [0, 1, 2]
    assert seq.reached.tolist() == [True, True, False]
    assert seq.error[1] <= 1e-6


@pytest.mark.parametrize(
    ("targets", "kwargs", "match"),
    [
        ([[0.0, 1.0, math.nan]], {}, "target 0 is not finite"),
        ([[0.0, 1.0, 0.0], [math.inf, 0.0, 0.0]], {}, "target 1 is not finite"),
        ([], {}, "shape"),
        ([[0.0, 1.0]], {}, "shape"),
        ([[0.0, 1.0, 0.0]], {"tolerance": [1e-3, 1e-3]}, "tolerance"),
        ([[0.0, 1.0, 0.0]], {"tolerance": [-1.0]}, "tolerance"),
        ([[0.0, 1.0, 0.0]], {"method": "newton"}, "unknown method"),
        ([[0.0, 1.0, 0.0]], {"smooth_fold": 2.0}, "smooth_fold"),
    ],
)
def test_bad_input_names_the_problem(targets, kwargs, match):
    chain = solvers.Chain([[0, 0, 0], [0, 1, 0], [0, 2, 0]])
    kwargs = {"method": "triangulation", **kwargs}
    with pytest.raises(ValueError, match=match):
        solvers.solve_sequence(chain, targets, **kwargs)


@settings(max_examples=20)
@given(case=chain_with_frames_and_path())
def test_chunks_join_seamlessly(case):
    """Long sequences are converted in chunks; a chunk of 2 steps must change nothing."""
    from solvers.triangulation import chain_steps as sequence

    chain, targets = case
    whole = solvers.solve_sequence(chain, targets, method="triangulation", smooth_fold=0.5)
    saved = sequence.CHUNK
    sequence.CHUNK = 2
    try:
        chunked = solvers.solve_sequence(chain, targets, method="triangulation", smooth_fold=0.5)
    finally:
        sequence.CHUNK = saved
    scale = max(1.0, chain.total_length, float(np.abs(targets).max()))
    assert np.allclose(whole.points, chunked.points, rtol=0.0, atol=1e-9 * scale)
    assert same_rotations(whole.frames, chunked.frames, 1e-9)


@pytest.mark.parametrize("method", ["triangulation", "fabrik"])
def test_tips_without_points(method):
    chain = solvers.Chain([[0, 0, 0], [0, 1, 0], [0, 2, 0], [0, 2.5, 0]], np.tile([1.0, 0.0, 0.0, 0.0], (3, 1)))
    targets = np.array([[0.5, 1.5, 0.2], [0.6, 1.4, 0.3], [3.0, 0.0, 0.0]])
    full = solvers.solve_sequence(chain, targets, method=method)
    light = solvers.solve_sequence(chain, targets, method=method, keep_points=False)
    assert light.points is None
    assert np.array_equal(full.tips, full.points[:, -1])
    assert np.array_equal(light.tips, full.tips)
    assert np.array_equal(light.frames, full.frames)
