"""A bake's frames of one tree in order, each continuing the last (app.bake.bake_unit's solve).

Solved from its input pose as Solve does, every frame restarts the method: on a smooth path
FABRIK, CCD and triangulation then land on another branch of the solution from one frame to the
next (a joint turning 37-180 degrees between frames where Blender's IK + Bake Action turns 2-18,
bench/bench_smooth_bake.py). Starting from the last frame's solution keeps the branch but not
the pace: these methods still move some joints far more than the targets ask (a 6 cm neck bone
swinging 14 degrees for a millimetre's correction, an arm near full reach re-bending). So each
frame continues the one before it, its method starting near the frame's answer along the least
joint motion that follows the goals (`solve_skeleton_next`):

- Frame f > 0 starts from frame f-1's solution, carried by the input pose's own change between
  the frames (an animated bone no goal holds still turns), moved toward frame f's goals by at
  most PREDICT_STEPS least-squares steps (the Jacobian's, `registry.LEAST_SQUARES`, stopped once every
  tip is within PREDICT_WITHIN tolerances; poles left to the method); the frame's method solves
  from there: its tolerance, pins, limits and poles decide the pose.
- Frame 0 continues its input pose the same way (a frame's *own* solve). If its method misses a
  goal from there (CCD on five effectors from the rest pose), it tries again from the input pose
  moved by the Jacobian's whole solve, kept if that meets every goal.
- Where the input pose means more than a start (a pole spins the bend the start gives; the input
  pose changed since the last frame: an animation), frame f's own solve is made too, and kept
  unless it pops: turns a joint more than POP_RATIO times as far from frame f-1's pose as the
  continued one does, plus POP_MARGIN. Goals first: one that meets every goal beats one that
  does not.
- A frame f > 0 whose stepped start already meets every goal the method checks (no pole; every
  end, orientation and pin within the tolerance, in the limits) is the method's own result built
  without calling it (`_kept`: 0 iterations, to rounding), every method alike but the
  least-squares one, whose own solve is the prediction.
Steps that would slide a pin beyond PREDICT_WITHIN tolerances (goals in conflict) are not taken:
a method that holds pins may not bring one back from a start that moved it. For the Jacobian the
steps are its own solve: it solves from the start directly. Where every frame's goals share one
layout in the Jacobian's written-out case, a sequence holds that kernel for all its frames
(jacobian.tree.Steps: the steps on floats, without each call's look-ups and checks), the same bits
as each frame's own call.

`solve_skeleton_sequence` runs `solve_skeleton_next` over many frames of one reading (the bake's
sampled route): the same poses as frame by frame.

One effector (not a pin) is a chain, and continues as a chain does (`solvers.solve_sequence`,
one warm start in the core): each frame from the last frame's solution, with a pole from the
input pose (Blender's IK starts every frame there). `solve_skeleton_next` then solves the branch
from that start (`solve_skeleton`'s chain route), and `solve_skeleton_sequence` hands all frames
to `solve_sequence` on the branch's chain (its sequence kernel inside), so a lone chain's bake
is the chain kernel's to the bit; a pole on some frames only is solved frame by frame, and the
reason says so.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import replace

import numpy as np

from . import limits as joint_limits
from . import quat, registry
from .api import method_settings
from .chain_sequence import POP_MARGIN, POP_RATIO, keep_own, largest_turn, solve_sequence, straight_start
from .common.aim_goals import after_reach, after_reach_frames, aiming
from .common.chain_path import DEFAULT_RELATIVE_TOLERANCE
from .common.frames import frame_effectors, frame_rows, previous_rows, solve_frames
from .common.pins import orientation_arc
from .common.root_move import DEFAULT_STIFFNESS, MOVING_ROOT
from .common.soft_goals import soften_effectors, soften_positions
from .skeleton import Effector, Skeleton, SkeletonBatch, SkeletonSolution, finish
from .skeleton_effectors import merge_shared, resolve_pins
from .skeleton_floats import end_point, forward, rows
from .skeleton_held import Frames as _Frames
from .skeleton_held import own as _own
from .skeleton_held import predict as _predict
from .skeleton_solve import (
    START_WITHIN,
    Pose,
    branch_chain,
    branch_locals,
    effector_goals,
    solve_skeleton,
    tree_kernel,
)

PREDICT_STEPS = 3  # least-squares steps from the last frame's pose before the method solves
PREDICT_WITHIN = START_WITHIN  # ... stopping once every tip is within this many tolerances (skeleton_solve's)
CHANGED = 1e-6  # radians: an input pose turning a bone further than this since the last frame changed
SOME_POLES = "a pole on some frames only: the chain's frames solved one by one"
# A frame whose prediction measured a tip beyond this many tolerances is not looked at for keeping
# (`_kept`'s forward kinematics spared). The steps' kernel measures its own way (unit quaternions; Skeleton.forward
# composes the rests as read, float32 rotations ~1e-7 off unit length): on the metarig the two
# differ by up to 5e-7 on five effectors (bench/bench_tree.py's bake), a twentieth of the default
# tolerance; where they differ by more, a frame measured kept is solved instead, which its method
# then returns after 0 iterations, the same pose to rounding.
KEPT_MARGIN = 2.0


def _miss(solved: SkeletonSolution) -> tuple[bool, float]:
    """(reached, largest error): chain_sequence.keep_own's measure of a frame's solve."""
    return solved.reached, float(np.max(solved.error))


def chain_restarts(skeleton: Skeleton, start: np.ndarray, effector: Effector, solved: SkeletonSolution,
                   tolerance: float | None) -> bool:  # fmt: skip
    """Whether a lone chain's frame `solved`, continued from `start` (the last frame's solution),
    is solved from the frame's input pose too (chain_sequence.straight_start: CCD stuck straight
    included; not every miss within reach, see chain_sequence._restart); `tolerance` None: the
    default share of the branch."""
    bones = skeleton.branch(effector.bone)
    total = float(np.sum(skeleton.lengths[bones]))
    tol = DEFAULT_RELATIVE_TOLERANCE * total if tolerance is None else float(tolerance)
    _, heads, ends = skeleton.forward(start)
    root = heads[bones[0]]
    distance = float(np.linalg.norm(np.asarray(effector.position) - root))
    return straight_start(float(np.linalg.norm(ends[effector.bone] - root)), total, distance, tol)


def solve_skeleton_next(
    skeleton: Skeleton,
    local: np.ndarray,
    effectors: list[Effector],
    previous: np.ndarray | None = None,
    previous_input: np.ndarray | None = None,
    *,
    method: str,
    tolerance: float | None = None,
    max_iterations: int | None = None,
    pose: Pose | None = None,
    move_root: bool = False,
    root_stiffness: float = DEFAULT_STIFFNESS,
    **options: object,
) -> SkeletonSolution:
    """One frame of a bake: `effectors` on `skeleton` with the frame's input local rotations
    `local` (n, 4), continuing `previous` (the last frame's solution; None on the first frame)
    whose input pose was `previous_input` (None: `local`, an input that did not move). Settings
    as solve_skeleton's; see the module doc for which start is kept. One effector (not a pin):
    a chain's start (module doc); `pose`, the pose of that start as read (solve_skeleton's).
    `move_root`: solve_skeleton's movable root, from the last solution (pins where this frame's
    input has them), the root fitted again on every frame."""
    settings = {"method": method, "tolerance": tolerance, "max_iterations": max_iterations, **options}
    local = np.asarray(local, dtype=float)
    if move_root or any(e.aim_axis for e in effectors) or (len(effectors) == 1 and not effectors[0].pin):
        root = (move_root, root_stiffness)
        return _next_other(skeleton, local, effectors, previous, previous_input, settings, pose, *root)
    return _next(skeleton, local, effectors, previous, previous_input, settings, None)


def _next_other(skeleton, local, effectors, previous, previous_input, settings, pose, move_root, root_stiffness):
    """solve_skeleton_next with aims, a movable root or one effector (not a pin): see its doc."""
    reach = [e for e in effectors if not e.aim_axis]
    if len(reach) < len(effectors):  # aims after the reach, each from this frame's input (common.aim_goals)
        if not reach:
            return solve_skeleton(skeleton, local, effectors, pose=pose, **settings)
        root = {"move_root": move_root, "root_stiffness": root_stiffness}
        solved = solve_skeleton_next(skeleton, local, reach, previous, previous_input, pose=pose, **root, **settings)
        return after_reach(skeleton, local, effectors, solved, **_aim_settings(settings))
    if move_root:
        effectors = resolve_pins(skeleton, local, effectors)
        start = local if previous is None else previous
        return solve_skeleton(
            skeleton, start, effectors, move_root=True, root_stiffness=root_stiffness,
            pose=pose if previous is None else None, **settings,
        )  # fmt: skip
    # a chain: from the last solution, with a pole from its input
    if previous is None or effectors[0].pole is not None:
        return solve_skeleton(skeleton, local, effectors, pose=pose, **settings)
    continued = solve_skeleton(skeleton, previous, effectors, pose=pose, **settings)
    if not chain_restarts(skeleton, previous, effectors[0], continued, settings["tolerance"]):
        return continued
    own = solve_skeleton(skeleton, local, effectors, **settings)
    keep = keep_own(previous, continued.local, _miss(continued), own.local, _miss(own), settings["tolerance"])
    return own if keep else continued


def _next(skeleton, local: np.ndarray, effectors, previous, previous_input, settings: dict, frames) -> SkeletonSolution:
    """solve_skeleton_next of several effectors (or a pin), no aim and the root where it is
    (`settings`: the method's and its options, in one dict); `frames`: the sequence's `_Frames`
    (None: worked out for this frame alone)."""
    effectors = resolve_pins(skeleton, local, effectors)  # a pin holds where this frame's input has it
    if previous is None:  # frame 0 continues its input pose; from far off, a method may need more
        first = _stepped(skeleton, local, effectors, settings, PREDICT_STEPS, keep=False, frames=frames)
        if first.reached:
            return first
        tried = _stepped(skeleton, local, effectors, settings, None, keep=False, frames=frames)
        return tried if tried.reached else first
    start = np.asarray(previous, dtype=float)
    changed = previous_input is not None and largest_turn(previous_input, local) > CHANGED
    if changed:  # the input's own change between the frames, carried onto the last solution
        start = quat.normalize(quat.multiply(start, quat.multiply(quat.conjugate(previous_input), local)))
    continued = _stepped(skeleton, start, effectors, settings, PREDICT_STEPS, frames=frames)
    if not (changed or any(e.pole is not None for e in effectors)):
        return continued
    own = _stepped(skeleton, local, effectors, settings, PREDICT_STEPS, frames=frames)
    if own.reached != continued.reached:
        return own if own.reached else continued
    pops = largest_turn(previous, own.local) > POP_RATIO * largest_turn(previous, continued.local) + POP_MARGIN
    return continued if pops else own


def _aim_settings(settings: dict) -> dict:
    """common.aim_goals.after_reach's keywords from a frame's solve settings."""
    return {key: settings[key] for key in ("method", "tolerance", "max_iterations")}


def _stepped(
    skeleton, start: np.ndarray, effectors: list[Effector], settings: dict, steps, keep: bool = True, frames=None
) -> SkeletonSolution:
    """The method from `start` moved toward the goals by at most `steps` least-squares steps (None:
    the least-squares method's own cap) by the one predictor, skeleton_solve's least-squares steps
    (`least_squares_steps`, as `stepped_start` takes them: stopped within PREDICT_WITHIN
    tolerances, poles left to the method, kept only where every pin stays that near; without
    stepped_start's first look, the frame's targets having left the last solution). A method with
    a start of its own (`Method.tree_start_steps`: FABRIK) finds this one near already, or steps
    on from it where three steps fell short (taking one prediction's steps only raised FABRIK's
    rotation cost on five effectors by 45%: docs/design.md). `keep`: a start already meeting
    every goal is the result without the method's call (`_kept`); off on a bake's first frame,
    whose call is the one that checks the method can solve these effectors at all (FABRIK's tree
    declines sphere placement), the same settings every frame. The steps' own measure of their
    pose spares what would measure it again: the kept check where a tip is clearly off
    (KEPT_MARGIN), and the method's start steps their first look (solve_skeleton's `start_error`).
    `frames`: the sequence's `_Frames` (None: this frame's own)."""
    if frames is None:
        frames = _Frames(skeleton, effectors, settings["method"])
    # The least-squares method's own solve is the steps, and no frame is kept: its start is the last
    # frame's solution, which the targets have left (0 of 120 frames met on bench_tree's bakes, where
    # the look cost it 10-16%: bench/bench_tree_kept.py).
    if frames.entry.least_squares:
        return _own(skeleton, start, effectors, settings, frames)
    tolerance = frames.tolerance(settings["tolerance"])
    if steps is None:
        steps_by = registry.LEAST_SQUARES
        steps = steps_by.tree_max_iterations or steps_by.max_iterations
    goals = merge_shared(effectors)
    start, measured, floats = _predict(skeleton, start, goals, PREDICT_WITHIN * float(tolerance), steps, frames)
    if goals is not effectors or frames.soft:
        measured = None  # (measured toward other goals: merged, or not yet softened)
    if keep and measured is not None:  # a start the prediction measured clearly off is not met (KEPT_MARGIN)
        keep = all(d <= KEPT_MARGIN * tolerance for d in measured.tolist())
    kept = _kept(skeleton, start, effectors, settings, frames, floats) if keep else None
    return kept if kept is not None else solve_skeleton(skeleton, start, effectors, start_error=measured, **settings)


def _kept(skeleton, start: np.ndarray, effectors: list[Effector], settings: dict, moved, floats=None):
    """The method's own result from `start` built without calling it, where `start` already meets
    every goal the method checks (pins resolved): no pole (the prediction leaves poles to the
    method, which spins them even at 0 iterations), every end within the tolerance and every
    orientation goal within it as an arc of its branch (the pins' hold rule, common.pins.held, and
    the Jacobian's), all measured on `start` clamped into the limits (as every tree kernel starts).
    Every tree kernel then returns that start after 0 iterations (triangulation's "every goal met
    as it stands", the shared loop's (common.tree_run) and the Jacobian's stop before a step (Pose
    Pull off); FABRIK's start steps take none within the tolerance), and no pin is held again: the
    result is theirs up to rounding (tests/solvers/test_bake_kept_frame.py). A bake's frame
    continued from the last and stepped toward its goals often is (two hands: 52 of 120), and
    the method's fixed cost per call (its checks, plan, forward kinematics, result) was most of
    such a frame. None: the method solves. `moved`: the bones the effectors move (ascending), or
    the sequence's `_Frames`, which holds them. `floats`: `start`'s rows as a flat tuple of floats
    (`_predict`'s), a new array `start` no one else holds (None: rows read from `start`, a copy kept)."""
    if any(e.pole is not None for e in effectors):
        return None
    if isinstance(moved, _Frames):
        frames = moved
    else:
        frames = _Frames(skeleton, effectors, settings["method"])
        frames.moved = moved
    if frames.kernel is None:
        runs, reason = tree_kernel(frames.entry)
        frames.kernel = runs.name, reason
    tolerance = frames.kept_tolerance(settings)
    goals = soften_effectors(skeleton, effectors) if frames.soft else effectors  # (none left in a bake's frames)
    moved = frames.moved
    if floats is None or skeleton.limits is not None:
        local = np.array(start, dtype=float)
        if skeleton.limits is not None:
            local[moved] = joint_limits.clamp(skeleton.limits, np.array(moved), local[moved])
        floats = rows(local)
    else:  # (the prediction's own rows: the same floats as `start`'s)
        local = start
        floats = [floats[k : k + 4] for k in range(0, len(floats), 4)]
    world, heads = forward(skeleton, floats, moved)  # (the goals' branches only)
    error = []
    for e in goals:
        distance = math.dist(end_point(skeleton, world, heads, e.bone), e.position.tolist())
        if not distance <= tolerance:
            return None
        if e.orientation is not None and not orientation_arc(skeleton, world, e) <= tolerance:
            return None
        error.append(distance)
    return finish(skeleton, local, goals, tolerance, 0, *frames.kernel, error=np.array(error))


def solve_skeleton_sequence(
    skeleton: Skeleton,
    local: np.ndarray,
    effectors: list[Effector],
    positions: np.ndarray,
    *,
    method: str,
    tolerance: object = None,
    max_iterations: int | None = None,
    poles: np.ndarray | None = None,
    orientations: np.ndarray | None = None,
    previous: np.ndarray | None = None,
    pose: Pose | None = None,
    progress: Callable[[int], None] | None = None,
    move_root: bool = False,
    root_stiffness: float = DEFAULT_STIFFNESS,
    **options: object,
) -> SkeletonBatch:
    """Solve `effectors` at m frames in order, every frame with the same input pose `local` (n, 4),
    each continuing the last (`solve_skeleton_next`). `positions`, `poles` and `max_iterations` as
    solve_skeleton_many's; `tolerance` one distance or one per frame (m,); `orientations` (m, k, 4):
    each frame's tip orientations (NaN rows: the effector's own); `previous`: the solution the
    first frame continues (None: it is a first frame); `progress(f)` after frame f (about every
    hundredth). The result's reason joins the frames' reasons.
    One effector (not a pin): the branch's chain through `solve_sequence` (`pose`: the input pose
    as read, see `solve_skeleton`; used where the chain starts from `local`). `move_root`: every
    frame through solve_skeleton_next's movable root (the batch's `root_shift`: the root's move per
    frame; reason MOVING_ROOT)."""
    local, positions, poles = frame_rows(skeleton, local, effectors, positions, poles)
    previous = previous_rows(local, previous)  # (the held kernel solves from it unchecked)
    m = len(positions)
    tolerances = None
    if tolerance is not None and np.ndim(tolerance) > 0:
        tolerances = np.asarray(tolerance, dtype=float)
        if tolerances.shape != (m,):
            raise ValueError(f"tolerance must be a distance or one per frame ({m}), got shape {tolerances.shape}")
    turns = _orientation_rows(effectors, orientations, m)
    aims = aiming(effectors)
    if aims:  # aims after the reach, frame by frame (common.aim_goals)
        method_settings(method, None if tolerances is not None else tolerance, max_iterations, options, 1.0)
        reaching = [j for j in range(len(effectors)) if j not in aims]
        if turns is not None and np.any(np.isfinite(turns[:, aims])):
            raise ValueError("an aiming effector takes no tip orientation")

        def reach(goals, rows, poles):
            return solve_skeleton_sequence(
                skeleton, local, goals, rows, method=method, tolerance=tolerance, max_iterations=max_iterations,
                poles=poles, orientations=None if turns is None else turns[:, reaching], previous=previous,
                pose=pose, progress=progress, move_root=move_root, root_stiffness=root_stiffness, **options,
            )  # fmt: skip

        return after_reach_frames(
            skeleton, local, effectors, positions, poles, reach,
            tolerance=tolerance, max_iterations=max_iterations, method=method,
        )  # fmt: skip
    positions, effectors = soften_positions(skeleton, effectors, positions)  # soft IK: once, here
    settings = {"method": method, "tolerance": tolerance, "max_iterations": max_iterations, **options}
    reason = ""
    if move_root:
        settings.update(move_root=True, root_stiffness=root_stiffness)
        reason = MOVING_ROOT
    elif len(effectors) == 1 and not effectors[0].pin:
        posed = np.isfinite(poles[:, 0, 0])
        if posed.all() or not posed.any():
            return _chain_sequence(
                skeleton, local, effectors[0], positions, poles, turns, previous, pose, settings, progress
            )
        reason = SOME_POLES
    last = [previous]
    report = _sparse(progress, m)
    # Several effectors (or a pin), the root where it is: solve_skeleton_next's own path, with what
    # every frame works out alike worked out once (`_Frames`).
    alike = None if reason else _Frames(skeleton, resolve_pins(skeleton, local, effectors), method, turns is None)

    def frame(f: int) -> SkeletonSolution:
        frame_goals = frame_effectors(effectors, positions, poles, f)
        if turns is not None:
            frame_goals = [e if e.pin else replace(e, orientation=turns[f, j]) for j, e in enumerate(frame_goals)]
        if tolerances is not None:
            settings["tolerance"] = float(tolerances[f])
        if alike is not None:
            sol = _next(skeleton, local, frame_goals, last[0], None, settings, alike)
        else:
            sol = solve_skeleton_next(skeleton, local, frame_goals, last[0], **settings)
        last[0] = sol.local
        if report is not None:
            report(f)
        return sol

    return solve_frames(local, positions, method, frame, reason)


def _orientation_rows(effectors: list[Effector], orientations, m: int) -> np.ndarray | None:
    """(m, k, 4) tip orientations per frame, each effector's own where a row is NaN; None: none given."""
    if orientations is None:
        return None
    rows = np.array(orientations, dtype=float)
    k = len(effectors)
    if rows.shape != (m, k, 4):
        raise ValueError(f"orientations must have shape ({m}, {k}, 4), got {rows.shape}")
    for j, e in enumerate(effectors):
        unset = ~np.all(np.isfinite(rows[:, j]), axis=1)
        if unset.any():
            if e.orientation is None and not unset.all():
                raise ValueError("an effector's orientation must be given on every frame or none")
            rows[unset, j] = np.nan if e.orientation is None else e.orientation
    if not np.any(np.isfinite(rows)):
        return None
    return rows


def _sparse(progress: Callable[[int], None] | None, m: int) -> Callable[[int], None] | None:
    """`progress` called for about every hundredth frame and the last one."""
    if progress is None:
        return None
    stride = max(1, m // 100)
    return lambda f: progress(f) if (f + 1) % stride == 0 or f == m - 1 else None


def _chain_sequence(
    skeleton, local, effector: Effector, positions, poles, turns, previous, pose, settings: dict, progress
) -> SkeletonBatch:
    """One effector's frames: its branch's chain through `solve_sequence`, from `previous` (the
    solution the first frame continues) unless the pole restarts every frame from the input."""
    poled = bool(np.isfinite(poles[0, 0, 0]))
    start = local if previous is None or poled else np.asarray(previous, dtype=float)
    chain, bones = branch_chain(skeleton, start, effector.bone, pose if start is local else None)
    goals = effector_goals(effector)
    goals["pole"] = poles[:, 0] if poled else None
    if turns is not None and np.all(np.isfinite(turns[:, 0])):
        goals.update(target_rotation=turns[:, 0], rotation_weight=effector.rotation_weight)
    steps = solve_sequence(chain, positions[:, 0], keep_points=False, progress=progress, **goals, **settings)
    rotations = branch_locals(skeleton, start, bones, steps.frames)
    return SkeletonBatch(rotations, steps.error[:, None], steps.reached, steps.iterations, steps.method, steps.reason)
