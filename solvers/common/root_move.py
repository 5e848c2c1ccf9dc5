"""A movable root (issue 20 item 1): the unit's top bone may move its head as well as the bones turn.

One design for every method, outside the methods (each turns the bones its own way):

1. **Where the root goes** is a small geometric fit on plain floats, before any turn is solved.
   Each effector's branch below the root reaches at most `rho` from its *anchor* (the head of the
   first bone below the root, which moves with the root; the root bone's own turn is left to the
   method): the head-to-head distances down the branch plus the effector bone's length (a pin:
   down to its bone's head, which the pin fixes with its frame). So the root's head P must lie in
   a ball around each goal (centre `goal - (anchor - P)`). A target beyond its reach pulls the
   root until it lies within `comfort(root_stiffness) x rho` (0: three quarters of the reach,
   0.5: seven eighths, near 1: just within; 1 never moves); a target within reach of the root's head (the
   branch straight, the anchor's lever included: the root bone may turn) only keeps the root
   from taking it farther from the anchor; a pin keeps the root within `PIN_SHARE` of its reach (legs
   not locked straight) and wins over every target: the fit alternates the targets' weighted
   averaged projection with a projection onto the pins' balls, so where targets and pins
   conflict the root stops where the pins still hold and the targets come as near as they can.
2. **The turns** are the method's solve (`turn`: solve_skeleton without a movable root) on the
   skeleton with its root moved, from the input pose: pins and every other effector are solved
   as always (pins.hold included), so they hold while the root moves. (A method declaring
   `root_pins_first`, CCD, starts from the pins put back first: solvers.skeleton_solve, pins.placed.)
3. **Until nothing gains**: the reach is an upper bound (limits, a spine that cannot straighten,
   the root bone's own turn), so when a goal is still off the branch is taken to reach only as far
   as it got (the ball shrinks to that, less SHRINK), the root is fitted again from the solved pose
   and the turns solved again from there; a round is kept only if it ranks better (pins first,
   then the targets' ranked weighted squared errors, a met effector counting 0) by GAIN of itself.

With no target beyond its reach (and no pin or limit spoiling the first solve) the root stays and
the solve is the plain one: `move_root` then costs one fit.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import replace

import numpy as np

from ..maths.floats import rotate
from ..skeleton import Effector, Skeleton, SkeletonSolution, ranked_weights
from ..skeleton_floats import forward, rows

PIN_SHARE = 0.99  # a pinned branch is kept this share of its reach from the root (no straight lock)
SHRINK = 0.02  # a branch that fell short is taken to reach this share less than it got
GAIN = 1e-3  # a round must lower the rank's deciding sum by this share of it
ROUNDS = 4  # fits after the first, at most
FIT_STEPS = 200  # alternating projections of the fit, at most
FIT_SETTLED = 1e-3  # ... or less than this share of its move so far
FIT_TOLERANCE = 1e-6  # ... stopping once a step moves the root less than this share of the largest ball
DEFAULT_STIFFNESS = 0.5
MOVING_ROOT = "a movable root: frames solved one by one"  # the batch and sequence entries' reason

# turn(skeleton, start local rotations, effectors, pose as read or None): the method's solve, root fixed
Turn = Callable[[Skeleton, np.ndarray, list[Effector], object], SkeletonSolution]


def check_stiffness(value: object) -> float:
    """root_stiffness as a float in [0, 1], or ValueError naming the problem."""
    if isinstance(value, bool) or not isinstance(value, (int, float, np.floating, np.integer)):
        raise ValueError(f"root_stiffness must be a number within 0..1, got {value!r}")
    value = float(value)
    if not 0.0 <= value <= 1.0:  # NaN too
        raise ValueError(f"root_stiffness must be within 0..1 (0 moves freely, 1 never moves), got {value!r}")
    return value


def comfort(stiffness: float) -> float:
    """The share of a branch's reach a target beyond it is brought within by the root's move."""
    return 0.75 + 0.25 * stiffness


def root_of(skeleton: Skeleton, effectors: list[Effector]) -> int:
    """The one top bone every effector hangs from, or ValueError."""
    tops = sorted({skeleton.branch(e.bone)[0] for e in effectors})
    if len(tops) != 1:
        raise ValueError(f"a movable root needs every effector below one top bone; they hang from bones {tops}")
    return tops[0]


def shifted(skeleton: Skeleton, root: int, shift) -> Skeleton:
    """The skeleton with the root bone's head moved by `shift` (3,)."""
    if not np.any(shift):
        return skeleton
    offsets = np.array(skeleton.offsets)
    offsets[root] = offsets[root] + np.asarray(shift, dtype=float)
    return replace(skeleton, offsets=offsets)


def shifted_pose(skeleton: Skeleton, root: int, pose, shift):
    """The pose as read (frames, heads, ends) with the bones below `root` moved by `shift`."""
    if pose is None or not np.any(shift):
        return pose
    below = np.array([skeleton.branch(i)[0] == root for i in range(skeleton.n_bones)])
    frames, heads, ends = (np.array(a, dtype=float) for a in pose)
    heads[below] += shift
    ends[below] += shift
    return frames, heads, ends


def solve_moving_root(
    skeleton: Skeleton,
    local: np.ndarray,
    effectors: list[Effector],
    stiffness: float,
    tolerance: float,
    turn: Turn,
    pose=None,
) -> SkeletonSolution:
    """Solve with the root free to move (module doc). `effectors`: pins resolved (positions and
    frames given), soft positions applied; `turn(skeleton, start, effectors, pose)`: the method's
    solve with a fixed root. The result's `root_shift` (3,) is the root head's move (zeros: stayed)."""
    root = root_of(skeleton, effectors)
    zero = np.zeros(3)
    if stiffness >= 1.0:
        return replace(turn(skeleton, local, effectors, pose), root_shift=zero)
    branches = [_Branch.of(skeleton, root, e) for e in effectors]
    weights = ranked_weights([e for e in effectors if not e.pin]) if any(not e.pin for e in effectors) else []
    share, radii, shift = comfort(stiffness), None, zero
    head = tuple(skeleton.offsets[root].tolist())  # a root bone's head, whatever the pose
    if any(not b.pin and math.dist(b.goal, head) > b.reach + b.lever for b in branches):
        frames, heads = forward(skeleton, rows(local))
        radii = _first_radii(skeleton, branches, frames, heads, share)
        shift = _fit(branches, radii, weights, frames, heads, root)
    # (else the fit would leave the root exactly where it is: the plain solve, without the fit's cost)
    best = _trial(turn, skeleton, root, local, effectors, shift, pose)
    best_rank = _rank(effectors, best.error, tolerance, weights)
    for _ in range(ROUNDS):
        if best.reached:
            break
        if radii is None:  # the first fit's radii, from the input pose
            radii = _first_radii(skeleton, branches, *forward(skeleton, rows(local)), share)
        frames, heads = forward(shifted(skeleton, root, best.root_shift), rows(best.local))
        radii = _shrunk(skeleton, branches, radii, frames, heads, best.error, tolerance)
        step = _fit(branches, radii, weights, frames, heads, root)
        if not math.hypot(*step) > 1e-12 * _scale(skeleton):
            break
        trial = _trial(turn, skeleton, root, best.local, effectors, best.root_shift + step, None)
        rank = _rank(effectors, trial.error, tolerance, weights)
        if not _better(rank, best_rank):
            break
        best, best_rank = trial, rank
    if best_rank[0] > 0.0 and np.any(best.root_shift):  # a pin off: never worse off than the root kept
        kept = replace(turn(skeleton, local, effectors, pose), root_shift=zero)
        if _rank(effectors, kept.error, tolerance, weights)[0] < best_rank[0]:
            return kept
    return best


def _trial(turn: Turn, skeleton, root, start, effectors, shift, pose) -> SkeletonSolution:
    shift = np.asarray(shift, dtype=float)
    moved = shifted(skeleton, root, shift)
    return replace(turn(moved, start, effectors, shifted_pose(skeleton, root, pose, shift)), root_shift=shift)


def _scale(skeleton: Skeleton) -> float:
    return float(np.sum(skeleton.lengths))


class _Branch:
    """One effector's branch below the root: its anchor bone (whose head moves with the root), its
    reach from there, and the goal point the reach is measured to (a pin: its bone's head)."""

    __slots__ = ("bone", "root", "anchor", "lever", "reach", "goal", "pin")

    def __init__(self, bone: int, root: int, anchor: int, lever: float, reach: float, goal: tuple, pin: bool):
        self.bone, self.root, self.anchor, self.lever = bone, root, anchor, lever
        self.reach, self.goal, self.pin = reach, goal, pin

    @classmethod
    def of(cls, skeleton: Skeleton, root: int, effector: Effector) -> _Branch:
        anchor, lever, gaps = _structure(skeleton, effector.bone)
        length = float(skeleton.lengths[effector.bone])
        goal = tuple(effector.position.tolist())
        if effector.pin:  # the pin fixes its bone's frame, so its head: reach down to that
            link = (length * skeleton.links[effector.bone]).tolist()
            hx, hy, hz = rotate(tuple(effector.orientation.tolist()), link)
            goal = (goal[0] - hx, goal[1] - hy, goal[2] - hz)
            length = 0.0
        return cls(effector.bone, root, anchor, lever, gaps + length, goal, effector.pin)


def _structure(skeleton: Skeleton, bone: int) -> tuple[int, float, float]:
    """(anchor bone, root head to anchor, the head-to-head links below the anchor) of `bone`'s
    branch; the effector's bone being the root: (root, 0, 0). Kept on the (frozen) skeleton."""
    cache = skeleton.__dict__.setdefault("_root_branches", {})
    if bone not in cache:
        bones = skeleton.branch(bone)
        if len(bones) == 1:  # it reaches from its own head
            cache[bone] = (bone, 0.0, 0.0)
        else:
            gaps = math.fsum(math.hypot(*skeleton.offsets[b].tolist()) for b in bones[2:])
            cache[bone] = (bones[1], math.hypot(*skeleton.offsets[bones[1]].tolist()), gaps)
    return cache[bone]


def _first_radii(skeleton, branches: list[_Branch], frames, heads, share: float) -> list[float]:
    """Each branch's ball radius for the first fit (module doc, step 1)."""
    out = []
    for b in branches:
        d = math.dist(b.goal, heads[b.anchor])
        if b.pin:
            out.append(max(PIN_SHARE * b.reach, d))
        elif math.dist(b.goal, heads[b.root]) <= b.reach + b.lever:
            out.append(max(share * b.reach, d))  # within reach of the root's head: never taken out of it
        else:
            out.append(share * b.reach)
    return out


def _shrunk(skeleton, branches: list[_Branch], radii, frames, heads, error, tolerance) -> list[float]:
    """The radii with every branch still off taken to reach only as far as it got."""
    out = list(radii)
    for k, b in enumerate(branches):
        if error[k] <= tolerance:
            continue
        e = _goal_point(skeleton, frames, heads, b)
        got = math.dist(e, heads[b.anchor])
        out[k] = min(out[k], got * (1.0 - SHRINK))
    return out


def _goal_point(skeleton, frames, heads, branch: _Branch) -> tuple:
    """Where the branch's goal point is in the pose: the effector bone's end (a pin: its head)."""
    bone = branch.bone
    if branch.pin:
        return heads[bone]
    x, y, z = rotate(frames[bone], (float(skeleton.lengths[bone]) * skeleton.links[bone]).tolist())
    hx, hy, hz = heads[bone]
    return (hx + x, hy + y, hz + z)


def _fit(branches: list[_Branch], radii, weights, frames, heads, root: int) -> np.ndarray:
    """The root head's move (3,) from the pose (frames, heads): module doc, step 1."""
    start = heads[root]
    targets, pins = [], []
    for b, r in zip(branches, radii, strict=True):
        ax, ay, az = heads[b.anchor]
        centre = (b.goal[0] - (ax - start[0]), b.goal[1] - (ay - start[1]), b.goal[2] - (az - start[2]))
        (pins if b.pin else targets).append((centre, r))
    p = start
    # The fit places the root for the method to solve from, not to the last bit: the pins' projection
    # comes last (they hold exactly), a target may end a millionth of the scale outside its ball.
    eps = FIT_TOLERANCE * (1.0 + max((r for _, r in targets + pins), default=0.0))
    for _ in range(FIT_STEPS):
        q = _into_pins(_averaged(p, targets, weights) if targets else p, pins, eps)
        # Feasible: the projections stop at once. Where targets and pins conflict they crawl toward
        # the compromise; the root needs no more than a thousandth of its move there (the method
        # then reaches, or the rounds move on).
        if math.dist(p, q) <= max(eps, FIT_SETTLED * math.dist(q, start)):
            p = q
            break
        p = q
    return np.array(p) - np.array(start)


def _project(p, centre, radius):
    d = math.dist(p, centre)
    if d <= radius:
        return p
    s = radius / d
    return tuple(c + (x - c) * s for x, c in zip(p, centre, strict=True))


def _averaged(p, balls, weights):
    """The weighted mean of p's projections onto the balls (a gradient step of their squared excesses)."""
    total = math.fsum(weights)
    out = [0.0, 0.0, 0.0]
    for (centre, radius), w in zip(balls, weights, strict=True):
        q = _project(p, centre, radius)
        for i in range(3):
            out[i] += w * q[i]
    return tuple(v / total for v in out)


def _into_pins(p, balls, eps):
    """p moved into every pin's ball (alternating projections)."""
    for _ in range(FIT_STEPS):
        moved = False
        for centre, radius in balls:
            q = _project(p, centre, radius)
            if math.dist(p, q) > eps:
                p, moved = q, True
        if not moved:
            break
    return p


def _rank(effectors: list[Effector], error, tolerance: float, weights) -> tuple[float, float]:
    """(the pins' summed squared error beyond tolerance, the targets' ranked weighted squared
    errors, a met target counting 0): smaller is better, pins first."""
    pins = math.fsum(max(0.0, float(error[k]) - tolerance) ** 2 for k, e in enumerate(effectors) if e.pin)
    targets = [float(error[k]) for k, e in enumerate(effectors) if not e.pin]
    off = math.fsum(w * x * x for w, x in zip(weights, targets, strict=True) if x > tolerance)
    return pins, off


def _better(rank: tuple[float, float], best: tuple[float, float]) -> bool:
    if rank[0] != best[0]:
        return rank[0] < best[0] * (1.0 - GAIN)
    return rank[1] < best[1] * (1.0 - GAIN)
