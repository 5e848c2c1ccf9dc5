"""Bad input: chains, targets, methods, options, tolerances -> ValueError
with a message naming the problem."""

import math

import ik_strategies as ik
import numpy as np
import pytest

import solvers

GOOD = [[0.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 2.0, 0.0]]


@pytest.mark.parametrize(
    ("points", "match"),
    [
        ([[0.0, 0.0, 0.0]], "at least 2 points"),
        (np.zeros((0, 3)), "at least 2 points"),
        ([[0, 0, 0], [0, 1, 0], [0, 1, 0]], "bone 1 has zero length"),
        ([[0, 0, 0], [0, 0, 0]], "bone 0 has zero length"),
        ([[0, 0, 0], [0, 1, math.nan]], "point 1 is not finite"),
        ([[math.inf, 0, 0], [0, 1, 0]], "point 0 is not finite"),
        ([[0, 0, 0], [0, 1, 0], [0, 2, -math.inf]], "point 2 is not finite"),
        ([[0, 0], [0, 1]], r"shape \(n\+1, 3\)"),
        ([0.0, 1.0, 2.0], r"shape \(n\+1, 3\)"),
        (np.zeros((2, 3, 1)), r"shape \(n\+1, 3\)"),
        ([[0, 0, 0], [0, 1]], "array of numbers"),
        ([["a", 0, 0], [0, 1, 0]], "array of numbers"),
        (None, r"shape|numbers"),
    ],
)
def test_bad_chain_points(points, match):
    with pytest.raises(ValueError, match=match):
        solvers.Chain(points)


def test_bone_shorter_than_relative_minimum_is_zero_length():
    # A bone of 1e-12 in a chain of length ~1 is a zero-length bone.
    with pytest.raises(ValueError, match="bone 1 has zero length"):
        solvers.Chain([[0, 0, 0], [1, 0, 0], [1, 1e-12, 0]])


def test_chain_keeps_lengths_and_is_read_only():
    chain = solvers.Chain([[1, 2, 3], [1, 2, 5], [4, 6, 5]])
    np.testing.assert_allclose(chain.lengths, [2.0, 5.0])
    assert chain.total_length == pytest.approx(7.0)
    assert chain.n_bones == 2
    np.testing.assert_array_equal(chain.root, [1, 2, 3])
    with pytest.raises(ValueError):
        chain.points[0, 0] = 9.0


def test_chain_copies_its_input():
    pts = np.array(GOOD)
    chain = solvers.Chain(pts)
    pts[1] = [5.0, 5.0, 5.0]
    np.testing.assert_array_equal(chain.points, GOOD)


@pytest.mark.parametrize(
    ("frames", "match"),
    [
        (np.zeros((2, 4)), "unit length"),
        ([[1, 0, 0, 0]], r"shape \(2, 4\) or \(2, 3, 3\)"),
        (np.zeros((2, 3)), r"shape \(2, 4\) or \(2, 3, 3\)"),
        ([[1, 0, 0, 0], [math.nan, 0, 0, 0]], "non-finite"),
        ([[2, 0, 0, 0], [1, 0, 0, 0]], "unit length"),
        (np.stack([np.eye(3), 2 * np.eye(3)]), "rotation matrices"),
        (np.stack([np.eye(3), np.diag([1.0, 1.0, -1.0])]), "rotation matrices"),  # a reflection, det -1
        (np.stack([np.eye(3), [[1, 1, 0], [0, 1, 0], [0, 0, 1]]]), "rotation matrices"),
        (np.stack([np.eye(3), np.full((3, 3), math.inf)]), "non-finite"),
        ([["a", 0, 0, 0], [1, 0, 0, 0]], "numbers"),
    ],
)
def test_bad_frames(frames, match):
    with pytest.raises(ValueError, match=match):
        solvers.Chain(GOOD, frames=frames)


CHAIN = solvers.Chain(GOOD)


@pytest.mark.parametrize("config", ik.CONFIGS, ids=ik.CONFIG_IDS)
@pytest.mark.parametrize(
    "target",
    [
        [math.nan, 0.0, 0.0],
        [0.0, math.inf, 0.0],
        [0.0, 0.0, -math.inf],
        [math.nan, math.nan, math.nan],
    ],
)
def test_non_finite_target_raises(config, target):
    with pytest.raises(ValueError, match="target.*not finite"):
        ik.solve(CHAIN, target, config)
    targets = [[1.0, 1.0, 0.0], target, [0.0, 1.0, 1.0]]
    with pytest.raises(ValueError, match="target 1 is not finite"):
        ik.solve_batch(CHAIN, targets, config)


@pytest.mark.parametrize("config", ik.CONFIGS, ids=ik.CONFIG_IDS)
@pytest.mark.parametrize(("target", "match"), [([1.0, 2.0], r"shape \(3,\)"), ("abc", "3 numbers"), (None, "target")])
def test_malformed_target_raises(config, target, match):
    with pytest.raises(ValueError, match=match):
        ik.solve(CHAIN, target, config)


@pytest.mark.parametrize("config", ik.CONFIGS, ids=ik.CONFIG_IDS)
@pytest.mark.parametrize("targets", [[1.0, 2.0, 3.0], np.zeros((2, 2)), np.zeros((1, 2, 3)), [[1, 2, 3], [1, 2]]])
def test_malformed_batch_targets_raise(config, targets):
    with pytest.raises(ValueError, match="targets"):
        ik.solve_batch(CHAIN, targets, config)


@pytest.mark.parametrize("entry", [solvers.solve, solvers.solve_batch])
def test_unknown_method(entry):
    target = [1.0, 1.0, 0.0] if entry is solvers.solve else [[1.0, 1.0, 0.0]]
    with pytest.raises(ValueError, match="unknown method 'nope'"):
        entry(CHAIN, target, method="nope")


@pytest.mark.parametrize("entry", [solvers.solve, solvers.solve_batch])
@pytest.mark.parametrize("method", list(solvers.METHODS))
def test_unknown_option(entry, method):
    target = [1.0, 1.0, 0.0] if entry is solvers.solve else [[1.0, 1.0, 0.0]]
    with pytest.raises(ValueError, match="unknown option.*bogus"):
        entry(CHAIN, target, method=method, bogus=1)


@pytest.mark.parametrize("entry", [solvers.solve, solvers.solve_batch])
@pytest.mark.parametrize(
    ("method", "options", "match"),
    [
        ("triangulation", {"fold_angle": 89.9}, "fold_angle"),
        ("triangulation", {"fold_angle": 180.1}, "fold_angle"),
        ("triangulation", {"fold_angle": math.nan}, "fold_angle"),
        ("triangulation", {"fold_angle": "wide"}, "fold_angle"),
        ("triangulation", {"fold_angle": None}, "fold_angle"),
        ("triangulation", {"smooth_fold": -0.1}, "smooth_fold"),
        ("triangulation", {"smooth_fold": 1.5}, "smooth_fold"),
        ("triangulation", {"smooth_fold": math.nan}, "smooth_fold"),
        ("triangulation", {"smooth_fold": 0.5, "fold_angle": 90.0}, "smooth_fold"),
        ("jacobian", {"variant": "newton"}, "variant"),
        ("jacobian", {"variant": None}, "variant"),
        ("jacobian", {"damping": -0.1}, "damping"),
        ("jacobian", {"damping": math.inf}, "damping"),
        ("jacobian", {"damping": "lots"}, "damping"),
        ("jacobian", {"max_step": 0.0}, "max_step"),
        ("jacobian", {"max_step": -1.0}, "max_step"),
        ("jacobian", {"max_step": math.nan}, "max_step"),
        ("jacobian", {"max_step": None}, "max_step"),
    ],
)
def test_bad_option_values(entry, method, options, match):
    target = [1.0, 1.0, 0.0] if entry is solvers.solve else [[1.0, 1.0, 0.0]]
    with pytest.raises(ValueError, match=match):
        entry(CHAIN, target, method=method, **options)


@pytest.mark.parametrize("entry", [solvers.solve, solvers.solve_batch])
@pytest.mark.parametrize("method", list(solvers.METHODS))
@pytest.mark.parametrize("tolerance", [0.0, -1e-3, math.nan, math.inf, "small"])
def test_bad_tolerance(entry, method, tolerance):
    target = [1.0, 1.0, 0.0] if entry is solvers.solve else [[1.0, 1.0, 0.0]]
    with pytest.raises(ValueError, match="tolerance"):
        entry(CHAIN, target, method=method, tolerance=tolerance)


@pytest.mark.parametrize("entry", [solvers.solve, solvers.solve_batch])
@pytest.mark.parametrize("method", list(solvers.METHODS))
@pytest.mark.parametrize("max_iterations", [0, -5, 2.5, "ten"])
def test_bad_max_iterations(entry, method, max_iterations):
    target = [1.0, 1.0, 0.0] if entry is solvers.solve else [[1.0, 1.0, 0.0]]
    with pytest.raises(ValueError, match="max_iterations"):
        entry(CHAIN, target, method=method, max_iterations=max_iterations)


@pytest.mark.parametrize("entry", [solvers.solve, solvers.solve_batch])
def test_not_a_chain(entry):
    with pytest.raises(ValueError, match="Chain"):
        entry(GOOD, [[1.0, 1.0, 0.0]], method="fabrik")


def test_public_constants():
    assert set(solvers.METHODS) >= {"triangulation", "fabrik", "ccd", "jacobian"}
    assert solvers.JACOBIAN_VARIANTS == ("dls", "pseudoinverse", "transpose")
    assert solvers.OPTIONS["triangulation"] == {"fold_angle": 180.0, "smooth_fold": 0.0}
    assert solvers.OPTIONS["jacobian"]["variant"] == "dls"
    assert {"damping", "max_step"} <= set(solvers.OPTIONS["jacobian"])
    assert solvers.DEFAULT_RELATIVE_TOLERANCE == 1e-5


@pytest.mark.parametrize("method", list(solvers.METHODS))
def test_default_tolerance_is_relative_to_chain_length(method):
    """reached <=> error <= 1e-5 x length, for a chain of length 1000."""
    chain = solvers.Chain([[0, 0, 0], [0, 0, 400], [0, 0, 1000]])
    near = [0.0, 0.0, 1000.0 + 0.009]  # 9e-6 x length beyond: reached
    far = [0.0, 0.0, 1000.0 + 0.011]  # 1.1e-5 x length beyond: not reached
    assert solvers.solve(chain, near, method=method).reached
    assert not solvers.solve(chain, far, method=method).reached
    # An explicit tolerance is a distance.
    assert solvers.solve(chain, far, method=method, tolerance=0.02).reached


ROWS = [(0.0, 0.0, 0.0), (0.0, 1.0, 0.0), (0.0, 2.0, 0.5)]
UNIT = [(1.0, 0.0, 0.0, 0.0), (0.0, 1.0, 0.0, 0.0)]


@pytest.mark.parametrize(
    ("rows", "frames", "match"),
    [
        (ROWS[:1], None, "at least 2 points"),
        ([(0.0, 0.0, 0.0), (0.0, 1.0, 0.0), (0.0, 1.0, 0.0)], None, "bone 1 has zero length"),
        ([(0.0, 0.0, 0.0), (0.0, 1.0, math.nan)], None, "point 1 is not finite"),
        (ROWS, UNIT[:1], r"shape \(2, 4\)"),
        (ROWS, [(2.0, 0.0, 0.0, 0.0), UNIT[1]], "unit length"),
        (ROWS, [UNIT[0], (math.inf, 0.0, 0.0, 0.0)], "non-finite"),
    ],
)
def test_float_rows_keep_every_value_check(rows, frames, match):
    """Chain.from_float_rows (the rig's rows of Python floats) skips only the type checks."""
    for build in (solvers.Chain, solvers.Chain.from_float_rows):
        with pytest.raises(ValueError, match=match):
            build(rows, frames)


def test_float_rows_build_the_same_chain():
    rng = np.random.default_rng(3)
    for n in (1, 2, 5, 12):
        rows = [tuple(p) for p in np.cumsum(rng.normal(size=(n + 1, 3)), axis=0).tolist()]
        q = rng.normal(size=(n, 4))
        frames = [tuple(f) for f in (q / np.linalg.norm(q, axis=1, keepdims=True)).tolist()]
        a, b = solvers.Chain(rows, frames), solvers.Chain.from_float_rows(rows, frames)
        assert a.scalar_terms[:5] == b.scalar_terms[:5] and a.total_length == b.total_length
        assert list(a.scalar_terms[5]) == list(b.scalar_terms[5]) and a.fold_guard == b.fold_guard
        np.testing.assert_array_equal(a.frames, b.frames)


def test_float_rows_of_a_reference_read_as_the_arrays_do():
    """Rows of Python floats (a tree kernel's segments) take Chain's float path for the reference
    and base frame: the same numbers as the arrays, and bad rows still refused by name."""
    rng = np.random.default_rng(3)
    frames = solvers.quat.normalize(rng.normal(size=(3, 4)))
    reference = solvers.quat.normalize(rng.normal(size=(3, 4)))
    base = solvers.quat.normalize(rng.normal(size=4))
    points = [[0.0, 0.0, 0.0], [0.0, 0.0, 1.0], [0.0, 0.5, 1.5], [0.0, 1.0, 1.7]]
    arrays = solvers.Chain(points, frames, reference=reference, base_frame=base)
    rows = [tuple(r) for r in reference.tolist()]
    floats = solvers.Chain(points, frames, reference=rows, base_frame=tuple(base.tolist()))
    assert np.array_equal(arrays.reference, floats.reference)
    assert np.array_equal(arrays.base_frame, floats.base_frame)
    assert arrays.goal_terms == floats.goal_terms
    with pytest.raises(ValueError, match="reference quaternions must be unit length"):
        solvers.Chain(points, frames, reference=[(2.0, 0.0, 0.0, 0.0)] * 3)
