"""Triangulation for trees: several effectors on one skeleton, the upper joints still leading.

The paper solves one chain in one pass from the root; its future work asks for "several end
effectors". Here the tree is cut into segments: a segment runs from a bone down to the next
bone that carries an effector or splits into branches that lead to effectors (a sub-base).
Segments are solved from the root down, each as a chain by the paper's pass (limits, poles and
tip rotations included) from its start's shape (below):

- a segment that ends on an effector's bone aims at that effector's goals;
- a segment that ends on a sub-base is given a whole frame for its last bone: first its lead,
  lead_share of the turn about its head that best faces the branches below (rigid, as they are:
  each one's chord from that head to its effector's bone end) to their goals (weighted, Horn's
  quaternion; the upper joints lead, as in the paper's chain), then the frame nearest that one
  from which every branch below can reach its effector at the branch's full length, and which
  the segment itself can carry (its base fixed, its bones' full length).
  That frame is a small least-squares problem on the reach excesses, each weighted by its
  effector's ranked weight (solvers.skeleton.ranked_weights: a higher priority level, pins
  first, counts LEVEL times the next), solved by Levenberg-Marquardt steps (6 unknowns: a turn
  about the last bone's head and a shift of that head, kept in the shell where the bones above
  it can carry it; 3 for a one-bone segment, which can only turn). An effector wanting its bone's whole frame (a pin)
  asks for that bone's head. The segment then triangulates to the frame (the last bone takes
  the orientation, the bones above reach its head), and the branches triangulate from where it
  put them.

So the trunk moves first, taking a share of the turn its branches need, and as far as they need
to reach; each branch then moves as the paper's chain does, but from its start's shape: where
the paper takes the rest of a segment at its full length (its triangle's side b, so every joint
below the first that bends ends straight), a segment takes the extent between the rest's inner
hole and b that changes the joint's angle to the target line and the next joint's bend least
(chain_floats.least_turn_span; a rest already straight stays straight: the paper's pose), and
where it turns less, a joint first turns the rest as it is with its chord onto the target line,
then bends (chain_floats.one_pass's `chords`). The total turn (the paper's cost, eq. 3) on the
metarig: docs/design.md, "Tree triangulation: turn and speed". A segment already at its goal then
stays and one near it moves little, so a bake continuing its last frame
(solvers.skeleton_sequence) keeps each frame's shape; with the paper's straight rests a start
within the tolerance was kept and one just beyond it snapped to them, a pop (17.6 degrees on a
forearm in bench/bench_smooth_bake.py's two hands). Under joint limits a segment takes the
paper's limited passes (no float kernel).

The full length is an upper bound of a branch's reach (limits, folds), so while an effector is
short another pass runs, up to `max_iterations` passes, in which that branch is taken to reach,
from where it starts, only as far as it got, until a pass changes no level's error; the pose
that ranks best (level by level, a level met within the tolerance counting 0; the input pose
included) is the one returned. Conflicting goals end at the weighted least-squares compromise of
the trunk, each branch reaching toward its goal.
"""

from __future__ import annotations

import math

import numpy as np

from .. import limits as joint_limits
from .. import quat
from ..common import chain_path
from ..common import float_solve as float_one
from ..common.goals import read_goals
from ..maths.floats import (
    IDENTITY,
    best_rotation,
    conjugate,
    from_rotation_vector,
    multiply,
    normalize4,
    rotate,
    scaled,
)
from ..model.chain import Chain, as_floats
from ..model.result import Solution
from ..skeleton import (
    Effector,
    Skeleton,
    SkeletonSolution,
    cached_rows,
    end_point,
    finish,
    forward,
    levels,
    moved_bones,
    ranked_weights,
    rows,
)
from .chain import CHAIN, shape_keeping_solver

# Levenberg-Marquardt steps per sub-base frame, and the least pull toward the current frame (per
# metre of shift and radian of turn, relative to the excesses' weight) that picks the nearest frame.
FIT_STEPS = 16
NEAREST = 1e-6
# A step is tried at most this often with more damping to lower the excesses (Nielsen's rule);
# one lowering them by less than SETTLED of themselves ends the fit.
HALVINGS = 12
SETTLED = 1e-6
LM_START = 1e-2  # the first damping, relative to the normal matrix's trace (x the lightest weight's share)
# Passes end when one changes no level's weighted squared error by more than this share of it.
SETTLE = 1e-4
# The sub-base's lead (lead_share of the turn facing its branches, _sub_base_frame), taken only
# where a branch's end is this many tolerances off its goal: a bake's frame
# continued from the last and stepped toward its goals (solvers.skeleton_sequence) needs none.
LEAD_FROM = 10.0


def lead_share(branches: int) -> float:
    """The share of the turn facing `branches` branches to their goals that their sub-base takes:
    k / (k + 1), the least-squares split of one turn t needed by all k between the sub-base (s)
    and each branch (t - s): s^2 + k (t - s)^2 is least there. Measured on the metarig (seed 11,
    60 poses: 0.35, 0.5, 0.65, 0.8 and this) within 2% of the best fixed share in every case."""
    return branches / (branches + 1.0)


def solve_tree(
    skeleton: Skeleton,
    local: np.ndarray,
    effectors: list[Effector],
    tolerance: float,
    max_iterations: int,
    options: dict,
) -> SkeletonSolution | str:
    """The registry's `tree` kernel for triangulation (see the module docstring)."""
    bones_of = [e.bone for e in effectors]  # one effector per bone (skeleton.merge_shared)
    plan = _segments(skeleton, effectors)
    by_bone = {e.bone: e for e in effectors}
    weight = dict(zip(bones_of, ranked_weights(effectors), strict=True))
    groups = levels(effectors)
    local = np.array(local, dtype=float)
    if skeleton.limits is not None:  # every pass, and the input as a candidate, within the limits
        moved = moved_bones(skeleton, bones_of)
        local[moved] = joint_limits.clamp(skeleton.limits, np.array(moved), local[moved])
    # Plain floats between the segments' solves (rows of the local rotations, world frames and
    # heads: solvers.skeleton's forward): numpy's per-call cost on a few bones was most of a pass.
    current = rows(local)
    goals_at = [tuple(e.position.tolist()) for e in effectors]
    frames, heads = forward(skeleton, current)
    best, passes = current[:], 0
    best_miss = miss = _misses(skeleton, frames, heads, bones_of, goals_at)
    best_cost = cost = _ranked(effectors, groups, miss, tolerance)
    if max(miss) <= tolerance:
        # Every goal met as it stands (a bake's frame continued from the last): no pass could rank
        # better than the input, which a pass would return.
        return finish(skeleton, np.array(best), effectors, tolerance, 0, "triangulation", error=np.array(miss))
    short = dict.fromkeys(by_bone, 0.0)  # per effector bone: what the last pass left it short
    while passes < max_iterations:
        passes += 1
        for bones, below in plan:
            chain = _chain(skeleton, bones, frames, heads)
            effector = by_bone.get(bones[-1])
            if effector is not None:
                goals = {"pole": effector.pole, "pole_angle": effector.pole_angle}
                if effector.orientation is not None and effector.rotation_weight > 0.0:
                    goals.update(target_rotation=effector.orientation, rotation_weight=effector.rotation_weight)
                sol = _triangulate(chain, effector.position, tolerance, options, **goals)
            else:
                under = [by_bone[b] for b in below]
                position, rotation = _sub_base_frame(skeleton, bones, frames, heads, under, short, weight, tolerance)
                sol = _triangulate(chain, position, tolerance, options, target_rotation=rotation)
            _set_locals(skeleton, current, bones, frames, sol.rows()[1], chain.frames.tolist())
            frames, heads = forward(skeleton, current, _below(skeleton, bones[0]), frames, heads)
        miss = _misses(skeleton, frames, heads, bones_of, goals_at)
        cost, last = _ranked(effectors, groups, miss, tolerance), cost
        if cost < best_cost:
            best, best_cost, best_miss = current[:], cost, miss
        if max(miss) <= tolerance:
            break
        if all(abs(a - b) <= SETTLE * a for a, b in zip(cost, last, strict=True)):
            break  # the pass changed nothing that counts: conflicting goals at their compromise
        short = {e.bone: (m if m > tolerance else 0.0) for e, m in zip(effectors, miss, strict=True)}
    # (the errors as measured on `best` by the same forward kinematics: finish's own, to the bit)
    return finish(skeleton, np.array(best), effectors, tolerance, passes, "triangulation", error=np.array(best_miss))


def _misses(skeleton: Skeleton, frames: list, heads: list, bones: list[int], goals: list[tuple]) -> list[float]:
    """Each effector's distance from its goal (plain floats)."""
    return [math.dist(end_point(skeleton, frames, heads, b), g) for b, g in zip(bones, goals, strict=True)]


def _kept(skeleton: Skeleton, name: str, key, compute):
    """`compute()` kept on `skeleton` (frozen) under `name` and `key`: a bake asks every frame."""
    cache = skeleton.__dict__.setdefault(name, {})
    value = cache.get(key)
    if value is None:
        value = cache[key] = compute()
    return value


def _below(skeleton: Skeleton, top: int) -> list[int]:
    """Ascending: `top` and every bone under it (the bones a segment's solve moves), kept per skeleton."""

    def compute() -> list[int]:
        parents = skeleton.parents
        inside = {top}
        for b in range(top + 1, skeleton.n_bones):
            if parents[b] in inside:
                inside.add(b)
        return sorted(inside)

    return _kept(skeleton, "_triangulation_below", top, compute)


def _triangulate(
    chain: Chain,
    target,
    tolerance: float,
    options: dict,
    pole=None,
    pole_angle: float = 0.0,
    target_rotation=None,
    rotation_weight: float = 1.0,
) -> Solution:
    """The segment `chain` triangulated to `target` and its goals by the paper's pass from its
    start's shape (chain.shape_keeping_solver; see the module docstring); under joint limits
    the paper's limited passes (the method's chain solve: the float kernels do not take limits)."""
    if float_one.reason(chain, options, None) is not None:
        return chain_path.solve(
            CHAIN, chain, target, tolerance, None, pole, pole_angle, target_rotation, rotation_weight, options
        )
    extra = read_goals(chain, 1, pole, pole_angle, target_rotation, rotation_weight)
    point = as_floats(target, "target")
    return float_one.solve(chain, point, "triangulation", tolerance, shape_keeping_solver(options), extra)


def _ranked(effectors: list[Effector], groups: list[list[int]], miss: list[float], tolerance: float) -> list[float]:
    """Per priority level, highest first, the weighted sum of squared errors (`miss`: each
    effector's distance from its goal; 0 where every goal of the level is met): lists compare as
    the levels rank, the first that differs decides."""
    out = []
    for group in groups:
        met = max(miss[k] for k in group) <= tolerance
        out.append(0.0 if met else sum(effectors[k].weight * miss[k] * miss[k] for k in group))
    return out


def _segments(skeleton: Skeleton, effectors: list[Effector]) -> list[tuple[list[int], list[int]]]:
    """[(segment bones root first, effector bones below its end)], parents' segments first; kept
    per skeleton and effector bones (a bake solves the same tree every frame)."""
    key = tuple(e.bone for e in effectors)
    return _kept(skeleton, "_triangulation_segments", key, lambda: _plan(skeleton, effectors))


def _plan(skeleton: Skeleton, effectors: list[Effector]) -> list[tuple[list[int], list[int]]]:
    """_segments' plan, computed."""
    moved = moved_bones(skeleton, [e.bone for e in effectors])  # ascending: parents first
    goal_bones = {e.bone for e in effectors}
    children: dict[int, list[int]] = {b: [] for b in moved}
    for b in moved:
        if skeleton.parents[b] != -1:
            children[skeleton.parents[b]].append(b)
    below: dict[int, list[int]] = {}
    for b in reversed(moved):  # children come after their parents
        below[b] = ([b] if b in goal_bones else []) + [g for c in children[b] for g in below[c]]
    plan = []
    starts = [b for b in moved if skeleton.parents[b] == -1]
    while starts:
        bones = [starts.pop(0)]
        while bones[-1] not in goal_bones and len(children[bones[-1]]) == 1:
            bones.append(children[bones[-1]][0])
        plan.append((bones, below[bones[-1]]))
        starts.extend(children[bones[-1]])
    return plan


def _chain(skeleton: Skeleton, bones: list[int], frames: list, heads: list) -> Chain:
    """The segment `bones` as a Chain from the current pose (joints at the heads, then the end;
    rows of floats: solvers.skeleton's forward)."""
    parent = skeleton.parents[bones[0]]
    points = [heads[b] for b in bones]
    points.append(end_point(skeleton, frames, heads, bones[-1]))
    return Chain.from_float_rows(
        points,
        [frames[b] for b in bones],
        limits=None if skeleton.limits is None else skeleton.limits.subset(bones),
        reference=[cached_rows(skeleton, "reference")[b] for b in bones],
        base_frame=tuple(skeleton.base_frame.tolist()) if parent == -1 else frames[parent],
    )


def _set_locals(skeleton: Skeleton, local: list, bones: list[int], frames: list, turns: list, start: list) -> None:
    """The segment's solved world frames (its solve's `turns` of its `start` frames) into `local`
    (rows; solving it does not move its parent)."""
    parent = skeleton.parents[bones[0]]
    first = tuple(skeleton.base_frame.tolist()) if parent == -1 else frames[parent]
    reference = cached_rows(skeleton, "reference")
    for i, turn, frame in zip(bones, turns, start, strict=True):
        solved = multiply(turn, frame)
        local[i] = multiply(conjugate(multiply(first, reference[i])), solved)
        first = solved


def _sub_base_frame(
    skeleton: Skeleton,
    bones: list[int],
    frames,
    heads,
    below: list[Effector],
    short: dict,
    weight: dict,
    tolerance: float,
):
    """(end position, world orientation) for the last bone of a segment ending on a sub-base:
    the nearest frame from which each effector below is within its branch's full length and
    which the segment can carry (see the module docstring), each branch's excess weighted by its
    effector's ranked weight (`weight`, by bone: a higher level, pins first, dominates). An
    effector wanting its bone's whole frame (rotation weight 1: a pin) asks for that bone's head,
    within the reach of the bones above it. Plain floats: a handful of 3-vectors per step, where
    numpy's per-call cost would be most of the time."""
    top = bones[-1]
    turns_only = len(bones) == 1
    # The frame turns about the last bone's head; a longer segment also moves that head, within
    # the reach of the bones above it, which carry it.
    pivot = tuple(heads[top])
    pairs = []  # (first head's offset from the pivot, goal, reach, sqrt weight) per effector below
    full = []
    for e in below:
        child = _child(skeleton, top, e.bone)
        first = heads[child]
        goal, reach = tuple(e.position), _reach_from(skeleton, child, e.bone)
        if e.orientation is not None and e.rotation_weight >= 1.0:
            end = skeleton.lengths[e.bone] * quat.rotate(e.orientation, skeleton.links[e.bone])
            goal, reach = tuple(e.position - end), reach - float(skeleton.lengths[e.bone])
        full.append(reach)
        if short[e.bone] > 0.0:
            # The last pass left this branch short: from where it starts now it reaches that
            # much less far than it had to, so the fit moves its start toward the goal.
            reach = max(min(reach, math.dist(goal, first) - short[e.bone]), 0.0)
        pairs.append((_sub(first, pivot), goal, reach, math.sqrt(weight[e.bone])))
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

    # The lead (the tree's upper joints lead, as a chain's do): the frame starts turned about its
    # head by lead_share of the turn that best faces the branches' chords (head to end point) to
    # their goals, unless that leaves them further beyond reach than the frame as it is.
    chords = [_sub(end_point(skeleton, frames, heads, e.bone), pivot) for e in below]
    wants = [_sub(tuple(e.position), pivot) for e in below]
    turn, shift = IDENTITY, (0.0, 0.0, 0.0)
    if any(math.dist(c, w) > LEAD_FROM * tolerance for c, w in zip(chords, wants, strict=True)):
        turn = scaled(best_rotation(chords, wants, [weight[e.bone] for e in below]), lead_share(len(below)))
    value = excess(turn, shift)
    if value > 0.0 and turn is not IDENTITY:
        still = excess(IDENTITY, shift)
        if still < value:
            turn, value = IDENTITY, still
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
    end = end_point(skeleton, frames, heads, top)
    position = _add(_add(pivot, shift), rotate(turn, _sub(end, pivot)))
    return np.array(position), np.array(multiply(turn, frames[top]))


def _damped_step(normal: list[list[float]], gradient: list[float], damping: float, size: float):
    """The Gauss-Newton step with a pull toward no change (turns measured at `size`), pulled
    harder where rounding beside heavy rows leaves the matrix singular; None if nothing serves."""
    n = len(gradient)
    while damping < 1e300:
        damped = [row[:] for row in normal]
        for i in range(n):
            damped[i][i] += damping * (size * size if i < 3 else 1.0)
        step = _solve_small(damped, gradient)
        if step is not None:
            return step
        damping *= 1e3
    return None


def _add(a: tuple, b: tuple) -> tuple:
    return (a[0] + b[0], a[1] + b[1], a[2] + b[2])


def _sub(a, b) -> tuple:
    return (a[0] - b[0], a[1] - b[1], a[2] - b[2])


def _cross(a: tuple, b: tuple) -> tuple:
    return (a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0])


def _child(skeleton: Skeleton, top: int, bone: int) -> int:
    """The child of `top` on the way down to `bone`, kept per skeleton (a bake asks every frame)."""

    def compute() -> int:
        path = skeleton.branch(bone)
        return path[path.index(top) + 1]

    return _kept(skeleton, "_triangulation_child", (top, bone), compute)


def _reach_from(skeleton: Skeleton, head_bone: int, bone: int) -> float:
    """Largest distance from `head_bone`'s head to `bone`'s end point (the rigid links between),
    kept per skeleton (a bake asks every frame)."""

    def compute() -> float:
        path = skeleton.branch(bone)
        path = path[path.index(head_bone) :]
        return float(sum(np.linalg.norm(skeleton.offsets[b]) for b in path[1:]) + skeleton.lengths[bone])

    return _kept(skeleton, "_triangulation_reach", (head_bone, bone), compute)


def _solve_small(a: list[list[float]], b: list[float]) -> list[float] | None:
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
