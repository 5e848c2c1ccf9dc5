"""Planted feet over time (solvers.plant): the hold, the ease out, the ground snap eased in by height
only, adjacent contacts, the ground never crossed, the foot's pitch kept, the figures; properties
(the hold is constant, the input untouched away from contacts, the step bound, the floor); bad input."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from solvers.contacts import ContactSettings, contact_runs
from solvers.plant import (
    STEEPEST,
    default_blend,
    ease,
    head_targets,
    heel_first,
    pivot_flags,
    plan,
    plant_metrics,
    smooth,
    tip_down,
)

FPS = 120.0


def sliding_walk(m: int = 60, drift: float = 0.002, height: float = 0.05) -> np.ndarray:
    """A tip moving along +x by `drift` a frame, bobbing a little above `height`."""
    i = np.arange(m)
    return np.stack([drift * i, 0.01 * np.sin(0.3 * i), height + 0.02 * np.sin(0.2 * i) ** 2], axis=1)


def steps(track: np.ndarray) -> np.ndarray:
    return np.linalg.norm(np.diff(track, axis=0), axis=1)


def test_default_blend_is_about_015_seconds():
    assert [default_blend(f) for f in (120.0, 60.0, 30.0, 25.0, 24.0, 1.0)] == [18, 9, 5, 4, 4, 1]
    with pytest.raises(ValueError, match="frame rate"):
        default_blend(0.0)


def test_ease_is_smoothstep_flat_at_both_ends():
    b = 6
    w = ease(np.arange(b + 3), b)
    assert w[0] == 1.0 and np.all(w[b + 1 :] == 0.0)
    assert np.all(np.diff(w[: b + 2]) < 0.0)
    # C1: the first and last steps are second order in 1/(b + 1); no step is above 1.5/(b + 1).
    x = 1.0 / (b + 1)
    assert 1.0 - w[1] == pytest.approx(3 * x**2 - 2 * x**3) and w[b] == pytest.approx(3 * x**2 - 2 * x**3)
    assert np.abs(np.diff(w)).max() <= STEEPEST * x
    assert smooth(np.array([-1.0, 0.0, 0.5, 1.0, 2.0])).tolist() == [0.0, 0.0, 0.5, 1.0, 1.0]
    assert ease(np.arange(3), 0).tolist() == [1.0, 0.0, 0.0]


def test_a_contact_holds_its_first_frame_and_eases_back_to_the_input():
    p = sliding_walk()
    planted = np.zeros(len(p), dtype=bool)
    planted[10:30] = True
    b = 8
    result = plan(p, planted, FPS, blend=b)
    t = result.target
    assert np.all(t[10:30] == p[10])  # the hold: the input's own point on the first frame, bit for bit
    assert np.array_equal(t[:10], p[:10]) and np.array_equal(t[30 + b :], p[30 + b :])
    assert result.weight[10:30].tolist() == [1.0] * 20 and np.all(result.weight[30 + b :] == 0.0)
    # The ease: w = 1 - smoothstep(k / (b + 1)) on the k-th frame after the contact, the target the blend.
    k = np.arange(1, b + 1)
    w = 1.0 - smooth(k / (b + 1))
    assert np.allclose(result.weight[30 : 30 + b], w, rtol=0, atol=0)
    assert np.allclose(t[30 : 30 + b], (1 - w[:, None]) * p[30 : 30 + b] + w[:, None] * p[10], rtol=0, atol=1e-15)
    # No jump: the first step leaves the hold slowly (second order), the last joins the input.
    gap = np.linalg.norm(p[29] - p[10])
    assert np.linalg.norm(t[30] - t[29]) <= np.linalg.norm(p[30] - p[29]) + 3.0 * gap / (b + 1) ** 2
    assert steps(t).max() <= steps(p).max() + STEEPEST / (b + 1) * np.linalg.norm(p[29 : 30 + b] - p[10], axis=1).max()
    # The first contact frame is the input itself (the hold starts there): nothing to solve on it.
    assert result.changed.tolist() == [False] * 11 + [True] * (19 + b) + [False] * (len(p) - 30 - b)
    assert result.ground is None and np.all(result.floor == -np.inf)
    assert [(h.start, h.end, h.snap, h.ease_in) for h in result.holds] == [(10, 30, 0.0, 0)]


def test_the_ground_snap_is_eased_in_by_height_only():
    """A foot floating about 3 cm (its tip rests 3 cm above the ground): the hold is put on the
    ground on the first frame, the snap eased in over the blend frames before, moving the swinging
    foot down only (never below the ground), never toward where it will land."""
    p = sliding_walk(height=0.05)
    planted = np.zeros(len(p), dtype=bool)
    planted[20:40] = True
    b = 6
    result = plan(p, planted, FPS, blend=b, ground=0.0, clearance=0.03)
    t, hold = result.target, result.holds[0]
    assert hold.point.tolist() == [p[20, 0], p[20, 1], 0.03] and hold.snap == pytest.approx(0.03 - p[20, 2])
    assert hold.ease_in == b and np.all(t[20:40] == hold.point)
    assert np.array_equal(t[: 20 - b], p[: 20 - b])  # before the ease-in: the input
    assert np.array_equal(t[:20, :2], p[:20, :2])  # horizontally: the input on every frame before the contact
    j = np.arange(b, 0, -1)  # b..1 frames before the contact
    lowered = np.maximum(p[20 - b : 20, 2] + ease(j, b) * hold.snap, 0.03)
    assert np.allclose(t[20 - b : 20, 2], lowered, atol=1e-15) and lowered.min() == 0.03
    # The touchdown step: the input's own plus at most smoothstep's first step of the snap.
    x = 1.0 / (b + 1)
    assert np.linalg.norm(t[20] - t[19]) <= np.linalg.norm(p[20] - p[19]) + (3 * x**2) * abs(hold.snap) + 1e-15
    # Accepting the snap instead (blend 0): all of it in one frame.
    snapped = plan(p, planted, FPS, blend=0, ground=0.0, clearance=0.03)
    assert np.array_equal(snapped.target[:20], p[:20])
    assert snapped.target[20, 2] - snapped.target[19, 2] == pytest.approx(0.03 - p[19, 2])


def test_adjacent_contacts_hold_where_the_ease_is():
    p = sliding_walk(drift=0.004)
    planted = np.zeros(len(p), dtype=bool)
    planted[10:20] = planted[22:35] = True
    b = 10
    result = plan(p, planted, FPS, blend=b)
    t = result.target
    w = ease(22 - 19, b)  # the first hold's weight where the second starts
    assert 0.5 < w < 1.0
    assert np.allclose(result.holds[1].point, (1 - w) * p[22] + w * p[10], rtol=0, atol=1e-15)
    assert np.all(t[22:35] == t[22])
    # Continuous: within the bound (no step above the input's plus the ease's share).
    assert steps(t).max() <= steps(p).max() + STEEPEST / (b + 1) * np.linalg.norm(p - p[10], axis=1).max()
    # The first ease stops at the second contact: after it, the ease is from the second hold to the input.
    k = np.arange(1, b + 1)
    v = ease(k, b)[:, None]
    assert np.allclose(t[35 : 35 + b], (1 - v) * p[35 : 35 + b] + v * t[22], atol=1e-15)
    assert np.array_equal(t[35 + b :], p[35 + b :])


def test_no_tip_below_the_ground_in_contact_or_swing():
    """A foot sinking 3 cm into a sloped ground (heights per frame, under the input tip): clamped to
    the ground + clearance on every frame, the hold on it."""
    m = 60
    p = sliding_walk(m, height=0.0)
    under = 0.01 + 0.1 * p[:, 0]  # a slope along x
    p[:, 2] += under - 0.03
    planted = np.zeros(m, dtype=bool)
    planted[15:30] = True
    result = plan(p, planted, FPS, blend=5, ground=under, clearance=0.02)
    t = result.target
    assert np.all(t[:, 2] >= result.floor) and np.all(result.floor >= result.ground + 0.02 - 1e-15)
    assert np.all(t[15:30] == t[15]) and t[15, 2] == pytest.approx(under[15] + 0.02)
    assert np.array_equal(result.ground[:10], under[:10]) and np.all(result.ground[15:30] == under[15])
    # Off the contact and its ease, the input, raised onto the ground: xy untouched.
    assert np.array_equal(t[:, :2][result.weight == 0], p[:, :2][result.weight == 0])
    assert np.allclose(t[40:, 2], under[40:] + 0.02, atol=1e-15)


def test_no_contacts_returns_the_input():
    p = sliding_walk()
    for ground in (None, -1.0):
        result = plan(p, np.zeros(len(p), dtype=bool), FPS, ground=ground)
        assert np.array_equal(result.target, p) and not result.weight.any() and not result.changed.any()
        assert result.holds == [] and result.blend == 18.0
    assert plan(p[:1], [True], FPS, ground=0.0).target.tolist() == [[p[0, 0], p[0, 1], 0.0]]


def test_head_targets_keep_the_foots_pitch():
    m = 20
    tip = sliding_walk(m)
    angle = np.linspace(0.0, 0.8, m)  # heel rise: the foot pitches about its tip
    head = tip + np.stack([-0.15 * np.cos(angle), np.zeros(m), 0.05 + 0.15 * np.sin(angle)], axis=1)
    target = np.repeat(tip[:1], m, axis=0)
    ankle = head_targets(target, head, tip)
    assert np.allclose(ankle - target, head - tip, atol=1e-15)  # the foot's world vector, as captured
    with pytest.raises(ValueError, match="same frames"):
        head_targets(target, head[:5], tip)


def heel_strike(m: int = 80, start: int = 10, landed: int = 24, end: int = 70):
    """A foot (heel end 6 cm up, 20 cm long) that strikes with its heel at `start`, toes 25 degrees
    up, and rolls down about the heel until its tip lands at `landed` (a smooth turn), flat to `end`.
    Returns heel, tip, the foot's contact flags (from heel strike) and the tip's own."""
    pitch = np.zeros(m)
    i = np.arange(start, landed)
    pitch[:start] = 0.44
    pitch[start:landed] = 0.44 * (1.0 - smooth((i - start) / (landed - start)))
    heel = np.tile([0.0, 0.0, 0.06], (m, 1))
    heel[:start, 0] = -0.01 * (start - np.arange(start))  # arriving
    tip = heel + np.stack([0.2 * np.cos(pitch), np.zeros(m), -0.04 + 0.2 * np.sin(pitch)], axis=1)
    planted = np.zeros(m, dtype=bool)
    planted[start:end] = True
    own = np.zeros(m, dtype=bool)
    own[landed:end] = True
    return heel, tip, planted, own


def test_tip_down_holds_the_tip_from_where_it_lands():
    """A contact keyed from heel strike: held from there, the tip (8 cm up) is snapped 8 cm down and,
    with the foot's pitch kept, the ankle goes below the ground; from where the tip lands, it is not."""
    heel, tip, planted, own = heel_strike()
    settings = ContactSettings.for_leg(0.9)
    down = tip_down(planted, tip, FPS, settings, ground=0.0)
    runs = contact_runs(down)
    assert len(runs) == 1 and 10 < runs[0][0] <= 24 and runs[0][1] == 70
    assert tip[runs[0][0], 2] - tip[10:70, 2].min() <= settings.height
    early = plan(tip, planted, FPS, ground=0.0, clearance=0.02)
    late = plan(tip, down, FPS, ground=0.0, clearance=0.02)
    assert early.holds[0].snap < -0.08 and abs(late.holds[0].snap) <= settings.height
    assert head_targets(early.target, heel, tip)[:, 2].min() < 0.0 < head_targets(late.target, heel, tip)[:, 2].min()
    # Before the tip lands its target is the input (the foot turns about its heel, as captured).
    assert np.array_equal(late.target[: runs[0][0] - late.holds[0].ease_in], tip[: runs[0][0] - late.holds[0].ease_in])
    # A still tip is down for the whole contact; a contact it never touches down in is dropped.
    still = np.repeat(tip[-1:], len(tip), axis=0)
    assert np.array_equal(tip_down(planted, still, FPS, settings), planted)
    flying = tip + np.stack([np.zeros(80), 0.02 * np.arange(80), np.zeros(80)], axis=1)  # 2.4 m/s
    assert not tip_down(planted, flying, FPS, settings).any()
    with pytest.raises(ValueError, match="settings must be"):
        tip_down(planted, tip, FPS, None)


def pitch_turns(angles: np.ndarray) -> np.ndarray:
    """(F, 4) turns about world y by `angles` (positive: the toe (+x) goes down)."""
    return np.stack([np.cos(angles / 2), np.zeros(len(angles)), np.sin(angles / 2), np.zeros(len(angles))], axis=1)


def stand_then_heel_rise(m: int = 170):
    """A foot standing flat (heel end 9 cm up, tip 6 cm up) from frame 0, its heel rising from 70 to
    90 (pitching 0.8 rad about its tip), then its tip sinking 4 cm from 100 to 130 (as in the
    clip's crouch), then still; one contact 10-160 (either end down). Returns heel, tip, the foot's
    turns and the contact flags."""
    a = np.zeros(m)
    drop = np.zeros(m)
    a[70:90], a[90:] = 0.8 * smooth((np.arange(70, 90) - 70) / 20), 0.8
    drop[100:130], drop[130:] = 0.04 * smooth((np.arange(100, 130) - 100) / 30), 0.04
    turns = pitch_turns(a)
    foot = np.stack([0.2 * np.cos(a) - 0.03 * np.sin(a), np.zeros(m), -0.2 * np.sin(a) - 0.03 * np.cos(a)], axis=1)
    tip = np.tile([0.2, 0.0, 0.06], (m, 1))
    tip[:, 2] -= drop
    planted = np.zeros(m, dtype=bool)
    planted[10:160] = True
    return tip - foot, tip, turns, planted


def test_heel_first_pivots_only_while_the_heel_is_down():
    """A contact of standing then a heel rise (a user trial on the raw CMU start-walk-stop clip): the
    tip is 'down' only once it has sunk, and pivoted about the point under the first frame's heel
    through the heel rise, the held tip went 16 mm below the lowest the input reached. The pivot ends
    where the heel leaves (the tip slow there): the tip is held from that frame, where it is."""
    heel, tip, turns, planted = stand_then_heel_rise()
    settings = ContactSettings.for_leg(0.9)
    down = tip_down(planted, tip, FPS, settings)
    landed = contact_runs(down)[0][0]
    assert landed > 110  # the tip is 'down' only once sunk
    old = heel_first(tip, heel, turns, planted, down)
    assert old.points[10, 2] < tip[:, 2].min() - 0.01  # the held point: 16 mm below the input's lowest
    heel_on, tip_slow = pivot_flags(planted, down, heel, tip, FPS, settings)
    assert heel_on[10:70].all() and not heel_on[80 : landed - 12].any() and tip_slow[10:160].all()
    new = heel_first(tip, heel, turns, planted, down, heel_on, tip_slow)
    assert np.array_equal(new.planted, planted)
    leave = 10 + int(np.flatnonzero(~heel_on[10:])[0])
    assert 70 < leave < 80
    held = plan(new.points, new.planted, FPS).target + new.offset
    # Held from there, near where the tip is as the heel leaves (the pivot turned the foot about the
    # point under the heel for the few frames the heel took to leave: 17 mm here).
    assert np.allclose(held[leave:160], held[leave]) and np.linalg.norm(held[leave] - tip[leave]) < 0.02
    assert held[10:160, 2].min() >= tip[:, 2].min() - 1e-9  # never below the input's lowest
    # Before the heel rises, the foot turns about the still heel: as captured.
    assert np.allclose(held[10:70], tip[10:70], atol=1e-9)


@pytest.mark.parametrize("early", [0, 1, 2, 3])
def test_heel_first_keeps_a_heel_strike(early):
    """A heel strike (the heel down until the tip lands, or rising within min_duration before it),
    its contact keyed on time or a few frames before the heel arrives (the heel not yet down is not
    the heel leaving): the pivot flags change nothing."""
    heel, tip, planted, _ = heel_strike()
    planted[10 - early : 10] = True
    pitch = np.arctan2(tip[:, 2] - heel[:, 2] + 0.04, tip[:, 0] - heel[:, 0])
    turns = pitch_turns(-pitch)
    settings = ContactSettings.for_leg(0.9)
    down = tip_down(planted, tip, FPS, settings, ground=0.0)
    flags = pivot_flags(planted, down, heel, tip, FPS, settings, ground=0.0)
    plain, pivoted = heel_first(tip, heel, turns, planted, down), heel_first(tip, heel, turns, planted, down, *flags)
    for a, b in zip(
        (plain.points, plain.planted, plain.offset), (pivoted.points, pivoted.planted, pivoted.offset), strict=True
    ):
        assert np.array_equal(a, b)
    assert plain.offset[10:24].any()  # a heel strike held from its first frame


@given(
    flags=st.lists(st.booleans(), min_size=1, max_size=60),
    moves=st.lists(st.floats(-0.01, 0.01), min_size=180, max_size=180),
)
def test_property_tip_down_lies_within_the_contacts(flags, moves):
    planted = np.array(flags)
    m = len(planted)
    tip = np.cumsum(np.array(moves).reshape(60, 3)[:m], axis=0)
    down = tip_down(planted, tip, FPS, ContactSettings.for_leg(0.9))
    assert not np.any(down & ~planted)
    for start, end in contact_runs(planted):
        assert len(contact_runs(down[start:end])) <= 1  # one hold per contact at most


def test_plant_metrics_before_and_after():
    p = np.stack([0.001 * np.arange(60), np.zeros(60), np.full(60, 0.05)], axis=1)  # 0.12 m/s: 4 mm per 1/30 s
    planted = np.zeros(len(p), dtype=bool)
    planted[5:50] = True
    result = plan(p, planted, FPS, ground=0.0, clearance=0.01)
    before = plant_metrics(p, planted, FPS, ground=0.0)
    after = plant_metrics(result.target, planted, FPS, ground=result.ground)
    assert before.slide.mean == pytest.approx(0.004, rel=0.05) and before.slide.samples == 45 - 4
    assert after.slide.largest == 0.0 and after.slide.samples == before.slide.samples
    assert after.lowest == pytest.approx(0.01) and before.lowest == pytest.approx(p[:, 2].min())


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (dict(points=np.zeros((0, 3)), planted=np.zeros(0, dtype=bool)), "no frames"),
        (dict(points=np.array([[0.0, 0.0, np.nan]] * 5)), "not finite at frame index 0"),
        (dict(points=np.zeros((5, 2))), "planted points must be"),
        (dict(planted=np.zeros(4, dtype=bool)), "planted flags must be one per frame"),
        (dict(planted=np.full(5, 0.5)), "planted flags must be booleans"),
        (dict(fps=0.0), "frame rate"),
        (dict(fps=-24.0), "frame rate"),
        (dict(blend=-1), "contact_blend must be 0 or more"),
        (dict(blend=float("nan")), "contact_blend must be 0 or more"),
        (dict(blend="6"), "contact_blend must be a number"),
        (dict(ground=np.zeros(4)), "ground must be"),
        (dict(ground=np.full(5, np.nan)), "ground heights are not finite"),
        (dict(ground=0.0, clearance=np.zeros(3)), "clearance must be"),
        (dict(ground=0.0, clearance=np.inf), "clearance is not finite"),
        (dict(clearance=0.02), "give a ground"),
    ],
)
def test_bad_input_is_refused_by_name(change, message):
    args = dict(points=np.zeros((5, 3)), planted=np.ones(5, dtype=bool), fps=FPS, blend=None, ground=None)
    args.update(change)
    with pytest.raises(ValueError, match=message):
        plan(**args)


# Properties, over random tip motions (a random walk), random contact flags, blends and grounds.
@st.composite
def plans(draw):
    m = draw(st.integers(1, 70))
    moves = np.array(draw(st.lists(st.floats(-0.02, 0.02), min_size=3 * m, max_size=3 * m))).reshape(m, 3)
    points = np.cumsum(moves, axis=0) + [draw(st.floats(-5, 5)), draw(st.floats(-5, 5)), 0.05]
    planted = np.array(draw(st.lists(st.booleans(), min_size=m, max_size=m)))
    blend = draw(st.one_of(st.integers(0, 12), st.floats(0.0, 12.0)))
    kind = draw(st.sampled_from(["none", "plane", "heights"]))
    ground, clearance = None, 0.0
    if kind == "plane":
        ground = draw(st.floats(-0.05, 0.1))
    elif kind == "heights":
        ground = np.cumsum(np.array(draw(st.lists(st.floats(-0.005, 0.005), min_size=m, max_size=m))))
    if kind != "none":
        clearance = draw(st.one_of(st.floats(0.0, 0.04), st.just(np.linspace(0.0, 0.02, m))))
    fps = draw(st.sampled_from([24.0, 30.0, 120.0]))
    return points, planted, fps, blend, ground, clearance


def _floor_under_input(points, ground, clearance):
    m = len(points)
    return np.broadcast_to(np.asarray(ground, dtype=float), (m,)) + np.broadcast_to(clearance, (m,))


@given(case=plans())
def test_property_each_contact_holds_its_first_frames_point(case):
    points, planted, fps, blend, ground, clearance = case
    result = plan(points, planted, fps, blend, ground, clearance)
    assert [(h.start, h.end) for h in result.holds] == contact_runs(planted)
    previous_end = None
    for hold in result.holds:
        held = result.target[hold.start : hold.end]
        assert np.abs(held - hold.point).max() <= 1e-12 and np.array_equal(held[0], hold.point)
        assert np.all(result.weight[hold.start : hold.end] == 1.0)
        alone = previous_end is None or hold.start - (previous_end - 1) >= blend + 1
        if alone:  # not within an earlier contact's ease: the input's point on the first frame
            assert np.array_equal(hold.point[:2], points[hold.start, :2])
            if ground is None:
                assert hold.point[2] == points[hold.start, 2] and hold.snap == 0.0
            else:
                expected = _floor_under_input(points, ground, clearance)[hold.start]
                assert hold.point[2] == pytest.approx(expected, abs=1e-12)
        previous_end = hold.end


@given(case=plans())
def test_property_away_from_contacts_the_input_is_untouched(case):
    """Frames beyond every contact's ease and before every snap's ease-in: the input bit for bit
    (with a ground, where the input is above it); before a contact, horizontally on every frame."""
    points, planted, fps, blend, ground, clearance = case
    result = plan(points, planted, fps, blend, ground, clearance)
    m = len(points)
    near = planted.copy()
    for hold in result.holds:
        near[hold.start - hold.ease_in : min(m, hold.end + math.ceil(blend))] = True
    assert np.all(result.weight[~near] == 0.0)
    free = ~near & (points[:, 2] >= result.floor)
    assert np.array_equal(result.target[free], points[free])
    untouched = result.weight == 0.0
    assert np.array_equal(result.target[untouched, :2], points[untouched, :2])  # no pull toward a landing
    if ground is None:
        assert np.array_equal(result.target[~near], points[~near])


@given(case=plans())
def test_property_the_target_never_jumps_beyond_the_bound(case):
    """|t_i - t_(i-1)| <= |p_i - p_(i-1)| + 1.5/(blend+1) |p_(i-1) - a| + 1.5/(n+1) |snap| + |floor step|,
    a the hold governing frame i - 1 (while its weight there is above 0), snap and n those of the
    contact whose ease-in or first frame is frame i (the module's stated bound)."""
    points, planted, fps, blend, ground, clearance = case
    result = plan(points, planted, fps, blend, ground, clearance)
    t, holds = result.target, result.holds
    floor_step = np.zeros(len(t)) if ground is None else np.abs(np.diff(result.floor, prepend=result.floor[0]))
    for i in range(1, len(t)):
        bound = np.linalg.norm(points[i] - points[i - 1]) + floor_step[i]
        governing = [h for h in holds if h.start <= i - 1]
        if governing and result.weight[i - 1] > 0.0:
            bound += STEEPEST / (blend + 1) * np.linalg.norm(points[i - 1] - governing[-1].point)
        coming = [h for h in holds if h.start - h.ease_in <= i <= h.start]
        if coming:
            bound += STEEPEST / (coming[0].ease_in + 1) * abs(coming[0].snap)
        assert np.linalg.norm(t[i] - t[i - 1]) <= bound + 1e-12, i


@given(case=plans())
def test_property_never_below_the_ground(case):
    points, planted, fps, blend, ground, clearance = case
    result = plan(points, planted, fps, blend, ground, clearance)
    assert np.all(result.target[:, 2] >= result.floor)
    if ground is not None:
        assert np.all(result.floor >= result.ground + np.minimum.reduce(np.atleast_1d(clearance)) - 1e-12)
        if np.ndim(ground) == 0:  # a plane: the ground under the target is the plane itself
            assert np.allclose(result.ground, ground, rtol=0, atol=1e-12)
            assert np.all(result.target[:, 2] >= ground + np.min(clearance) - 1e-12)


@given(case=plans())
def test_property_no_contacts_no_change(case):
    points, _, fps, blend, ground, clearance = case
    result = plan(points, np.zeros(len(points), dtype=bool), fps, blend, ground, clearance)
    assert not result.weight.any() and result.holds == []
    above = points[:, 2] >= result.floor
    assert np.array_equal(result.target[above], points[above])
    if ground is None:
        assert np.array_equal(result.target, points) and not result.changed.any()


def _heel_first_contact_by_contact(tip, heel, turns, planted, down, heel_on, tip_slow):
    """heel_first as it was written before its pivots were turned in one pass: contact by contact."""
    from solvers import quat

    points, offset = tip.copy(), np.zeros_like(tip)
    held = np.zeros(len(tip), dtype=bool)
    for start, end in contact_runs(planted):
        landed = np.flatnonzero(down[start:end])
        if not len(landed):
            continue
        first = start + landed[0]
        on = np.flatnonzero(heel_on[start:first])
        arrived = int(on[0]) if len(on) else 0
        left = np.flatnonzero(~heel_on[start + arrived : first]) + arrived
        if len(left):
            if not tip_slow[start + left[0]]:
                held[first:end] = True
                continue
            first = start + int(left[0])
        held[start:end] = True
        if first == start:
            continue
        pivot = np.array([heel[start, 0], heel[start, 1], tip[first, 2]])
        arm = quat.rotate(quat.conjugate(turns[start]), heel[start] - pivot)
        span = slice(start, first + 1)
        ankle = pivot + quat.rotate(turns[span], np.broadcast_to(arm, (first + 1 - start, 3)))
        turned = ankle + tip[span] - heel[span]
        offset[start:first] = turned[:-1] - turned[-1]
        points[start:first] = tip[start:first] - offset[start:first]
    return points, held, offset


@given(
    seed=st.integers(0, 2**32 - 1),
    frames=st.integers(2, 120),
    share=st.floats(0.1, 0.9),
    flagged=st.booleans(),
)
def test_property_heel_first_turns_every_pivot_as_contact_by_contact(seed, frames, share, flagged):
    """Every pivoting contact's turns in one pass: the same points, holds and offsets to the bit."""
    rng = np.random.default_rng(seed)
    tip = rng.normal(size=(frames, 3))
    heel = tip + 0.1 * rng.normal(size=(frames, 3))
    turns = rng.normal(size=(frames, 4))
    turns /= np.linalg.norm(turns, axis=1, keepdims=True)
    planted = rng.random(frames) < share
    down = planted & (rng.random(frames) < 0.7)
    heel_on = rng.random(frames) < 0.7 if flagged else np.ones(frames, dtype=bool)
    tip_slow = rng.random(frames) < 0.7 if flagged else np.ones(frames, dtype=bool)
    got = heel_first(tip, heel, turns, planted, down, heel_on if flagged else None, tip_slow if flagged else None)
    want = _heel_first_contact_by_contact(tip, heel, turns, planted, down, heel_on, tip_slow)
    for a, b in zip((got.points, got.planted, got.offset), want, strict=True):
        assert a.tobytes() == b.tobytes()


def _plan_weights_one_by_one(points, planted, blend, ground):
    """plan's target and weight with every ease weight found one call at a time (as before
    `_run_eases`)."""
    import math as m

    from solvers.contacts import ground_heights

    frames = len(points)
    under_input = ground_heights(ground, frames, 1)[:, 0] if ground is not None else np.zeros(frames)
    weight, lift = np.zeros(frames), np.zeros(frames)
    anchor, anchor_ground = points.copy(), under_input.copy()
    index, previous_end, holds = np.arange(frames), 0, 0
    for start, end in contact_runs(planted):
        w = float(ease(start - (previous_end - 1), blend)) if holds else 0.0
        held = (1.0 - w) * points[start] + w * anchor[start]
        held_ground = (1.0 - w) * under_input[start] + w * anchor_ground[start]
        ease_in = 0
        if ground is not None:
            snap = float(held_ground - held[2])
            held[2] = held_ground
            ease_in = int(min(blend, start - previous_end)) if snap else 0
            if ease_in:
                j = np.arange(1, ease_in + 1)
                lift[start - j] += ease(j, ease_in) * snap
        after = index[end : min(frames, end + int(m.ceil(blend + 1.0)))]
        for ours, value in ((anchor, held), (anchor_ground, held_ground)):
            ours[start:end] = ours[after] = value
        weight[start:end] = 1.0
        weight[after] = ease(after - (end - 1), blend)
        holds += 1
        previous_end = end
    target = (1.0 - weight[:, None]) * points + weight[:, None] * anchor
    target[:, 2] += lift
    if ground is not None:
        under = (1.0 - weight) * under_input + weight * anchor_ground
        target[:, 2] = np.maximum(target[:, 2], under + (1.0 - weight) * 0.0 + weight * 0.0)
    return target, weight


@given(
    seed=st.integers(0, 2**32 - 1),
    frames=st.integers(1, 90),
    share=st.floats(0.0, 1.0),
    blend=st.sampled_from([0.0, 1.0, 2.5, 4.0, 7.3, 18.0]),
    grounded=st.booleans(),
)
def test_property_plan_ease_weights_in_one_call(seed, frames, share, blend, grounded):
    """plan's ease weights (ease-outs, the previous hold's ease on a contact's first frame, the
    snap's ease-in) found in one call: the same targets and weights as one call per weight."""
    rng = np.random.default_rng(seed)
    points = rng.normal(size=(frames, 3))
    planted = rng.random(frames) < share
    ground = 0.1 * rng.normal(size=frames) if grounded else None
    got = plan(points, planted, FPS, blend, ground=ground)
    target, weight = _plan_weights_one_by_one(points, planted, blend, ground)
    assert got.target.tobytes() == target.tobytes()
    assert got.weight.tobytes() == weight.tobytes()


def test_tip_speed_given_is_the_one_found():
    """tip_down and pivot_flags with the tip's speed given (tip_speeds, found once) decide as
    without it; a speed per frame of another length is refused."""
    from solvers.plant import tip_speeds

    rng = np.random.default_rng(7)
    tip = np.cumsum(0.003 * rng.normal(size=(90, 3)), axis=0)
    heel = tip + [0.0, -0.15, 0.04]
    planted = rng.random(90) < 0.6
    settings = ContactSettings.for_leg(0.9)
    speed = tip_speeds(tip, FPS, settings)
    down = tip_down(planted, tip, FPS, settings, 0.0)
    assert np.array_equal(tip_down(planted, tip, FPS, settings, 0.0, speed), down)
    for a, b in zip(
        pivot_flags(planted, down, heel, tip, FPS, settings, 0.0, speed),
        pivot_flags(planted, down, heel, tip, FPS, settings, 0.0),
        strict=True,
    ):
        assert np.array_equal(a, b)
    with pytest.raises(ValueError, match="tip speeds must be one per frame"):
        tip_down(planted, tip, FPS, settings, 0.0, speed[:-1])
