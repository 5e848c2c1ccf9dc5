"""Degenerate and boundary targets: at the root, on the chain's own line,
exactly at / just inside / just outside full reach, the c == |a - b| boundary
of a two-bone chain, and the inner unreachable zone of a chain whose first
bone is longer than the rest. Every method must give a finite, valid pose;
triangulation must land within 1e-9 x length whenever the target is
reachable (the paper's algorithm done naively lands a bone away there)."""

import math

import ik_strategies as ik
import numpy as np
import pytest

import solvers

STRAIGHT = solvers.Chain([[0, 0, 0], [0, 9, 0], [0, 18, 0], [0, 27, 0], [0, 36, 0], [0, 40, 0]])  # length 40, +y
BENT = solvers.Chain([[1, 2, 3], [2, 4, 3.5], [2.5, 4, 6], [0.5, 3, 7], [1, 1, 7.5]])
LONG_FIRST = solvers.Chain([[0, 0, 0], [5, 0, 0], [5, 1, 0], [5, 1, 1]])  # 5, 1, 1: reach annulus [3, 7]
LONG_MIDDLE = solvers.Chain([[0, 0, 0], [1, 0, 0], [1, 3, 0], [1, 3, 1]])  # 1, 3, 1: reach annulus [1, 5]

DIRECTIONS = {
    "x": [1.0, 0.0, 0.0],
    "-y": [0.0, -1.0, 0.0],
    "+y": [0.0, 1.0, 0.0],
    "diag": [1.0, -2.0, 0.5],
    "near+y": [1e-9, 1.0, 0.0],
    "near-y": [1e-13, -1.0, -1e-13],
}


def reach_interval(chain):
    """Distances from the root the tip can reach: [max(0, 2 max(a) - L), L]."""
    return max(0.0, 2.0 * chain.lengths.max() - chain.total_length), chain.total_length


def unit(v):
    v = np.asarray(v, dtype=float)
    return v / np.linalg.norm(v)


def check_case(chain, target, config, *, exact_if_reachable=True):
    """Invariants always; for reachable targets triangulation lands within
    1e-9 x length; strictly unreachable targets stretch the chain toward them."""
    target = np.asarray(target, dtype=float)
    sol = ik.solve(chain, target, config)
    ik.check_invariants(chain, sol, target)
    d = float(np.linalg.norm(target - chain.root))
    inner, outer = reach_interval(chain)
    length = chain.total_length
    if d > outer:
        ik.check_straight_toward(chain, sol.points, target)
    if config[0] == "triangulation" and exact_if_reachable and inner <= d <= outer:
        assert sol.error <= 1e-9 * length, f"reachable target missed by {sol.error / length:.3g} x length"
    return sol


def _on_line_targets():
    # Targets on the straight chain's own line (the y axis).
    return {
        "root": [0.0, 0.0, 0.0],
        "between-joints": [0.0, 13.5, 0.0],
        "on-a-joint": [0.0, 18.0, 0.0],
        "near-root": [0.0, 1e-10, 0.0],
        "on-tip": [0.0, 40.0, 0.0],
        "in-front-of-tip": [0.0, 55.0, 0.0],
        "behind-root": [0.0, -10.0, 0.0],
        "behind-root-full-reach": [0.0, -40.0, 0.0],
        "behind-root-beyond": [0.0, -41.0, 0.0],
    }


ON_LINE = _on_line_targets()


@pytest.mark.parametrize("config", ik.CONFIGS, ids=ik.CONFIG_IDS)
@pytest.mark.parametrize("name", list(ON_LINE))
def test_targets_on_the_chains_own_line(config, name):
    check_case(STRAIGHT, ON_LINE[name], config)


@pytest.mark.parametrize("config", ik.CONFIGS, ids=ik.CONFIG_IDS)
@pytest.mark.parametrize("chain", [STRAIGHT, BENT, LONG_FIRST, LONG_MIDDLE], ids=["straight", "bent", "5-1-1", "1-3-1"])
def test_target_at_the_root(config, chain):
    sol = check_case(chain, chain.root, config)
    assert math.isfinite(sol.error)


@pytest.mark.parametrize("config", ik.CONFIGS, ids=ik.CONFIG_IDS)
@pytest.mark.parametrize("chain", [STRAIGHT, BENT, LONG_FIRST], ids=["straight", "bent", "5-1-1"])
@pytest.mark.parametrize("direction", list(DIRECTIONS))
@pytest.mark.parametrize("factor", [1.0, 1.0 + 1e-12, 1.0 - 1e-12, 1.0 - 1e-9])
def test_full_reach_boundary(config, chain, direction, factor):
    """Exactly at full reach (also for the straight chain pointing elsewhere),
    just outside and just inside it: finite, valid poses for every method; at
    or beyond full reach the straight chain toward the target; just inside,
    triangulation within 1e-9 x length."""
    u = unit(DIRECTIONS[direction])
    target = chain.root + factor * chain.total_length * u
    sol = check_case(chain, target, config)
    if factor >= 1.0:
        ik.check_straight_toward(chain, sol.points, target)
    elif config[0] == "triangulation":
        assert sol.error <= 1e-9 * chain.total_length


@pytest.mark.parametrize("config", ik.ITERATIVE_CONFIGS, ids=ik.ITERATIVE_IDS)
@pytest.mark.parametrize("chain", [STRAIGHT, BENT], ids=["straight", "bent"])
@pytest.mark.parametrize("direction", ["x", "-y"])
def test_iterative_methods_reach_targets_within_tolerance_of_full_reach(config, chain, direction):
    """A target (1 - 1e-9) x length from the root is within the default
    tolerance (1e-5 x length) of full reach, so the straight chain toward it
    already reaches it, and every method is held to `reached` with its default
    settings. Iterating instead is not a legitimate stall: FABRIK converges
    only very slowly this close to full extension, and CCD / Jacobian sit at
    the singular straight pose (target behind the root on the chain's line)."""
    target = chain.root + (1.0 - 1e-9) * chain.total_length * unit(DIRECTIONS[direction])
    sol = check_case(chain, target, config)
    assert sol.reached, f"error {sol.error / chain.total_length:.3g} x length after {sol.iterations} iterations"


TWO_BONE_CASES = [
    (lengths, which)
    for lengths in [(1.0, 3.0), (3.0, 1.0), (2.0, 2.0), (1.0, 1.0 + 1e-12)]
    for which in ["|a-b|", "a+b", "|a-b|+1e-12", "|a-b|-1e-12"]
    if not (which == "|a-b|-1e-12" and abs(lengths[0] - lengths[1]) < 1e-12)  # no negative distances
]


@pytest.mark.parametrize("config", ik.CONFIGS, ids=ik.CONFIG_IDS)
@pytest.mark.parametrize(("lengths", "which"), TWO_BONE_CASES, ids=[f"{w}-{ls}" for ls, w in TWO_BONE_CASES])
@pytest.mark.parametrize("direction", list(DIRECTIONS))
def test_two_bone_boundaries(config, lengths, which, direction):
    """Two bones along +y; targets at exactly |a - b| (and a + b) from the root,
    and 1e-12 either side of |a - b|."""
    a, b = lengths
    chain = solvers.Chain([[0.0, 0.0, 0.0], [0.0, a, 0.0], [0.0, a + b, 0.0]])
    d = {"|a-b|": abs(a - b), "a+b": a + b, "|a-b|+1e-12": abs(a - b) + 1e-12, "|a-b|-1e-12": abs(a - b) - 1e-12}[which]
    check_case(chain, d * unit(DIRECTIONS[direction]), config)


@pytest.mark.parametrize("config", ik.CONFIGS, ids=ik.CONFIG_IDS)
@pytest.mark.parametrize("chain", [LONG_FIRST, LONG_MIDDLE], ids=["5-1-1", "1-3-1"])
@pytest.mark.parametrize("direction", list(DIRECTIONS))
@pytest.mark.parametrize("where", ["inner-boundary", "inside-inner-zone", "just-outside-zone", "middle"])
def test_inner_unreachable_zone(config, chain, direction, where):
    """A dominant bone leaves an unreachable ball around the root: targets in
    it give finite poses; its boundary and beyond are reachable."""
    inner, outer = reach_interval(chain)
    d = {
        "inner-boundary": inner,
        "inside-inner-zone": 0.5 * inner,
        "just-outside-zone": inner + 1e-9,
        "middle": 0.5 * (inner + outer),
    }[where]
    target = chain.root + d * unit(DIRECTIONS[direction])
    check_case(chain, target, config)


@pytest.mark.parametrize("config", ik.CONFIGS, ids=ik.CONFIG_IDS)
def test_tiny_and_huge_chains(config):
    """Scale invariance: a 1e-6 long and a 1e6 long chain behave alike."""
    for scale in (1e-6, 1e6):
        chain = solvers.Chain(np.asarray(BENT.points) * scale)
        target = chain.root + 0.6 * chain.total_length * unit([1.0, 1.0, 1.0])
        check_case(chain, target, config)
        check_case(chain, chain.root + 3.0 * chain.total_length * unit([0.0, 0.0, -1.0]), config)


@pytest.mark.parametrize("config", ik.CONFIGS, ids=ik.CONFIG_IDS)
def test_fully_folded_chain(config):
    """Input bones pointing exactly back on each other (180° joints)."""
    chain = solvers.Chain([[0, 0, 0], [0, 0, 2], [0, 0, 0.5], [0, 0, 1.5], [0, 0, 1.0]])
    for target in ([0.0, 0.0, 1.0], [0.0, 3.0, 0.0], [0.0, 0.0, -5.0], [0.0, 0.0, 5.5], [1.0, 1.0, 1.0]):
        check_case(chain, target, config)


@pytest.mark.parametrize("config", ik.CONFIGS, ids=ik.CONFIG_IDS)
@pytest.mark.parametrize("offset", [1e-9, 1e-7, 1e-6])
def test_bone_turned_almost_half_way_round(config, offset):
    """Two bones (1, 3) along +y; the target at |a - b| = 2 just off the +y
    axis makes the first bone fold to almost exactly -y (180° - offset). The
    reported rotation must still take the input direction onto the solved
    one to 1e-9 (a swing that snaps to an exact half turn is off by ~offset)."""
    chain = solvers.Chain([[0.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 4.0, 0.0]])
    check_case(chain, 2.0 * unit([offset, 1.0, 0.0]), config)


def _nearly_opposite_cases(count=40, seed=1):
    """Straight two-bone chains (2, 1.5) whose direction is 1..3e-9 rad away
    from exactly opposite the target direction; target 1.5 from the root (a
    regular triangle). The bend-plane vector is then the tiny difference of
    two nearly opposite unit vectors, just above the 'axis undefined' cut."""
    rng = np.random.default_rng(seed)
    cases = []
    for _ in range(count):
        u = unit(rng.normal(size=3))
        v = unit(np.cross(u, rng.normal(size=3)))
        d = unit(u + rng.uniform(1e-9, 3e-9) * v)
        cases.append((solvers.Chain([[0.0, 0.0, 0.0], 2.0 * d, 3.5 * d]), -1.5 * u))
    return cases


@pytest.mark.parametrize("config", ik.CONFIGS, ids=ik.CONFIG_IDS)
def test_bone_nearly_opposite_the_target_direction(config):
    for chain, target in _nearly_opposite_cases():
        sol = check_case(chain, target, config)
        if config[0] == "triangulation":
            assert sol.error <= 1e-9 * chain.total_length, (chain.points.tolist(), target.tolist())
