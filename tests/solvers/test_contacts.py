"""Foot contact detection (solvers.contacts): built steps found where built, both ends of the foot,
hysteresis, shortest contact and gap, ground, thresholds from the leg; properties; bad input."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from solvers.contacts import ContactSettings, contact_runs, detect_contacts, lift_ends, same_sums, window_speed

FPS = 120.0
LEG = 0.9  # metres: thresholds 2.7 cm / 4.5 cm, 0.54 / 0.9 m/s


def settings(**changes) -> ContactSettings:
    return ContactSettings.for_leg(LEG, **changes)


def walk(fps: float = FPS, steps: int = 3, stance: float = 0.6, swing: float = 0.4, stride: float = 1.2):
    """A foot (heel 8 cm up at the ankle, toe 2 cm up, 20 cm ahead along -y) stepping: still on its
    stances, lifted 15 cm and carried `stride` forward on each swing (a smooth arc). Returns heel,
    toe and the built contact flags."""
    stance_n, swing_n = int(round(stance * fps)), int(round(swing * fps))
    heel, planted = [], []
    y = 0.0
    for step in range(steps):
        for _ in range(stance_n):
            heel.append((0.0, y, 0.08))
            planted.append(True)
        if step == steps - 1:
            break
        for i in range(1, swing_n + 1):
            s = i / swing_n
            eased = 0.5 - 0.5 * math.cos(math.pi * s)
            heel.append((0.0, y - stride * eased, 0.08 + 0.15 * math.sin(math.pi * s)))
            planted.append(False)
        y -= stride
    heel = np.array(heel)
    toe = heel + np.array([0.0, -0.2, -0.06])
    return heel, toe, np.array(planted)


def assert_matches(found: np.ndarray, built: np.ndarray, slack: int) -> None:
    """Each built contact is found once, its ends within `slack` frames."""
    got, want = contact_runs(found), contact_runs(built)
    assert len(got) == len(want), (got, want)
    for (a0, a1), (b0, b1) in zip(got, want, strict=True):
        assert abs(a0 - b0) <= slack and abs(a1 - b1) <= slack, (got, want)


@pytest.mark.parametrize("fps", [24.0, 30.0, 60.0, 120.0])
def test_built_steps_are_found_where_built(fps):
    heel, toe, built = walk(fps)
    found = detect_contacts(heel, toe, fps, settings())
    assert_matches(found, built, slack=max(2, int(0.05 * fps)))


def test_heel_rise_and_toe_roll_are_planted():
    """The toe stays put while the heel lifts 10 cm (heel rise), then the foot pitches about the toe
    (toe roll): the heel moves fast and high, the toe is still and low, so the foot is planted."""
    m = 24
    toe = np.tile([0.0, -0.2, 0.02], (m, 1))
    angle = np.linspace(0.0, 1.2, m)  # in 0.2 s the foot pitches up about the toe, the heel rising
    heel = toe + np.stack([np.zeros(m), 0.2 * np.cos(angle), 0.06 + 0.2 * np.sin(angle)], axis=1)
    assert np.ptp(heel[:, 2]) > 0.1 and window_speed(heel, FPS).max() > 1.0
    assert detect_contacts(heel, toe, FPS, settings()).all()


def test_a_sliding_foot_is_not_planted():
    m = 60
    heel = np.stack([np.zeros(m), -np.arange(m) * 2.0 / FPS, np.full(m, 0.08)], axis=1)  # 2 m/s along the floor
    assert not detect_contacts(heel, heel + [0, -0.2, -0.06], FPS, settings()).any()


def test_a_foot_held_still_in_the_air_is_not_planted():
    """Still, but 30 cm above where it stood: not near the ground."""
    heel, toe, _ = walk(steps=1)
    lifted = np.concatenate([heel, np.tile(heel[-1] + [0, 0, 0.3], (120, 1))])
    lifted_toe = np.concatenate([toe, np.tile(toe[-1] + [0, 0, 0.3], (120, 1))])
    found = detect_contacts(lifted, lifted_toe, FPS, settings())
    assert found[: len(heel) - 2].all() and not found[len(heel) :].any()  # the jump up: fast where seen


def test_hysteresis_keeps_a_contact_between_the_thresholds():
    """Speeds between the enter (0.54 m/s) and leave (0.9 m/s) thresholds: a contact that started
    stays; one that did not, does not start."""
    m = 120
    speed = np.where(np.arange(m) < 30, 0.0, 0.7)
    y = -np.cumsum(speed) / FPS
    heel = np.stack([np.zeros(m), y, np.full(m, 0.08)], axis=1)
    toe = heel + [0, -0.2, -0.06]
    found = detect_contacts(heel, toe, FPS, settings())
    assert found.all()
    assert not detect_contacts(heel[30:], toe[30:], FPS, settings()).any()


def test_short_contacts_dropped_and_short_gaps_closed():
    heel, toe, _ = walk(steps=2)
    one = settings()
    base = detect_contacts(heel, toe, FPS, one)
    assert len(contact_runs(base)) == 2
    # Longer than either contact: none is left.
    assert not detect_contacts(heel, toe, FPS, settings(min_duration=2.0)).any()
    # A gap as long as the swing is closed: one contact.
    assert len(contact_runs(detect_contacts(heel, toe, FPS, settings(min_gap=0.6)))) == 1


def test_ground_heights_are_measured_from():
    """Raising the foot and the ground alike changes nothing; per-frame heights under each end
    follow uneven ground (a step onto a 30 cm block)."""
    heel, toe, built = walk()
    plain = detect_contacts(heel, toe, FPS, settings())
    assert np.array_equal(detect_contacts(heel + [0, 0, 2.0], toe + [0, 0, 2.0], FPS, settings(), ground=2.0), plain)
    block = np.where(np.arange(len(heel)) >= np.flatnonzero(built)[-1] - 50, 0.3, 0.0)  # the last stance is on it
    up = np.array([0, 0, 1.0])
    lifted_heel, lifted_toe = heel + block[:, None] * up, toe + block[:, None] * up
    assert np.array_equal(detect_contacts(lifted_heel, lifted_toe, FPS, settings(), ground=block), plain)
    assert np.array_equal(
        detect_contacts(lifted_heel, lifted_toe, FPS, settings(), ground=np.stack([block, block], axis=1)), plain
    )


def sloped(points: np.ndarray, degrees: float, y0: float = 0.0) -> np.ndarray:
    """(m,) the height of a slope rising `degrees` along -y (the walk's way), 0 at y = `y0`, under `points`."""
    return (y0 - points[:, 1]) * math.tan(math.radians(degrees))


@pytest.mark.parametrize("degrees", [-15.0, -4.0, 2.0, 4.0, 8.0, 15.0])
def test_a_walk_up_or_down_a_slope_is_found_as_on_flat_ground(degrees):
    """The built walk laid on a slope (every point raised by the slope's height under it, the ground
    raycast under each end): the contacts of flat ground; downhill each ends a frame later (the
    swing's first frames are slower along the slope than across the level)."""
    heel, toe, built = walk(steps=6)
    flat = detect_contacts(heel, toe, FPS, settings())
    up = np.array([0, 0, 1.0])
    ground = np.stack([sloped(heel, degrees), sloped(toe, degrees)], axis=1)
    on_slope = detect_contacts(heel + ground[:, :1] * up, toe + ground[:, 1:] * up, FPS, settings(), ground=ground)
    assert np.array_equal(flat, built)
    assert_matches(on_slope, flat, slack=1)
    if degrees > 0:
        assert np.array_equal(on_slope, flat)


@pytest.mark.parametrize("degrees", [-15.0, 2.0, 4.0, 8.0, 15.0])
def test_a_flat_walk_over_a_sloped_ground_keeps_its_contacts(degrees):
    """The walk as captured on a flat floor, a slope under it through its middle (a user trial: the
    CMU walk over a 4 degree slope lost half its contacts, no warning): its feet float above the
    ground at one end and sink into it at the other, and every contact is still found, as without
    the ground (the bake then holds each on the ground)."""
    heel, toe, built = walk(steps=6)
    middle = float(heel[:, 1].mean())
    ground = np.stack([sloped(heel, degrees, middle), sloped(toe, degrees, middle)], axis=1)
    assert np.ptp(ground) > 2 * settings().floor_rise  # beyond the floor's reach above the lowest
    assert_matches(detect_contacts(heel, toe, FPS, settings(), ground=ground), built, slack=2)


def test_a_foot_held_in_the_air_over_a_slope_is_not_planted():
    """Still, 30 cm above where it stood, over a slope or with the motion laid on it: not planted."""
    heel, toe, _ = walk(steps=1)
    lifted = np.concatenate([heel, np.tile(heel[-1] + [0, 0, 0.3], (120, 1))])
    lifted_toe = np.concatenate([toe, np.tile(toe[-1] + [0, 0, 0.3], (120, 1))])
    lifted_heel = lifted + [0, 0.5, 0]  # it drifts back over the slope as it is held: 0.5 m
    lifted_heel[: len(heel)] = heel
    lifted_toe[len(heel) :] += [0, 0.5, 0]
    for degrees in (4.0, 15.0):
        ground = np.stack([sloped(lifted_heel, degrees), sloped(lifted_toe, degrees)], axis=1)
        up = np.array([0, 0, 1.0])
        for h, t in ((lifted_heel, lifted_toe), (lifted_heel + ground[:, :1] * up, lifted_toe + ground[:, 1:] * up)):
            found = detect_contacts(h, t, FPS, settings(), ground=ground)
            assert found[: len(heel) - 2].all() and not found[len(heel) :].any()


def test_thresholds_default_from_the_leg():
    s = ContactSettings.for_leg(2.0)
    assert (s.height, s.height_leave, s.speed, s.speed_leave) == pytest.approx((0.06, 0.1, 1.2, 2.0))
    assert s.window == pytest.approx(1 / 30)
    given_height = ContactSettings.for_leg(2.0, height=0.03)
    assert given_height.height_leave == pytest.approx(0.05)  # follows the enter threshold
    # A character twice as large, twice as fast: the same contacts.
    heel, toe, _ = walk()
    assert np.array_equal(
        detect_contacts(2 * heel, 2 * toe, FPS, ContactSettings.for_leg(2 * LEG)),
        detect_contacts(heel, toe, FPS, settings()),
    )


def test_speed_is_measured_over_a_thirtieth_of_a_second():
    """Jitter of 1 mm every other frame at 120 fps is 0.24 m/s per frame, not over 1/30 s."""
    m = 40
    p = np.zeros((m, 3))
    p[::2, 0] = 0.001
    assert window_speed(p, FPS)[2:-2].max() < 0.01  # (at the ends the span is shorter)
    line = np.stack([np.arange(m) / FPS, np.zeros(m), np.zeros(m)], axis=1)  # 1 m/s
    assert window_speed(line, FPS) == pytest.approx(np.ones(m))
    assert window_speed(line[:1], FPS).tolist() == [0.0]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (dict(heel=np.zeros((0, 3)), toe=np.zeros((0, 3))), "no frames"),
        (dict(heel=np.array([[0, 0, np.nan]])), "not finite"),
        (dict(toe=np.zeros((5, 2))), "toe positions must be"),
        (dict(toe=np.zeros((4, 3))), "same frames"),
        (dict(fps=0.0), "frame rate"),
        (dict(fps=-24.0), "frame rate"),
        (dict(fps=float("nan")), "frame rate"),
        (dict(ground=np.full(5, np.inf)), "ground heights are not finite"),
        (dict(ground=np.zeros((5, 3))), "ground must be"),
        (dict(settings="fast"), "settings must be"),
    ],
)
def test_bad_input_is_refused_by_name(change, message):
    args = dict(heel=np.zeros((5, 3)), toe=np.zeros((5, 3)), fps=FPS, settings=settings(), ground=None)
    args.update(change)
    with pytest.raises(ValueError, match=message):
        detect_contacts(**args)


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        (dict(height=-1.0), "height must be"),
        (dict(speed=float("nan")), "speed must be"),
        (dict(height=0.05, height_leave=0.01), "height_leave"),
        (dict(min_duration=-0.1), "min_duration"),
        (dict(window=0.0), "window"),
    ],
)
def test_bad_settings_are_refused_by_name(changes, message):
    with pytest.raises(ValueError, match=message):
        ContactSettings.for_leg(LEG, **changes)
    with pytest.raises(ValueError, match="leg length"):
        ContactSettings.for_leg(0.0)


# Properties, over random motions of a foot: a random walk of steps and pauses.
@st.composite
def foot_motions(draw):
    m = draw(st.integers(1, 160))
    steps = np.array(draw(st.lists(st.floats(-0.02, 0.02), min_size=3 * m, max_size=3 * m))).reshape(m, 3)
    still = np.array(draw(st.lists(st.booleans(), min_size=m, max_size=m)))
    heel = np.cumsum(np.where(still[:, None], 0.0, steps), axis=0) + [0, 0, 0.08]
    lift = np.array(draw(st.lists(st.floats(-0.01, 0.01), min_size=3 * m, max_size=3 * m))).reshape(m, 3)
    toe = heel + [0, -0.2, -0.06] + lift
    fps = draw(st.sampled_from([24.0, 30.0, 60.0, 120.0]))
    return heel, toe, fps


@given(motion=foot_motions(), shift=st.tuples(st.floats(-50, 50), st.floats(-50, 50), st.floats(-5, 5)))
def test_property_moving_the_whole_motion_changes_nothing(motion, shift):
    heel, toe, fps = motion
    shift = np.array(shift)
    moved = detect_contacts(heel + shift, toe + shift, fps, settings())
    assert np.array_equal(moved, detect_contacts(heel, toe, fps, settings()))


@given(motion=foot_motions())
def test_property_every_contact_is_long_enough_and_starts_low_and_slow(motion):
    heel, toe, fps = motion
    s = settings()
    found = detect_contacts(heel, toe, fps, s)
    assert found.shape == (len(heel),) and found.dtype == bool
    speeds = np.stack([window_speed(heel, fps), window_speed(toe, fps)], axis=1)
    for start, end in contact_runs(found):
        assert end - start >= s.min_duration * fps - 1e-9
        # Its first frame passed the enter thresholds on one end: slow enough.
        assert speeds[start].min() <= s.speed


@given(motion=foot_motions())
def test_property_a_still_foot_is_planted_throughout(motion):
    heel, toe, fps = motion
    still = np.repeat(heel[:1], len(heel), axis=0)
    found = detect_contacts(still, still + [0, -0.2, -0.06], fps, settings())
    assert found.all() == (len(heel) >= settings().min_duration * fps)


def test_a_contact_ends_where_the_foot_lifts_off():
    """Push-off: the heel rises first (heel rise: still planted), then the toe slowly rises too while
    both stay within the leave thresholds; the contact ends where both ends are more than `lift`
    above their lowest, not at the leave height. A toe rising alone (toe up, heel down) does not end
    it, and a foot set down again in the same run restarts it."""
    n = 120
    heel = np.zeros((n, 3))
    heel[:, 2] = 0.08
    toe = heel + np.array([0.0, -0.2, -0.06])
    ramp = np.clip((np.arange(n) - 60) / 40.0, 0.0, 1.0)  # the heel up 4 cm over frames 60-100
    heel[:, 2] += 0.04 * ramp
    toe[:, 2] += 0.03 * np.clip((np.arange(n) - 80) / 40.0, 0.0, 1.0)  # the toe up 3 cm from 80
    s = settings()  # lift 1.8 cm, leave height 4.5 cm: without lift-off all 120 frames stay planted
    found = detect_contacts(heel, toe, FPS, s)
    end = contact_runs(found)[-1][1]
    assert contact_runs(found)[0][0] == 0
    rise = 0.03 * (end - 80) / 40.0
    assert s.lift < rise <= s.lift + 0.03 / 40.0 + 1e-12  # the first frame the toe is `lift` up
    assert np.all(detect_contacts(heel, toe, FPS, settings(lift=math.inf)))
    # The toe alone rising (the heel down): still planted.
    flat = heel.copy()
    flat[:, 2] = 0.08
    assert np.all(detect_contacts(flat, toe, FPS, s))
    # lift_ends on its own: both ends up, then the toe back down within lift / 2 restarts it.
    heights = np.zeros((10, 2))
    heights[4:7] = 0.05
    down = np.ones((10, 2), dtype=bool)
    down[4:7] = False
    out = lift_ends(np.ones(10, dtype=bool), heights, down, 0.02)
    assert out.tolist() == [True] * 4 + [False] * 3 + [True] * 3


@given(st.integers(min_value=0, max_value=30), st.integers(min_value=1, max_value=12))
def test_same_sums_keeps_the_length_of_short_series(n, width):
    """solvers.contacts.same_sums: np.convolve's "same" where the series is at least as long as the
    kernel (the same numbers), and the length of the series where it is shorter (user13: a
    5-frame planted bake broke on the knee swivel's 25-frame window)."""
    values = np.random.default_rng(n * 13 + width).normal(size=n)
    kernel = np.ones(2 * width + 1)
    sums = same_sums(values, kernel)
    assert sums.shape == values.shape
    by_hand = [values[max(0, i - width) : i + width + 1].sum() for i in range(n)]
    assert np.allclose(sums, by_hand)
    if n >= len(kernel):
        assert np.array_equal(sums, np.convolve(values, kernel, mode="same"))
