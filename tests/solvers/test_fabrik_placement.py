"""FABRIK's `placement` option: "line" (the paper's passes, the default) and
"sphere" (the CGA form: a joint between two known neighbours goes to the
nearest point of the circle where the spheres about them meet). The generic
properties (invariants, reach, batch == single, determinism, sequences) run
for both through ik.CONFIGS; here: the geometry of one placement, the
documented scope (unlimited chains only), option checking and the FABRIK
paper's 10-joint case."""

from __future__ import annotations

import math

import ik_strategies as ik
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import solvers
from solvers.quat import sphere_point

SPHERE = ("fabrik", {"placement": "sphere"})


def point(a, b, ra, rb, near, tie=(1.0, 0.0, 0.0), scale=1.0):
    p, apart = sphere_point(
        np.array([a], dtype=float),
        np.array([b], dtype=float),
        ra,
        rb,
        np.array([near], dtype=float),
        np.array([tie], dtype=float),
        scale,
    )
    return p[0], bool(apart[0])


@st.composite
def sphere_cases(draw):
    a = np.array(draw(st.tuples(*[st.floats(-10.0, 10.0)] * 3)))
    b = a + draw(st.floats(0.01, 10.0)) * draw(ik.unit_vectors())
    near = np.array(draw(st.tuples(*[st.floats(-10.0, 10.0)] * 3)))
    return a, b, draw(st.floats(0.1, 5.0)), draw(st.floats(0.1, 5.0)), near


@settings(max_examples=200)
@given(case=sphere_cases())
def test_sphere_point_keeps_the_first_length_and_best_the_second(case):
    """Always at ra from a; at rb from b where the spheres meet, else as close
    to rb as the sphere about a allows (| |b - a| - ra | off); where they meet,
    no point of the circle is nearer `near` (checked on 720 circle points)."""
    a, b, ra, rb, near = case
    p, apart = point(a, b, ra, rb, near, scale=10.0)
    assert apart
    d = float(np.linalg.norm(b - a))
    # 1e-9, not 1e-12: with `near` 1e-6 off the line ab, the direction to it is found by a
    # subtraction that keeps ~1e-10 of it along ab (a=(0,0,1), b=a+(1,1e-6,0): 5.8e-11 off).
    assert np.linalg.norm(p - a) == pytest.approx(ra, rel=1e-9)
    if abs(ra - rb) < d < ra + rb:
        assert np.linalg.norm(p - b) == pytest.approx(rb, rel=1e-9, abs=1e-9)
        u = (b - a) / d
        along = (d * d + ra * ra - rb * rb) / (2.0 * d)
        e1 = ik.perpendicular(u)
        e2 = np.cross(u, e1)
        angles = np.linspace(0.0, 2.0 * math.pi, 720, endpoint=False)[:, None]
        circle = a + along * u + math.sqrt(ra * ra - along * along) * (np.cos(angles) * e1 + np.sin(angles) * e2)
        assert np.linalg.norm(p - near) <= np.min(np.linalg.norm(circle - near, axis=1)) + 1e-12
    else:
        best = min(abs(d - ra - rb), abs(abs(d - ra) - rb), abs(d + ra - rb))
        assert abs(np.linalg.norm(p - b) - rb) == pytest.approx(best, rel=1e-9, abs=1e-12)


def test_sphere_point_is_continuous_as_the_spheres_part():
    """Touching spheres: the tangent point; apart: on the line toward b; b
    inside the sphere about a: toward b; the sphere about a inside b's: away."""
    near = [0.3, 5.0, 0.0]
    for gap in (-1e-9, 0.0, 1e-9, 0.5):  # |b - a| = 2 + gap with radii 1 and 1
        p, _ = point([0, 0, 0], [2.0 + gap, 0, 0], 1.0, 1.0, near)
        np.testing.assert_allclose(p, [1.0, 0.0, 0.0], atol=1e-4)
    p, _ = point([0, 0, 0], [0.5, 0, 0], 2.0, 1.0, near)  # b well inside: the point nearest b's sphere
    np.testing.assert_allclose(p, [2.0, 0.0, 0.0])
    p, _ = point([0, 0, 0], [0.5, 0, 0], 1.0, 3.0, near)  # a's sphere inside b's
    np.testing.assert_allclose(p, [-1.0, 0.0, 0.0])
    _, apart = point([1, 2, 3], [1, 2, 3], 1.0, 1.0, near)
    assert not apart  # the caller falls back to the line


def test_sphere_point_breaks_ties_off_the_tie_axis():
    """`near` on the line ab: every circle point is as near; the one chosen
    lies off the line in the direction tie x (b - a)."""
    p, _ = point([0, 0, 0], [0, 1, 0], 1.0, 1.0, [0.0, 3.0, 0.0], tie=[1.0, 0.0, 0.0])
    np.testing.assert_allclose(p, [0.0, 0.5, math.sqrt(0.75)], atol=1e-15)  # x cross y = z


def test_placement_option_is_checked():
    chain = solvers.Chain([[0, 0, 0], [0, 1, 0], [0, 2, 0]])
    assert solvers.OPTIONS["fabrik"] == {"placement": "line"}
    for bad in ("circle", None, 1):
        with pytest.raises(ValueError, match="placement"):
            solvers.solve(chain, [1.0, 1.0, 0.0], method="fabrik", placement=bad)
        with pytest.raises(ValueError, match="placement"):
            solvers.solve_batch(chain, [[1.0, 1.0, 0.0]], method="fabrik", placement=bad)
        with pytest.raises(ValueError, match="placement"):
            solvers.solve_sequence(chain, [[1.0, 1.0, 0.0]], method="fabrik", placement=bad)
    with pytest.raises(ValueError, match="placement"):
        solvers.solve(chain, [1.0, 1.0, 0.0], method="ccd", placement="sphere")


def test_limited_chains_iterate_as_line_whatever_the_placement():
    """The placement applies to unlimited chains; a chain with joint limits
    runs the limited passes (aim and clamp) for either value."""
    rng = np.random.default_rng(5)
    plain = solvers.Chain(ik.chain_points([0, 0, 0], [1.0, 0.8, 0.6, 0.5], [0, 1, 0], [0.4, 0.3, 0.2], [0.0, 1.0, 2.0]))
    frames = ik.frames_along(plain.directions, [0.1, 0.2, 0.3, 0.4])
    limits = solvers.make_limits(
        4, use_limit=np.array([[True, False, True]] * 4), minimum=np.full((4, 3), -1.0), maximum=np.full((4, 3), 1.0)
    )
    chain = solvers.Chain(plain.points, frames, limits=limits)
    targets = ik.rng_reachable_targets(plain, 6, 2) + 0.1 * rng.normal(size=(6, 3))
    line = solvers.solve_batch(chain, targets, method="fabrik", placement="line")
    sphere = solvers.solve_batch(chain, targets, method="fabrik", placement="sphere")
    np.testing.assert_array_equal(line.points, sphere.points)
    np.testing.assert_array_equal(line.rotations, sphere.rotations)
    np.testing.assert_array_equal(line.iterations, sphere.iterations)


STRAIGHT = solvers.Chain([[0, 0, 0], [0, 9, 0], [0, 18, 0], [0, 27, 0], [0, 36, 0], [0, 40, 0]])


@pytest.mark.parametrize("y", [13.5, 18.0, 1e-10, 0.0, -10.0, 39.0])
def test_sphere_reaches_targets_on_the_chains_own_line(y):
    """A target on a straight chain's own line: the line placement keeps every
    joint on that line (and stalls where no folding of the line reaches);
    the sphere placement leaves it (tie-breaker axis) and reaches."""
    target = [0.0, y, 0.0]
    sol = solvers.solve(STRAIGHT, target, method="fabrik", placement="sphere")
    ik.check_invariants(STRAIGHT, sol, target)
    assert sol.reached, f"error {sol.error:.3g} after {sol.iterations} iterations"


def fabrik_paper_case(count: int, seed: int):
    """The FABRIK paper's case as bench/paper_experiment.py builds it: 9 unit
    bones straight along +y, targets uniform in the reachable ball."""
    chain = solvers.Chain(np.stack((np.zeros(10), np.arange(10.0), np.zeros(10)), axis=1))
    rng = np.random.default_rng(seed)
    dirs = rng.normal(size=(count, 3))
    dirs /= np.linalg.norm(dirs, axis=1, keepdims=True)
    return chain, dirs * (chain.total_length * rng.uniform(0.0, 1.0, size=(count, 1)) ** (1 / 3))


def test_fabrik_paper_case_iterations():
    """Tolerance 1e-3 x length, cap 1000, each target from the rest pose: the
    paper reports 15.5 iterations on average for FABRIK. Measured on these
    300 targets: line 14.8 (the paper's passes converge linearly near full
    reach; up to 284), sphere 1.45 (at most 8). Both reach every target."""
    chain, goals = fabrik_paper_case(300, seed=11)
    kw = dict(method="fabrik", tolerance=1e-3 * chain.total_length, max_iterations=1000)
    line = solvers.solve_batch(chain, goals, **kw)
    sphere = solvers.solve_batch(chain, goals, placement="sphere", **kw)
    assert line.reached.all() and sphere.reached.all()
    assert sphere.iterations.mean() < 15.5
    assert sphere.iterations.mean() < line.iterations.mean()
    assert sphere.iterations.max() <= 20


def test_fabrik_paper_case_sequential():
    """The same targets one after another, each from the previous solution."""
    chain, goals = fabrik_paper_case(100, seed=12)
    kw = dict(method="fabrik", tolerance=1e-3 * chain.total_length, max_iterations=1000, placement="sphere")
    seq = solvers.solve_sequence(chain, goals, **kw)
    assert seq.reached.all()
    assert seq.iterations.mean() < 15.5
    np.testing.assert_allclose(np.linalg.norm(np.diff(seq.points, axis=1), axis=2), 1.0, rtol=1e-9)
