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

`stretch_points` builds the stretched chain in float64: the solver must see links summing to the
distance exactly (see its docstring for why float32 rounding there makes the tip miss).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from .common.soft import soft_stretch

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


# An IK Stretch below this cannot stretch a bone: the factor it would need overflows a float
# (Blender's own weights are float32, shown to 0.001).
MIN_STRETCH = 1e-30


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
    stretchable = [w >= MIN_STRETCH and abs(link[1]) > 0.0 for w, link in zip(weights, links, strict=True)]
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


Rows = Sequence[Sequence[float]]


def off_axis(link: Link, factor: float = 1.0) -> float:
    """The angle (radians) between a bone's Y axis and its link stretched by `factor` along it."""
    x, y, z = link
    return math.atan2(math.hypot(x, z), abs(y) * factor)


def inherited_shear(angle: float, factor: float) -> float:
    """The cosine between a bone's axes once it inherits its parent's Y scale `factor` at `angle`
    (radians) from the parent's Y axis, as Inherit Scale Full applies it: the columns of
    diag(1, s, 1) R, R a turn by `angle`; 0 along the parent's axis, ~(s^2 - 1) x angle / s near it."""
    c, s = math.cos(angle), math.sin(angle)
    f2 = factor * factor
    return abs((f2 - 1.0) * s * c) / math.sqrt((c * c + f2 * s * s) * (s * s + f2 * c * c))


def stretch_points(
    points: Rows,
    frames: Sequence[Rows],
    weights: Sequence[float],
    inherit: Sequence[bool],
    target: Sequence[float],
    softness: float = 0.0,
) -> tuple[list[Link], list[float], list[float], list[tuple[float, float, float]]]:
    """(links, armature-space Y factors, own Y channels, stretched points (n+1)) for the chain at
    `points` (joints and end, unstretched) with bone rotations `frames` (3x3 rows, orthonormal),
    stretched toward `target` as `plan` decides. With `softness` (soft IK) the plan is for
    Nicholas' soft stretch (solvers.common.soft.soft_stretch); a chain it stretched is then solved
    to the target itself (no soft target: the stretch already bends it as the soft chain bends).

    Everything in float64 from the given numbers: the stretched links then sum to the root-target
    distance to float64 rounding, and the target is at the chain's full reach, where the only pose
    that reaches is straight. Rounded to float32 (~1e-7 of the length), a target a hair inside full
    reach makes triangulation close a nearly flat triangle, bent by ~sqrt(1e-7) rad; the tip still
    reaches on the rigid chain, but a bone inheriting its stretched parent's Y scale is sheared by
    it in Blender (the parent's scale acts along the parent's axis), and the tip misses by
    ~(s - 1) x length x that angle (4e-4 on a 3-bone chain stretched 1.6x at its root)."""
    links = []
    for i, f in enumerate(frames):
        d = [points[i + 1][j] - points[i][j] for j in range(3)]
        links.append(tuple(math.fsum(f[j][k] * d[j] for j in range(3)) for k in range(3)))  # f^T d
    distance = math.dist(target, points[0])
    if softness:
        distance = soft_stretch(distance, reach(links, [1.0] * len(links)), softness)
    _, world, own = plan(links, weights, inherit, distance)
    out = [tuple(map(float, points[0]))]
    for f, (x, y, z), c in zip(frames, links, world, strict=True):
        v = (x, y * c, z)
        out.append(tuple(p + math.fsum(f[j][k] * v[k] for k in range(3)) for j, p in enumerate(out[-1])))
    return links, world, own, out
