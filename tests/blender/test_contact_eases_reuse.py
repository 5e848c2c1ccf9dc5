"""The planted bake's joint eases done with less (issue 21's speed), bit for bit the same: every hold
judged in one pass as hold by hold, an earlier call's eases kept where their figures are alike (the
push-off's second pass), and the frames the eases never read left unsolved (the first solve)."""

from __future__ import annotations

import numpy as np
import pytest

FPS = 120.0


def _unit(rng, shape):
    q = rng.normal(size=(*shape, 4))
    return q / np.linalg.norm(q, axis=-1, keepdims=True)


def _smooth_rotations(rng, frames: int) -> np.ndarray:
    """(F, 3, 4) local rotations turning a little from frame to frame (joint speeds of a leg)."""
    from chain_ik.solvers import plant_legs

    steps = 0.02 * rng.normal(size=(frames, 3, 3))
    return plant_legs.scaled_turns(np.cumsum(steps, axis=0), np.ones(frames))


def _case(rng, frames: int, runs, blend: float = 6.0):
    """(plan, inputs, solved, budget): a track held on `runs` over a ground just above its lowest
    point (so holds snap and ease in), inputs turning smoothly, solved turned off them."""
    from chain_ik.solvers import plant

    track = np.cumsum(0.004 * rng.normal(size=(frames, 3)), axis=0) + [0.0, 0.0, 0.05]
    planted = np.zeros(frames, dtype=bool)
    for start, end in runs:
        planted[start:end] = True
    plan = plant.plan(track, planted, FPS, blend, ground=float(track[:, 2].min()) + 0.01)
    inputs = _smooth_rotations(rng, frames)
    from chain_ik.solvers import quat

    solved = quat.normalize(quat.multiply(_unit(rng, (frames, 3)) * [1.0, 0.05, 0.05, 0.05], inputs))
    budget = 0.2 + rng.random(frames)
    return plan, inputs, solved, budget


RUNS = (
    ((6, 30), (33, 60), (70, 71), (90, 120)),
    ((0, 20), (40, 44), (52, 80), (100, 130)),
    ((6, 30), (33, 35), (37, 60), (70, 71), (90, 120)),  # a hold inside the window after an ease
)


@pytest.mark.parametrize("runs", RUNS)
@pytest.mark.parametrize("limit", [0.0, 0.02, 10.0])
def test_holds_judged_at_once_are_judged_hold_by_hold(scene, monkeypatch, runs, limit):
    from chain_ik.app.bake import contact_eases

    plan, inputs, solved, budget = _case(np.random.default_rng(len(runs[0]) + int(limit * 100)), 130, runs)
    assert any(h.ease_in for h in plan.holds)
    at_once = contact_eases.joint_eases(plan, inputs, solved, budget, 4, limit)
    monkeypatch.setattr(contact_eases, "_apart", lambda nears, eases: False)
    one_by_one = contact_eases.joint_eases(plan, inputs, solved, budget, 4, limit)
    for a, b in zip(at_once, one_by_one, strict=True):
        assert np.array_equal(a, b)


@pytest.mark.parametrize("runs", RUNS)
def test_an_earlier_calls_eases_kept_where_alike_are_the_eases_redone(scene, runs):
    from chain_ik.app.bake import contact_eases

    rng = np.random.default_rng(7)
    plan, inputs, solved, budget = _case(rng, 130, runs)
    first = contact_eases.joint_eases(plan, inputs, solved, budget, 4, 0.02)
    holds = plan.holds
    changes = [
        [],  # nothing differs
        [holds[0].end - 1],  # a hold's last frame (its correction)
        [holds[1].start],  # a hold's first frame (its ease-in's correction, the ease before it)
        [holds[2].end - 2, holds[2].end - 3],  # judged frames
        list(range(holds[1].start - 3, holds[1].start)),  # ease-in frames (read where changed)
        list(range(holds[3].end - 30, holds[3].end)),  # a push-off's span
        list(range(0, 130, 7)),
    ]
    for rows in changes:
        again = solved.copy()
        again[rows] = _unit(rng, (len(rows), 3))
        kept = contact_eases.joint_eases(plan, inputs, again, budget, 4, 0.02, earlier=(solved, first[0]))
        redone = contact_eases.joint_eases(plan, inputs, again, budget, 4, 0.02)
        for a, b in zip(kept, redone, strict=True):
            assert np.array_equal(a, b), rows


@pytest.mark.parametrize("runs", RUNS)
def test_the_frames_the_eases_never_read_change_nothing(scene, runs):
    from chain_ik.app.bake import contact_eases

    rng = np.random.default_rng(9)
    plan, inputs, solved, budget = _case(rng, 130, runs)
    unread = contact_eases.unread_frames(plan, 130, 4)
    assert np.any(unread) and not np.any(unread & (plan.weight == 1.0))
    scrambled = solved.copy()
    scrambled[unread] = _unit(rng, (int(unread.sum()), 3))
    for limit in (0.0, 0.02, 10.0):
        a = contact_eases.joint_eases(plan, inputs, solved, budget, 4, limit)
        b = contact_eases.joint_eases(plan, inputs, scrambled, budget, 4, limit)
        for x, y in zip(a, b, strict=True):
            assert np.array_equal(x, y)
