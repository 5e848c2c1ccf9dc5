"""Planted holds kept off a range's ends met by unbaked motion (issue 21, user trial 14): a contact
running across the first or last frame eases from / back to the input inside the range."""

from __future__ import annotations

import numpy as np
import pytest

from solvers.plant import STEEPEST, dropped_runs, plan, room_at_ends

FPS = 120.0


def _track(m: int = 80) -> np.ndarray:
    i = np.arange(m)
    return np.stack([0.002 * i, 0.01 * np.sin(0.3 * i), 0.05 + 0.01 * np.sin(0.2 * i) ** 2], axis=1)


@pytest.mark.parametrize("blend", [0.0, 3.0, 4.5, 18.0])
def test_no_cut_end_leaves_the_flags_as_they_are(blend):
    flags = np.zeros(80, dtype=bool)
    flags[:30] = flags[50:] = True
    assert np.array_equal(room_at_ends(flags, blend, False, False), flags)


@pytest.mark.parametrize("blend", [3.0, 4.5, 18.0])
def test_a_contact_across_either_end_eases_from_and_to_the_input_there(blend):
    points = _track()
    flags = np.zeros(len(points), dtype=bool)
    flags[:30] = flags[50:] = True  # both contacts run across an end of the range
    room = room_at_ends(flags, blend, True, True)
    steps = int(np.ceil(blend))
    assert not room[:steps].any() and not room[len(points) - steps :].any()
    assert room[steps:30].all() and room[50 : len(points) - steps].all()
    ground = 0.0  # the holds snap 5-6 cm down
    planned = plan(points, room, FPS, blend, ground=ground)
    # The first and last frames stay within one step of an ease of the input: their unbaked
    # neighbours (the input) are met without a jump.
    snap = max(abs(h.snap) for h in planned.holds)
    for row in (0, -1):
        off = float(np.linalg.norm(planned.target[row] - points[row]))
        far = max(np.linalg.norm(points[h.start] - h.point) for h in planned.holds)
        assert off <= STEEPEST / (steps + 1) * max(snap, far) + 1e-12, (row, off)
    assert planned.weight[-1] < 1.0 and planned.weight[0] == 0.0


def test_a_contact_within_the_room_is_dropped():
    flags = np.zeros(40, dtype=bool)
    flags[:3] = flags[10:20] = flags[37:] = True
    room = room_at_ends(flags, 4.0, True, True)
    assert dropped_runs(flags, room) == [(0, 3), (37, 40)]
    assert dropped_runs(flags, flags) == []
