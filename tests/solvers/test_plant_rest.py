"""Without a ground, a hold at the height the tip settles at (a user trial, issue 21: the CMU walk
with legs x1.2 held its planted tip 27-30 mm above where the capture settles for a whole stance):
solvers.plant.settle_heights, settled, kept_above and plan's `rest`."""

from __future__ import annotations

import numpy as np
import pytest

from solvers.plant import kept_above, plan, settle_heights, settled, unless_near

FPS = 24.0


def _landing(frames: int = 20):
    """A tip coming down from 60 mm to 25 mm over frames 2-6 (flags on from 2), settled after."""
    tip = np.zeros((frames, 3))
    tip[:, 1] = 0.5
    tip[:, 2] = 0.025
    tip[:2, 2] = 0.09
    tip[2:7, 2] = [0.06, 0.045, 0.035, 0.03, 0.027]
    planted = np.zeros(frames, dtype=bool)
    planted[2:15] = True
    return tip, planted


def test_settle_heights_are_the_tips_median_as_it_lands():
    tip, planted = _landing()
    down = planted.copy()
    rest = settle_heights(tip, planted, down, FPS, seconds=0.5)  # 12 frames from frame 2
    assert rest[2:15] == pytest.approx(np.median(tip[2:14, 2]))
    assert rest[0] == tip[0, 2] and rest[19] == tip[19, 2]  # outside contacts: the tip's own (never read)


def test_settled_flags_start_where_the_tip_is_near_its_rest():
    tip, planted = _landing()
    rest = settle_heights(tip, planted, planted, FPS, seconds=0.5)  # 25 mm
    down = settled(planted, tip, rest, 0.01)
    assert np.flatnonzero(down)[0] == 4 and down[4:15].all() and not down[15:].any()


def test_plan_holds_at_the_rest_height_from_the_first_frames_place():
    tip, planted = _landing()
    rest = settle_heights(tip, planted, planted, FPS)
    out = plan(tip, planted, FPS, blend=4, rest=rest)
    hold = out.holds[0]
    assert hold.point[:2].tolist() == tip[2, :2].tolist()  # across: the first frame's
    assert hold.point[2] == rest[2] and hold.snap == pytest.approx(rest[2] - tip[2, 2])
    assert np.all(out.target[2:15] == hold.point)
    assert np.all(np.isinf(out.floor)) and out.ground is None  # no floor, no ground
    assert hold.ease_in == 2 and np.all(out.target[:2, :2] == tip[:2, :2])  # eased in by height only
    # A clearance on top of the rest (a hold raised for the leg's reach)
    lifted = plan(tip, planted, FPS, blend=4, rest=rest, clearance=0.01)
    assert lifted.holds[0].point[2] == pytest.approx(rest[2] + 0.01)
    # None: today's hold at the first frame's height, bit for bit
    same = plan(tip, planted, FPS, blend=4)
    assert same.holds[0].point.tolist() == tip[2].tolist()


def test_rest_and_ground_refused_together_and_clearance_needs_one():
    tip, planted = _landing()
    with pytest.raises(ValueError, match="without a ground"):
        plan(tip, planted, FPS, ground=0.0, rest=tip[:, 2])
    with pytest.raises(ValueError, match="clearance"):
        plan(tip, planted, FPS, clearance=0.01)
    with pytest.raises(ValueError, match="rest heights"):
        plan(tip, planted, FPS, rest=np.zeros(3))


def test_kept_above_keeps_the_held_ankle_no_lower_than_the_captures_lowest():
    tip, planted = _landing()
    ankle = tip + [0.0, 0.0, 0.06]
    ankle[10:13, 2] = 0.1  # the foot on its heel, toe up: the ankle higher while the tip is too
    offsets = ankle - tip
    offsets[10:13, 2] = 0.03  # the pitch there puts the ankle only 30 mm above the tip
    rest = settle_heights(tip, planted, planted, FPS)
    out = kept_above(rest, planted, ankle, offsets)
    lowest = ankle[2:15, 2].min()
    assert out[2:15] == pytest.approx(max(rest[2], lowest - 0.03))
    assert np.all(out[2:15] + offsets[2:15, 2] >= lowest - 1e-12)
    assert kept_above(rest, planted, ankle, ankle - tip)[2] == rest[2]  # already above: unchanged


def test_a_rest_near_where_the_hold_is_keeps_todays_hold():
    tip, planted = _landing()
    rest = settle_heights(tip, planted, planted, FPS)
    assert unless_near(rest, planted, tip[:, 2], 0.01)[2] == rest[2]  # 25 mm under 60: lowered
    near = unless_near(rest, planted, tip[:, 2], 0.04)
    assert np.all(near[2:15] == tip[2, 2])
    assert (
        plan(tip, planted, FPS, blend=4, rest=near).target.tolist() == plan(tip, planted, FPS, blend=4).target.tolist()
    )
