"""Triangulation for trees: several effectors on one skeleton, the upper joints still leading.

The paper solves one chain in one pass from the root (its future work asks for "several end
effectors"). Here the tree is cut into segments: a segment runs from a bone down to the next
bone that either carries an effector or splits into several branches that lead to effectors
(a sub-base). Segments are solved from the root down, each as a chain by the paper's pass
(`solvers.solve`, limits, poles and tip rotations included):

- a segment ending on an effector's bone aims at that effector's position;
- a segment ending on a sub-base aims its end at the point nearest where it is now from which
  every effector below can still be reached, each branch counted at its full length from the
  sub-base (a weighted least-squares point, Gauss-Newton on the reach excess). So the trunk
  moves first, and only as far as the branches need; the branches then triangulate from
  wherever the trunk put them.

A branch's full length is an upper bound of its reach (limits, folds), so a pass that leaves an
effector short shrinks that branch's assumed reach by the miss and runs again: at most
`max_iterations` passes, stopping as soon as every effector is within tolerance. Conflicting
goals (no pose reaches them all) end at the trunk's weighted compromise with each branch
reaching as far as it can toward its own goal.
"""

from __future__ import annotations

import numpy as np

from .. import quat
from ..chain import Chain
from ..skeleton import Effector, Skeleton, SkeletonSolution, finish

# Later passes move each sub-base by GAIN x what its effectors miss (the branches re-solving
# from the moved sub-base take back part of each move); a pass that makes the weighted error
# worse is undone and the gain halved, down to MIN_GAIN.
GAIN = float(__import__('os').environ.get('GAIN', 1.0))
MIN_GAIN = 0.25
FIT_ROUNDS = int(__import__('os').environ.get('FIT', 4))



def solve_tree(
    skeleton: Skeleton, local: np.ndarray, effectors: list[Effector], tolerance: float, max_iterations: int, options: dict
) -> SkeletonSolution | str:
    """The registry's `tree` kernel for triangulation (see the module docstring)."""
    from ..api import solve

    if any(e.priority != effectors[0].priority for e in effectors):
        return "effector priorities (triangulation weighs every effector alike; use the Jacobian for strict priorities)"
    plan = _segments(skeleton, effectors)
    by_bone = {e.bone: e for e in effectors}
    if len(by_bone) != len(effectors):
        return "two effectors on one bone"
    miss = np.zeros((len(effectors), 3))  # per effector: goal - tip after the last pass
    index = {e.bone: k for k, e in enumerate(effectors)}
    local = np.array(local, dtype=float)
    gain, first = GAIN, True
    weights = np.array([e.weight for e in effectors])
    best, best_cost = local.copy(), np.inf
    passes = 0
    for passes in range(1, max_iterations + 1):
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
                under = [effectors[index[b]] for b in below]
                position, rotation = _sub_base_goal(skeleton, bones, frames, heads, ends, under, None if first else gain)
                sol = solve(
                    chain, position, method="triangulation", tolerance=tolerance, target_rotation=rotation, **options
                )
            _set_locals(skeleton, local, bones, frames, sol.frames(chain))
            frames, heads, ends = skeleton.forward(local)
        first = False
        miss = np.linalg.norm([e.position - ends[e.bone] for e in effectors], axis=1)
        cost = float(weights @ miss**2)
        if cost < best_cost:
            best, best_cost = local.copy(), cost
        else:
            local[:] = best
            gain = max(0.5 * gain, MIN_GAIN)
        if np.all(miss <= tolerance):
            break
    local = best
    return finish(skeleton, local, effectors, tolerance, passes, "triangulation")


def _segments(skeleton: Skeleton, effectors: list[Effector]) -> list[tuple[list[int], list[int]]]:
    """[(segment bones root first, effector bones below its end)], parents' segments first."""
    moved: set[int] = set()
    for e in effectors:
        moved.update(skeleton.branch(e.bone))
    goal_bones = {e.bone for e in effectors}
    children: dict[int, list[int]] = {b: [] for b in moved}
    for b in sorted(moved):
        p = skeleton.parents[b]
        if p != -1:
            children[p].append(b)
    below: dict[int, list[int]] = {}
    for b in sorted(moved, reverse=True):  # children come after parents: walk up
        below[b] = ([b] if b in goal_bones else []) + [g for c in children[b] for g in below[c]]
    plan = []
    starts = [b for b in sorted(moved) if skeleton.parents[b] == -1 or skeleton.parents[b] not in moved]
    while starts:
        bone = starts.pop(0)
        bones = [bone]
        while bones[-1] not in goal_bones and len(children[bones[-1]]) == 1:
            bones.append(children[bones[-1]][0])
        plan.append((bones, below[bones[-1]]))
        starts.extend(children[bones[-1]])
    return plan


def _chain(skeleton: Skeleton, bones: list[int], frames, heads, ends) -> Chain:
    """The segment `bones` as a Chain from the current pose (joints at the heads, then the end)."""
    parent = skeleton.parents[bones[0]]
    base = skeleton.base_frame if parent == -1 else frames[parent]
    return Chain(
        np.concatenate((heads[bones], ends[bones[-1:]])),
        frames[bones],
        limits=None if skeleton.limits is None else skeleton.limits.subset(bones),
        reference=skeleton.reference[bones],
        base_frame=base,
    )


def _set_locals(skeleton: Skeleton, local: np.ndarray, bones: list[int], frames, solved: np.ndarray) -> None:
    """Write the segment's solved world frames into `local` as local rotations (the segment's
    parent is not moved by solving it, so its frame in `frames` still holds)."""
    parent = skeleton.parents[bones[0]]
    first = skeleton.base_frame if parent == -1 else frames[parent]
    parents = np.concatenate((first[None], solved[:-1]))
    local[bones] = quat.multiply(quat.conjugate(quat.multiply(parents, skeleton.reference[bones])), solved)


def _sub_base_goal(skeleton, bones, frames, heads, ends, below: list[Effector], gain: float | None):
    """(position, orientation) for the end of a segment that ends on a sub-base.

    Each branch below the sub-base wants its first head moved by what its effectors lack: in
    the first pass, how far each lies beyond the branch's full length; in later passes, what
    each still misses. The sub-base's frame takes the weighted best rigid motion of those
    heads (Kabsch; about the segment's base when the segment is one bone, which can only
    turn), and the segment aims its end at where that motion puts it."""
    top = bones[-1]
    frame = frames[top]
    p = np.array([heads[_child(skeleton, top, e.bone)] for e in below])
    lack = np.array([_excess(skeleton, top, e, heads, ends) for e in below])
    if gain is not None:
        lack *= gain
    q = p + lack
    w = np.array([e.weight for e in below])
    end = ends[top]
    if len(bones) == 1:
        pivot = heads[top]
        rotation = _best_rotation(p - pivot, q - pivot, w)
        return pivot + rotation @ (end - pivot), quat.multiply(quat.from_matrix(rotation), frame)
    # Multi-bone segment: its end moves by the mean shift and the frame turns about that point
    # to best fit the heads' shifts; then the end is pulled back to where the bones above the
    # last one can carry the last one's head (its orientation is the goal's, so only that head
    # moves freely, within their full length of the segment's base).
    moved = end + w @ lack / w.sum()
    base = heads[bones[0]]
    reach = float(np.sum([np.linalg.norm(heads[b] - heads[a]) for a, b in zip(bones, bones[1:], strict=False)]))
    for _ in range(FIT_ROUNDS):  # the turn and the reachable end depend on each other
        rotation = _best_rotation(p - end, q - moved, w)
        last = rotation @ (end - heads[top])  # last bone: head to end, turned
        wrist = moved - last
        far = np.linalg.norm(wrist - base)
        if far <= reach:
            break
        moved = base + (wrist - base) * (reach / far) + last
    return moved, quat.multiply(quat.from_matrix(rotation), frame)


def _child(skeleton: Skeleton, top: int, bone: int) -> int:
    """The child of `top` on the way down to `bone`."""
    path = skeleton.branch(bone)
    return path[path.index(top) + 1]


def _excess(skeleton: Skeleton, top: int, effector: Effector, heads, ends) -> np.ndarray:
    """How far `effector`'s goal lies beyond the full length of its branch below `top` (from the
    branch's first head): a vector toward the goal, zero when within reach."""
    child = _child(skeleton, top, effector.bone)
    d = effector.position - heads[child]
    dist = np.linalg.norm(d)
    beyond = dist - _reach_from(skeleton, child, effector.bone)
    return d * (beyond / dist) if beyond > 0.0 else np.zeros(3)


def _best_rotation(p: np.ndarray, q: np.ndarray, w: np.ndarray) -> np.ndarray:
    """The rotation matrix R minimising sum w |R p - q|^2 (weighted Kabsch, no reflection)."""
    u, _, vt = np.linalg.svd((q * w[:, None]).T @ p)
    d = np.sign(np.linalg.det(u @ vt)) or 1.0
    return u @ np.diag([1.0, 1.0, d]) @ vt


def _reach_from(skeleton: Skeleton, head_bone: int, bone: int) -> float:
    """Largest distance from `head_bone`'s head to `bone`'s end point (the rigid links between)."""
    path = skeleton.branch(bone)
    path = path[path.index(head_bone) :]
    total = 0.0
    for b in path[1:]:
        total += float(np.linalg.norm(skeleton.offsets[b]))
    return total + float(skeleton.lengths[bone])
