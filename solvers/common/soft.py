"""Soft IK (issue 20 item 2): Andy Nicholas' formula against the knee (elbow) pop.

An exact IK straightens a chain in a frame or two as its target nears full reach (the "pop"):
the joint's angle goes like sqrt(D - d). Soft IK moves the target in before the solve: with the
chain's reach D (its full length from its base, or the stretched reach when IK stretch applies),
softness s = share x D (the user's `softness` is a share of the reach, 0 <= share < 1) and
D_s = D - s, a target at distance d > D_s from the chain's base is brought to

    D_s + s (1 - exp(-(d - D_s) / s))

along the base->target line; d <= D_s is unchanged, and share 0 returns the target unchanged to
the bit. The soft distance is continuous with slope 1 at D_s (C1: no pop where softening starts),
increasing, and below D, which it approaches as s e^-((d - D_s)/s): the chain is never quite
straight, so its joints turn at a bounded speed.

With IK stretch (issue 20: "stretch beyond reach, softened below it") the rule is Nicholas' soft
stretch: the chain bends exactly as the soft chain would (its tip at the fraction soft(d)/D of its
reach) and stretches by d / soft(d) so the tip still reaches the target. `soft_stretch` gives the
stretched reach D d / soft(d) (D itself for d <= D_s) to plan the stretch for
(solvers.stretch.plan(links, weights, inherit, that reach)); the target stays where it is. So:
- within D_s nothing changes (no stretch, no softening), as today;
- from D_s on the stretch grows from 1 with slope 0 (C1 in both the bend and the stretch); a
  stretch that started only at D would have to jump (or kink) there, since the soft tip lags the
  target by s/e at d = D;
- far beyond the reach the stretch approaches today's d / D (the difference falls as
  e^-((d - D_s)/s)): beyond reach it stretches as today, below it the bend is the soft one.
A chain with no stretchable bone (stretch.plan returns k = 0) uses the plain soft target instead.

`softness` here is always the share; `reach` is in the chain's units. numpy + stdlib only."""

from __future__ import annotations

import math

import numpy as np


def check_softness(softness: object) -> float:
    """The softness share as a float in [0, 1), or ValueError naming the problem."""
    if isinstance(softness, bool):
        raise ValueError(f"softness must be a number in [0, 1), got {softness!r}")
    try:
        share = float(softness)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"softness must be a number in [0, 1), got {softness!r}") from exc
    if not (0.0 <= share < 1.0):  # also refuses NaN
        raise ValueError(f"softness must be a share of the reach in [0, 1), got {softness!r}")
    return share


def check_reach(reach: object) -> float:
    """The reach as a positive finite float, or ValueError."""
    try:
        value = float(reach)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"the chain's reach must be a positive number, got {reach!r}") from exc
    if not (math.isfinite(value) and value > 0.0):
        raise ValueError(f"the chain's reach must be positive and finite, got {reach!r}")
    return value


def _reaches(reach: object, shape: tuple) -> np.ndarray:
    r = np.asarray(reach, dtype=float)
    if r.ndim == 0:
        check_reach(r)
    elif not np.all(np.isfinite(r) & (r > 0.0)):
        raise ValueError("every reach must be positive and finite")
    try:
        return np.broadcast_to(r, shape)
    except ValueError as exc:
        raise ValueError(f"reach of shape {r.shape} does not match distances of shape {shape}") from exc


def _distances(distances: object) -> np.ndarray:
    d = np.asarray(distances, dtype=float)
    if not np.all(np.isfinite(d) & (d >= 0.0)):
        raise ValueError("distances must be finite and >= 0")
    return d


def soft_distance(distance: float, reach: float, softness: float) -> float:
    """The soft distance of one target distance (scalar form of `soft_distances`)."""
    share, big = check_softness(softness), check_reach(reach)
    d = float(distance)
    if not (math.isfinite(d) and d >= 0.0):
        raise ValueError(f"the distance must be finite and >= 0, got {distance!r}")
    s = share * big
    start = big - s
    if share == 0.0 or d <= start:
        return d
    # -s expm1(-x) = s (1 - e^-x) without cancellation near D_s; min: (D - s) + s may round past D.
    return min(start - s * math.expm1(-(d - start) / s), big)


def soft_distances(distances: object, reach: object, softness: float) -> np.ndarray:
    """Soft distances of target distances (any shape); `reach` a scalar or one per distance
    (a per-frame stretched reach)."""
    share = check_softness(softness)
    d = _distances(distances)
    big = _reaches(reach, d.shape)
    if share == 0.0:
        return d.copy()
    s = share * big
    start = big - s
    x = np.maximum(d - start, 0.0) / s
    return np.where(d <= start, d, np.minimum(start - s * np.expm1(-x), big))


def hard_distance(soft: float, reach: float, softness: float) -> float:
    """The target distance whose soft distance is `soft` (the inverse; for reports): `soft` itself
    up to D_s, D_s - s ln(1 - (soft - D_s)/s) above; ValueError at or beyond the reach D, which
    no finite distance softens to (share 0: `soft` itself, any soft distance)."""
    share, big = check_softness(softness), check_reach(reach)
    v = float(soft)
    if not (math.isfinite(v) and v >= 0.0):
        raise ValueError(f"the soft distance must be finite and >= 0, got {soft!r}")
    s = share * big
    start = big - s
    if share == 0.0 or v <= start:
        return v
    if v >= big:
        raise ValueError(f"a soft distance {v!r} at or beyond the reach {big!r} has no finite source")
    return start - s * math.log1p(-(v - start) / s)


def soft_slope(distance: float, reach: float, softness: float) -> float:
    """d soft / d distance: 1 up to D_s, e^-((d - D_s)/s) above (how fast the soft tip follows)."""
    share, big = check_softness(softness), check_reach(reach)
    s = share * big
    start = big - s
    d = float(distance)
    return 1.0 if share == 0.0 or d <= start else math.exp(-(d - start) / s)


def _one_point(value: object, what: str) -> np.ndarray:
    p = np.asarray(value, dtype=float)
    if p.shape[-1:] != (3,) or not np.all(np.isfinite(p)):
        raise ValueError(f"{what} must be finite 3-vectors, got shape {p.shape}")
    return p


def soften_targets(base: object, targets: object, reach: object, softness: float) -> np.ndarray:
    """Targets (k, 3) (or (3,)) moved to their soft distance along base->target; `base` (3,) or
    one per target (the chain's base each frame); `reach` a scalar or (k,). Targets within D_s
    (all of them at share 0) come back bit for bit."""
    share = check_softness(softness)
    t = _one_point(targets, "targets")
    b = _one_point(base, "base")
    out = t.astype(float, copy=True)
    if share == 0.0:
        _reaches(reach, t.shape[:-1])
        return out
    arm = t - b
    d = np.sqrt(np.einsum("...i,...i->...", arm, arm))
    soft = soft_distances(d, reach, share)
    moved = soft < d  # d > D_s (soft <= d everywhere; equal below D_s)
    ratio = np.where(moved, soft / np.where(d > 0.0, d, 1.0), 1.0)
    return np.where(moved[..., None], b + arm * ratio[..., None], out)


def soften_target(base: object, target: object, reach: float, softness: float) -> tuple[float, float, float]:
    """One target moved to its soft distance (scalar form of `soften_targets`, plain floats)."""
    share = check_softness(softness)
    bx, by, bz = (float(v) for v in base)
    tx, ty, tz = (float(v) for v in target)
    if not all(map(math.isfinite, (bx, by, bz, tx, ty, tz))):
        raise ValueError("base and target must be finite")
    ax, ay, az = tx - bx, ty - by, tz - bz
    d = math.sqrt(ax * ax + ay * ay + az * az)
    soft = soft_distance(d, reach, share)
    if share == 0.0 or not soft < d:
        return (tx, ty, tz)
    r = soft / d
    return (bx + ax * r, by + ay * r, bz + az * r)


def soft_stretch(distance: float, reach: float, softness: float) -> float:
    """The stretched reach for soft IK with IK stretch (see the module docstring): D d / soft(d)
    for d > D_s, D otherwise; the target is not moved. Share 0 gives today's max(D, d)."""
    share, big = check_softness(softness), check_reach(reach)
    d = float(distance)
    if share == 0.0:
        if not (math.isfinite(d) and d >= 0.0):
            raise ValueError(f"the distance must be finite and >= 0, got {distance!r}")
        return max(big, d)
    soft = soft_distance(d, big, share)
    # max: soft <= D, so D d / soft >= d, but rounding could leave it a hair short of the target.
    return big if not soft < d else max(big * (d / soft), d)


def soft_stretches(distances: object, reach: object, softness: float) -> np.ndarray:
    """`soft_stretch` over many distances (any shape); `reach` a scalar or one per distance."""
    share = check_softness(softness)
    d = _distances(distances)
    big = _reaches(reach, d.shape)
    if share == 0.0:
        return np.maximum(big, d)
    soft = soft_distances(d, big, share)
    moved = soft < d
    return np.where(moved, np.maximum(big * (d / np.where(moved, soft, 1.0)), d), big)
