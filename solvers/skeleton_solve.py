"""solve_skeleton: several effectors on one skeleton, or one on a branch (the public entry point).

One effector (not a pin) on one branch is a chain: it goes through `solvers.solve`, the one
solve path with its fast kernels, with the very chain a chain solve of those bones gets
(`branch_chain`: built from the pose as read, not re-derived by forward kinematics). Several
go to the method's tree kernel (`registry.Method.tree`); a method without one is solved by the
least-squares method's tree kernel (`registry.LEAST_SQUARES`) and the result's reason says so
(`tree_kernel`). Then any pin still off is held (common.pins.hold). Effectors that aim
(`Effector.aim_axis`) are solved after the others, on the bones those leave free
(common.aim_goals), here and in the many-frame entry points alike.
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np

from . import quat, registry
from .api import method_settings, solve
from .common import root_move
from .common.aim_goals import after_reach, aiming
from .common.pins import hold, placed
from .common.soft_goals import soften_effectors
from .maths import floats
from .model.chain import Chain
from .model.method import Method
from .skeleton import Effector, Skeleton, SkeletonSolution, finish
from .skeleton_effectors import merge_shared, resolve_pins
from .skeleton_floats import end_point, forward, moved_bones, rows


def tree_kernel(entry: Method) -> tuple[Method, str]:
    """(the method whose tree kernel solves several effectors for `entry`, the reason when it is
    not `entry` itself: a method without one is solved by `registry.LEAST_SQUARES`)."""
    if entry.tree is not None:
        return entry, ""
    return registry.LEAST_SQUARES, registry.NO_TREE_KERNEL.format(name=entry.name, by=registry.LEAST_SQUARES.name)


def solve_skeleton(
    skeleton: Skeleton,
    local: np.ndarray,
    effectors: list[Effector],
    *,
    method: str,
    tolerance: float | None = None,
    max_iterations: int | None = None,
    pose: Pose | None = None,
    move_root: bool = False,
    root_stiffness: float = root_move.DEFAULT_STIFFNESS,
    start_error: np.ndarray | None = None,
    **options: object,
) -> SkeletonSolution:
    """Solve `effectors` on `skeleton` from the local rotations `local` (n, 4).

    One effector (not a pin) is a chain from its bone's root: it goes through `solvers.solve`,
    the one solve path with its fast kernels, on `branch_chain(skeleton, local, bone, pose)`
    (`pose`: the input pose as read, see `branch_chain`). Several effectors go to the method's tree kernel,
    `registry.Method.tree(skeleton, local, effectors, tolerance, max_iterations, options)`
    (a method without one: `tree_kernel`), with
    pins resolved, effectors on one bone merged (`merge_shared`), options checked and the
    tolerance (default: DEFAULT_RELATIVE_TOLERANCE x the length of the bones the effectors
    move) and iteration cap filled in; then any pin still off is held (`common.pins.hold`, which
    names one that cannot hold in the reason). Errors are each given effector's (an effector with
    `softness`: from its soft position; several effectors softened once here, common.soft_goals,
    one by the chain's solve on its branch's chain, as a chain is).

    `move_root`: the effectors' one top bone may move its head too (common.root_move, every
    method: the root placed by a reach fit, the turns solved by the method, again while a goal is
    off and a round gains), `root_stiffness` 0..1 (0 moves most, 1 never moves); the result's
    `root_shift` is the head's move. Off: this very solve, `root_shift` None.

    `start_error`: each effector's distance from its position on `local`, as the caller measured
    it already (a bake's prediction: solvers.skeleton_sequence), for a method's start steps
    (`stepped_start`'s first look; used with several effectors, none softened, on different bones)."""
    local = np.asarray(local, dtype=float)
    # One sum of plain floats first (numpy's reduction costs more on a few rows; overflow only
    # sends finite rows to numpy's look).
    finite = math.isfinite(sum(local.ravel().tolist())) or np.isfinite(local).all()
    if local.shape != (skeleton.n_bones, 4) or not finite:
        raise ValueError(f"local rotations must be finite with shape ({skeleton.n_bones}, 4), got {local.shape}")
    if not effectors:
        raise ValueError("no effectors to solve")
    for effector in effectors:
        if not 0 <= effector.bone < skeleton.n_bones:
            raise ValueError(f"effector bone {effector.bone} is not a bone of the skeleton")
    if start_error is not None:  # checked on every path, used on the fixed root's only
        start_error = np.asarray(start_error, dtype=float)
        if start_error.shape != (len(effectors),):
            count = len(effectors)
            raise ValueError(f"start_error must hold one distance per effector ({count}), got {start_error.shape}")
        if not all(d >= 0.0 for d in start_error.tolist()):  # (NaN fails too)
            raise ValueError(f"start_error must hold distances (>= 0, not NaN), got {start_error.tolist()}")
    if aiming(effectors):  # aims after the reach, on the bones it leaves free (common.aim_goals)
        method_settings(method, tolerance, max_iterations, options, 1.0)  # the settings checked all the same
        reach = [e for e in effectors if not e.aim_axis]
        limits = {"tolerance": tolerance, "max_iterations": max_iterations}
        solved = None
        if reach:
            root = {"move_root": move_root, "root_stiffness": root_stiffness}
            solved = solve_skeleton(skeleton, local, reach, method=method, pose=pose, **root, **limits, **options)
        return after_reach(skeleton, local, effectors, solved, **limits, method=method)
    if move_root:
        effectors = soften_effectors(skeleton, effectors)  # soft IK: once, on the input pose
        return _solve_moving_root(
            skeleton, local, effectors, method, tolerance, max_iterations, pose, root_stiffness, options
        )
    return _solve_fixed(skeleton, local, effectors, method, tolerance, max_iterations, pose, options, start_error)


def _solve_moving_root(skeleton, local, effectors, method, tolerance, max_iterations, pose, stiffness, options):
    """solve_skeleton with a movable root: common.root_move around the fixed-root solve, the
    tolerance (default as the tree's) and pins resolved once, on the input pose."""
    stiffness = root_move.check_stiffness(stiffness)
    if tolerance is None:
        length = float(np.sum(skeleton.lengths[moved_bones(skeleton, [e.bone for e in effectors])]))
        tolerance = method_settings(method, None, max_iterations, options, length)[1]
    resolved = resolve_pins(skeleton, local, effectors)
    entry = registry.get(method)

    def turn(moved: Skeleton, start: np.ndarray, goals: list[Effector], at: Pose | None) -> SkeletonSolution:
        if moved is not skeleton and entry.root_pins_first:  # the root moved the pins' branches away
            held = placed(moved, start, goals, float(tolerance), registry.LEAST_SQUARES)
            start, at = (start, at) if held is start else (held, None)
        return _solve_fixed(moved, start, goals, method, tolerance, max_iterations, at, options)

    solved = root_move.solve_moving_root(skeleton, local, resolved, stiffness, float(tolerance), turn, pose)
    return replace(solved, branch=None)  # its turns may start from a moved pose: the writer takes `local`


# A tree solve's start (Method.tree_start_steps): its steps stop once every tip is within this many
# tolerances (a bake's frame is predicted to the same nearness: skeleton_sequence).
START_WITHIN = 10.0


def stepped_start(
    skeleton: Skeleton,
    local: np.ndarray,
    effectors: list[Effector],
    tolerance: float,
    steps: int,
    measured: np.ndarray | None = None,
):
    """The pose (n, 4) a tree kernel iterates from (Method.tree_start_steps): `local` moved by at
    most `steps` least-squares steps (registry.LEAST_SQUARES's tree kernel) toward `effectors`
    (pins resolved; poles left to the method), stopped within START_WITHIN tolerances; `local`
    itself when `steps` is 0, when it is that near already, when the steps decline, or when they
    would slide a pin beyond that distance (conflicting goals: a kernel holding pins may not bring
    one back). A method whose passes from the input pose turn the joints near the tips far more
    than the goals ask (FABRIK) then closes only what least motion leaves. `measured`: each
    effector's distance from its goal on `local` as the caller measured it (a bake's prediction,
    `least_squares_steps`' second value, measured as its kernel measures), for the first look where
    the kernel's own is the look (no orientation goal): every one that near takes no step."""
    near = START_WITHIN * tolerance
    if steps <= 0:
        return local
    if any(e.orientation is not None for e in effectors):  # the steps also turn toward orientations
        frames, heads = forward(skeleton, rows(local))
        if all(math.dist(end_point(skeleton, frames, heads, e.bone), e.position.tolist()) <= near for e in effectors):
            return local
    elif measured is not None and all(d <= near for d in measured.tolist()):
        return local  # (as the steps' kernel measures: it would measure this pose again, and take none)
    # (otherwise the kernel measures the tips before its first step: none taken when all are near)
    return least_squares_steps(skeleton, local, effectors, near, steps)[0]


def least_squares_steps(
    skeleton: Skeleton, local: np.ndarray, effectors: list[Effector], near: float, steps: int
) -> tuple[np.ndarray, np.ndarray | None]:
    """stepped_start's steps without its first look (a bake's next frame, which the targets have
    left: solvers.skeleton_sequence): (`local` moved by at most `steps` least-squares steps toward
    `effectors` (pins resolved, poles left out), stopping within `near`; `local` itself when the
    steps decline or would slide a pin beyond `near`, each effector's distance from its goal as the
    steps' kernel measured it on that pose clamped into the limits (as every tree kernel starts),
    or None where it measured none: declined, or a pin slid)."""
    entry = registry.LEAST_SQUARES
    unpoled = [e if e.pole is None else replace(e, pole=None) for e in effectors]
    stepped = entry.tree(skeleton, local, unpoled, near, steps, entry.defaults)
    # The kernel declines (a reason string) only for a pole's segment, and poles are left out above.
    if isinstance(stepped, str):
        return local, None
    if stepped.iterations == 0:  # (its error: of `local` as it clamped it)
        return local, stepped.error
    if any(e.pin and stepped.error[k] > near for k, e in enumerate(effectors)):
        return local, None
    return stepped.local, stepped.error


def _solve_fixed(
    skeleton, local, effectors, method, tolerance, max_iterations, pose, options, start_error=None
) -> SkeletonSolution:
    """solve_skeleton's solve with the root where it is (effectors checked). One effector (not a
    pin): the chain's solve softens it, as a chain's; several: softened once here. `start_error`:
    solve_skeleton's."""
    if len(effectors) == 1 and not effectors[0].pin:
        return _solve_branch(skeleton, local, effectors[0], method, tolerance, max_iterations, pose, options)
    given = effectors
    effectors = soften_effectors(skeleton, effectors)  # soft IK: once, here, for every method
    entry = registry.get(method)
    runs, reason = tree_kernel(entry)
    # The default tolerance's scale: the length of the bones the effectors move.
    length = 0.0
    if tolerance is None:
        length = float(np.sum(skeleton.lengths[moved_bones(skeleton, [e.bone for e in effectors])]))
    if max_iterations is None and entry.tree_max_iterations:
        max_iterations = entry.tree_max_iterations
    _, tol, iters, checked = method_settings(method, tolerance, max_iterations, options, length)
    if runs is not entry:  # the method's own options checked; the one solving takes its defaults
        iters, checked = max_iterations or runs.max_iterations, runs.defaults
    resolved = resolve_pins(skeleton, local, effectors)
    goals = merge_shared(resolved)
    # (measured on the given effectors: these very goals when none was softened, placed or merged)
    measured = None
    if start_error is not None and effectors is given and goals is resolved and len(start_error) == len(goals):
        measured = start_error if all(e.position is not None for e in given) else None
    start = stepped_start(skeleton, local, goals, tol, runs.tree_start_steps, measured)
    solved = runs.tree(skeleton, start, goals, tol, iters, checked)
    if isinstance(solved, str):
        raise ValueError(f"{method} cannot solve these effectors together: {solved}")
    if reason:
        solved = replace(solved, reason="; ".join(filter(None, (reason, solved.reason))))
    solved = hold(skeleton, local, solved, goals, tol, registry.LEAST_SQUARES)
    if goals is resolved:
        return solved
    unheld = tuple(k for k, e in enumerate(resolved) if e.pin and any(goals[j].bone == e.bone for j in solved.unheld))
    out = finish(skeleton, solved.local, resolved, tol, solved.iterations, solved.method, solved.reason)
    return replace(out, unheld=unheld)


# The input pose as read: world frames (n, 4), heads (n, 3), end points (n, 3) (Skeleton.forward's layout).
Pose = tuple[np.ndarray, np.ndarray, np.ndarray]


def chain_pose(chain: Chain) -> Pose:
    """A chain's own pose in `Pose`'s layout (for `Skeleton.from_chain(chain)`): solving its
    skeleton with it gives `solve(chain)`'s numbers to the bit."""
    points = chain.points
    return chain.frames, points[:-1], points[1:]


def branch_chain(skeleton: Skeleton, local: np.ndarray, bone: int, pose: Pose | None = None) -> tuple[Chain, list[int]]:
    """(the branch from a root down to `bone` as a Chain, its bones): the chain a chain solve of
    those bones gets (rig.read builds it the same way from the same reading).

    Points and frames come from `pose` (world frames, heads, end points: the input pose as read,
    which `local` poses; arrays, or rows of floats as rig.tree reads them; default
    `skeleton.forward(local)`). Forward kinematics rounds otherwise than the reading (rotations
    composed from rests and channels against the evaluated matrices): the chain then differs in
    the last bits (~1e-16 relative), and so may the solve; pass the pose as read for the chain's
    numbers. Joint limits come with the skeleton's rest (`reference`, `base_frame`) when it has
    limits; without limits the chain has no rest of its own and takes its input pose (as a chain
    read without limits: a pole near the root-target line turns toward the root's input up, `common.goals`)."""
    bones = skeleton.branch(bone)
    joints = {}
    if skeleton.limits is not None:
        joints = {
            "limits": skeleton.limits.subset(bones),
            "reference": skeleton.reference[bones],
            "base_frame": skeleton.base_frame,
        }
    if skeleton.radii is not None:  # the capsules of the mass weighting, as the rig read them
        whole = len(bones) == skeleton.n_bones  # a lone chain: all of them, in order (Chain copies them)
        joints["radii"] = skeleton.radii if whole else skeleton.radii[bones]
    if pose is not None and type(pose[1]) is list and len(bones) == len(pose[1]):
        # The whole skeleton (a lone chain) in rows of floats as the rig reads them: as they are.
        points, rows = [*pose[1], pose[2][-1]], pose[0]
        return Chain.from_float_rows(points, rows, **joints), bones
    frames, heads, ends = skeleton.forward(local) if pose is None else (np.asarray(a, dtype=float) for a in pose)
    if len(bones) == len(heads):  # the whole skeleton (a lone chain): its rows as they are
        points, rows = heads.tolist(), frames.tolist()
        points.append(ends[-1].tolist())
    else:
        points, rows = np.concatenate((heads[bones], ends[bones[-1:]])).tolist(), frames[bones].tolist()
    chain = Chain.from_float_rows(points, rows, **joints)  # rows of floats by construction
    return chain, bones


def branch_locals(skeleton: Skeleton, local: np.ndarray, bones: list[int], frames: np.ndarray) -> np.ndarray:
    """Every bone's local rotation (..., n, 4) with `bones` turned to the world `frames`
    (..., len(bones), 4) (one frame or many), the others kept from `local` (n, 4)."""
    frames = np.asarray(frames, dtype=float)
    solved = np.array(np.broadcast_to(local, frames.shape[:-2] + local.shape), dtype=float)
    base = np.broadcast_to(skeleton.base_frame, frames.shape[:-2] + (1, 4))
    parents = np.concatenate((base, frames[..., :-1, :]), axis=-2)
    solved[..., bones, :] = quat.multiply(quat.conjugate(quat.multiply(parents, skeleton.reference[bones])), frames)
    return solved


def _branch_locals_one(
    skeleton: Skeleton, local: np.ndarray, bones: list[int], turns: list, frames: list
) -> np.ndarray:
    """`branch_locals` of one solve, its bones' world frames the solver's `turns` of the chain's
    `frames` (rows of floats): the same products in the same order on plain floats (the same bits),
    without numpy's per-call cost on a few rows."""
    solved = np.array(local, dtype=float)
    parent = tuple(skeleton.base_frame.tolist())
    reference = skeleton.reference
    for i, turn, frame in zip(bones, turns, frames, strict=True):
        new = floats.multiply(turn, frame)
        solved[i] = floats.multiply(floats.conjugate(floats.multiply(parent, tuple(reference[i].tolist()))), new)
        parent = new
    return solved


def effector_goals(effector: Effector) -> dict:
    """The chain solve's goal keywords for one effector (its pole, tip orientation)."""
    goals = {"pole": effector.pole, "pole_angle": effector.pole_angle}
    if effector.orientation is not None:
        goals.update(target_rotation=effector.orientation, rotation_weight=effector.rotation_weight)
    return goals


def _solve_branch(
    skeleton: Skeleton,
    local: np.ndarray,
    effector: Effector,
    method: str,
    tolerance: float | None,
    max_iterations: int | None,
    pose: Pose | None,
    options: dict,
) -> SkeletonSolution:
    """One effector: its branch as a Chain through `solvers.solve`."""
    chain, bones = branch_chain(skeleton, local, effector.bone, pose)
    sol = solve(
        chain,
        effector.position,
        method=method,
        tolerance=tolerance,
        max_iterations=max_iterations,
        softness=effector.softness,  # measured on the branch's chain (its length), as solve does
        **effector_goals(effector),
        **options,
    )
    local = np.array(local, dtype=float)  # as it is now, whenever the locals are asked for

    def solved() -> np.ndarray:  # on first use (SkeletonSolution.local): a writer turning frames needs none
        return _branch_locals_one(skeleton, local, bones, sol.rows()[1], chain.frames.tolist())

    branch = (chain, sol, tuple(bones))
    return SkeletonSolution(
        solved, np.array([sol.error]), sol.reached, sol.iterations, sol.method, sol.reason, branch=branch
    )
