"""Goals beyond the tip position: a pole target and the tip bone's orientation.

Pole (Blender's convention, intern/iksolver `ConstrainPoleVector`): before
solving, the chain's input pose turns rigidly about its root so that its
root-to-tip direction points at the target and the root bone's "up" vector,
X cos(pole_angle) + Z sin(pole_angle) of its frame, points toward the pole
(both taken perpendicular to the root-target line); the position solve starts
from that pre-turned pose, as Blender's does, so a free (non-hinge) elbow
bends where Blender's bends. After solving, the same turn is made exact on
the solved chain (Blender stops at the pre-turn). A rigid turn about the root
keeps every joint angle and the reach. With the pole on the root-target line
the side is undefined; within POLE_FADE of that line (as a fraction of the
pole's distance) the wanted side blends toward the root bone's rest side (see
pole_spin), so a pole or target moving across the line never flips the chain.

Orientation (Blender's "Rotation" option): the tip bone is turned toward the
target's orientation with a weight (slerp from the orientation a position-only
solve leaves it in; at weight 1 the target's own, so that solve is skipped);
the rest of the chain then reaches the point where that bone's head must be.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import replace

import numpy as np

from .. import quat
from ..model.chain import Chain, as_real
from ..model.result import BatchSolution
from . import constrained

POLE_FADE = 0.1

Solver = Callable[[Chain, np.ndarray], BatchSolution]


class Goals:
    """Validated goals: `pole` (m, 3) or None, `pole_angle`, `rotation` (m, 4) unit target
    orientations in the chain's space or None, `rotation_weight`. One target given as plain
    numbers keeps them as float tuples (`rows`, what the float kernels read); its arrays are
    built from those on first use (a one-target solve through the float kernels needs none)."""

    __slots__ = ("pole_angle", "rotation_weight", "rows", "_pole", "_rotation")

    def __init__(
        self,
        pole: np.ndarray | None,
        pole_angle: float,
        rotation: np.ndarray | None,
        rotation_weight: float,
        rows: tuple | None = None,
    ) -> None:
        self._pole, self.pole_angle, self._rotation, self.rotation_weight = pole, pole_angle, rotation, rotation_weight
        self.rows = rows  # (pole, rotation) as float tuples (each or None), or None: read the arrays

    @property
    def pole(self) -> np.ndarray | None:
        if self._pole is None and self.rows is not None and self.rows[0] is not None:
            self._pole = np.array([self.rows[0]])
        return self._pole

    @property
    def rotation(self) -> np.ndarray | None:
        if self._rotation is None and self.rows is not None and self.rows[1] is not None:
            self._rotation = np.array([self.rows[1]])
        return self._rotation

    def one(self) -> tuple:
        """(pole, rotation) of a one-target solve as float tuples (each or None)."""
        if self.rows is not None:
            return self.rows
        pole, rotation = self.pole, self.rotation
        return (
            None if pole is None else tuple(pole[0].tolist()),
            None if rotation is None else tuple(rotation[0].tolist()),
        )


def read_goals(
    chain: Chain, m: int, pole: object, pole_angle: object, target_rotation: object, rotation_weight: object
) -> Goals | None:
    """Validated goals for m targets, or None when there are none."""
    angle = as_real(pole_angle, "pole_angle")
    weight = as_real(rotation_weight, "rotation_weight")
    if not 0.0 <= weight <= 1.0:
        raise ValueError(f"rotation_weight must be within 0..1, got {rotation_weight!r}")
    if pole is None and (target_rotation is None or weight == 0.0):
        return None
    if chain.frames is None:
        raise ValueError("a pole target or a target rotation needs bone frames (Chain(..., frames=...))")
    poles = pole_row = None
    if pole is not None:
        pole_row = _row(pole, m, 3)
        if pole_row is None:
            poles = _rows(pole, m, 3, "pole")
    rotations = rotation_row = None
    if target_rotation is not None and weight > 0.0:
        row = _row(target_rotation, m, 4)
        if row is not None:  # one solve: plain floats (numpy's reductions cost more than the check)
            w, x, y, z = row
            norms = math.sqrt(w * w + x * x + y * y + z * z)
            if not abs(norms - 1.0) <= 1e-6:
                raise ValueError("target_rotation must be unit quaternions (w, x, y, z)")
            rotation_row = (w / norms, x / norms, y / norms, z / norms)
        else:
            rotations = _rows(target_rotation, m, 4, "target_rotation")
            norms = quat.norm(rotations)[:, None]
            if np.any(np.abs(norms - 1.0) > 1e-6):
                raise ValueError("target_rotation must be unit quaternions (w, x, y, z)")
            rotations = rotations / norms
    rows = None
    if (pole is None or pole_row is not None) and (rotations is None):
        rows = (pole_row, rotation_row)  # every goal given as plain numbers: the arrays wait
    elif pole_row is not None or rotation_row is not None:
        poles = np.array([pole_row]) if pole_row is not None else poles
        rotations = np.array([rotation_row]) if rotation_row is not None else rotations
    return Goals(poles, angle, rotations, weight, rows)


def _row(value: object, m: int, width: int) -> tuple | None:
    """One solve's goal given as plain finite numbers, as floats (numpy's checks cost more than
    the goal itself); None for anything else (`_rows` reads and checks it)."""
    if m == 1 and isinstance(value, (tuple, list)) and len(value) == width:
        try:
            row = tuple([float(x) for x in value])
        except (TypeError, ValueError):
            return None
        if all(map(math.isfinite, row)):
            return row
    return None


def _rows(value: object, m: int, width: int, what: str) -> np.ndarray:
    try:
        arr = np.asarray(value, dtype=float)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{what} must be numbers: {exc}") from exc
    if arr.shape == (width,):
        arr = np.broadcast_to(arr, (m, width))
    if arr.shape != (m, width):
        raise ValueError(f"{what} must have shape ({width},) or ({m}, {width}), got {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{what} is not finite")
    return np.array(arr)


def solve_with_goals(chain: Chain, targets: np.ndarray, goals: Goals, plain: Solver, tolerance: float) -> BatchSolution:
    """`plain(chain, targets)` solves positions; the goals are added around it."""
    if goals.rotation is None:
        return _posed(chain, targets, goals, plain, tolerance)
    return _with_rotation(chain, targets, goals, plain, tolerance)


def _posed(chain: Chain, targets: np.ndarray, goals: Goals, plain: Solver, tolerance: float) -> BatchSolution:
    """The position solve with the pole: from the input pose pre-turned toward the pole, then the
    turn made exact on the solved chain (module doc)."""
    if goals.pole is None:
        return plain(chain, targets)
    if chain.limits is not None and (chain.limits.active[0] or chain.limits.stiffness[0].any()):
        # Limits on the root: turning the chain changes the root's own rotation, which they bound.
        # Limits below a free root turn along with it (they are relative to the parent bone), so
        # the solvers stay rotation-equivariant and the one batch below serves (measured: the
        # same points to 2e-15 on a hinge knee, every method).
        return _posed_limited(chain, targets, goals, plain, tolerance)
    m, root = len(targets), chain.root
    c, s = math.cos(goals.pole_angle), math.sin(goals.pole_angle)
    start, start_ok = _chain_frame(root, np.broadcast_to(chain.points[-1], (m, 3)), chain.frames[:1], c, s)
    goal, goal_ok = _goal_frame(chain, targets, goals.pole, c, s, -start[:, 2])
    turn = _between(goal, goal_ok, start, start_ok)
    # Turning the chain by T toward t is solving the unturned chain toward T^-1 t, then turning
    # the result by T (the solvers are rotation-equivariant; bone frames turn along). There the
    # post-turn P takes the solved chain's look-at frame back onto the start's, which T took onto
    # the goal's: T P is the whole turn. With look-at rows S, G, V (start, goal, solved), T = G^T S
    # and P = S^T V, so T P = G^T V; a missing G or V stands in as S (its turn the identity).
    sol = plain(chain, root + quat.rotate(quat.conjugate(turn), targets - root))
    solved, solved_ok = _chain_frame(root, sol.points[:, -1], quat.multiply(sol.rotations[:, 0], chain.frames[0]), c, s)
    goal = np.where(goal_ok[:, None, None], goal, start)
    solved = np.where(solved_ok[:, None, None], solved, start)
    total = _between(goal, start_ok, solved, start_ok)
    return _turn_solution(chain, sol, total, targets, tolerance)


def _posed_limited(chain: Chain, targets: np.ndarray, goals: Goals, plain: Solver, tolerance: float) -> BatchSolution:
    """`_posed` on a chain with joint limits. The limits stay in the rest pose's frame, which does
    not turn: each target from its own pre-turned chain, every turn kept within the root's limits."""
    m, root = len(targets), chain.root
    identity = np.broadcast_to([1.0, 0.0, 0.0, 0.0], (m, 4))
    input_tips = np.broadcast_to(chain.points[-1], (m, 3))
    turn = pole_spin(chain, input_tips, np.broadcast_to(chain.frames[0], (m, 4)), targets, goals.pole, goals.pole_angle)
    turn = _allowed_spin(chain, identity, turn)
    sol = _stack([plain(_turned(chain, turn[k]), targets[k : k + 1]) for k in range(m)], turn)
    tips = root + quat.rotate(turn, sol.points[:, -1] - root)
    root_frames = quat.multiply(quat.multiply(turn, sol.rotations[:, 0]), chain.frames[0])
    spin = pole_spin(chain, tips, root_frames, targets, goals.pole, goals.pole_angle)
    total = _allowed_spin(chain, sol.rotations[:, 0], quat.normalize(quat.multiply(spin, turn)))
    return _turn_solution(chain, sol, total, targets, tolerance)


def _turn_solution(
    chain: Chain, sol: BatchSolution, total: np.ndarray, targets: np.ndarray, tolerance: float
) -> BatchSolution:
    """`sol` turned rigidly about the root by `total` (m, 4)."""
    root = chain.root
    points = root + quat.rotate(total[:, None, :], sol.points - root)
    rotations = quat.multiply(total[:, None, :], sol.rotations)
    error = quat.norm(points[:, -1] - targets)
    return replace(sol, points=points, rotations=rotations, error=error, reached=error <= tolerance)


def _turned(chain: Chain, turn: np.ndarray) -> Chain:
    """The chain's input pose turned rigidly about its root by `turn` (4,); same rest pose and limits."""
    points = chain.root + quat.rotate(turn, chain.points - chain.root)
    frames = quat.normalize(quat.multiply(turn, chain.frames))
    return Chain(
        points, frames, limits=chain.limits, reference=chain.reference, base_frame=chain.base_frame, radii=chain.radii
    )


def _stack(solutions: list[BatchSolution], turn: np.ndarray) -> BatchSolution:
    """One-target solutions of turned chains (`_turned`), as one solution of the unturned chain:
    points and rotations turned back by `turn` (m, 4)."""
    first = solutions[0]
    back = quat.conjugate(turn)
    root = first.points[0, 0]
    points = np.concatenate([s.points for s in solutions])
    rotations = quat.multiply(np.concatenate([s.rotations for s in solutions]), turn[:, None, :])
    return replace(
        first,
        points=root + quat.rotate(back[:, None, :], points - root),
        rotations=quat.multiply(back[:, None, :], rotations),
        iterations=np.concatenate([s.iterations for s in solutions]),
        error=np.concatenate([s.error for s in solutions]),
        reached=np.concatenate([s.reached for s in solutions]),
    )


def pole_spin(
    chain: Chain, tips: np.ndarray, root_frames: np.ndarray, targets: np.ndarray, poles: np.ndarray, pole_angle: float
) -> np.ndarray:
    """The rigid turn (m, 4) about the root that satisfies the pole (module doc), for chains
    reaching `tips` (m, 3) with root bone frames `root_frames` (m, 4)."""
    c, s = math.cos(pole_angle), math.sin(pole_angle)
    chain_rows, chain_ok = _chain_frame(chain.root, tips, root_frames, c, s)
    goal_rows, goal_ok = _goal_frame(chain, targets, poles, c, s, -chain_rows[:, 2])
    return _between(goal_rows, goal_ok, chain_rows, chain_ok)


def _chain_frame(root: np.ndarray, tips: np.ndarray, root_frames: np.ndarray, c: float, s: float):
    """(look-at rows (m, 3, 3) of the root-tip line with the root bone's up, where they exist: the
    up is not along the line)."""
    direction = quat.normalize(tips - root)
    up = _up(root_frames, c, s)
    return _look_at(direction, up), quat.norm(quat.cross(direction, up)) > 1e-9


def _goal_frame(chain: Chain, targets: np.ndarray, poles: np.ndarray, c: float, s: float, direction: np.ndarray):
    """(look-at rows (m, 3, 3) of the root-target line (`direction` where the target is at the
    root) with the wanted side, where a side is wanted).

    Near the root-target line the pole's side is undefined and flips as the
    pole (or target) crosses it. There the wanted up direction turns, with
    the pole's distance from the line, toward a fixed one: the root bone's
    rest up (its reference pose; the input pose for chains without one). It
    does not depend on the pose being solved from, so the chain turns
    smoothly instead of flipping."""
    root = chain.root
    goal_dir = quat.normalize(targets - root)
    goal_dir = np.where(quat.norm(goal_dir)[:, None] > 0.0, goal_dir, direction)
    rest = quat.multiply(chain.base_frame, chain.reference[0])
    rest_up = _side(goal_dir, _up(rest[None], c, s))
    to_pole = poles - root
    pole_side = _side(goal_dir, to_pole)
    # How far the pole is off the root-target line, relative to its distance.
    off_line = quat.norm(quat.cross(goal_dir, to_pole)) / np.maximum(quat.norm(to_pole), 1e-300)
    weight = np.clip(off_line / POLE_FADE, 0.0, 1.0)
    weight = weight * weight * (3.0 - 2.0 * weight)
    # Blend the two sides as vectors, not as angles: an angle blend jumps
    # wherever pole_side passes opposite rest_up (a whole curve of poles), a
    # vector blend only where both are opposite *and* the weight is one half.
    wanted = weight[:, None] * pole_side + (1.0 - weight)[:, None] * rest_up
    return _look_at(goal_dir, wanted), quat.norm(wanted) > 1e-9


def _between(a: np.ndarray, a_ok: np.ndarray, b: np.ndarray, b_ok: np.ndarray) -> np.ndarray:
    """The rotations (m, 4) taking look-at rows `b` onto `a` (Blender's polemat^T mat); none
    (the identity) where either does not exist."""
    turn = quat.from_matrix(np.einsum("mki,mkj->mij", a, b))
    return np.where((a_ok & b_ok)[:, None], turn, np.array([1.0, 0.0, 0.0, 0.0]))


def _up(frame: np.ndarray, c: float, s: float) -> np.ndarray:
    """X cos(angle) + Z sin(angle) of frames (m, 4): the matrix's first and last columns."""
    w, x, y, z = np.moveaxis(frame, -1, 0)
    x_axis = np.stack((1.0 - 2.0 * (y * y + z * z), 2.0 * (x * y + w * z), 2.0 * (x * z - w * y)), axis=-1)
    z_axis = np.stack((2.0 * (x * z + w * y), 2.0 * (y * z - w * x), 1.0 - 2.0 * (x * x + y * y)), axis=-1)
    return c * x_axis + s * z_axis


def _side(direction: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Unit part of v perpendicular to unit `direction` (zero where v is along it)."""
    perp = v - np.sum(v * direction, axis=1, keepdims=True) * direction
    n = quat.norm(perp)
    return np.where(
        n[:, None] > 1e-12 * np.maximum(quat.norm(v), 1e-300)[:, None], perp / np.maximum(n, 1e-300)[:, None], 0.0
    )


def _look_at(direction: np.ndarray, up: np.ndarray) -> np.ndarray:
    """Rows: side = dir x up, up' = side x dir, -dir (as Blender's solver)."""
    side = quat.normalize(quat.cross(direction, up))
    return np.stack((side, quat.cross(side, direction), -direction), axis=1)


def _allowed_spin(chain: Chain, root_rotation: np.ndarray, spin: np.ndarray) -> np.ndarray:
    """The spin, with the root bone's resulting local rotation kept in its limits."""
    frame = quat.multiply(quat.multiply(spin, root_rotation), chain.frames[0])
    rest = quat.multiply(chain.base_frame, chain.reference[0])
    local = quat.multiply(quat.conjugate(rest), frame)
    allowed = quat.multiply(rest, constrained.clamp_local(chain, 0, local))
    solved = quat.multiply(root_rotation, chain.frames[0])
    return quat.normalize(quat.multiply(allowed, quat.conjugate(solved)))


def _with_rotation(chain: Chain, targets: np.ndarray, goals: Goals, plain: Solver, tolerance: float) -> BatchSolution:
    n = chain.n_bones
    first = None
    if goals.rotation_weight == 1.0:  # the target's orientation whatever the free one: no free solve
        wanted = quat.normalize(goals.rotation)
    else:
        first = _posed(chain, targets, goals, plain, tolerance)
        free = quat.multiply(first.rotations[:, -1], chain.frames[-1])
        wanted = quat.normalize(_slerp(free, goals.rotation, goals.rotation_weight))
    link = np.broadcast_to(quat.rotate(quat.conjugate(chain.frames[-1]), chain.directions[-1]), targets.shape)
    if n == 1:  # one bone: it can only turn, so the orientation wins (the plain solve: the iterations)
        if first is None:
            first = _posed(chain, targets, goals, plain, tolerance)
        parent, sub_points, iterations = None, np.broadcast_to(chain.points[:1], (len(targets), 1, 3)), first.iterations
        sub_rotations = np.zeros((len(targets), 0, 4))
        template = first
    else:
        wrist = targets - chain.lengths[-1] * quat.rotate(wanted, link)
        head = _head(chain)
        sub = _posed(head, wrist, goals, plain, tolerance)
        parent = quat.multiply(sub.rotations[:, -1], chain.frames[-2])
        sub_points, sub_rotations, iterations = sub.points, sub.rotations, sub.iterations
        if first is not None:
            iterations = first.iterations + iterations
        template = sub
    tip_frame = _clamp_tip(chain, parent, wanted)
    tip = sub_points[:, -1] + chain.lengths[-1] * quat.rotate(tip_frame, link)
    points = np.concatenate((sub_points, tip[:, None]), axis=1)
    tip_rotation = quat.multiply(tip_frame, quat.conjugate(chain.frames[-1]))
    rotations = np.concatenate((sub_rotations, tip_rotation[:, None]), axis=1)
    error = quat.norm(points[:, -1] - targets)
    return replace(
        template, points=points, rotations=rotations, error=error, reached=error <= tolerance, iterations=iterations
    )


def _clamp_tip(chain: Chain, parent: np.ndarray | None, frame: np.ndarray) -> np.ndarray:
    """The tip bone's frame, kept within its limits under `parent`'s frame."""
    if chain.limits is None:
        return frame
    n = chain.n_bones
    if parent is None:
        parent = np.broadcast_to(chain.base_frame, frame.shape)
    rest = quat.multiply(parent, chain.reference[n - 1])
    local = constrained.clamp_local(chain, n - 1, quat.multiply(quat.conjugate(rest), frame))
    return quat.multiply(rest, local)


def _head(chain: Chain) -> Chain:
    """The chain without its tip bone (same pose, frames, limits)."""
    n = chain.n_bones
    limits = None
    if chain.limits is not None:
        lim = chain.limits
        limits = replace(
            lim,
            lock=lim.lock[:-1],
            use_limit=lim.use_limit[:-1],
            minimum=lim.minimum[:-1],
            maximum=lim.maximum[:-1],
            cone=lim.cone[:-1],
            stiffness=lim.stiffness[:-1],
        )
    return Chain(
        chain.points[:n],
        chain.frames[: n - 1],
        limits=limits,
        reference=chain.reference[: n - 1],
        base_frame=chain.base_frame,
        radii=None if chain.radii is None else chain.radii[: n - 1],
    )


def _slerp(a: np.ndarray, b: np.ndarray, t: float) -> np.ndarray:
    """Spherical interpolation from a to b (shortest way) by t."""
    dot = np.sum(a * b, axis=-1, keepdims=True)
    b = np.where(dot < 0.0, -b, b)
    delta = quat.multiply(b, quat.conjugate(a))
    return quat.multiply(quat.from_rotation_vector(t * quat.to_rotation_vector(delta)), a)
