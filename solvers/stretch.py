"""IK stretch planning: how much each stretchable bone lengthens along its own Y axis so the
chain reaches a target beyond its reach (plain floats; rig.stretch reads and writes bones).

The rule (compare Blender's IK in docs/design.md / rig/stretch.py): with the chain's
unstretched reach L (the sum of its link lengths) and the root-to-target distance d > L, every
bone i with weight w_i = ik_stretch_i > 0 gets the armature-space Y factor
s_i = 1 + k * w_i^2 (w^2 is the weight Blender gives the stretch DOF: 1 - stiffness), with the
single k >= 0 for which the stretched links sum to d. A bone with w_i = 0 keeps the factor it
inherits from its parent (1 unless its parent stretched and it inherits scale). Its own Y
channel is then s_i over what it inherits, as Blender's IK divides out the parent's stretch.
Within reach every factor is 1: the stretch resets.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

Link = tuple[float, float, float]


def factors(weights: Sequence[float], inherit: Sequence[bool], k: float) -> tuple[list[float], list[float]]:
    """(armature-space Y factor per bone, own Y channel per bone) for the stretch amount `k`.

    `inherit[i]`: bone i inherits its parent's (bone i-1's) Y scale; inherit[0] is ignored."""
    world, own, acc = [], [], 1.0
    for i, (w, inh) in enumerate(zip(weights, inherit, strict=True)):
        inherited = acc if (i and inh) else 1.0
        acc = 1.0 + k * w * w if w > 0.0 else inherited
        world.append(acc)
        own.append(acc / inherited)
    return world, own


def current_factors(channels: Sequence[float], inherit: Sequence[bool]) -> list[float]:
    """Armature-space Y factor per bone that the own Y `channels` give (the inverse of
    `factors`' second result)."""
    out, acc = [], 1.0
    for i, (y, inh) in enumerate(zip(channels, inherit, strict=True)):
        acc = (acc if (i and inh) else 1.0) * y
        out.append(acc)
    return out


def reach(links: Sequence[Link], world: Sequence[float]) -> float:
    """Sum of the link lengths with each link's Y component (in its bone's frame) scaled."""
    return math.fsum(math.sqrt(x * x + (y * c) ** 2 + z * z) for (x, y, z), c in zip(links, world, strict=True))


def plan(
    links: Sequence[Link], weights: Sequence[float], inherit: Sequence[bool], distance: float
) -> tuple[float, list[float], list[float]]:
    """(k, armature-space Y factors, own Y channels) making the chain reach `distance`.

    `links`: each bone's link (head to the next head, gap included) in its own unstretched
    unit frame. k = 0 (all factors 1) when `distance` is within reach or nothing can stretch."""
    if len(links) != len(weights) or len(weights) != len(inherit):
        raise ValueError("links, weights and inherit must have one entry per bone")
    if any(not (math.isfinite(w) and 0.0 <= w <= 1.0) for w in weights):
        raise ValueError(f"ik_stretch weights must be within 0..1, got {list(weights)}")
    if not math.isfinite(distance):
        raise ValueError(f"the target distance is not finite: {distance}")
    ones = [1.0] * len(links)
    stretchable = [w * w > 0.0 and abs(link[1]) > 0.0 for w, link in zip(weights, links, strict=True)]
    if distance <= reach(links, ones) or not any(stretchable):
        return (0.0, *factors(weights, inherit, 0.0))
    lo, hi = 0.0, 1.0
    while reach(links, factors(weights, inherit, hi)[0]) < distance:
        lo, hi = hi, hi * 2.0
        if not math.isfinite(hi):
            raise ValueError("the target is too far for the chain's stretch")
    for _ in range(200):  # bisection to the float's resolution
        mid = 0.5 * (lo + hi)
        if mid in (lo, hi):
            break
        if reach(links, factors(weights, inherit, mid)[0]) < distance:
            lo = mid
        else:
            hi = mid
    return (hi, *factors(weights, inherit, hi))
