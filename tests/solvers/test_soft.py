"""solvers.common.soft: soft IK (Nicholas' formula) and its combination with IK stretch (issue 20 item 2)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from solvers.common import soft

reaches = st.floats(1e-3, 1e3)
shares = st.floats(1e-4, 0.99)
ratios = st.floats(0.0, 20.0)  # the distance as a multiple of the reach
coords = st.floats(-100.0, 100.0)
points = st.tuples(coords, coords, coords)


def formula(d: float, reach: float, share: float) -> float:
    """Nicholas' formula as the issue writes it, independently of the module."""
    s = share * reach
    start = reach - s
    return d if d <= start else start + s * (1.0 - math.exp(-(d - start) / s))


@given(points, st.lists(points, min_size=1, max_size=8), reaches)
def test_softness_zero_is_the_identity_to_the_bit(base, targets, reach):
    t = np.array(targets)
    out = soft.soften_targets(base, t, reach, 0.0)
    assert out.tobytes() == t.tobytes() and out is not t
    for target in targets:
        assert soft.soften_target(base, target, reach, 0.0) == tuple(map(float, target))
    d = np.linalg.norm(t - np.array(base), axis=1)
    assert soft.soft_distances(d, reach, 0.0).tobytes() == d.tobytes()
    assert all(soft.soft_distance(x, reach, 0.0) == x for x in d.tolist())


@given(ratios, reaches, shares)
def test_the_soft_distance_never_exceeds_the_reach_nor_the_distance(ratio, reach, share):
    d = ratio * reach
    v = soft.soft_distance(d, reach, share)
    assert v <= reach and v <= d
    assert v == pytest.approx(formula(d, reach, share), rel=1e-12, abs=1e-12 * reach)
    assert soft.soft_distances(np.array([d]), reach, share)[0] == pytest.approx(v, rel=1e-15, abs=0.0)


@given(st.floats(0.0, 1e6), reaches, shares)
def test_huge_distances_stay_below_the_reach(d, reach, share):
    assert soft.soft_distances(np.array([d]), reach, share)[0] <= reach


@given(ratios, ratios, reaches, shares)
def test_monotone(a, b, reach, share):
    lo, hi = sorted((a * reach, b * reach))
    assert soft.soft_distance(lo, reach, share) <= soft.soft_distance(hi, reach, share)
    v = soft.soft_distances(np.array([lo, hi]), reach, share)
    assert v[0] <= v[1]


@given(reaches, st.floats(0.01, 0.9))
def test_c1_at_the_start_of_softening(reach, share):
    """Value and slope match at D_s: finite differences on either side, against the slopes 1 and
    e^-(h/s) (the exact derivative of the curve at distance h past D_s)."""
    s = share * reach
    start = reach - s
    h = 1e-5 * s
    assert soft.soft_distance(start, reach, share) == start
    left = (soft.soft_distance(start, reach, share) - soft.soft_distance(start - h, reach, share)) / h
    right = (soft.soft_distance(start + h, reach, share) - soft.soft_distance(start, reach, share)) / h
    assert left == pytest.approx(1.0, rel=1e-6)
    assert right == pytest.approx(1.0, rel=1e-4)  # the curve's slope is 1 - h/(2s) + ... there
    assert soft.soft_slope(start, reach, share) == 1.0
    assert soft.soft_slope(start + h, reach, share) == pytest.approx(math.exp(-h / s), rel=1e-12)


@given(reaches, st.floats(0.01, 0.9), st.floats(0.0, 30.0))
def test_it_approaches_the_reach_asymptotically(reach, share, k):
    """At k softness lengths past D_s the gap to the reach is s e^-k: it shrinks, never closes."""
    s = share * reach
    d = reach - s + k * s
    gap = reach - soft.soft_distance(d, reach, share)
    assert gap == pytest.approx(s * math.exp(-k), rel=1e-6, abs=4 * math.ulp(reach))
    assert soft.soft_distance(reach * 1e3, reach, share) == pytest.approx(reach, rel=1e-12)


@given(st.floats(0.0, 0.999), reaches, shares)
def test_the_inverse_gives_the_distance_back(fraction, reach, share):
    v = fraction * reach
    d = soft.hard_distance(v, reach, share)
    assert d >= v
    assert soft.soft_distance(d, reach, share) == pytest.approx(v, rel=1e-9, abs=1e-12 * reach)


def test_the_inverse_has_no_source_at_the_reach():
    with pytest.raises(ValueError, match="no finite source"):
        soft.hard_distance(2.0, 2.0, 0.1)
    assert soft.hard_distance(5.0, 2.0, 0.0) == 5.0


@given(points, points, reaches, shares)
def test_soft_targets_stay_on_the_line_at_the_soft_distance(base, target, reach, share):
    b, t = np.array(base), np.array(target)
    d = float(np.linalg.norm(t - b))
    out = soft.soften_targets(b, t[None], reach, share)[0]
    one = soft.soften_target(base, target, reach, share)
    assert np.allclose(out, one, rtol=0.0, atol=1e-12 * (1.0 + np.abs(t).max()))
    assert np.linalg.norm(out - b) == pytest.approx(soft.soft_distance(d, reach, share), rel=1e-9, abs=1e-9)
    if d <= reach * (1.0 - share):
        assert out.tobytes() == t.tobytes() and one == tuple(map(float, target))
    elif d > 0.0:
        assert np.allclose(np.cross(out - b, t - b), 0.0, atol=1e-9 * d * d)
        assert np.dot(out - b, t - b) > 0.0


def test_per_frame_bases_and_reaches():
    base = np.array([[0.0, 0.0, 0.0], [1.0, 0.0, 0.0]])
    targets = np.array([[0.0, 2.0, 0.0], [1.0, 0.0, 0.5]])
    out = soft.soften_targets(base, targets, np.array([2.0, 1.0]), 0.1)
    assert out[0, 1] == pytest.approx(formula(2.0, 2.0, 0.1))
    assert out[1].tobytes() == targets[1].tobytes()  # 0.5 is within D_s = 0.9


def test_a_worked_value():
    # D = 1, share 0.05: D_s = 0.95; d = 1 -> 0.95 + 0.05 (1 - e^-1)
    assert soft.soft_distance(1.0, 1.0, 0.05) == pytest.approx(0.95 + 0.05 * (1.0 - math.exp(-1.0)), rel=1e-15)


@pytest.mark.parametrize("bad", [float("nan"), -0.01, 1.0, 1.5, float("inf"), True, "x", None])
def test_bad_softness_is_refused(bad):
    with pytest.raises(ValueError, match="softness"):
        soft.soft_distance(1.0, 1.0, bad)
    with pytest.raises(ValueError, match="softness"):
        soft.soften_targets((0, 0, 0), [(0, 0, 1)], 1.0, bad)


@pytest.mark.parametrize("bad", [0.0, -1.0, float("nan"), float("inf")])
def test_bad_reach_is_refused(bad):
    with pytest.raises(ValueError, match="reach"):
        soft.soft_distance(1.0, bad, 0.1)
    with pytest.raises(ValueError, match="reach"):
        soft.soft_distances([1.0], bad, 0.1)
    with pytest.raises(ValueError, match="reach"):
        soft.soften_targets((0, 0, 0), [(0, 0, 1)], bad, 0.0)
    with pytest.raises(ValueError, match="reach"):
        soft.soft_stretch(1.0, bad, 0.1)


def test_bad_distances_and_points_are_refused():
    with pytest.raises(ValueError, match="distance"):
        soft.soft_distance(float("nan"), 1.0, 0.1)
    with pytest.raises(ValueError, match="distances"):
        soft.soft_distances([-1.0], 1.0, 0.1)
    with pytest.raises(ValueError, match="targets"):
        soft.soften_targets((0, 0, 0), [(0, float("nan"), 1)], 1.0, 0.1)
    with pytest.raises(ValueError, match="finite"):
        soft.soften_target((0, 0, 0), (0, float("inf"), 1), 1.0, 0.1)
    with pytest.raises(ValueError, match="does not match"):
        soft.soft_distances([1.0, 2.0], [1.0, 2.0, 3.0], 0.1)


# Soft IK with IK stretch: the chain bends as the soft chain would and stretches by d / soft(d).


@given(ratios, reaches, shares)
def test_soft_stretch_bends_as_soft_ik_and_reaches_the_target(ratio, reach, share):
    d = ratio * reach
    stretched = soft.soft_stretch(d, reach, share)
    assert stretched >= reach and stretched >= d  # the stretched chain reaches the target
    # The target's share of the stretched reach is the soft chain's share of the unstretched one.
    assert d / stretched == pytest.approx(soft.soft_distance(d, reach, share) / reach, rel=1e-12)
    assert soft.soft_stretches(np.array([d]), reach, share)[0] == pytest.approx(stretched, rel=1e-15)


@given(ratios, reaches)
def test_soft_stretch_at_softness_zero_is_todays_stretch(ratio, reach):
    d = ratio * reach
    assert soft.soft_stretch(d, reach, 0.0) == max(reach, d)
    assert soft.soft_stretches(np.array([d]), reach, 0.0)[0] == max(reach, d)


@given(reaches, st.floats(0.01, 0.9), st.floats(0.0, 0.999))
def test_soft_stretch_starts_where_softening_starts_and_is_c1(reach, share, fraction):
    """No stretch within D_s; from D_s the stretch factor grows from 1 with slope 0 (a stretch
    that began only at D would jump there: the soft tip lags by s/e at d = D)."""
    s = share * reach
    start = reach - s
    assert soft.soft_stretch(fraction * start, reach, share) == reach
    h = 1e-4 * s
    factor = soft.soft_stretch(start + h, reach, share) / reach
    # d / soft(d) - 1 = h^2 / (2 s D_s) + O(h^3): second order in h, so the slope at D_s is 0.
    assert factor - 1.0 == pytest.approx(h * h / (2.0 * s * start), rel=1e-2, abs=1e-14)
    # Far beyond the reach it is today's stretch d / D, to e^-(d - D_s)/s.
    far = reach + 40.0 * s
    assert soft.soft_stretch(far, reach, share) == pytest.approx(far, rel=1e-12)


@given(reaches, st.floats(0.01, 0.9))
def test_soft_stretch_is_monotone(reach, share):
    d = np.linspace(0.0, 3.0 * reach, 2001)
    stretched = soft.soft_stretches(d, reach, share)
    assert np.all(np.diff(stretched) >= 0.0)
    assert np.all(stretched >= np.maximum(d, reach))


def knee_bend(d: np.ndarray, thigh: float, shin: float) -> np.ndarray:
    """A two-bone leg's knee bend (0 straight) with its foot at distance d from the hip (exact IK)."""
    d = np.minimum(d, thigh + shin)
    return np.pi - np.arccos(np.clip((thigh**2 + shin**2 - d * d) / (2.0 * thigh * shin), -1.0, 1.0))


@pytest.mark.parametrize("offset", np.linspace(0.0, 0.9, 10))
def test_the_knee_turns_at_most_a_fifth_as_fast_through_full_extension(offset):
    """Issue 20's measure on the formula alone (an analytic leg): a target passing through full
    extension, 0.88 -> 1.08 of the reach over 100 frames (sampled at any phase `offset`): the knee's
    largest turn per frame with softness 0.05 is under a fifth of the exact solve's (0.10-0.17).
    The ratio grows as the square root of the target's step per frame: 0.3 of the reach over 100
    frames reaches 0.21 at the worst phase, 0.6 reaches 0.29."""
    thigh, shin = 0.45, 0.42
    reach = thigh + shin
    d = np.linspace(0.88 * reach, 1.08 * reach, 100)
    d = d + offset * (d[1] - d[0])
    exact = np.abs(np.diff(knee_bend(d, thigh, shin))).max()
    softened = np.abs(np.diff(knee_bend(soft.soft_distances(d, reach, 0.05), thigh, shin))).max()
    assert softened <= exact / 5.0
    assert knee_bend(soft.soft_distances(d, reach, 0.05), thigh, shin).min() > 0.0  # never quite straight
