"""Figures of a foot's motion (solvers.foot_metrics): slide during contacts, skating ratio, lowest
height, joint angular speed, F1 of contacts; properties; bad input."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from solvers import quat
from solvers.foot_metrics import (
    contact_f1,
    foot_slide,
    largest_angular_speed,
    lowest_height,
    resample,
    skating_ratio,
)

FPS = 120.0


def line(m: int, speed: float, fps: float = FPS, height: float = 0.0) -> np.ndarray:
    """m frames moving along -y at `speed` (units per second)."""
    return np.stack([np.zeros(m), -speed * np.arange(m) / fps, np.full(m, height)], axis=1)


def test_slide_is_the_planted_ends_distance_per_thirtieth_of_a_second():
    m = 60
    toe = line(m, 0.3)
    heel = toe + [0, 0.2, 0.06]
    planted = np.ones(m, dtype=bool)
    slide = foot_slide(heel, toe, planted, FPS)
    assert slide.mean == pytest.approx(0.01) and slide.median == pytest.approx(0.01)
    assert slide.largest == pytest.approx(0.01) and slide.samples == m - 4
    # A heel rise: the heel moves, the toe does not: no slide.
    still = np.repeat(toe[:1], m, axis=0)
    assert foot_slide(heel, still, planted, FPS).largest == 0.0
    # Only spans inside one contact count; none long enough: zeros.
    gaps = np.tile([True, True, True, False], m // 4)
    assert foot_slide(heel, toe, gaps, FPS).samples == 0
    assert foot_slide(heel, toe, ~planted, FPS) == foot_slide(heel[:3], toe[:3], planted[:3], FPS)


def test_skating_ratio_is_the_guided_motion_diffusion_metric():
    m = 241  # 2 s at 120 fps: 41 steps at 20 fps
    assert skating_ratio(line(m, 1.0), FPS) == pytest.approx(1.0)  # on the ground, 1 m/s
    assert skating_ratio(line(m, 1.0, height=0.06), FPS) == 0.0  # above 5 cm
    assert skating_ratio(line(m, 0.4), FPS) == 0.0  # slower than 0.5 m/s
    assert skating_ratio(line(m, 1.0, height=1.0), FPS, ground=0.98) == pytest.approx(1.0)
    # Either foot: the share of steps on which any skates.
    half = np.concatenate([line(121, 1.0), np.repeat(line(121, 1.0)[-1:], 120, axis=0)])
    two = np.stack([half, line(m, 0.0)], axis=1)
    assert skating_ratio(two, FPS) == pytest.approx(20 / 40, abs=0.05)
    assert skating_ratio(line(1, 1.0), FPS) == 0.0


def test_resample_keeps_the_path():
    p = line(121, 1.0)
    out = resample(p, FPS, 20.0)
    assert out.shape == (21, 3) and out[-1, 1] == pytest.approx(-1.0)


def test_lowest_height_against_the_ground():
    heel = line(10, 0.1, height=0.08)
    toe = line(10, 0.1, height=0.01)
    toe[5, 2] = -0.004
    assert lowest_height(heel, toe) == pytest.approx(-0.004)
    assert lowest_height(heel, toe, ground=-0.01) == pytest.approx(0.006)
    under = np.zeros((10, 2))
    under[5, 1] = -0.005
    assert lowest_height(heel, toe, ground=under) == pytest.approx(0.001)


def test_largest_angular_speed_over_a_thirtieth_of_a_second():
    m = 50
    rate = 3.0  # rad/s about z on the second joint
    angles = rate * np.arange(m) / FPS
    q = np.zeros((m, 2, 4))
    q[:, 0, 0] = 1.0
    q[:, 1] = quat.from_axis_angle(np.array([0.0, 0.0, 1.0]), angles)
    assert largest_angular_speed(q, FPS) == pytest.approx(rate)
    # Jitter of 0.5 degrees every other frame is 120 degrees/s per frame, far less over 1/30 s.
    jitter = np.zeros((m, 1, 4))
    jitter[:, 0] = quat.from_axis_angle(np.array([1.0, 0.0, 0.0]), np.radians(np.tile([0.0, 0.5], m // 2)))
    assert math.degrees(largest_angular_speed(jitter, FPS)) < 1e-6
    assert largest_angular_speed(q[:3], FPS) == 0.0


def test_f1_of_contacts():
    a = np.array([1, 1, 1, 1, 0, 0, 0, 0], dtype=bool)
    b = np.array([0, 1, 1, 1, 1, 0, 0, 0], dtype=bool)
    assert contact_f1(a, a) == 1.0
    assert contact_f1(a, ~a) == 0.0
    assert contact_f1(a, b) == pytest.approx(0.75)
    assert contact_f1(np.zeros(3, bool), np.zeros(3, bool)) == 1.0


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: foot_slide(np.zeros((0, 3)), np.zeros((0, 3)), np.zeros(0), FPS), "no frames"),
        (lambda: foot_slide(np.zeros((4, 3)), np.zeros((4, 3)), np.ones(3), FPS), "one flag per frame"),
        (lambda: foot_slide(np.zeros((4, 3)), np.zeros((4, 3)), np.ones(4), 0.0), "frame rate"),
        (lambda: skating_ratio(np.full((4, 3), np.nan), FPS), "not finite"),
        (lambda: lowest_height(np.zeros((4, 3)), np.zeros((5, 3))), "same frames"),
        (lambda: largest_angular_speed(np.zeros((4, 2, 4)), FPS), "unit quaternions"),
        (lambda: largest_angular_speed(np.zeros((0, 2, 4)), FPS), "frames"),
        (lambda: largest_angular_speed(np.ones((4, 2, 3)), FPS), "rotations must be"),
        (lambda: contact_f1(np.ones(3), np.ones(4)), "alike"),
    ],
)
def test_bad_input_is_refused_by_name(call, message):
    with pytest.raises(ValueError, match=message):
        call()


flags = st.lists(st.booleans(), min_size=1, max_size=80)


@given(a=flags, b=flags)
def test_property_f1_is_symmetric_and_bounded(a, b):
    n = min(len(a), len(b))
    x, y = np.array(a[:n]), np.array(b[:n])
    f = contact_f1(x, y)
    assert 0.0 <= f <= 1.0 and f == contact_f1(y, x)
    assert (f == 1.0) == bool(np.array_equal(x, y))


@given(
    steps=st.lists(
        st.tuples(st.floats(-0.01, 0.01), st.floats(-0.01, 0.01), st.floats(-0.01, 0.01)), min_size=2, max_size=60
    ),
    shift=st.tuples(st.floats(-100, 100), st.floats(-100, 100), st.floats(-100, 100)),
    planted=st.lists(st.booleans(), min_size=60, max_size=60),
)
def test_property_slide_does_not_depend_on_where_the_foot_is(steps, shift, planted):
    toe = np.cumsum(np.array(steps), axis=0)
    heel = toe + [0, 0.2, 0.06]
    flags = np.array(planted[: len(toe)])
    here, there = foot_slide(heel, toe, flags, FPS), foot_slide(heel + shift, toe + shift, flags, FPS)
    assert here.samples == there.samples
    assert there.largest == pytest.approx(here.largest, abs=1e-9) and there.mean == pytest.approx(here.mean, abs=1e-9)


@given(
    angles=st.lists(st.floats(-3.0, 3.0), min_size=6, max_size=30),
    turn=st.tuples(st.floats(-1, 1), st.floats(-1, 1), st.floats(-1, 1), st.floats(-1, 1)).filter(
        lambda v: sum(c * c for c in v) > 0.1
    ),
)
def test_property_angular_speed_ignores_a_common_turn(angles, turn):
    q = quat.from_axis_angle(np.array([0.3, 0.5, 0.8]) / np.linalg.norm([0.3, 0.5, 0.8]), np.array(angles))
    r = np.array(turn) / np.linalg.norm(turn)
    turned = quat.multiply(r, q)
    assert largest_angular_speed(turned[:, None], FPS) == pytest.approx(
        largest_angular_speed(q[:, None], FPS), abs=1e-6
    )
