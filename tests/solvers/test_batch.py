"""solve_batch must equal solving each target alone: triangulation's
vectorised pass to 2e-8 relative, about the square root of machine epsilon
(generic targets agree to ~1e-14; a joint whose triangle is nearly flat turns
by the square root of its rounding noise, so last-bit differences between the
scalar and the numpy arithmetic grow to ~1e-9 there: a 7-bone chain bent by
1e-7 gave 9.7e-10 x length; both poses reach to 1e-15). Iterative methods: a
single solve runs the plain-float kernels (solvers.kernels) where they serve,
the same steps as the batch's numpy code with its own rounding, so they must
take the same iterations and land within 1e-9 x length; where neither reaches
(a chain folded flat against a target it cannot reach, a singular pose that
magnifies rounding), the same iterations and tip error."""

import ik_strategies as ik
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import solvers

AT_ROOT = 1e-6


@st.composite
def chain_and_targets(draw, max_bones: int = 30):
    chain = draw(ik.chains(max_bones=max_bones))
    m = draw(st.integers(1, 6))
    targets = []
    for _ in range(m):
        kind = draw(st.sampled_from(["reachable", "unreachable", "root", "tip", "box"]))
        if kind == "reachable":
            targets.append(draw(ik.reachable_targets(chain)))
        elif kind == "unreachable":
            targets.append(draw(ik.unreachable_targets(chain)))
        elif kind == "root":
            targets.append(np.array(chain.root))
        elif kind == "tip":
            targets.append(np.array(chain.points[-1]))
        else:
            offset = draw(st.tuples(*[st.floats(-1.5, 1.5)] * 3))
            targets.append(chain.root + chain.total_length * np.array(offset))
    return chain, np.array(targets)


def compare(chain, targets, config, batch, rtol, unreached_points: bool = True):
    m, n = targets.shape[0], chain.n_bones
    assert len(batch) == m
    assert batch.points.shape == (m, n + 1, 3)
    assert batch.rotations.shape == (m, n, 4)
    assert batch.error.shape == (m,) and batch.iterations.shape == (m,) and batch.reached.shape == (m,)
    scale = rtol * chain.total_length
    for k in range(m):
        single = ik.solve(chain, targets[k], config)
        item = batch[k]
        assert isinstance(item, solvers.Solution)
        if not unreached_points and np.linalg.norm(targets[k] - chain.root) < AT_ROOT * chain.total_length:
            # An iterative method's target (all but) on the root: joint 0's turn follows an offset
            # below the chain's rounding, so the scalar and the numpy steps fold the chain different
            # valid ways; each is held to the invariants alone.
            ik.check_invariants(chain, item, targets[k])
            continue
        if unreached_points or single.reached:
            np.testing.assert_allclose(item.points, single.points, rtol=0, atol=scale, err_msg=f"target {k} points")
            np.testing.assert_allclose(
                item.rotations, single.rotations, rtol=0, atol=max(rtol, 1e-12) * 10, err_msg=f"target {k} rotations"
            )
        assert item.error == pytest.approx(single.error, rel=0, abs=scale)
        assert item.iterations == single.iterations
        if abs(single.error - chain.total_length * solvers.DEFAULT_RELATIVE_TOLERANCE) > scale:
            assert item.reached == single.reached
        ik.check_invariants(chain, item, targets[k])
    ik.check_rotations(chain, batch.points, batch.rotations)


@pytest.mark.parametrize("config", ik.TRIANGULATION_CONFIGS, ids=ik.TRIANGULATION_IDS)
@settings(max_examples=80)
@given(case=chain_and_targets())
def test_triangulation_batch_equals_single_solves(config, case):
    chain, targets = case
    ik.describe(chain, targets)
    batch = ik.solve_batch(chain, targets, config)
    compare(chain, targets, config, batch, rtol=2e-8)


@pytest.mark.parametrize("config", ik.ITERATIVE_CONFIGS, ids=ik.ITERATIVE_IDS)
@settings(max_examples=20)
@given(case=chain_and_targets(max_bones=12))
def test_iterative_batch_equals_single_solves(config, case):
    chain, targets = case
    ik.describe(chain, targets)
    batch = ik.solve_batch(chain, targets, config)
    compare(chain, targets, config, batch, rtol=1e-9, unreached_points=False)


@pytest.mark.parametrize("config", ik.CONFIGS, ids=ik.CONFIG_IDS)
def test_batch_of_degenerate_targets(config):
    """Root, on-line, full reach, behind the root, unreachable, together."""
    chain = solvers.Chain([[0, 0, 0], [0, 9, 0], [0, 18, 0], [0, 27, 0], [0, 36, 0], [0, 40, 0]])
    targets = np.array(
        [
            [0.0, 0.0, 0.0],
            [0.0, 13.5, 0.0],
            [0.0, 40.0, 0.0],
            [0.0, 55.0, 0.0],
            [0.0, -10.0, 0.0],
            [40.0, 0.0, 0.0],
            [0.0, 0.0, -40.0 * (1 + 1e-12)],
            [10.0, 20.0, 5.0],
        ]
    )
    batch = ik.solve_batch(chain, targets, config)
    assert np.all(np.isfinite(batch.points)) and np.all(np.isfinite(batch.rotations))
    compare(chain, targets, config, batch, rtol=1e-12 if config[0] == "triangulation" else 1e-9)


@pytest.mark.parametrize("config", ik.CONFIGS, ids=ik.CONFIG_IDS)
def test_empty_and_single_batches(config):
    chain = solvers.Chain([[0, 0, 0], [1, 0, 0], [1, 1, 0]])
    one = ik.solve_batch(chain, [[0.5, 1.0, 0.5]], config)
    assert len(one) == 1 and one.points.shape == (1, 3, 3)
    empty = ik.solve_batch(chain, np.zeros((0, 3)), config)
    assert len(empty) == 0
    assert empty.points.shape == (0, 3, 3) and empty.rotations.shape == (0, 2, 4)


@pytest.mark.parametrize("config", ik.CONFIGS, ids=ik.CONFIG_IDS)
def test_batch_order_does_not_matter(config):
    chain = solvers.Chain([[0, 0, 0], [0, 0, 2], [1, 0, 3], [1, 1, 4]])
    targets = ik.rng_reachable_targets(chain, 12, seed=7)
    forward = ik.solve_batch(chain, targets, config)
    backward = ik.solve_batch(chain, targets[::-1], config)
    np.testing.assert_allclose(forward.points, backward.points[::-1], rtol=0, atol=1e-12 * chain.total_length)
    np.testing.assert_array_equal(forward.iterations, backward.iterations[::-1])
