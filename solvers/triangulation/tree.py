"""Triangulation for trees: several effectors on one skeleton, the upper joints still leading.

The paper solves one chain in one pass from the root; its future work asks for "several end
effectors". Here the tree is cut into segments: a segment runs from a bone down to the next
bone that carries an effector or splits into branches that lead to effectors (a sub-base).
Segments are solved from the root down, each as a chain by the paper's pass (`solvers.solve`:
limits, poles and tip rotations included):

- a segment that ends on an effector's bone aims at that effector's goals;
- a segment that ends on a sub-base is given a whole frame for its last bone: the one nearest
  its current frame from which every branch below can reach its effector at the branch's full
  length, and which the segment itself can carry (its base fixed, its bones' full length).
  That frame is a small least-squares problem (Gauss-Newton on the reach excesses, 6
  unknowns: a turn and a shift of the frame; 3 for a one-bone segment, which can only turn).
  The segment then triangulates to it (the last bone takes the orientation, the bones above
  reach its head), and the branches triangulate from where it put them.

So the trunk moves first, and exactly as far as its branches need; each branch then moves as
the paper's chain does. The full length is an upper bound of a branch's reach (limits, folds),
so while an effector is short another pass runs, up to `max_iterations` passes, in which that
branch is taken to reach, from where it starts, only as far as it got (the pose with the least
weighted squared error, the input pose included, is the one returned). Conflicting
goals end at the trunk's weighted least-squares compromise, each branch reaching toward its goal.
"""

from __future__ import annotations

import math

import numpy as np

from .. import quat
from ..chain import Chain
from ..kernels.floats import from_rotation_vector, multiply, normalize4, rotate
from ..skeleton import Effector, Skeleton, SkeletonSolution, finish
from ..tree import moved_bones

# Gauss-Newton steps per sub-base frame, and the pull toward the current frame (per metre of
# shift and radian of turn, relative to the excesses' weight) that picks the nearest frame.
FIT_STEPS = 8
NEAREST = 1e-6


def solve_tree(
    skeleton: Skeleton,
    local: np.ndarray,
    effectors: list[Effector],
    tolerance: float,
    max_iterations: int,
    options: dict,
) -> SkeletonSolution | str:
    """The registry's `tree` kernel for triangulation (see the module docstring)."""
    from ..api import solve

    if len({e.bone for e in effectors}) != len(effectors):
        return "two effectors on one bone"
    if any(e.priority != effectors[0].priority for e in effectors):
        return "effector priorities (triangulation weighs every effector alike; the Jacobian solves priorities)"
    plan = _segments(skeleton, effectors)
    by_bone = {e.bone: e for e in effectors}
    local = np.array(local, dtype=float)
    weights = np.array([e.weight for e in effectors])
    _, _, ends = skeleton.forward(local)
    best, passes = local.copy(), 0
    best_cost = float(weights @ np.linalg.norm([e.position - ends[e.bone] for e in effectors], axis=1) ** 2)
    short = dict.fromkeys(by_bone, 0.0)  # per effector bone: what the last pass left it short
    while passes < max_iterations:
        passes += 1
        frames, heads, ends = skeleton.forward(local)
        for bones, below in plan:
            chain = _chain(skeleton, bones, frames, heads, ends)
            effector = by_bone.get(bones[-1])
            if effector is not None:
                goals = {"pole": effector.pole, "pole_angle": effector.pole_angle}
                if effector.orientation is not None and effector.rotation_weight > 0.0:
                    goals.update(target_rotation=effector.orientation, rotation_weight=effector.rotation_weight)
                sol = solve(chain, effector.position, method="triangulation", tolerance=tolerance, **goals, **options)
            else:
                under = [by_bone[b] for b in below]
                position, rotation = _sub_base_frame(skeleton, bones, frames, heads, ends, under, short)
                sol = solve(
                    chain, position, method="triangulation", tolerance=tolerance, target_rotation=rotation, **options
                )
            _set_locals(skeleton, local, bones, frames, sol.frames(chain))
            frames, heads, ends = skeleton.forward(local)
        miss = np.linalg.norm([e.position - ends[e.bone] for e in effectors], axis=1)
        cost = float(weights @ miss**2)
        if cost < best_cost:
            best, best_cost = local.copy(), cost
        if np.all(miss <= tolerance):
            break
        short = {e.bone: (m if m > tolerance else 0.0) for e, m in zip(effectors, miss, strict=True)}
    return finish(skeleton, best, effectors, tolerance, passes, "triangulation")


def _segments(skeleton: Skeleton, effectors: list[Effector]) -> list[tuple[list[int], list[int]]]:
    """[(segment bones root first, effector bones below its end)], parents' segments first."""
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


def _chain(skeleton: Skeleton, bones: list[int], frames, heads, ends) -> Chain:
    """The segment `bones` as a Chain from the current pose (joints at the heads, then the end)."""
    parent = skeleton.parents[bones[0]]
    return Chain(
        np.concatenate((heads[bones], ends[bones[-1:]])),
        frames[bones],
        limits=None if skeleton.limits is None else skeleton.limits.subset(bones),
        reference=skeleton.reference[bones],
        base_frame=skeleton.base_frame if parent == -1 else frames[parent],
    )


def _set_locals(skeleton: Skeleton, local: np.ndarray, bones: list[int], frames, solved: np.ndarray) -> None:
    """The segment's solved world frames into `local` (solving it does not move its parent)."""
    parent = skeleton.parents[bones[0]]
    first = skeleton.base_frame if parent == -1 else frames[parent]
    parents = np.concatenate((first[None], solved[:-1]))
    local[bones] = quat.multiply(quat.conjugate(quat.multiply(parents, skeleton.reference[bones])), solved)


def _sub_base_frame(skeleton: Skeleton, bones: list[int], frames, heads, ends, below: list[Effector], short: dict):
    """(end position, world orientation) for the last bone of a segment ending on a sub-base:
    the nearest frame from which each effector below is within its branch's full length and
    which the segment can carry (see the module docstring). Plain floats: a handful of
    3-vectors per step, where numpy's per-call cost would be most of the time."""
    top = bones[-1]
    turns_only = len(bones) == 1
    # A one-bone segment turns about its head; a longer one moves its end (within the reach of
    # the bones above the last one, which carry the last one's head) and turns about it.
    pivot = tuple(heads[top] if turns_only else ends[top])
    pairs = []  # (first head's offset from the pivot, goal, reach, sqrt weight) per effector below
    for e in below:
        child = _child(skeleton, top, e.bone)
        first = heads[child]
        reach = _reach_from(skeleton, child, e.bone)
        if short[e.bone] > 0.0:
            # The last pass left this branch short: from where it starts now it reaches that
            # much less far than it had to, so the fit moves its start toward the goal.
            reach = max(min(reach, math.dist(e.position, first) - short[e.bone]), 0.0)
        pairs.append((_sub(first, pivot), tuple(e.position), reach, math.sqrt(e.weight)))
    base = tuple(heads[bones[0]])
    upper = sum(math.dist(heads[a], heads[b]) for a, b in zip(bones, bones[1:], strict=False))
    last = _sub(heads[top], pivot)  # the last bone's head, seen from the pivot
    strong = math.sqrt(10.0 * sum(e.weight for e in below))
    size = sum(p[2] for p in pairs) / len(pairs)
    unknowns = 3 if turns_only else 6
    turn, shift = (1.0, 0.0, 0.0, 0.0), (0.0, 0.0, 0.0)
    for _ in range(FIT_STEPS):
        normal = [[0.0] * unknowns for _ in range(unknowns)]
        gradient = [0.0] * unknowns
        active = False
        centre = _add(pivot, shift)
        # (arm from the moved pivot, goal, reach, sqrt weight): each first head within its
        # branch's reach of its goal, and the last bone's head within `upper` of the base.
        terms = [(rotate(turn, offset), goal, reach, w) for offset, goal, reach, w in pairs]
        if not turns_only:
            terms.append((rotate(turn, last), base, upper, strong))
        for arm, goal, reach, w in terms:
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
        damping = NEAREST * max(sum(normal[i][i] for i in range(unknowns)), 1.0)
        for i in range(unknowns):
            for j in range(i):
                normal[j][i] = normal[i][j]
            normal[i][i] += damping * (size * size if i < 3 else 1.0)
        step = _solve_small(normal, gradient)
        turn = normalize4(multiply(from_rotation_vector(-step[0], -step[1], -step[2]), turn))
        if not turns_only:
            shift = (shift[0] - step[3], shift[1] - step[4], shift[2] - step[5])
    position = _add(_add(pivot, shift), rotate(turn, _sub(tuple(ends[top]), pivot)))
    return np.array(position), quat.multiply(np.array(turn), frames[top])


def _add(a: tuple, b: tuple) -> tuple:
    return (a[0] + b[0], a[1] + b[1], a[2] + b[2])


def _sub(a, b) -> tuple:
    return (a[0] - b[0], a[1] - b[1], a[2] - b[2])


def _cross(a: tuple, b: tuple) -> tuple:
    return (a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0])


def _child(skeleton: Skeleton, top: int, bone: int) -> int:
    """The child of `top` on the way down to `bone`."""
    path = skeleton.branch(bone)
    return path[path.index(top) + 1]


def _reach_from(skeleton: Skeleton, head_bone: int, bone: int) -> float:
    """Largest distance from `head_bone`'s head to `bone`'s end point (the rigid links between)."""
    path = skeleton.branch(bone)
    path = path[path.index(head_bone) :]
    return float(sum(np.linalg.norm(skeleton.offsets[b]) for b in path[1:]) + skeleton.lengths[bone])


def _solve_small(a: list[list[float]], b: list[float]) -> list[float]:
    """x with a x = b for a small symmetric positive definite `a` (Cholesky on plain floats:
    np.linalg.solve costs more than the arithmetic at 3x3 and 6x6, and far more when a
    multi-threaded BLAS competes for the cores)."""
    n = len(b)
    low = [[0.0] * n for _ in range(n)]
    for i in range(n):
        for j in range(i + 1):
            total = a[i][j] - sum(low[i][k] * low[j][k] for k in range(j))
            low[i][j] = total**0.5 if i == j else total / low[j][j]
    y = [0.0] * n
    for i in range(n):
        y[i] = (b[i] - sum(low[i][k] * y[k] for k in range(i))) / low[i][i]
    x = [0.0] * n
    for i in reversed(range(n)):
        x[i] = (y[i] - sum(low[k][i] * x[k] for k in range(i + 1, n))) / low[i][i]
    return x
