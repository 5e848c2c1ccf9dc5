"""Aim chains: turn a chain so an axis of its tip bone points at a target (issue 20 item 4).

The goal is a direction, not a position: the ray from the tip bone's head along `aim_axis`
(one of AIM_AXES, in the tip bone's own frame; Blender's bones have Y along the bone, and the
head bone of Rigify's metarig faces forward along +Z) must pass through the target. What is
left is the angle between that ray and the direction from the head to the target.

The turn is shared over the chain's bones (FinalIK's AimIK, weighted cyclic descent):
- Shares (`aim_shares`): bone j, k_j bones from the tip (the tip bone k = 0), weighs
      w_j = aim_spread ** k_j * (1 - mean stiffness of bone j)
  (0 ** 0 = 1), zero for a bone not `movable` or with every axis locked; its share is
  f_j = w_j / sum(w). `aim_spread` 0 puts the whole turn on the tip bone, 1 spreads it evenly
  (bones of equal stiffness); the default 0.7 gives a 3-bone neck-and-head chain
  22% / 32% / 46% and a 2-bone one 41% / 59%.
- One pass goes root to tip. Bone j turns the fraction g_j = f_j / (f_j + ... + f_tip) of the
  remaining angle (so the tip bone, g = 1, turns the rest), about its own head, by the
  rotation that takes the aim axis onto the head-to-target direction (the same world axis for
  every bone: a look to the side is a yaw of every neck bone, not a tilt). Were all heads on
  the turn's axis, one pass would give bone j exactly f_j of the total. The turned local
  rotation is clamped into the bone's joint limits (`limits.clamp`, as CCD does); a clamped
  turn that would leave the ray farther from the target than before is not made. A bone its
  limits stopped drops out of the sums of the bones before it in the next pass, so they take
  over its part in the ratio of their own shares (instead of creeping up on it pass by pass).
- Passes repeat until the angle is within `tolerance` (radians), a pass gains nothing (less
  than STALL, or 1e-9 of the angle: on a limited chain the limits block the aim, and `reason`
  says so; `angle` is what is left) or `max_iterations` (`reason` says that too). A pass that
  ends farther off than it began (bones turning about heads too near the target) is taken
  back: the pose returned is the best found.
  A free tip bone ends every pass on the target, so an unlimited chain takes one pass.
- A target on the tip bone's head leaves the direction undefined: nothing turns, the angle is
  NaN, `reason` says why. A bone with no share is never turned itself: its local rotation stays
  bit for bit as given, and above the first bone that turns, its rotation (identity) and its
  points too. (A limited chain starts, as every solver does, from its input pose clamped into
  the limits: only a bone found outside them is turned there.)

An aim goal in a tree beside reaching chains (a head aiming while both hands reach) follows one
rule: reaching comes first, the aim turns only bones no reaching effector depends on.
1. The reach goals (targets and pins) are solved as today, without the aim goal.
2. The aim pass then runs from that solved pose on the aim chain's bones that are neither a
   reaching effector's bone nor an ancestor of one (`free_bones`): turning one of those moves
   no effector, so every reach result stays exactly as solved. The other aim bones keep the
   reach solve's rotation (share 0); the free ones share the whole turn by the rule above.
3. With no free bone left the aim is not attempted, and `reason` says so.
`aim_after_reach` is steps 2-3 on a skeleton pose. A bone shared by both goals therefore
serves the reach only; giving it a say in the aim too (the aim as an angular-error row of the
Jacobian, weighed against the reaching rows) is a later step, not this rule.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import quat
from ..limits import clamp
from ..model.aim_axis import AIM_AXES as AIM_AXES  # declared there (the tree's Effector carries it too)
from ..model.aim_axis import DEFAULT_SPREAD, axis_vector, check_spread
from ..model.chain import Chain, as_point, as_real
from ..skeleton import Skeleton

DEFAULT_TOLERANCE = 1e-4  # radians (0.006 degrees)
DEFAULT_MAX_ITERATIONS = 50
# A pass that gains less than this (radians, or this fraction of the angle) has stalled.
STALL = 1e-12
# A target nearer the tip bone's head than this fraction of the chain leaves no direction.
AT_HEAD = 1e-12
BLOCKED = "joint limits block the aim"
NOT_FREE = "no bone of the aim chain is free to turn"
STALLED = "the bones free to turn get the axis no closer to the target"
AT_TIP_HEAD = "the target is at the tip bone's head: no direction to aim along"
CAPPED = "stopped at the iteration cap"


@dataclass(frozen=True)
class AimSolution:
    """One aim solve, in the reach solves' data model: `rotations[i]` takes bone i from its
    input orientation to its solved one (world, w x y z), `points` the solved joints (n+1, 3),
    `locals` each bone's solved local rotation (n, 4); `angle` the remaining angle (radians;
    NaN with the target on the tip bone's head), `reached` = angle <= tolerance, `iterations`
    the passes made, `reason` why it stopped short ('' when reached)."""

    points: np.ndarray
    rotations: np.ndarray
    locals: np.ndarray
    angle: float
    reached: bool
    iterations: int
    reason: str = ""

    def frames(self, chain: Chain) -> np.ndarray:
        """Solved world orientation of each bone (n, 4)."""
        return quat.multiply(self.rotations, chain.frames)


@dataclass(frozen=True)
class AimBatch:
    """Many aim solves of one chain (one per target): `AimSolution`'s fields stacked."""

    points: np.ndarray  # (m, n+1, 3)
    rotations: np.ndarray  # (m, n, 4)
    locals: np.ndarray  # (m, n, 4)
    angle: np.ndarray  # (m,)
    reached: np.ndarray  # (m,) bool
    iterations: np.ndarray  # (m,)
    reasons: tuple[str, ...]

    def __len__(self) -> int:
        return self.angle.shape[0]

    def __getitem__(self, k: int) -> AimSolution:
        return AimSolution(
            self.points[k],
            self.rotations[k],
            self.locals[k],
            float(self.angle[k]),
            bool(self.reached[k]),
            int(self.iterations[k]),
            self.reasons[k],
        )


def aim_shares(chain: Chain, aim_spread: float = DEFAULT_SPREAD, movable: object = None) -> np.ndarray:
    """Each bone's share f (n,) of the turn (module docstring; sums to 1, or all 0 when no bone
    may turn)."""
    spread = check_spread(aim_spread)
    n = chain.n_bones
    free = _movable(movable, n)
    k = np.arange(n - 1, -1, -1, dtype=float)  # bones from the tip
    weight = np.where(k == 0.0, 1.0, spread**k)
    if chain.limits is not None:
        weight = weight * (1.0 - chain.limits.stiffness.mean(axis=1))
        free = free & ~chain.limits.lock.all(axis=1)
    weight = np.where(free, weight, 0.0)
    total = weight.sum()
    return weight / total if total > 0.0 else weight


def free_bones(parents: tuple[int, ...], aim_bones: list[int], reach_bones: list[int]) -> np.ndarray:
    """For each bone of an aim chain (`aim_bones`, skeleton indices root first), whether the aim
    may turn it beside reaching effectors on `reach_bones`: it is no effector's bone and no
    ancestor of one (turning it moves no effector). `parents` as `Skeleton.parents`."""
    depended = set()
    for bone in reach_bones:
        while bone != -1 and bone not in depended:
            depended.add(bone)
            bone = parents[bone]
    return np.array([b not in depended for b in aim_bones], dtype=bool)


def solve_aim(
    chain: Chain,
    target: object,
    aim_axis: str,
    *,
    aim_spread: float = DEFAULT_SPREAD,
    tolerance: float = DEFAULT_TOLERANCE,
    max_iterations: int = DEFAULT_MAX_ITERATIONS,
    movable: object = None,
) -> AimSolution:
    """Turn `chain` (with frames) so its tip bone's `aim_axis` points at `target` (module
    docstring). `movable` (n,) bools: bones the aim may turn (default all)."""
    point = as_point(target, "aim target")
    return solve_aim_many(
        chain,
        point[None],
        aim_axis,
        aim_spread=aim_spread,
        tolerance=tolerance,
        max_iterations=max_iterations,
        movable=movable,
    )[0]


def solve_aim_many(
    chain: Chain,
    targets: object,
    aim_axis: str,
    *,
    aim_spread: float = DEFAULT_SPREAD,
    tolerance: float = DEFAULT_TOLERANCE,
    max_iterations: int = DEFAULT_MAX_ITERATIONS,
    movable: object = None,
) -> AimBatch:
    """`solve_aim` for each of `targets` (m, 3) (frames of a shot), vectorised over them; each
    result equals that target's `solve_aim`."""
    axis = axis_vector(aim_axis)
    if chain.frames is None:
        raise ValueError("an aim chain needs bone frames (the axis is in the tip bone's frame)")
    targets = _targets(targets)
    tol = as_real(tolerance, "tolerance")
    if not tol > 0.0:
        raise ValueError(f"tolerance must be a positive angle (radians), got {tolerance!r}")
    if isinstance(max_iterations, bool) or not isinstance(max_iterations, (int, np.integer)) or max_iterations < 1:
        raise ValueError(f"max_iterations must be an integer >= 1, got {max_iterations!r}")
    shares = aim_shares(chain, aim_spread, movable)
    return _run(chain, targets, axis, shares, tol, int(max_iterations))


def aim_after_reach(
    skeleton: Skeleton,
    local: np.ndarray,
    aim_bones: list[int],
    reach_bones: list[int],
    target: object,
    aim_axis: str,
    **options: object,
) -> tuple[np.ndarray, AimSolution]:
    """Steps 2-3 of the tree rule (module docstring): the aim pass on a `solvers.Skeleton`'s
    pose `local` (n, 4; the reach solve's output) over `aim_bones` (a serial chain, root first,
    each the parent of the next), turning only `free_bones`. Returns (the whole skeleton's local
    rotations with the aim chain's replaced, the aim solution); `options` as `solve_aim`'s."""
    local = np.asarray(local, dtype=float)
    bones = [int(b) for b in aim_bones]
    if not bones or any(skeleton.parents[b] != a for a, b in zip(bones, bones[1:], strict=False)):
        raise ValueError(f"aim_bones must be a serial chain, each the parent of the next, got {aim_bones!r}")
    frames, heads, ends = skeleton.forward(local)
    top = skeleton.parents[bones[0]]
    chain = Chain(
        np.vstack((heads[bones], ends[bones[-1]])),
        frames[bones],
        limits=None if skeleton.limits is None else skeleton.limits.subset(bones),
        reference=skeleton.reference[bones],
        base_frame=skeleton.base_frame if top == -1 else frames[top],
    )
    free = free_bones(skeleton.parents, bones, list(reach_bones))
    solution = solve_aim(chain, target, aim_axis, movable=free, **options)
    # Only the bones the aim turned take its locals: the others keep the skeleton's own bits.
    turned = np.flatnonzero(np.any(solution.locals != chain.input_locals, axis=1))
    out = local.copy()
    out[[bones[k] for k in turned]] = solution.locals[turned]
    return out, solution


# --------------------------------------------------------------------------- the passes


def _movable(movable: object, n: int) -> np.ndarray:
    if movable is None:
        return np.ones(n, dtype=bool)
    free = np.asarray(movable)
    if free.shape != (n,) or free.dtype != bool:
        raise ValueError(f"movable must be {n} bools (one per bone), got {movable!r}")
    return free


def _targets(targets: object) -> np.ndarray:
    try:
        t = np.array(targets, dtype=float)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"aim targets must be an (m, 3) array of numbers: {exc}") from exc
    if t.ndim != 2 or t.shape[1] != 3 or t.shape[0] < 1:
        raise ValueError(f"aim targets must have shape (m, 3), got {t.shape}")
    bad = ~np.all(np.isfinite(t), axis=1)
    if np.any(bad):
        raise ValueError(f"aim target {int(np.flatnonzero(bad)[0])} is not finite")
    return t


class _Pose:
    """Poses of m targets: locals, world frames, joint points, world turns since the input."""

    def __init__(self, chain: Chain, m: int) -> None:
        n = chain.n_bones
        self.chain = chain
        self.local = np.array(np.broadcast_to(chain.input_locals, (m, n, 4)))
        self.frames = np.array(np.broadcast_to(chain.frames, (m, n, 4)))
        self.points = np.array(np.broadcast_to(chain.points, (m, n + 1, 3)))
        self.rotations = np.zeros((m, n, 4))
        self.rotations[..., 0] = 1.0

    def rest(self, rows: np.ndarray, j: int) -> np.ndarray:
        """Bone j's rest frame (parent's frame x reference) for `rows`."""
        parent = self.frames[rows, j - 1] if j > 0 else np.broadcast_to(self.chain.base_frame, (rows.size, 4))
        return quat.multiply(parent, self.chain.reference[j])

    def take(self, rows: np.ndarray) -> tuple:
        """A copy of `rows`' poses (for `put`)."""
        return self.local[rows], self.frames[rows], self.points[rows], self.rotations[rows]

    def put(self, rows: np.ndarray, saved: tuple) -> None:
        """Give `rows` the poses `saved` (`take`'s, indexed alike)."""
        self.local[rows], self.frames[rows], self.points[rows], self.rotations[rows] = saved

    def turn(self, rows: np.ndarray, j: int, local: np.ndarray, rest: np.ndarray | None = None) -> None:
        """Give bone j the local rotation `local` in `rows` (`rest`: its rest frame there, if at
        hand): it and its descendants turn rigidly about its head (their own locals unchanged),
        the points below it follow."""
        chain = self.chain
        old = self.frames[rows, j]
        new = quat.normalize(quat.multiply(self.rest(rows, j) if rest is None else rest, local))
        spin = quat.multiply(new, quat.conjugate(old))[:, None]
        self.local[rows, j] = local
        self.frames[rows, j:] = quat.normalize(quat.multiply(spin, self.frames[rows, j:]))
        self.rotations[rows, j:] = quat.normalize(quat.multiply(spin, self.rotations[rows, j:]))
        links = quat.rotate(self.frames[rows, j:], chain.link_local[j:]) * chain.lengths[j:, None]
        self.points[rows, j + 1 :] = self.points[rows, j, None] + np.cumsum(links, axis=1)


def _aim_state(pose: _Pose, rows: np.ndarray, axis: np.ndarray, targets: np.ndarray):
    """(world aim axis (r, 3), head-to-target (r, 3), its length (r,), angle (r,))."""
    n = pose.chain.n_bones
    a = quat.rotate(pose.frames[rows, n - 1], np.broadcast_to(axis, (rows.size, 3)))
    d = targets[rows] - pose.points[rows, n - 1]
    dist = quat.norm(d)
    angle = np.arctan2(quat.norm(quat.cross(a, d)), np.sum(a * d, axis=-1))
    return a, d, dist, angle


def _pass(pose: _Pose, rows: np.ndarray, axis, side, targets, shares, blocked) -> None:
    """One root-to-tip pass over `rows`: bone j turns g = f_j / (f_j + the shares of the later
    bones not `blocked`) of the remaining angle; `blocked` (m, n): bones their limits stopped
    last time (their share goes to the bones before them), updated here."""
    chain = pose.chain
    n = chain.n_bones
    limited = chain.limits is not None
    for j in range(n):
        if shares[j] == 0.0:
            continue
        # (The free later shares summed, not all minus the blocked: no cancellation, g <= 1.)
        later = ~blocked[rows, j + 1 :] @ shares[j + 1 :] if limited else shares[j + 1 :].sum()
        g = np.minimum(shares[j] / (shares[j] + later), 1.0)
        a, d, dist, before = _aim_state(pose, rows, axis, targets)
        d = np.where((dist > AT_HEAD * chain.total_length)[:, None], d, a)
        # Past a half turn the swing's axis is the tip bone's own `side` axis (a head looking
        # behind turns about its Y, up the neck: a yaw), made perpendicular to the aim axis.
        fallback = quat.rotate(pose.frames[rows, n - 1], np.broadcast_to(side, (rows.size, 3)))
        spin = quat.swing(a, quat.normalize(d), fallback)
        if np.any(g != 1.0):
            spin = quat.from_rotation_vector(np.reshape(g, (-1, 1)) * quat.to_rotation_vector(spin))
        rest = pose.rest(rows, j)
        wanted = quat.multiply(quat.multiply(quat.conjugate(rest), spin), pose.frames[rows, j])
        if not limited:
            pose.turn(rows, j, wanted, rest)
            continue
        local = clamp(chain.limits, j, wanted)
        blocked[rows, j] = quat.angle(quat.multiply(local, quat.conjugate(wanted))) > 1e-12
        saved = pose.take(rows)
        pose.turn(rows, j, local, rest)
        # A clamped turn that leaves the ray farther off is taken back.
        worse = (_aim_state(pose, rows, axis, targets)[3] > before + STALL) & blocked[rows, j]
        if np.any(worse):
            pose.put(rows[worse], tuple(x[worse] for x in saved))


def _run(chain: Chain, targets: np.ndarray, axis: np.ndarray, shares: np.ndarray, tol: float, cap: int) -> AimBatch:
    m, n = targets.shape[0], chain.n_bones
    pose = _Pose(chain, m)
    everyone = np.arange(m)
    if chain.limits is not None:
        # Start from the input pose clamped into the limits (as every solver does), turning
        # only bones found outside them.
        inside = clamp(chain.limits, np.arange(n), chain.input_locals)
        outside = quat.angle(quat.multiply(inside, quat.conjugate(chain.input_locals))) > 1e-12
        for j in np.flatnonzero(outside):
            pose.turn(everyone, int(j), np.broadcast_to(inside[j], (m, 4)))
    blocked = np.zeros((m, n), dtype=bool)
    side = np.array([1.0, 0.0, 0.0]) if abs(axis[1]) == 1.0 else np.array([0.0, 1.0, 0.0])
    _, _, dist, angle = _aim_state(pose, everyone, axis, targets)
    at_head = dist <= AT_HEAD * chain.total_length
    reasons = np.full(m, "", dtype=object)
    reasons[at_head] = AT_TIP_HEAD
    angle[at_head] = np.nan
    iterations = np.zeros(m, dtype=np.int64)
    active = ~at_head & (angle > tol)
    if not np.any(shares > 0.0):
        reasons[active] = NOT_FREE
        active[:] = False
    for _ in range(cap):
        rows = np.flatnonzero(active)
        if rows.size == 0:
            break
        saved = pose.take(rows)
        _pass(pose, rows, axis, side, targets, shares, blocked)
        iterations[rows] += 1
        _, _, dist, now = _aim_state(pose, rows, axis, targets)
        # A pass that ends farther off (the ray swung past a target too near the bones that
        # turned) is taken back: the pose returned is the best one found.
        worse = now > angle[rows] + STALL
        if np.any(worse):
            pose.put(rows[worse], tuple(x[worse] for x in saved))
            now, dist = np.where(worse, angle[rows], now), np.where(worse, np.inf, dist)
        head = dist <= AT_HEAD * chain.total_length
        stalled = ~head & (now > tol) & (angle[rows] - now <= np.maximum(STALL, 1e-9 * angle[rows]))
        angle[rows] = np.where(head, np.nan, now)
        reasons[rows[head]] = AT_TIP_HEAD
        reasons[rows[stalled]] = BLOCKED if chain.limits is not None else STALLED
        active[rows] = ~head & ~stalled & (now > tol)
    reasons[active] = CAPPED
    reached = angle <= tol  # NaN compares False
    return AimBatch(pose.points, pose.rotations, pose.local, angle, reached, iterations, tuple(str(r) for r in reasons))
