"""The push-off's pitch search (solvers.plant_pitch): the least largest joint speed between knots,
and under the cap the least deviation from the captured pitch."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from solvers import quat
from solvers.plant_pitch import pitch_axes, pitch_path, pitch_paths, pitch_turns

ANGLES = np.radians(np.arange(-4, 5) * 5.0)  # -20..20 degrees
X = np.array([1.0, 0.0, 0.0])


def _joint(angles: np.ndarray) -> np.ndarray:
    """(..., 1, 4) one joint turned by `angles` about x."""
    return quat.from_rotation_vector(np.asarray(angles)[..., None] * X)[..., None, :]


def _candidates(captured: np.ndarray) -> np.ndarray:
    """(G, K, 1, 4): the joint at the captured angle per knot, minus each candidate's pitch (a pitch
    that turns the foot turns this joint back by as much)."""
    return _joint(captured[None, :] - ANGLES[:, None])


def test_under_the_cap_the_captured_pitch_is_kept():
    captured = np.radians(np.linspace(0.0, 30.0, 6))  # 6 degrees a knot
    path, worst = pitch_path(_candidates(captured), _joint(0.0), np.zeros((9, 0, 1, 4)), ANGLES, 0.1, 2.0)
    assert np.all(ANGLES[path] == 0.0)
    assert worst == pytest.approx(2.0)  # the largest speed, reported no lower than the cap
    # With no cap the search trades deviation for speed: the 6-degree steps become 5 at most.
    path, worst = pitch_path(_candidates(captured), _joint(0.0), np.zeros((9, 0, 1, 4)), ANGLES, 0.1, 0.0)
    assert worst == pytest.approx(np.radians(5.0) / 0.1) and np.any(ANGLES[path] != 0.0)


def test_a_jump_over_the_cap_is_spread_over_the_knots_before_it():
    captured = np.radians([0.0, 0.0, 0.0, 0.0, 30.0])  # 30 degrees in the last step
    path, worst = pitch_path(_candidates(captured), _joint(0.0), np.zeros((9, 0, 1, 4)), ANGLES, 1.0, 0.0)
    # The captured pitch turns 30 degrees in one step; the best path spreads it over the steps
    # from the knot before, on the 5-degree grid: 5 degrees at most.
    steps = np.diff(np.concatenate([[0.0], captured - ANGLES[path]]))
    assert np.max(np.abs(steps)) == pytest.approx(np.radians(5.0), abs=1e-9)
    assert worst == pytest.approx(np.radians(5.0), abs=1e-9)


def test_banned_candidates_are_never_used():
    captured = np.radians([0.0, 0.0, 0.0, 0.0, 30.0])
    allowed = np.ones((9, 5), dtype=bool)
    allowed[ANGLES > 0.0] = False  # e.g. a heel that would go below the ground
    path, _ = pitch_path(_candidates(captured), _joint(0.0), np.zeros((9, 0, 1, 4)), ANGLES, 1.0, 0.0, allowed)
    assert np.all(ANGLES[path] <= 0.0)


def test_the_ease_after_the_last_knot_counts():
    captured = np.zeros(3)
    # After the hold the joint goes to 0 whatever the last pitch; a last pitch of -20 degrees
    # would make that step 20 degrees, so under a cap of 10 degrees a step the path ends at most 10 off.
    after = np.broadcast_to(_joint(0.0)[None], (9, 2, 1, 4))
    path, worst = pitch_path(_candidates(captured), _joint(0.0), after, ANGLES, 1.0, np.radians(10.0), stride=1)
    assert np.all(ANGLES[path] == 0.0) and worst == pytest.approx(np.radians(10.0))


@settings(max_examples=40, deadline=None)
@given(st.lists(st.floats(-40.0, 40.0), min_size=1, max_size=6), st.floats(0.0, 50.0))
def test_property_the_path_is_no_faster_than_the_captured_pitch(captured, cap):
    captured = np.radians(np.asarray(captured))
    candidates = _candidates(captured)
    path, worst = pitch_path(candidates, _joint(0.0), np.zeros((9, 0, 1, 4)), ANGLES, 1.0, np.radians(cap))
    chain = np.concatenate([_joint(0.0)[None], candidates[path, np.arange(len(path))]])
    steps = 2.0 * np.arccos(np.minimum(np.abs(np.sum(chain[:-1] * chain[1:], axis=-1)), 1.0))
    zero = list(ANGLES).index(0.0)
    plain = np.concatenate([_joint(0.0)[None], candidates[zero]])
    plain_steps = 2.0 * np.arccos(np.minimum(np.abs(np.sum(plain[:-1] * plain[1:], axis=-1)), 1.0))
    assert steps.max() <= max(plain_steps.max(), np.radians(cap)) + 1e-9
    assert worst == pytest.approx(max(steps.max(), np.radians(cap)), abs=1e-9)


def test_a_positive_pitch_lifts_the_heel_about_the_tip():
    heel = np.array([[0.0, 0.0, 0.1], [0.0, 0.0, 0.1]])
    tip = np.array([[0.15, 0.0, 0.0], [0.0, 0.15, 0.0]])  # the foot along x, then along y
    turns = pitch_turns(pitch_axes(heel, tip), np.radians([10.0, 10.0]))
    turned = quat.rotate(turns, heel - tip)
    assert np.all(turned[:, 2] > (heel - tip)[:, 2])
    assert np.allclose(np.linalg.norm(turned, axis=1), np.linalg.norm(heel - tip, axis=1))


def test_bad_input_is_named():
    with pytest.raises(ValueError, match="one per candidate"):
        pitch_path(_candidates(np.zeros(2)), _joint(0.0), np.zeros((9, 0, 1, 4)), ANGLES[:3], 1.0, 0.0)


def _reference_path(candidates, before, after, angles, seconds, cap, allowed, stride):
    """The search of one hold knot by knot, as written before holds were searched together."""

    def speeds(a, b):
        return quat.angles_between_cheaply(a, b).max(axis=-1) / seconds

    count, knots = candidates.shape[:2]
    deviation = np.abs(angles)
    banned = np.zeros((count, knots), dtype=bool) if allowed is None else ~allowed
    worst = np.maximum(speeds(before[None], candidates[:, 0]), cap)
    worst[banned[:, 0]] = np.inf
    spent = deviation.copy()
    back = np.empty((knots, count), dtype=int)
    steps = speeds(candidates[:, None, :-1], candidates[None, :, 1:])
    for k in range(1, knots):
        total = np.maximum(np.maximum(worst[:, None], steps[:, :, k - 1]), cap)
        best = total.min(axis=0)
        back[k] = np.where(total <= best[None, :], spent[:, None], np.inf).argmin(axis=0)
        worst = best
        worst[banned[:, k]] = np.inf
        spent = spent[back[k]] + deviation
    if after.shape[1] >= stride:
        chain = np.concatenate([candidates[:, -1:], after], axis=1)
        worst = np.maximum(worst, speeds(chain[:, :-stride], chain[:, stride:]).max(axis=1))
    final = np.maximum(worst, cap)
    last = int(np.where(final <= final.min(), spent, np.inf).argmin())
    path = [last]
    for k in range(knots - 1, 0, -1):
        path.append(int(back[k][path[-1]]))
    return np.array(path[::-1]), float(worst[last])


def test_holds_searched_together_are_each_hold_searched_alone():
    rng = np.random.default_rng(4)
    jobs = []
    for knots, frames, cap, banned in ((5, 7, 0.0, False), (5, 2, 3.0, True), (3, 0, 1.0, False), (5, 9, 0.5, True)):
        candidates = quat.normalize(rng.normal(size=(9, knots, 3, 4)))
        after = quat.normalize(rng.normal(size=(9, frames, 3, 4)))
        allowed = rng.random((9, knots)) > 0.3 if banned else None
        jobs.append((candidates, quat.normalize(rng.normal(size=(3, 4))), after, cap, allowed))
    together = pitch_paths(jobs, ANGLES, 0.1, 3)  # stride 3: the second hold's 2 frames after are too few
    for job, (path, worst) in zip(jobs, together, strict=True):
        alone = pitch_path(job[0], job[1], job[2], ANGLES, 0.1, job[3], job[4], 3)
        assert np.array_equal(path, alone[0]) and worst == alone[1]
        reference = _reference_path(job[0], job[1], job[2], ANGLES, 0.1, job[3], job[4], 3)
        assert np.array_equal(path, reference[0]) and worst == reference[1]
