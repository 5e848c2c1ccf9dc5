"""The block kernels (solvers.soa: `Method.many`, what `solve_batch` runs) against the general
numpy batch code they stand in for (`Method.batch`, `iterate.run` with each method's step):
same iterations; where the general code reaches, points within 1e-9 x chain length and
rotations within 1e-8; where it does not, the same tip error (within 1e-9 x length)."""

import ik_strategies as ik
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import solvers
from solvers import registry

BLOCK_CONFIGS = [
    ("fabrik", {}),
    ("ccd", {}),
    ("jacobian", {}),
    ("jacobian", {"damping": 0.3, "max_step": 0.1}),
]
BLOCK_IDS = [m + "".join(f"-{k}={v}" for k, v in o.items()) for m, o in BLOCK_CONFIGS]


def both(chain, targets, config, cap=None):
    method, given_options = config
    entry = registry.get(method)
    options = entry.options_for(given_options)
    tol = solvers.DEFAULT_RELATIVE_TOLERANCE * chain.total_length
    cap = entry.max_iterations if cap is None else cap
    block = entry.many(chain, targets, tol, cap, options)
    assert not isinstance(block, str), block
    return block, entry.batch(chain, targets, tol, cap, options)


def agree(chain, targets, block, general):
    scale = 1e-9 * chain.total_length
    m, n = targets.shape[0], chain.n_bones
    assert block.points.shape == (m, n + 1, 3) and block.rotations.shape == (m, n, 4)
    np.testing.assert_array_equal(block.iterations, general.iterations)
    np.testing.assert_allclose(block.error, general.error, rtol=0, atol=scale)
    done = general.reached
    np.testing.assert_allclose(block.points[done], general.points[done], rtol=0, atol=scale)
    np.testing.assert_allclose(block.rotations[done], general.rotations[done], rtol=0, atol=1e-8)
    assert np.all(np.isfinite(block.points)) and np.all(np.isfinite(block.rotations))
    ik.check_rotations(chain, block.points, block.rotations)


@st.composite
def chain_and_targets(draw, max_bones: int = 12):
    chain = draw(ik.chains(max_bones=max_bones))
    targets = []
    for _ in range(draw(st.integers(1, 12))):
        kind = draw(st.sampled_from(["reachable", "unreachable", "joint", "box"]))
        if kind == "reachable":
            targets.append(draw(ik.reachable_targets(chain)))
        elif kind == "unreachable":
            targets.append(draw(ik.unreachable_targets(chain)))
        elif kind == "joint":  # a target on a joint: the block step is undefined there
            targets.append(np.array(chain.points[draw(st.integers(0, chain.n_bones))]))
        else:
            offset = draw(st.tuples(*[st.floats(-1.5, 1.5)] * 3))
            targets.append(chain.root + chain.total_length * np.array(offset))
    return chain, np.array(targets)


@pytest.mark.parametrize("config", BLOCK_CONFIGS, ids=BLOCK_IDS)
@settings(max_examples=40)
@given(case=chain_and_targets(), cap=st.sampled_from([None, 1, 4]))
def test_blocks_match_the_general_code(config, case, cap):
    chain, targets = case
    block, general = both(chain, targets, config, cap)
    agree(chain, targets, block, general)


@pytest.mark.parametrize("config", BLOCK_CONFIGS, ids=BLOCK_IDS)
def test_many_targets_through_compaction(config):
    """Hundreds of targets stopping at different iterations (the working set is compacted)."""
    chain = solvers.Chain([[0, 0, 0], [0, 9, 0], [0, 18, 0], [0, 27, 0], [0, 36, 0], [0, 40, 0]])
    targets = np.random.default_rng(3).uniform(-30.0, 30.0, size=(400, 3))
    targets[:6] = chain.points  # every joint, the root and the tip among them
    block, general = both(chain, targets, config)
    agree(chain, targets, block, general)
    assert len(set(block.iterations.tolist())) > 5


@pytest.mark.parametrize("config", BLOCK_CONFIGS, ids=BLOCK_IDS)
def test_solve_batch_runs_the_block_kernel(config):
    chain = solvers.Chain([[0, 0, 0], [0, 0, 2], [1, 0, 3], [1, 1, 4]])
    targets = ik.rng_reachable_targets(chain, 20, seed=5)
    block, _ = both(chain, targets, config)
    solved = ik.solve_batch(chain, targets, config)
    assert solved.reason == ""
    np.testing.assert_array_equal(solved.points, block.points)


@pytest.mark.parametrize(
    "method, options, words",
    [
        ("fabrik", {"placement": "sphere"}, "sphere placement has no block kernel"),
        ("jacobian", {"variant": "pseudoinverse"}, "pseudoinverse has no block kernel"),
        ("jacobian", {"variant": "transpose"}, "transpose has no block kernel"),
        ("jacobian", {"damping": 0.0}, "undamped"),
    ],
)
def test_the_general_code_serves_what_blocks_cannot_and_says_why(method, options, words):
    chain = solvers.Chain([[0, 0, 0], [0, 1, 0], [0, 2, 0], [1, 2, 0]])
    targets = ik.rng_reachable_targets(chain, 5, seed=1)
    solved = solvers.solve_batch(chain, targets, method=method, **options)
    assert words in solved.reason
    entry = registry.get(method)
    tol = solvers.DEFAULT_RELATIVE_TOLERANCE * chain.total_length
    general = entry.batch(chain, targets, tol, entry.max_iterations, entry.options_for(options))
    np.testing.assert_array_equal(solved.points, general.points)


@pytest.mark.parametrize("method", ["fabrik", "ccd", "jacobian"])
def test_limited_chains_keep_the_general_code_with_the_reason(method):
    chain = solvers.Chain(
        [[0, 0, 0], [0, 1, 0], [0, 2, 0]],
        [[1, 0, 0, 0]] * 2,
        limits=solvers.make_limits(2, use_limit=[True, False, False], minimum=[-1, 0, 0], maximum=[1, 0, 0]),
    )
    solved = solvers.solve_batch(chain, [[0.5, 1.5, 0.0], [1.0, 1.0, 0.0]], method=method)
    assert "joint limits" in solved.reason
    assert solved[0].reason == solved.reason


def test_chunks_of_targets_join_seamlessly(monkeypatch):
    from solvers.common import block_solve as many

    chain = solvers.Chain([[0, 0, 0], [0, 2, 0], [1, 3, 0], [1, 4, 1]])
    targets = np.random.default_rng(9).uniform(-4.0, 4.0, size=(50, 3))
    whole = solvers.solve_batch(chain, targets, method="fabrik")
    monkeypatch.setattr(many, "CHUNK", 7)
    chunked = solvers.solve_batch(chain, targets, method="fabrik")
    for field in ("points", "rotations", "iterations", "error", "reached"):
        np.testing.assert_array_equal(getattr(chunked, field), getattr(whole, field))
