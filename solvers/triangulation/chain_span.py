"""The rest's extent a triangulation step gives a bone's joint (chain_floats.one_pass): the span
that changes the bone's angle to the target line and the rest's bend least, by golden-section
search on plain floats."""

from __future__ import annotations

import math

GOLDEN = (math.sqrt(5.0) - 1.0) / 2.0
SEARCH_STEPS = 36  # golden-section steps of least_turn_span: the interval shrinks to ~3e-8 of itself


def start_shape(joint: tuple, direction: tuple, nxt: tuple, tip: tuple, hole: float, l1: float, l2: float):
    """`keep`'s entry for a bone at `joint` with unit `direction`, its next joint `nxt`, the chain's
    `tip`, the rest's inner hole radius, and the rest as two links (its first bone l1, the bones
    after it at full length l2): (the angle to the tip line, hole, the rest's bend, l1, l2);
    None where the rest is one bone (its extent is fixed)."""
    if l2 <= 0.0:
        return None
    v = (tip[0] - joint[0], tip[1] - joint[1], tip[2] - joint[2])
    norm = math.sqrt(v[0] * v[0] + v[1] * v[1] + v[2] * v[2])
    cos_t = 1.0 if norm <= 0.0 else (direction[0] * v[0] + direction[1] * v[1] + direction[2] * v[2]) / norm
    angle = math.acos(min(max(cos_t, -1.0), 1.0))
    return (angle, hole, _bend(math.dist(nxt, tip), l1, l2), l1, l2)


def _bend(span: float, l1: float, l2: float) -> float:
    """The rest's bend at its first joint (0 straight) for an extent `span`, as two links."""
    cos_i = (l1 * l1 + l2 * l2 - span * span) / (2.0 * l1 * l2)
    return math.pi - math.acos(min(max(cos_i, -1.0), 1.0))


def least_turn_span(a: float, c: float, low: float, high: float, shape: tuple) -> float:
    """The rest's extent in [low, high] for a bone of length `a` whose joint is `c` from the target
    that changes least, in the sum of squares, the bone's angle to the target line and the rest's
    bend from the start's (`shape`, start_shape): where the rest is nearly straight its bend is
    a square root of the extent, so the bone turns instead, and where the bone lines up with the
    target line its angle is, so the rest bends instead. Golden-section search."""
    angle, _, bend, l1, l2 = shape
    if not low < high:
        return high
    two_ac = 2.0 * a * c
    a2c2 = a * a + c * c
    two_l = 2.0 * l1 * l2
    l1l2 = l1 * l1 + l2 * l2
    acos, pi, golden = math.acos, math.pi, GOLDEN
    ac_ok = two_ac > 0.0

    def cost(span: float) -> float:  # (written out: the search's 40 calls were most of a segment's solve)
        s2 = span * span
        cos_t = (a2c2 - s2) / two_ac if ac_ok else 1.0
        turn = acos(-1.0 if cos_t < -1.0 else 1.0 if cos_t > 1.0 else cos_t) - angle
        cos_i = (l1l2 - s2) / two_l
        flex = (pi - acos(-1.0 if cos_i < -1.0 else 1.0 if cos_i > 1.0 else cos_i)) - bend  # as _bend
        return turn * turn + flex * flex

    # The search with cost() written out where it runs 36 times (the same arithmetic; the call was
    # a fifth of the search's time), each side's step in its own branch (no flag read twice).
    lo, hi = low, high
    x1, x2 = hi - golden * (hi - lo), lo + golden * (hi - lo)
    f1, f2 = cost(x1), cost(x2)
    for _ in range(SEARCH_STEPS):
        if f1 <= f2:
            hi, x2, f2 = x2, x1, f1
            x = x1 = hi - golden * (hi - lo)
            s2 = x * x
            cos_t = (a2c2 - s2) / two_ac if ac_ok else 1.0
            turn = acos(-1.0 if cos_t < -1.0 else 1.0 if cos_t > 1.0 else cos_t) - angle
            cos_i = (l1l2 - s2) / two_l
            flex = (pi - acos(-1.0 if cos_i < -1.0 else 1.0 if cos_i > 1.0 else cos_i)) - bend
            f1 = turn * turn + flex * flex
        else:
            lo, x1, f1 = x1, x2, f2
            x = x2 = lo + golden * (hi - lo)
            s2 = x * x
            cos_t = (a2c2 - s2) / two_ac if ac_ok else 1.0
            turn = acos(-1.0 if cos_t < -1.0 else 1.0 if cos_t > 1.0 else cos_t) - angle
            cos_i = (l1l2 - s2) / two_l
            flex = (pi - acos(-1.0 if cos_i < -1.0 else 1.0 if cos_i > 1.0 else cos_i)) - bend
            f2 = turn * turn + flex * flex
    best = min((cost(low), low), (f1, x1), (f2, x2), (cost(high), high))
    return best[1]
