"""Triangulation for trees: several effectors on one skeleton, the upper joints still leading.

The paper solves one chain in one pass from the root; its future work asks for "several end
effectors". Here the tree is cut into segments: a segment runs from a bone down to the next
bone that carries an effector or splits into branches that lead to effectors (a sub-base).
Segments are solved from the root down, each as a chain by the paper's pass (limits, poles and
tip rotations included) from its start's shape (below):

- a segment that ends on an effector's bone aims at that effector's goals;
- a segment that ends on a sub-base is given a whole frame for its last bone: first its lead
  (tree_lead: where that frame would be after a few least-norm steps of every joint from the
  segment's first bone down to the effectors, on a scratch copy; the upper joints lead, as in the
  paper's chain, by the share a least-squares solver would give them), then the frame nearest
  that one from which every branch below can reach its effector at the branch's full length, and
  which the segment itself can carry (tree_frame: its base fixed, its bones' full length). The
  segment then triangulates to the frame (the last bone takes the orientation, the bones above
  reach its head), and the branches triangulate from where it put them.

So the trunk moves first, taking its share of the turn its branches need, and as far as they
need to reach; each branch then moves as the paper's chain does, but from its start's shape: where
the paper takes the rest of a segment at its full length (its triangle's side b, so every joint
below the first that bends ends straight), a segment takes the extent between the rest's inner
hole and b that changes the joint's angle to the target line and the next joint's bend least
(chain_span.least_turn_span; a rest already straight stays straight: the paper's pose), and
where it turns less, a joint first turns the rest as it is with its chord onto the target line,
then bends (chain_floats.one_pass's `chords`). The total turn (the paper's cost, eq. 3) on the
metarig: docs/design.md, "Tree triangulation: turn and speed". A segment already at its goal then
stays and one near it moves little, so a bake continuing its last frame
(solvers.skeleton_sequence) keeps each frame's shape; with the paper's straight rests a start
within the tolerance was kept and one just beyond it snapped to them, a pop (17.6 degrees on a
forearm in bench/bench_smooth_bake.py's two hands). A segment whose effector already meets its
goal (no pole or orientation to turn to), or whose sub-base's frame stays, is not solved again:
its pass would keep it (a bake's frames, started near their answer, skip most segments). Under
joint limits a segment takes the
paper's limited passes (no float kernel).

The full length is an upper bound of a branch's reach (limits, folds), so while an effector is
short another pass runs, up to `max_iterations` passes, in which that branch is taken to reach,
from where it starts, only as far as it got, until a pass changes no level's error; the pose
that ranks best (level by level, a level met within the tolerance counting 0; the input pose
included) is the one returned. Conflicting goals end at the weighted least-squares compromise of
the trunk, each branch reaching toward its goal.
"""

from __future__ import annotations

import contextlib
import math
import re
from collections.abc import Iterator

import numpy as np

from .. import limits as joint_limits
from ..common import chain_path
from ..common import float_solve as float_one
from ..common.goals import read_goals
from ..model.chain import Chain, as_floats
from ..model.result import Solution
from ..skeleton import Effector, Skeleton, SkeletonSolution, finish, ranked_weights
from ..skeleton_floats import cached_rows, end_distances, end_point, forward, moved_bones, rows
from .chain import CHAIN, shape_keeping_solver
from .tree_frame import sub_base_frame
from .tree_lead import lead
from .tree_plan import base_row, layout
from .tree_segment import segment_pass

# Passes end when one changes no level's weighted squared error by more than this share of it.
SETTLE = 1e-4
# The sub-base's lead (tree_lead), taken only where a branch's end is this many tolerances off its
# goal: a bake's frame continued from the last and stepped toward its goals
# (solvers.skeleton_sequence) needs none.
LEAD_FROM = 10.0


def solve_tree(
    skeleton: Skeleton,
    local: np.ndarray,
    effectors: list[Effector],
    tolerance: float,
    max_iterations: int,
    options: dict,
) -> SkeletonSolution | str:
    """The registry's `tree` kernel for triangulation (see the module docstring)."""
    bones_of = [e.bone for e in effectors]  # one effector per bone (skeleton_effectors.merge_shared)
    plan, groups = layout(skeleton, effectors)
    by_bone = {e.bone: e for e in effectors}
    weight = _Weights(effectors)  # (read only where a sub-base's frame is fitted)
    if skeleton.limits is not None:  # every pass, and the input as a candidate, within the limits
        local = np.array(local, dtype=float)  # (a copy: the caller's is not clamped; `rows` copies anyway)
        moved = moved_bones(skeleton, bones_of)
        local[moved] = joint_limits.clamp(skeleton.limits, np.array(moved), local[moved])
    # Plain floats between the segments' solves (rows of the local rotations, world frames and
    # heads: solvers.skeleton_floats' forward): numpy's per-call cost on a few bones was most of a pass.
    current = rows(local)
    goals_at = [tuple(e.position.tolist()) for e in effectors]
    goal_of = dict(zip(bones_of, goals_at, strict=True))
    reach = cached_rows(skeleton, "reach")
    frames, heads = forward(skeleton, current)
    best, passes = current[:], 0
    best_miss = miss = end_distances(frames, heads, bones_of, reach, goals_at)[1]
    best_cost = cost = _ranked(effectors, groups, miss, tolerance)
    if max(miss) <= tolerance:
        # Every goal met as it stands (a bake's frame continued from the last): no pass could rank
        # better than the input, which a pass would return.
        return finish(skeleton, np.array(best), effectors, tolerance, 0, "triangulation", error=np.array(miss))
    short = dict.fromkeys(by_bone, 0.0)  # per effector bone: what the last pass left it short
    plain = shape_keeping_solver(options)
    far = LEAD_FROM * tolerance
    while passes < max_iterations:
        passes += 1
        for bones, under, moves, parent in plan:
            effector = by_bone.get(bones[-1])
            if effector is not None:
                turned = effector.orientation is not None and effector.rotation_weight > 0.0
                if effector.pole is None and not turned:
                    # Its end already at its goal (no pole or orientation to turn to): the
                    # shape-keeping pass would keep it (a bake's frames, started near their answer).
                    end = end_point(skeleton, frames, heads, bones[-1])
                    goal = goal_of[bones[-1]]
                    if math.dist(end, goal) <= tolerance:
                        continue
                    if skeleton.limits is None:
                        # its point alone: the same pass without a Chain (tree_segment)
                        joints = [heads[b] for b in bones]
                        joints.append(end)
                        with _tree_indices(bones):
                            turns, start = segment_pass(joints, [frames[b] for b in bones], goal, plain)
                        _set_locals(skeleton, current, bones, parent, frames, turns, start)
                        frames, heads = forward(skeleton, current, moves, frames, heads)
                        continue
                with _tree_indices(bones):
                    chain = _chain(skeleton, bones, frames, heads)
                goals = {"pole": effector.pole, "pole_angle": effector.pole_angle}
                if turned:
                    goals.update(target_rotation=effector.orientation, rotation_weight=effector.rotation_weight)
                sol = _triangulate(chain, effector.position, tolerance, options, **goals)
            else:
                branches = [by_bone[b] for b in under]
                start = None
                if any(d > far for d in end_distances(frames, heads, under, reach, [goal_of[b] for b in under])[1]):
                    start = lead(skeleton, bones, frames, heads, branches, weight)
                frame = sub_base_frame(skeleton, bones, frames, heads, branches, short, weight, start)
                if frame is None:
                    continue  # the frame as it is: the segment would stay
                with _tree_indices(bones):
                    chain = _chain(skeleton, bones, frames, heads)
                sol = _triangulate(chain, frame[0], tolerance, options, target_rotation=frame[1])
            _set_locals(skeleton, current, bones, parent, frames, sol.rows()[1], chain.frames.tolist())
            frames, heads = forward(skeleton, current, moves, frames, heads)
        miss = end_distances(frames, heads, bones_of, reach, goals_at)[1]
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


class _Weights(dict):
    """The effectors' ranked weights by bone (solvers.skeleton.ranked_weights), worked out on first
    read: a bake's frame mostly fits no sub-base's frame and reads none."""

    def __init__(self, effectors: list[Effector]) -> None:
        super().__init__()
        self._effectors = effectors

    def __missing__(self, bone: int) -> float:
        if self._effectors is None:
            raise KeyError(bone)
        self.update(zip((e.bone for e in self._effectors), ranked_weights(self._effectors), strict=True))
        self._effectors = None
        return self[bone]


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


_ZERO = re.compile(r"\bbone (\d+) has zero length \(its two ends coincide\)")


@contextlib.contextmanager
def _tree_indices(bones: list[int]) -> Iterator[None]:
    """A segment's zero-length bone named by its skeleton index, with what coincides: the
    segment's own index would name another bone of the tree (the caller names bones by the
    skeleton's order)."""
    try:
        yield
    except ValueError as exc:
        found = _ZERO.search(str(exc))
        if found is None:
            raise
        k = int(found.group(1))
        what = f"bone {bones[k + 1]} starts at its head" if k + 1 < len(bones) else "its end is at its head"
        raise ValueError(f"bone {bones[k]} has zero length ({what})") from None


def _chain(skeleton: Skeleton, bones: list[int], frames: list, heads: list) -> Chain:
    """The segment `bones` as a Chain from the current pose (joints at the heads, then the end;
    rows of floats: solvers.skeleton_floats' forward)."""
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


def _set_locals(
    skeleton: Skeleton, local: list, bones: list[int], parent: int, frames: list, turns: list, start: list
) -> None:
    """The segment's solved world frames (its solve's `turns` of its `start` frames) into `local`
    (rows; solving it does not move its `parent`, -1: the skeleton's base frame)."""
    first = base_row(skeleton) if parent == -1 else frames[parent]
    reference = cached_rows(skeleton, "reference")
    for i, (tw, tx, ty, tz), (fw, fx, fy, fz) in zip(bones, turns, start, strict=True):
        # multiply(conjugate(multiply(first, reference[i])), solved), solved = multiply(turn, frame),
        # written out (the same arithmetic)
        bw = tw * fw - tx * fx - ty * fy - tz * fz
        bx = tw * fx + tx * fw + ty * fz - tz * fy
        by = tw * fy - tx * fz + ty * fw + tz * fx
        bz = tw * fz + tx * fy - ty * fx + tz * fw
        pw, px, py, pz = first
        rw, rx, ry, rz = reference[i]
        aw = pw * rw - px * rx - py * ry - pz * rz
        ax = -(pw * rx + px * rw + py * rz - pz * ry)
        ay = -(pw * ry - px * rz + py * rw + pz * rx)
        az = -(pw * rz + px * ry - py * rx + pz * rw)
        local[i] = (
            aw * bw - ax * bx - ay * by - az * bz,
            aw * bx + ax * bw + ay * bz - az * by,
            aw * by - ax * bz + ay * bw + az * bx,
            aw * bz + ax * by - ay * bx + az * bw,
        )
        first = (bw, bx, by, bz)
