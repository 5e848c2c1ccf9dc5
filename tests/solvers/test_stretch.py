"""solvers.stretch: the IK stretch plan (issue 12 item 2)."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from solvers import stretch

STRAIGHT = [(0.0, 1.0, 0.0), (0.0, 2.0, 0.0), (0.0, 0.5, 0.0)]


def test_within_reach_nothing_stretches():
    k, world, own = stretch.plan(STRAIGHT, [1.0, 0.5, 0.0], [True] * 3, 3.5)
    assert k == 0.0 and world == own == [1.0, 1.0, 1.0]


def test_beyond_reach_links_sum_to_the_distance():
    k, world, own = stretch.plan(STRAIGHT, [1.0, 0.5, 0.0], [True] * 3, 5.0)
    assert stretch.reach(STRAIGHT, world) == pytest.approx(5.0, rel=1e-12)
    # s_i - 1 proportional to ik_stretch^2; the unstretchable tip keeps what it inherits (its own channel 1).
    assert (world[0] - 1.0) / (world[1] - 1.0) == pytest.approx(4.0)
    assert world[2] == world[1] and own[2] == 1.0
    # Each channel divides out what the bone inherits.
    assert own[0] == world[0] and own[1] == pytest.approx(world[1] / world[0])


def test_nothing_inherits():
    _, world, own = stretch.plan(STRAIGHT, [0.0, 1.0, 0.0], [False] * 3, 4.0)
    assert world == own and world[0] == world[2] == 1.0
    assert world[1] == pytest.approx(1.25)  # the 2-long link takes the whole 0.5


def test_no_stretchable_bone_or_no_y_link_leaves_it_unstretched():
    assert stretch.plan(STRAIGHT, [0.0] * 3, [True] * 3, 9.0)[0] == 0.0
    sideways = [(1.0, 0.0, 0.0)] * 3  # links with no Y component cannot lengthen by a Y scale
    assert stretch.plan(sideways, [1.0] * 3, [True] * 3, 9.0)[0] == 0.0


def test_bad_input():
    with pytest.raises(ValueError, match="one entry per bone"):
        stretch.plan(STRAIGHT, [1.0], [True] * 3, 5.0)
    with pytest.raises(ValueError, match="within 0..1"):
        stretch.plan(STRAIGHT, [1.5, 0.0, 0.0], [True] * 3, 5.0)
    with pytest.raises(ValueError, match="not finite"):
        stretch.plan(STRAIGHT, [1.0, 0.0, 0.0], [True] * 3, math.inf)


def test_current_factors_inverts_the_channels():
    w, inherit = [1.0, 0.3, 0.0, 0.7], [True, True, True, False]
    links = [(0.1, 1.0, 0.0)] * 4
    _, world, own = stretch.plan(links, w, inherit, 6.0)
    assert stretch.current_factors(own, inherit) == pytest.approx(world)


link = st.tuples(
    st.floats(-1.0, 1.0), st.floats(0.05, 3.0), st.floats(-1.0, 1.0)
)  # a bone's link, mostly along its Y


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.tuples(link, st.floats(0.0, 1.0), st.booleans()), min_size=1, max_size=6),
    st.floats(0.0, 50.0),
)
def test_property_reaches_exactly_and_never_shrinks(bones, extra):
    links = [b[0] for b in bones]
    w = [b[1] for b in bones]
    inherit = [b[2] for b in bones]
    base = stretch.reach(links, [1.0] * len(links))
    k, world, own = stretch.plan(links, w, inherit, base + extra)
    assert k >= 0.0 and all(c >= 1.0 for c in world)
    assert stretch.current_factors(own, inherit) == pytest.approx(world, rel=1e-9)
    if any(wi * wi > 0.0 for wi in w) and extra > 0.0:  # w^2 may underflow to 0
        assert stretch.reach(links, world) == pytest.approx(base + extra, rel=1e-9)
    else:
        assert world == [1.0] * len(links)
    # Only stretchable bones get a channel other than 1.
    assert all(o == 1.0 for o, wi in zip(own, w, strict=True) if wi == 0.0)
