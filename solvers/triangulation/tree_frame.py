"""A sub-base's frame: where the last bone of a segment ending on a sub-base goes (tree.py).

Started from the lead (tree_lead), the frame nearest it from which every branch below can reach
its effector at the branch's full length, and which the segment itself can carry (its base fixed,
its bones' full length): a small least-squares problem on the reach excesses, each weighted by its
effector's ranked weight (solvers.skeleton.ranked_weights: a higher priority level, pins first,
counts LEVEL times the next), solved by Levenberg-Marquardt steps (6 unknowns: a turn about the
last bone's head and a shift of that head, kept in the shell where the bones above it can carry
it; 3 for a one-bone segment, which can only turn). An effector wanting its bone's whole frame (a
pin) asks for that bone's head. Plain floats: a handful of 3-vectors per step, where numpy's
per-call cost would be most of the time.
"""

from __future__ import annotations

import math

import numpy as np

from .. import quat
from ..maths.floats import IDENTITY, from_rotation_vector, multiply, normalize4, rotate
from ..skeleton import Effector, Skeleton
from ..skeleton_floats import end_point
from .tree_plan import child, kept, reach_from

# Levenberg-Marquardt steps per sub-base frame, and the least pull toward the current frame (per
# metre of shift and radian of turn, relative to the excesses' weight) that picks the nearest frame.
FIT_STEPS = 16
NEAREST = 1e-6
# A step is tried at most this often with more damping to lower the excesses (Nielsen's rule);
# one lowering them by less than SETTLED of themselves ends the fit.
HALVINGS = 12
SETTLED = 1e-6
LM_START = 1e-2  # the first damping, relative to the normal matrix's trace (x the lightest weight's share)


def sub_base_frame(
    skeleton: Skeleton,
    bones: list[int],
    frames,
    heads,
    below: list[Effector],
    short: dict,
    weight: dict,
    start: tuple | None,
) -> tuple[np.ndarray, np.ndarray] | None:
    """(end position, world orientation) for the last bone of a segment ending on a sub-base, or
    None where that is its frame as it is (the segment would stay): from `start` (the lead,
    tree_lead: a turn about the last bone's head and a shift of that head; None: the frame as it
    is), the nearest frame from which each effector below is within its branch's full length and
    which the segment can carry (see the module docstring), each branch's excess weighted by its
    effector's ranked weight (`weight`, by bone: a higher level, pins first, dominates). An
    effector wanting its bone's whole frame (rotation weight 1: a pin) asks for that bone's head,
    within the reach of the bones above it."""
    top = bones[-1]
    turns_only = len(bones) == 1
    # The frame turns about the last bone's head; a longer segment also moves that head, within
    # the reach of the bones above it, which carry it.
    pivot = tuple(heads[top])
    branches = _branches(skeleton, top, tuple(e.bone for e in below))
    if start is None and _stays(below, branches, heads, pivot, short):
        return None  # no lead and every branch within reach: the frame stays (a bake's usual frame)
    pairs = []  # (first head's offset from the pivot, goal, reach, then sqrt weight) per effector below
    full = []
    for e, (below_top, reach) in zip(below, branches, strict=True):
        first = heads[below_top]
        # (Python floats, not numpy's scalars: the same values, and arithmetic on them costs less)
        goal = tuple(e.position.tolist())
        if e.orientation is not None and e.rotation_weight >= 1.0:
            end = skeleton.lengths[e.bone] * quat.rotate(e.orientation, skeleton.links[e.bone])
            goal, reach = tuple((e.position - end).tolist()), reach - float(skeleton.lengths[e.bone])
        full.append(reach)
        if short[e.bone] > 0.0:
            # The last pass left this branch short: from where it starts now it reaches that
            # much less far than it had to, so the fit moves its start toward the goal.
            reach = max(min(reach, math.dist(goal, first) - short[e.bone]), 0.0)
        pairs.append((_sub(first, pivot), goal, reach))
    if start is None and all(math.dist(goal, pivot_plus) <= reach for pivot_plus, goal, reach in _heads(pairs, pivot)):
        return None  # no lead and every branch within reach: the frame stays (a bake's usual frame)
    # (the weights read only past that: tree.py works them out on first read)
    pairs = [(*pair, math.sqrt(weight[e.bone])) for pair, e in zip(pairs, below, strict=True)]
    base = tuple(heads[bones[0]])
    links = [math.dist(heads[a], heads[b]) for a, b in zip(bones, bones[1:], strict=False)]
    # The bones above the last one carry its head within [inner, upper] of the base (one bone: on
    # a sphere; a longer run cannot fold its longest link back closer than the others reach).
    upper = sum(links)
    inner = max(0.0, 2.0 * max(links, default=0.0) - upper)
    # The pull toward the current frame: relative to the lightest branch's weight (ranked weights
    # span levels), and a turn measured at the branches' size (never zero).
    lightest = min(p[3] for p in pairs) ** 2 / max(p[3] for p in pairs) ** 2
    size = max(sum(full) / len(full), max(float(skeleton.lengths[b]) for b in bones))
    unknowns = 3 if turns_only else 6

    def carried(shift: tuple) -> tuple:
        """`shift` moved the least so that the segment can carry the frame: the last bone's head
        within [inner, upper] of the base (a one-bone segment only turns: nothing to carry)."""
        if turns_only:
            return shift
        d = _sub(_add(pivot, shift), base)
        r = math.sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2])
        if inner <= r <= upper or r <= 0.0:
            return shift
        return _sub(_add(base, tuple(min(max(r, inner), upper) / r * c for c in d)), pivot)

    def excess(turn: tuple, shift: tuple) -> float:
        """The weighted sum of squared reach excesses of the branches below."""
        centre = _add(pivot, shift)
        total = 0.0
        for offset, goal, reach, w in pairs:
            dist = math.dist(goal, _add(centre, rotate(turn, offset)))
            if dist > reach:
                total += (w * (dist - reach)) ** 2
        return total

    # From the lead, unless that leaves the branches further beyond reach than the frame as it is.
    turn, shift = IDENTITY, (0.0, 0.0, 0.0)
    if start is not None:
        turn, shift = start[0], carried(start[1])
    value = excess(turn, shift)
    if value > 0.0 and start is not None:
        still = excess(IDENTITY, (0.0, 0.0, 0.0))
        if still < value:
            turn, shift, value = IDENTITY, (0.0, 0.0, 0.0), still
    lam, nu = None, 2.0  # Levenberg-Marquardt: the pull toward no change (relative to the normal matrix)
    for _ in range(FIT_STEPS):
        normal = [[0.0] * unknowns for _ in range(unknowns)]
        gradient = [0.0] * unknowns
        active = False
        centre = _add(pivot, shift)
        for offset, goal, reach, w in pairs:  # each first head within its branch's reach of its goal
            arm = rotate(turn, offset)
            d = _sub(goal, _add(centre, arm))
            dist = math.sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2])
            if dist <= reach:
                continue
            active = True
            u = (d[0] / dist, d[1] / dist, d[2] / dist)
            # d|goal - point| / d(turn, shift) = -u . (turn x arm + shift)
            c = _cross(arm, u)
            row = [-w * c[0], -w * c[1], -w * c[2], -w * u[0], -w * u[1], -w * u[2]][:unknowns]
            r = w * (dist - reach)
            for i in range(unknowns):
                gradient[i] += row[i] * r
                for j in range(i + 1):
                    normal[i][j] += row[i] * row[j]
        if not active:
            break
        for i in range(unknowns):
            for j in range(i):
                normal[j][i] = normal[i][j]
        trace = max(sum(normal[i][i] for i in range(unknowns)), 1e-300)
        if lam is None:
            lam = LM_START * max(lightest, 1e-12)
        system = normal
        if not turns_only:
            # On an edge of what the segment carries and pulled across it (the excesses' gradient
            # points out of the shell): a heavy row on the head's radial direction keeps the step
            # on that edge (the projection takes back the curve).
            out = _sub(_add(pivot, shift), base)
            r = math.sqrt(out[0] * out[0] + out[1] * out[1] + out[2] * out[2])
            outward = gradient[3] * out[0] + gradient[4] * out[1] + gradient[5] * out[2] < 0.0
            if r > 0.0 and (r >= upper * (1.0 - 1e-9) and outward or r <= inner * (1.0 + 1e-9) and not outward):
                system = [row[:] for row in normal]
                for i in range(3):
                    for j in range(3):
                        system[3 + i][3 + j] += 1e6 * trace * out[i] * out[j] / (r * r)
        for _ in range(HALVINGS):
            step = _damped_step(system, gradient, lam * trace, size)
            if step is None:
                break
            trial = normalize4(multiply(from_rotation_vector(-step[0], -step[1], -step[2]), turn))
            moved = shift if turns_only else carried((shift[0] - step[3], shift[1] - step[4], shift[2] - step[5]))
            lower = excess(trial, moved)
            if lower < value:
                # Nielsen's rule: the damping falls as far as the model predicted the drop well.
                predicted = 2.0 * sum(g * s for g, s in zip(gradient, step, strict=True)) - sum(
                    step[i] * normal[i][j] * step[j] for i in range(unknowns) for j in range(unknowns)
                )
                rho = (value - lower) / predicted if predicted > 0.0 else 0.0
                lam = max(lam * max(1.0 / 3.0, 1.0 - (2.0 * rho - 1.0) ** 3), NEAREST * max(lightest, 1e-12))
                nu = 2.0
                break
            lam *= nu  # a shorter, steeper step (the damping rises faster each time in a row)
            nu *= 2.0
        else:
            step = None
        if step is None or not lower < value:
            break  # no step lowers them: as near as the segment gets
        settled = value - lower <= SETTLED * value
        turn, shift, value = trial, moved, lower
        if settled:
            break
    if turn is IDENTITY and shift == (0.0, 0.0, 0.0):
        return None
    end = end_point(skeleton, frames, heads, top)
    position = _add(_add(pivot, shift), rotate(turn, _sub(end, pivot)))
    return np.array(position), np.array(multiply(turn, frames[top]))


def _stays(below: list[Effector], branches: list, heads, pivot: tuple, short: dict) -> bool:
    """sub_base_frame's "every branch within reach" with the frame as it is, where no branch wants
    its bone's frame or was left short (else False: the whole fit looks): each first head measured
    as the fit measures it (the pivot plus its offset), without building the fit's terms."""
    px, py, pz = pivot
    dist = math.dist
    for e, (below_top, reach) in zip(below, branches, strict=True):
        if e.orientation is not None and e.rotation_weight >= 1.0 or short[e.bone] > 0.0:
            return False
        fx, fy, fz = heads[below_top]
        if not dist(e.position.tolist(), (px + (fx - px), py + (fy - py), pz + (fz - pz))) <= reach:
            return False
    return True


def _branches(skeleton: Skeleton, top: int, bones: tuple[int, ...]) -> list[tuple[int, float]]:
    """Per effector bone below `top`: (the child of `top` on its way, the reach from that child's
    head to its end), kept per skeleton (tree_plan.kept: a bake asks every frame)."""
    return kept(skeleton, "_triangulation_branches", (top, bones), _branches_of, top, bones)


def _branches_of(skeleton: Skeleton, top: int, bones: tuple[int, ...]) -> list[tuple[int, float]]:
    return [(c, reach_from(skeleton, c, b)) for c, b in ((child(skeleton, top, b), b) for b in bones)]


def _damped_step(normal: list[list[float]], gradient: list[float], damping: float, size: float):
    """The Gauss-Newton step with a pull toward no change (turns measured at `size`), pulled
    harder where rounding beside heavy rows leaves the matrix singular; None if nothing serves."""
    n = len(gradient)
    while damping < 1e300:
        damped = [row[:] for row in normal]
        for i in range(n):
            damped[i][i] += damping * (size * size if i < 3 else 1.0)
        step = solve_small(damped, gradient)
        if step is not None:
            return step
        damping *= 1e3
    return None


def _heads(pairs: list, pivot: tuple):
    """(first head, goal, reach) of each branch with the frame as it is."""
    return ((_add(pivot, offset), goal, reach) for offset, goal, reach in pairs)


def _add(a: tuple, b: tuple) -> tuple:
    return (a[0] + b[0], a[1] + b[1], a[2] + b[2])


def _sub(a, b) -> tuple:
    return (a[0] - b[0], a[1] - b[1], a[2] - b[2])


def _cross(a: tuple, b: tuple) -> tuple:
    return (a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0])


def solve_small(a: list[list[float]], b: list[float]) -> list[float] | None:
    """x with a x = b for a small symmetric positive definite `a` (Cholesky on plain floats:
    np.linalg.solve costs more than the arithmetic at 3x3 and 6x6, and far more when a
    multi-threaded BLAS competes for the cores); None where `a` is not (numerically) positive
    definite."""
    n = len(b)
    low = [[0.0] * n for _ in range(n)]
    for i in range(n):
        li, ai = low[i], a[i]
        for j in range(i + 1):
            lj = low[j]
            total = ai[j]
            for k in range(j):
                total -= li[k] * lj[k]
            if i == j:
                if not total > 0.0:
                    return None
                li[i] = math.sqrt(total)
            else:
                li[j] = total / lj[j]
    y = [0.0] * n
    for i in range(n):
        li = low[i]
        total = b[i]
        for k in range(i):
            total -= li[k] * y[k]
        y[i] = total / li[i]
    x = [0.0] * n
    for i in reversed(range(n)):
        total = y[i]
        for k in range(i + 1, n):
            total -= low[k][i] * x[k]
        x[i] = total / low[i][i]
    return x
