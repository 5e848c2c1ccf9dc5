"""The plain-float kernels (solvers.kernels) against the numpy solvers they mirror.

`solve` runs a kernel where one serves; `solve_batch` on one target runs the
numpy code. Same iterations, points within 1e-9 x chain length (the issue's bar);
targets neither reaches are compared by tip error (see test_batch)."""

import ik_strategies as ik
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import solvers
from solvers import quat, registry

KERNEL_CONFIGS = [
    ("fabrik", {}),
    ("ccd", {}),
    ("jacobian", {"variant": "dls"}),
    ("jacobian", {"variant": "dls", "damping": 0.3, "max_step": 0.1}),
]
# Beyond this many iterations the float and numpy codes may part by rounding (see the test).
LONG = 100
KERNEL_IDS = [m + "".join(f"-{k}={v}" for k, v in o.items()) for m, o in KERNEL_CONFIGS]


@pytest.mark.parametrize("config", KERNEL_CONFIGS, ids=KERNEL_IDS)
@settings(max_examples=40, deadline=None)
@given(case=ik.chain_and_any_target(max_bones=24), cap=st.sampled_from([None, 1, 3]))
def test_kernel_matches_numpy_solver(config, case, cap):
    chain, target = case
    method, options = config
    fast = solvers.solve(chain, target, method=method, max_iterations=cap, **options)
    general = solvers.solve_batch(chain, target[None], method=method, max_iterations=cap, **options)[0]
    scale = 1e-9 * chain.total_length
    if general.iterations > LONG and fast.iterations != general.iterations:
        # A slow approach (24 bones, ~180 steps) amplifies the two codes' different rounding: both
        # must still end as the method ends, at the same verdict.
        assert fast.reached == general.reached
        ik.check_invariants(chain, fast, target)
        return
    assert fast.iterations == general.iterations
    assert fast.error == pytest.approx(general.error, rel=0, abs=scale)
    if general.reached:
        np.testing.assert_allclose(fast.points, general.points, rtol=0, atol=scale)
        np.testing.assert_allclose(fast.rotations, general.rotations, rtol=0, atol=1e-8)
    ik.check_invariants(chain, fast, target)


def _one(chain, method, **options):
    """The method's registry entry's float kernel on one target: a Solution, or why it declines."""
    entry = registry.get(method)
    target = (0.5, 1.0, 0.0)
    return entry.one(chain, target, 1e-5, entry.max_iterations, entry.options_for(options), None)


def test_kernels_say_why_they_cannot_serve():
    chain = solvers.Chain([[0, 0, 0], [0, 1, 0], [0, 2, 0]])
    assert "sphere" in _one(chain, "fabrik", placement="sphere")
    assert "pseudoinverse" in _one(chain, "jacobian", variant="pseudoinverse")
    assert "transpose" in _one(chain, "jacobian", variant="transpose")
    assert "undamped" in _one(chain, "jacobian", variant="dls", damping=0.0)
    for method in registry.REGISTRY:
        assert isinstance(_one(chain, method), solvers.Solution)
    limited = solvers.Chain(
        [[0, 0, 0], [0, 1, 0], [0, 2, 0]],
        [[1, 0, 0, 0]] * 2,
        limits=solvers.make_limits(2, use_limit=[True, False, False], minimum=[-1, 0, 0], maximum=[1, 0, 0]),
    )
    for method in registry.REGISTRY:
        assert "limits" in _one(limited, method)


def test_float_kernel_solution_builds_its_arrays_from_its_rows():
    """One solve's result keeps the kernel's floats (`rows()`, what the rig reads) and makes the
    arrays from them on first use; `replace` keeps both."""
    chain = solvers.Chain([[0, 0, 0], [0, 1, 0], [0, 2, 0]], [[1, 0, 0, 0]] * 2)
    sol = solvers.solve(chain, (0.5, 1.0, 0.3), method="triangulation")
    points, rotations = sol.rows()
    assert all(type(x) is float for row in points + rotations for x in row)
    np.testing.assert_array_equal(sol.points, np.array(points))
    np.testing.assert_array_equal(sol.rotations, np.array(rotations))
    assert sol.points.shape == (3, 3) and sol.rotations.shape == (2, 4)
    changed = sol.replace(reason="why")
    assert changed.reason == "why" and sol.reason == "" and changed.rows() == sol.rows()
    np.testing.assert_array_equal(changed.points, sol.points)
    general = solvers.solve_batch(chain, [(0.5, 1.0, 0.3)], method="triangulation")[0]
    np.testing.assert_array_equal(np.array(general.rows()[0]), general.points)


GOAL_CONFIGS = [("triangulation", {}), ("triangulation", {"smooth_fold": 1.0}), *KERNEL_CONFIGS]
GOAL_IDS = ["triangulation", "triangulation-smooth_fold=1", *KERNEL_IDS]


@st.composite
def framed_chain_and_goals(draw):
    chain = draw(ik.chains(max_bones=10))
    rolls = draw(st.lists(st.floats(-3.0, 3.0), min_size=chain.n_bones, max_size=chain.n_bones))
    framed = solvers.Chain(chain.points, ik.frames_along(chain.directions, rolls))
    target = draw(ik.reachable_targets(framed))
    pole = framed.root + framed.total_length * np.array(draw(st.tuples(*[st.floats(-1.0, 1.0)] * 3)))
    rotation = None
    if draw(st.booleans()):
        rotation = quat.from_axis_angle(draw(ik.unit_vectors()), draw(st.floats(-3.0, 3.0)))
    kw = {"pole": pole if draw(st.booleans()) or rotation is None else None}
    kw["pole_angle"] = draw(st.floats(-3.0, 3.0))
    if rotation is not None:
        kw["target_rotation"], kw["rotation_weight"] = rotation, draw(st.sampled_from([1.0, 0.5, 0.1]))
    return framed, target, kw


def _straight(chain) -> bool:
    """Every bone along the first (within 1e-6 rad): the pole's bend plane is undefined."""
    d = chain.directions
    return bool(np.all(np.abs(np.cross(d[:1], d)) < 1e-6))


@pytest.mark.parametrize("config", GOAL_CONFIGS, ids=GOAL_IDS)
@settings(max_examples=40, deadline=None)
@given(case=framed_chain_and_goals())
def test_kernel_goals_match_numpy_goals(config, case):
    """A pole and a tip orientation through the float kernels, against solvers.goals' numpy code."""
    chain, target, kw = case
    method, options = config
    fast = solvers.solve(chain, target, method=method, **options, **kw)
    general = solvers.solve_batch(chain, target[None], method=method, **options, **kw)[0]
    # Triangulation's scalar and vectorised passes differ by up to 2e-8 x length on nearly
    # flat triangles (see test_batch); the iterative kernels mirror their numpy steps closer.
    scale = (2e-8 if method == "triangulation" else 1e-9) * chain.total_length
    if kw.get("pole") is not None and _straight(chain):
        # A straight start has no bend plane for the pole to turn: which perpendicular each kernel
        # takes differs in the last bits, and an iterative method amplifies that into another (as
        # good) pose. Both must still reach where the target is reachable.
        assert fast.reached == general.reached
        return
    assert fast.iterations == general.iterations
    assert fast.error == pytest.approx(general.error, rel=0, abs=scale)
    if general.reached:
        np.testing.assert_allclose(fast.points, general.points, rtol=0, atol=scale)
        np.testing.assert_allclose(fast.rotations, general.rotations, rtol=0, atol=1e-8)


def _numpy_sequence(chain, targets, method, options):
    """solve_sequence's step by step, each step through the numpy solver (solve_batch)."""
    current, points, frames, iterations = chain, [], [], []
    for target in targets:
        sol = solvers.solve_batch(current, target[None], method=method, **options)[0]
        solved = sol.frames(current)
        points.append(sol.points)
        frames.append(solved)
        iterations.append(sol.iterations)
        current = solvers.Chain(sol.points, solved)
    return np.array(points), np.array(frames), np.array(iterations)


@pytest.mark.parametrize("config", KERNEL_CONFIGS, ids=KERNEL_IDS)
@settings(max_examples=15, deadline=None)
@given(case=framed_chain_and_goals(), seed=st.integers(0, 100))
def test_kernel_sequence_matches_numpy_steps(config, case, seed):
    """The float sequence kernel: each step from the previous solution, as numpy step by step."""
    chain, target, _ = case
    method, options = config
    rng = np.random.default_rng(seed)
    targets = target + 0.05 * chain.total_length * np.cumsum(rng.normal(size=(8, 3)), axis=0)
    tols = np.full(len(targets), solvers.DEFAULT_RELATIVE_TOLERANCE * chain.total_length)
    cap = 200 if method == "jacobian" else 100  # the methods' default caps
    entry = registry.get(method)
    seq = entry.sequence(chain, targets, tols, cap, entry.options_for(options), None, True)
    assert not isinstance(seq, str), seq
    seq_points, seq_frames, seq_iterations = seq.points, seq.frames, seq.iterations
    points, frames, iterations = _numpy_sequence(chain, targets, method, options)
    scale = 1e-9 * chain.total_length
    for k in range(len(targets)):
        assert seq_iterations[k] == iterations[k]
        if not np.linalg.norm(points[k, -1] - targets[k]) <= tols[k]:
            break  # past an unreached step the start poses may differ by more than rounding
        np.testing.assert_allclose(seq_points[k], points[k], rtol=0, atol=scale)
        np.testing.assert_allclose(np.abs(np.sum(seq_frames[k] * frames[k], axis=-1)), 1.0, rtol=0, atol=1e-9)
