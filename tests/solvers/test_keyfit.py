"""Key reduction core: the fitted Bezier keys never miss a sample by more than the tolerance,
keep the first and last keys, and the unit conversions (joint angle, tip distance) are bounds."""

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from solvers import keyfit, quat


@st.composite
def channels(draw):
    """A baked channel: a few sines (smooth motion), holds, steps and noise, on increasing frames."""
    n = draw(st.integers(1, 160))
    seed = draw(st.integers(0, 2**31 - 1))
    rng = np.random.default_rng(seed)
    t = np.cumsum(rng.choice([1.0, 1.0, 1.0, 0.5, 2.0], size=n)) + draw(st.integers(-50, 50))
    v = np.zeros(n)
    for _ in range(draw(st.integers(0, 4))):
        v += rng.uniform(-2, 2) * np.sin(t / rng.uniform(1.5, 40.0) + rng.uniform(0, 6))
    if draw(st.booleans()):
        v += np.where(t > np.median(t), rng.uniform(-1, 1), 0.0)  # a step
    v += rng.normal(0.0, draw(st.sampled_from([0.0, 1e-4, 1e-2])), n)
    return t, v


def bezier_at(p0, p1, p2, p3, x):
    """Blender's segment: solve x(s) = x, return y(s) (bisection; x(s) increases here)."""
    lo, hi = 0.0, 1.0
    for _ in range(60):
        s = 0.5 * (lo + hi)
        xs = (1 - s) ** 3 * p0[0] + 3 * (1 - s) ** 2 * s * p1[0] + 3 * (1 - s) * s * s * p2[0] + s**3 * p3[0]
        lo, hi = (s, hi) if xs < x else (lo, s)
    s = 0.5 * (lo + hi)
    return (1 - s) ** 3 * p0[1] + 3 * (1 - s) ** 2 * s * p1[1] + 3 * (1 - s) * s * s * p2[1] + s**3 * p3[1]


@given(channels(), st.sampled_from([1e-5, 1e-3, 1e-2, 0.1, 1.0]))
def test_never_exceeds_the_tolerance_and_keeps_the_ends(channel, tolerance):
    t, v = channel
    fit = keyfit.fit_bezier(t, v, tolerance)
    assert fit.index[0] == 0 and fit.index[-1] == len(t) - 1
    assert np.all(np.diff(fit.index) > 0)
    assert np.all(np.isfinite(fit.slopes))
    assert np.abs(keyfit.evaluate(t, v, fit) - v).max() <= tolerance * (1 + 1e-9) + 1e-12


@given(channels())
def test_handles_draw_the_fitted_curve(channel):
    """The handles written to Blender (a third of the interval in time) give the evaluated curve."""
    t, v = channel
    fit = keyfit.fit_bezier(t, v, 1e-3)
    left, right = fit.handles(t, v)
    kt, kv = t[fit.index], v[fit.index]
    assert np.allclose(left[:, 1] - kv, -(right[:, 1] - kv) * (kt - left[:, 0]) / (right[:, 0] - kt))  # aligned
    for k in range(len(kt) - 1):
        inside = (t > kt[k]) & (t < kt[k + 1])
        for x in t[inside][:5]:
            y = bezier_at((kt[k], kv[k]), right[k], left[k + 1], (kt[k + 1], kv[k + 1]), x)
            assert y == pytest.approx(keyfit.evaluate(t, v, fit, np.array([x]))[0], abs=1e-9)


def test_smooth_motion_needs_few_keys():
    t = np.arange(1.0, 251.0)
    v = np.sin(t / 13.0) + 0.3 * np.sin(t / 5.1 + 1.0)
    fit = keyfit.fit_bezier(t, v, 1e-3)
    assert len(fit.index) < 45
    assert keyfit.fit_bezier(t, np.zeros_like(t), 1e-6).index.tolist() == [0, 249]  # a hold: its two ends


def test_bad_input():
    with pytest.raises(ValueError, match="increase"):
        keyfit.fit_bezier(np.array([1.0, 1.0, 2.0]), np.zeros(3), 1e-3)
    with pytest.raises(ValueError, match="finite"):
        keyfit.fit_bezier(np.arange(3.0), np.array([0.0, np.nan, 0.0]), 1e-3)
    with pytest.raises(ValueError, match="tolerance"):
        keyfit.fit_bezier(np.arange(3.0), np.zeros(3), -1.0)
    with pytest.raises(ValueError, match="> 0"):
        keyfit.tip_angle_budget(np.ones(3), 0.0)


def euler_xyz(angles: np.ndarray) -> np.ndarray:
    x, y, z = (quat.from_axis_angle(np.eye(3)[i], angles[..., i]) for i in range(3))
    return quat.multiply(z, quat.multiply(y, x))


def rotation_between(a: np.ndarray, b: np.ndarray) -> float:
    a, b = a / np.linalg.norm(a), b / np.linalg.norm(b)
    return 2.0 * math.acos(min(1.0, abs(float(np.dot(a, b)))))


@given(st.integers(0, 2**31 - 1), st.sampled_from([1e-4, 1e-2, 0.3]))
def test_channel_tolerances_bound_the_joint_angle(seed, angle):
    rng = np.random.default_rng(seed)
    signs = lambda k: rng.choice([-1.0, 1.0], size=k)  # noqa: E731 - corners are the worst case
    euler = rng.uniform(-3, 3, (1, 3))
    eps = keyfit.channel_tolerances("XYZ", euler, angle)
    moved = euler[0] + eps * signs(3)
    assert rotation_between(euler_xyz(euler[0]), euler_xyz(moved)) <= angle * (1 + 1e-9)
    q = quat.normalize(rng.normal(size=4)) * rng.uniform(0.5, 2.0)
    eps = keyfit.channel_tolerances("QUATERNION", q[None], angle)
    assert rotation_between(q, q + eps * signs(4)) <= angle * (1 + 1e-9)
    axis_angle = np.concatenate(([rng.uniform(-3, 3)], rng.normal(size=3)))
    eps = keyfit.channel_tolerances("AXIS_ANGLE", axis_angle[None], angle)
    moved = axis_angle + eps * signs(4)
    turn = [quat.from_axis_angle(quat.normalize(a[1:]), a[0]) for a in (axis_angle, moved)]
    assert rotation_between(*turn) <= angle * (1 + 1e-9)


@given(st.lists(st.floats(0.0, 10.0), min_size=1, max_size=8), st.floats(1e-5, 1.0))
def test_tip_budget_sums_to_the_distance(arms, distance):
    arms = np.sort(np.array(arms))[::-1]
    angles = keyfit.tip_angle_budget(arms, distance)
    assert np.all(angles > 0.0)
    assert float(np.sum(angles * arms)) <= distance * (1 + 1e-9)
