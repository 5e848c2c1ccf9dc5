"""Jacobian IK on a skeleton: every effector's rows stacked in one Jacobian (registry.Method.tree).

Unknowns: each moved bone's ball joint as a rotation vector d_i in its own frame (L_i <- L_i exp(d_i)
as jacobian.chain_numpy's limited chains, taken to first order: L_i (1, d_i/2) normalised); a locked axis
has no column. Joint i's axis a, u = F_i e_a in world space, has the column u x (end_e - head_i) in
effector e's position rows when bone i is on e's branch (zero otherwise), and u in its rotation rows.

Rows: 3 per position goal, 3 more per orientation goal (the world rotation vector from the bone's
frame to the wanted one) scaled by rotation_weight x the effector's branch length, so a radian counts
as an arc of the branch. An effector's rows are scaled by sqrt(weight / the mean weight of its
priority level): goals that conflict settle where sum(weight |error|^2) is least.

Per-joint weights, Grassia's mass-matrix form: with W = diag(1 - stiffness) the step is
q' = W J^T (J W J^T)^-1 e, solved as the plain problem in y = W^-1/2 q' with J~ = J W^1/2.
With `joint_weighting` "MASS", W = S^1/2 M_ff(q)^-1 S^1/2 (M the moved bones' joint-space inertia in
their own axes, solvers.common.mass; S the stiffness weights, f the free axes): q' = T y with
T T^T = W (mass.weighted_whitening), J~ = J T, the pull under the same change of variables (T^T pull).

Priority levels (solvers.skeleton.level: every pin first, then priority 0, 1, ...), task-priority
recursion: y = y_1 + (J_2 N_1)^+ (e_2 - J_2 y_1), ...,
N_{k+1} = N_k - (J_k N_k)^+ (J_k N_k), each inverse damped (DLS) as the variant says, the projectors
N exact (rank-thresholded SVD), so a lower level never moves a higher one to first order.

Nullspace secondary task (Parent eq. 5.28, with the sign that lowers H):
y += N (-gain grad H), H = 1/2 sum_i |log(A_i^-1 L_i)|^2 over the moved bones, A the attractor pose
(the rest pose or the input pose). -grad H is exactly the direction that turns each joint toward A.

A solve stops when every goal is within the tolerance, or when no level's weighted error has dropped
for PATIENCE iterations (conflicting goals: the weighted least-squares compromise), and returns the
best pose it met. DLS damps at least ERROR_DAMPING x the squared error the step can remove (from the
highest level not yet met; tree_settings), until a step stops lowering the error: far goals are
approached in shorter, more nearly least-motion steps, near ones (a bake's next frame) take the
plain step.

The common case (positions only, one level, no limits, stiffness, mass or pull) runs in
jacobian.tree_plain: this very iteration laid out for numpy's per-call cost."""

from __future__ import annotations

import math
from dataclasses import fields

import numpy as np

from .. import limits as joint_limits
from .. import quat
from ..common import goals, mass
from ..model.chain import Chain
from ..skeleton import Effector, Skeleton, SkeletonSolution, finish, level
from . import tree_plain
from . import tree_steps as steps
from .tree_plain import MULTIPLY, TO_MATRIX
from .tree_settings import (
    CALM,
    CORRECTIONS,
    DEFAULT_DAMPING,
    ERROR_DAMPING,
    LM_DOWN,
    LM_FLOOR,
    LM_FLOOR_REFUSED,
    LM_UP,
    PATIENCE,
    RESOLVES,
    SETTLED,
)

_STRUCTURES: dict = {}  # (skeleton's topology and limits, effector layout) -> Structure: reused by later solves
_CACHE_SIZE = 32
_NO_ROWS = np.zeros((0, 3))
# The factorisation itself, the gufunc np.linalg.cholesky wraps: its checks and error-state
# handling cost more than the 30 x 30 factorisation (every block here is positive definite).
# r @ _SKEW is -[r]x flattened (row-major): [[0, r2, -r1], [-r2, 0, r0], [r1, -r0, 0]]
_SKEW = np.zeros((3, 9))
_SKEW[2, 1] = _SKEW[0, 5] = _SKEW[1, 6] = 1.0
_SKEW[1, 2] = _SKEW[2, 3] = _SKEW[0, 7] = -1.0




def _matrices(q: np.ndarray) -> np.ndarray:
    return ((q[:, :, None] * q[:, None, :]).reshape(-1, 16) @ TO_MATRIX).reshape(-1, 3, 3)


def _multiply(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return (a[:, :, None] * b[:, None, :]).reshape(-1, 16) @ MULTIPLY


class Structure:
    """What a solve needs of the skeleton and the effectors' layout (bones, priorities, which have an
    orientation goal): built once, reused by later solves of the same layout (a Live session, a bake)."""

    def __init__(
        self, skeleton: Skeleton, bones: tuple, priority: tuple, turned: tuple, frozen: frozenset = frozenset()
    ) -> None:
        branches = [skeleton.branch(b) for b in bones]
        moved = sorted({b for branch in branches for b in branch})
        index = {b: k for k, b in enumerate(moved)}
        m = len(moved)
        self.moved, self.m = np.array(moved), m
        self.parent = np.array([index.get(skeleton.parents[b], m) for b in moved])  # m: the base frame
        self.root = self.parent == m
        ancestors = np.eye(m)  # row k: k and its ancestors (a head is the sum of their world offsets)
        for k in range(m):
            if not self.root[k]:
                ancestors[k] += ancestors[self.parent[k]]
        # Frames by pointer jumping (each round doubles the stretch of ancestors a bone's product
        # covers): log2 of the depth batched products instead of one per depth level. Index m is
        # the identity above every root; the base frame is folded into the roots' references.
        self.jumps, up = [], np.append(self.parent, m)
        while np.any(up[:m] != m):
            self.jumps.append(up[:m].copy())
            up = up[up]
        self.frame_start = np.empty((m + 1, 3, 3))
        self.frame_start[m] = np.eye(3)
        self.limits = None if skeleton.limits is None else skeleton.limits.subset(moved)
        self.limited = np.flatnonzero(self.limits.active) if self.limits is not None else np.arange(0)
        weight = (
            np.ones((m, 3)) if self.limits is None else np.where(self.limits.lock, 0.0, 1.0 - self.limits.stiffness)
        )
        weight[[index[b] for b in frozen if b in index]] = 0.0  # bones held as they are: no columns
        self.cols = np.flatnonzero(weight.ravel() > 0.0)
        self.col_scale = np.sqrt(weight.ravel()[self.cols])
        # Shortcuts of the common case (every axis free, no stiffness): no column picking or scaling.
        self.every_col = len(self.cols) == 3 * m
        self.unit_cols = bool(np.all(self.col_scale == 1.0))
        self.bones = np.array([index[b] for b in bones])
        # The mass weighting's terms (mass.mass_matrix over the moved bones): parents among them, each
        # bone's link as a vector in its own frame (its tail is head + frame @ link), capsule radii.
        self.mass_parents = tuple(-1 if r else int(p) for r, p in zip(self.root, self.parent, strict=True))
        # The heads and the effectors' ends at once: each end a point below its bone (offset: the
        # bone's link), every point the sum of its ancestors' world offsets.
        count = len(bones)
        self.point_parent = np.concatenate((self.parent, self.bones))
        self.ancestors = np.zeros((m + count, m + count))
        self.ancestors[:m, :m] = ancestors
        self.ancestors[m:, :m] = ancestors[self.bones]
        self.ancestors[m:, m:] = np.eye(count)
        self.mask = np.zeros((len(bones), m))
        for e, branch in enumerate(branches):
            self.mask[e, [index[b] for b in branch]] = 1.0
        self.mask3 = self.mask[:, :, None]
        self.priority = np.array(priority)
        self.turned = np.flatnonzero(turned)
        row_priority = np.concatenate((np.repeat(self.priority, 3), np.repeat(self.priority[self.turned], 3)))
        self.row_levels = [np.flatnonzero(row_priority == p) for p in np.unique(self.priority)]
        self.effector_levels = [np.flatnonzero(self.priority == p) for p in np.unique(self.priority)]
        # The relative weight of each effector within its level (for the row scales): by the weights.
        self.level_of = [int(np.searchsorted(np.unique(self.priority), p)) for p in priority]
        self.effector_bones, self.branches = list(bones), branches
        tree_plain.prepare(self)
        self.measure(skeleton)

    def measure(self, skeleton: Skeleton) -> None:
        """The terms from the skeleton's measures (rests, offsets, links, lengths, radii): Live reads
        the group afresh at every update, its offsets and links differing in float32's last bits, so
        these are taken again for each new skeleton of the same topology (a few numpy calls, where
        the structure above took longer than the five-effector solve)."""
        moved, m, bones = self.moved, self.m, self.effector_bones
        rests = skeleton.reference[moved].tobytes() + skeleton.base_frame.tobytes()
        if rests != getattr(self, "rests", None):  # (the rests are read from rest matrices: unchanged)
            reference = quat.to_matrix(skeleton.reference[moved])
            reference[self.root] = quat.to_matrix(skeleton.base_frame) @ reference[self.root]
            # R_i M(L_i) is linear in the outer product of L_i: one (16, 9) matrix per bone.
            self.turn = np.matmul(reference[:, None], TO_MATRIX.reshape(1, 16, 3, 3)).reshape(m, 16, 9)
            self.rests = rests
            # jacobian.tree_plain's unknowns are rest_i L_i: the rests as quaternions, the base's in the roots'
            turns = np.array(skeleton.reference[moved], dtype=float)
            turns[self.root] = quat.multiply(skeleton.base_frame[None], turns[self.root])
            self.rest_turns, self.rest_backs = turns, turns * [1.0, -1.0, -1.0, -1.0]
        reach = skeleton.lengths[:, None] * skeleton.links
        self.mass_links = reach[moved]
        self.mass_radii = (
            mass.default_radii(skeleton.lengths[moved]) if skeleton.radii is None else skeleton.radii[moved]
        )
        self.point_offsets = np.concatenate((skeleton.offsets[moved], reach[bones]))[:, :, None]
        tree_plain.measure(self, skeleton.offsets[moved], reach[bones])
        self.span = np.array([float(np.sum(skeleton.lengths[branch])) for branch in self.branches])
        self.mean_span, self.max_span = float(np.mean(self.span)), float(np.max(self.span))
        self.source = skeleton


def _topology_key(skeleton: Skeleton) -> tuple:
    """What a Structure takes from the skeleton besides its measures: parents and limits."""
    limits = skeleton.limits
    if limits is None:
        return tuple(skeleton.parents), None
    return tuple(skeleton.parents), tuple(getattr(limits, f.name).tobytes() for f in fields(limits))


class Tree:
    """A solve's structure (shared) and goals: targets, wanted orientations, row scales."""

    def __init__(self, skeleton: Skeleton, effectors: list[Effector], frozen: frozenset = frozenset()) -> None:
        bones = tuple(e.bone for e in effectors)
        priority = tuple(level(e) for e in effectors)  # pins above every target
        turned = tuple(e.orientation is not None and e.rotation_weight > 0.0 for e in effectors)
        key = (_topology_key(skeleton), bones, priority, turned, frozen)
        held = _STRUCTURES.get(key)
        if held is None:
            if len(_STRUCTURES) >= _CACHE_SIZE:
                _STRUCTURES.clear()
            held = _STRUCTURES[key] = Structure(skeleton, bones, priority, turned, frozen)
        elif held.source is not skeleton:
            held.measure(skeleton)
        self.__dict__.update(held.__dict__)
        self.targets = np.array([e.position for e in effectors])
        weights = [float(e.weight) for e in effectors]
        if len(self.turned) or len(set(weights)) > 1:
            self.wanted = _matrices(np.array([effectors[k].orientation for k in self.turned]).reshape(-1, 4))
            means = [np.mean([weights[k] for k in level]) for level in self.effector_levels]
            scale = np.sqrt([w / means[level] for w, level in zip(weights, self.level_of, strict=True)])
            rotation = np.array([effectors[k].rotation_weight for k in self.turned]) * self.span[self.turned]
            self.row_scale = np.concatenate((np.repeat(scale, 3), np.repeat(scale[self.turned] * rotation, 3)))
        else:  # equal weights, positions only: every row as it is (relative to its level's mean, 1)
            self.row_scale = None

    def forward(self, local: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(frames (m, 3, 3), heads (m, 3), effector ends (E, 3)) of the moved bones' locals (m, 4)."""
        m = self.m
        frames = self.frame_start.copy()
        frames[:m] = ((local[:, :, None] * local[:, None, :]).reshape(m, 1, 16) @ self.turn).reshape(m, 3, 3)
        for up in self.jumps:
            frames[:m] = frames[up] @ frames[:m]
        points = self.ancestors @ (frames[self.point_parent] @ self.point_offsets)[:, :, 0]
        return frames[:m], points[:m], points[m:]

    def residual(self, frames: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(position errors (E, 3), rotation errors (turned, 3), the scaled error rows (R,))."""
        position = self.targets - ends
        if self.row_scale is None:
            return position, _NO_ROWS, position.ravel()
        if not len(self.turned):
            return position, _NO_ROWS, position.ravel() * self.row_scale
        rotation = steps.log_rotations(self.wanted @ frames[self.bones[self.turned]].transpose(0, 2, 1))
        return position, rotation, np.concatenate((position.ravel(), rotation.ravel())) * self.row_scale

    def jacobian(self, frames: np.ndarray, heads: np.ndarray, ends: np.ndarray) -> np.ndarray:
        """The stacked, row-scaled Jacobian (R, free columns), no joint weights yet."""
        m, count = self.m, len(self.bones)
        arms = (ends[:, None, :] - heads) * self.mask3  # (E, m, 3)
        # u x r = -[r]x u for every axis u (the columns of F_i): one batched product per effector
        skew = (arms.reshape(-1, 3) @ _SKEW).reshape(count, m, 3, 3)  # -[r]x
        position = (skew @ frames).transpose(0, 2, 1, 3).reshape(3 * count, 3 * m)
        if len(self.turned):
            turned = self.mask[self.turned][:, None, :, None] * frames.transpose(1, 0, 2)[None]
            position = np.concatenate((position, turned.reshape(3 * len(self.turned), 3 * m)))
        if not self.every_col:
            position = position[:, self.cols]
        return position if self.row_scale is None else position * self.row_scale[:, None]

    def inertia(self, frames: np.ndarray, heads: np.ndarray) -> np.ndarray:
        """M(q) (free columns, free columns) of the moved bones in their own axes, normalized."""
        tails = heads + (frames @ self.mass_links[:, :, None])[:, :, 0]
        full = mass.mass_matrix(heads, tails, self.mass_parents, self.mass_radii, axes=frames)
        return mass.weighting_inertia(full if self.every_col else full[np.ix_(self.cols, self.cols)])

    def state(self, frames: np.ndarray, ends: np.ndarray, tolerance: float):
        """(the scaled error rows (R,), each level's weighted squared error (0 where met), which levels
        have every goal within the tolerance: distance, and rotation as an arc of the branch)."""
        position, rotation, error = self.residual(frames, ends)
        if len(self.effector_levels) == 1 and not len(self.turned):  # the common case, in fewer steps
            cost, bound = float(error @ error), tolerance * tolerance
            if self.row_scale is None:  # cost: the plain sum of squared distances
                # Every goal met when the sum is within one tolerance; not all when it exceeds one for
                # each goal (the largest is at least the mean); in between, each is looked at.
                done = cost <= bound or (
                    cost <= len(position) * bound and float(np.einsum("ij,ij->i", position, position).max()) <= bound
                )
            else:
                done = float(np.einsum("ij,ij->i", position, position).max()) <= bound
            return error, [0.0 if done else cost], (done,)
        met = np.einsum("ij,ij->i", position, position) <= tolerance * tolerance
        if len(self.turned):
            met[self.turned] &= quat.norm(rotation) * self.span[self.turned] <= tolerance
        done = tuple(bool(met[level].all()) for level in self.effector_levels)
        levels = zip(done, self.row_levels, strict=True)
        costs = [0.0 if ok else float(error[rows] @ error[rows]) for ok, rows in levels]
        return error, costs, done


def solve(
    skeleton: Skeleton,
    local: np.ndarray,
    effectors: list[Effector],
    tolerance: float,
    max_iterations: int,
    options: dict,
    frozen: frozenset = frozenset(),
) -> SkeletonSolution | str:
    """`registry.Method.tree` for the Jacobian family (module doc). `frozen`: bones kept as they
    are (no columns; solvers.common.pins holds pins with only some bones free)."""
    tree = Tree(skeleton, effectors, frozen)
    segments = _pole_segments(skeleton, tree, effectors)
    if isinstance(segments, str):
        return segments
    variant, gain = options["variant"], float(options["nullspace_gain"])
    by_mass = options.get("joint_weighting", "STIFFNESS") == "MASS"
    lam2 = (options["damping"] * tree.mean_span) ** 2
    if variant == "dls" and lam2 == 0.0:
        variant = "pseudoinverse"
    if variant != "dls":
        lam2 = 0.0  # the pseudoinverse is undamped until a step is refused, the transpose never damped
    local = np.asarray(local, dtype=float)
    whole = tree.m == len(local)  # every bone moved (tree.moved ascending: all of them, in order)
    error = None
    if tree_plain.applies(tree, variant, gain, by_mass):  # no limited joint; it never writes its start
        max_step = float(options["max_step"])
        start = local if whole else local[tree.moved]
        current, iterations, squares = tree_plain.iterate(tree, start, tolerance, max_iterations, lam2, max_step)
        if not segments:  # its last forward kinematics is of the locals returned: their errors
            error = np.sqrt(squares)
    else:
        start = np.array(local[tree.moved], dtype=float)
        if tree.limits is not None:
            start[tree.limited] = joint_limits.clamp(tree.limits, tree.limited, start[tree.limited])
        current, iterations = _iterate(tree, start, tolerance, max_iterations, options, variant, by_mass, lam2)
        whole = False  # (its locals may be `start` itself)
    if whole:  # the plain kernel's locals: a new array
        out = current
    else:
        out = np.array(local, dtype=float)
        out[tree.moved] = current
    for effector, segment in segments:
        out = _spin_to_pole(skeleton, out, effector, segment)
    return finish(skeleton, out, effectors, tolerance, iterations, "jacobian", error=error)



def _iterate(tree: Tree, start, tolerance, max_iterations, options, variant, by_mass, lam2) -> tuple[np.ndarray, int]:
    """(the moved bones' locals (m, 4) of the best pose met, the iterations): the solve's loop
    (module doc) from `start`; `lam2` the DLS damping to start from (0: undamped)."""
    gain = float(options["nullspace_gain"])
    lam2_base = lam2 if lam2 > 0.0 else (DEFAULT_DAMPING * tree.mean_span) ** 2
    lam2_floor = LM_FLOOR * lam2_base
    attractor = np.array([1.0, 0.0, 0.0, 0.0]) if options["attractor"] == "rest" else start.copy()
    settle = SETTLED * tolerance / tree.max_span
    current = start
    frames, heads, ends = tree.forward(current)
    error, costs, done = tree.state(frames, ends, tolerance)
    ranked = _with_pull(costs, current, attractor, gain)
    radius, stale, iterations, jac, kept = float(options["max_step"]), 0, 0, None, CALM
    error_damping = ERROR_DAMPING
    inertia = None
    while iterations < max_iterations and not (gain == 0.0 and all(done)):
        pull = None if gain == 0.0 else -gain * _away(current, attractor).ravel()[tree.cols]
        mode = "dls" if variant == "pseudoinverse" and lam2 > 0.0 else variant
        if jac is None:  # the Jacobian of the current pose (a refused step keeps the pose, and it)
            jac = tree.jacobian(frames, heads, ends)
            inertia = tree.inertia(frames, heads) if by_mass else None
        # Damping that shrinks with the error (Levenberg-Marquardt with mu ~ |e|^2, which keeps
        # Newton's quadratic convergence near the goal): a far goal is approached in shorter, more
        # nearly least-motion steps (less turning overall, and fewer iterations than an undamped
        # first step's overshoot); a near one (a bake's next frame) gets the plain step.
        # (Priority levels: from the highest level not yet met, the one the step serves first.)
        damped = lam2
        if variant == "dls":
            rows = next((rows for ok, rows in zip(done, tree.row_levels, strict=True) if not ok), None)
            if rows is not None:
                part = jac if len(done) == 1 else jac[rows]
                pulled = part.T @ error[rows]
                removable = float(pulled @ pulled) * len(rows) / max(float(np.einsum("ij,ij->", part, part)), 1e-300)
                damped = max(lam2, error_damping * removable)
        trial = _advance(tree, current, jac, error, pull, mode, damped, radius, done, settle, inertia)
        iterations += 1
        trial_frames, trial_heads, trial_ends = tree.forward(trial)
        trial_error, trial_costs, trial_done = tree.state(trial_frames, trial_ends, tolerance)
        for _ in range(CORRECTIONS if len(done) > 1 else 0):
            # A lower level's step moves the met levels above it to second order (pins above all: a
            # planted foot drifts off as the spine turns): Newton steps on those levels' goals alone
            # take it back before the step is judged (a second-order correction).
            met = [rows for k, rows in enumerate(tree.row_levels) if done[k]]
            if not met or all(trial_done[k] for k in range(len(done)) if done[k]):
                break
            trial = _correct(
                tree, trial, trial_frames, trial_heads, trial_ends, trial_error, np.concatenate(met), by_mass
            )
            trial_frames, trial_heads, trial_ends = tree.forward(trial)
            trial_error, trial_costs, trial_done = tree.state(trial_frames, trial_ends, tolerance)
        trial_ranked = _with_pull(trial_costs, trial, attractor, gain)
        # Trust region: keep a step that lowers the ranked error and widen the next one (up to max_step;
        # after a refusal only once CALM steps in a row were kept); refuse one that does not and halve
        # the turn. Conflicting goals then settle instead of oscillating, and PATIENCE refusals in a
        # row end the solve: progress has stalled.
        verdict = steps.compare(trial_ranked, ranked)
        if verdict >= 0:
            current, frames, heads, ends, jac = trial, trial_frames, trial_heads, trial_ends, None
            error, done, ranked = trial_error, trial_done, trial_ranked
            kept += 1
            if kept > CALM:
                radius = min(2.0 * radius, float(options["max_step"]))
                lam2_floor = LM_FLOOR * lam2_base  # calm again: the floor as before the refusal (tree_settings)
                lam2 = max(LM_DOWN * lam2, lam2_floor) if variant == "dls" else LM_DOWN * lam2 * (lam2 > lam2_floor)
        else:  # refused: a shorter turn, and (Levenberg-Marquardt) more damping
            radius *= 0.5
            lam2_floor = LM_FLOOR_REFUSED * lam2_base
            lam2 = LM_UP * max(lam2, lam2_floor)
            kept = 0
        stale = 0 if verdict > 0 else stale + 1
        if verdict <= 0:  # the error has stopped falling: no longer damped with it (a compromise's approach)
            error_damping = 0.0
        if stale >= PATIENCE:
            break
    return current, iterations


def _pole_segments(skeleton: Skeleton, tree: Tree, effectors: list[Effector]) -> list | str:
    """(effector, its segment: the bones only it moves, top first) for each effector with a pole, or
    the reason a pole cannot act: its bone also moves another effector, or it has an orientation goal
    (the spin would turn the bone away from it)."""
    out: list = []
    if all(effector.pole is None for effector in effectors):
        return out
    shared = tree.mask.sum(axis=0) > 1.0  # moved bones on several effectors' branches
    for effector in effectors:
        if effector.pole is None:
            continue
        branch = skeleton.branch(effector.bone)
        own = [b for b in branch if not shared[np.searchsorted(tree.moved, b)]]
        if effector.bone not in own or effector.orientation is not None:
            why = "an orientation goal" if effector.orientation is not None else "bones other effectors also move"
            return f"a pole on effector bone {effector.bone}: its segment has {why} (a pole spins the segment)"
        out.append((effector, branch[branch.index(own[0]) :]))
    return out


def _spin_to_pole(skeleton: Skeleton, local: np.ndarray, effector: Effector, segment: list[int]) -> np.ndarray:
    """Blender's pole on the effector's own segment: the segment turned rigidly about its top head
    (solvers.common.goals.pole_spin on the segment as a chain), only the top bone's local rotation changed,
    kept in its limits. The segment's end stays where it is when it is on its target."""
    frames, heads, ends = skeleton.forward(local)
    top = segment[0]
    parent = skeleton.base_frame if skeleton.parents[top] == -1 else frames[skeleton.parents[top]]
    chain = Chain(
        np.concatenate((heads[segment], ends[segment[-1:]])),
        frames[segment],
        reference=skeleton.reference[segment],
        base_frame=parent,
    )
    tip, top_frame = chain.points[-1][None], chain.frames[:1]
    spin = goals.pole_spin(chain, tip, top_frame, effector.position[None], effector.pole[None], effector.pole_angle)[0]
    rest = quat.multiply(parent, skeleton.reference[top])
    turned = quat.multiply(quat.conjugate(rest), quat.multiply(spin, frames[top]))
    if skeleton.limits is not None:
        turned = joint_limits.clamp(skeleton.limits, top, turned)
    out = np.array(local)
    out[top] = quat.normalize(turned)
    return out


def _away(local: np.ndarray, attractor: np.ndarray) -> np.ndarray:
    """Each joint's rotation vector (m, 3) from the attractor: grad H, H = 1/2 sum |log(A^-1 L)|^2
    (turning L by -t x it, L <- L exp(-t v), lowers H by exactly (2t - t^2) H for t in 0..1)."""
    return quat.to_rotation_vector(quat.multiply(quat.conjugate(attractor), local))


def _with_pull(costs: list, local: np.ndarray, attractor: np.ndarray, gain: float) -> list:
    """The level costs, and H last when there is a pull (it ranks below every goal)."""
    if gain == 0.0:
        return costs
    return [*costs, 0.5 * float(np.sum(_away(local, attractor) ** 2))]


def _weights(tree: Tree, inertia: np.ndarray | None, weights: np.ndarray | None):
    """The change of variables q' = T y of the joint weights: None (every weight 1), the column scales
    (n,) (W diagonal) or, with the mass weighting's `inertia`, the matrix T (mass.weighted_whitening).
    `weights` (free columns, the mass weighting's): 1 - stiffness, 0 where a resolve locked an axis
    (None: the structure's)."""
    if inertia is not None:
        return mass.weighted_whitening(inertia, tree.col_scale**2 if weights is None else weights)
    return None if tree.unit_cols else tree.col_scale


def _into(scale, jac: np.ndarray, pull):
    """(J~, the pull in y) for the change of variables `scale` (`_weights`)."""
    if scale is None:
        return jac, pull
    if scale.ndim == 2:
        return jac @ scale, None if pull is None else scale.T @ pull
    return jac * scale, None if pull is None else pull * scale


def _back(scale, y: np.ndarray) -> np.ndarray:
    """q' = T y for the change of variables `scale` (`_weights`)."""
    if scale is None:
        return y
    return scale @ y if scale.ndim == 2 else scale * y


def _advance(tree: Tree, local, jac, error, pull, variant, lam2, max_step, done, settle, inertia=None):
    """One iteration's new locals (m, 4): the step, each joint clamped into its limits; where a joint
    had to be clamped its clamped axes are locked and the step solved again (RESOLVES times).

    A level's step (and the pull, below them all) joins only when every level above is settled:
    its goals met (`done`) or its own step turns no joint more than `settle` (it is as near as it
    gets). A lower level's step moves the higher goals to second order; they take that back before
    the lower level moves again. A lower level also gets only the turn that max_step leaves."""
    scale = _weights(tree, inertia, None)
    weights = None
    m = tree.m
    for attempt in range(RESOLVES + 1):
        weighted, weighted_pull = _into(scale, jac, pull)
        parts = steps.priority_steps(weighted, error, tree.row_levels, variant, lam2, weighted_pull)
        step = None
        budget = max_step
        for k, y in enumerate(parts):  # the highest level first
            y = _back(scale, y)
            if tree.every_col:
                part = y.reshape(m, 3)
            else:
                part = np.zeros(3 * m)
                part[tree.cols] = y
                part = part.reshape(m, 3)
            biggest = math.sqrt(float(np.einsum("ij,ij->i", part, part).max()))
            if biggest > budget:
                part = part * (budget / biggest)
            step = part if step is None else step + part
            budget -= min(biggest, budget)
            if budget <= 0.0 or (k < len(done) and not (done[k] or biggest <= settle)):
                break
        # L (1, d/2) normalised: exp(d) to first order (Newton's convergence is the same), and
        # a turn of 2 atan(|d|/2) <= |d| (within max_step), in a few numpy calls.
        turn = np.empty((m, 4))
        turn[:, 0] = 1.0
        turn[:, 1:] = 0.5 * step
        wanted = _multiply(local, turn)
        wanted /= np.sqrt(np.einsum("ij,ij->i", wanted, wanted))[:, None]
        if tree.limits is None or not len(tree.limited):
            return wanted
        bones = tree.limited
        clamped = np.array(wanted)
        clamped[bones] = joint_limits.clamp(tree.limits, bones, wanted[bones])
        over = quat.angle(quat.multiply(clamped[bones], quat.conjugate(wanted[bones])))
        if attempt == RESOLVES or not np.any(over > 1e-12):
            return clamped
        hit = bones[over > 1e-12]
        tw, sx, sz = joint_limits.twist_swing(wanted[hit])
        cw, cx, cz = joint_limits.twist_swing(clamped[hit])
        changed = np.stack((np.abs(sx - cx) > 1e-12, np.abs(tw - cw) > 1e-12, np.abs(sz - cz) > 1e-12), axis=1)
        lock = np.zeros((m, 3), dtype=bool)
        lock[hit] = changed
        if inertia is None:
            scale = np.where(lock.ravel()[tree.cols], 0.0, tree.col_scale if scale is None else scale)
        else:
            weights = np.where(lock.ravel()[tree.cols], 0.0, tree.col_scale**2 if weights is None else weights)
            scale = _weights(tree, inertia, weights)
    return clamped


def _correct(tree: Tree, local, frames, heads, ends, error, rows, by_mass: bool = False) -> np.ndarray:
    """`local` (m, 4) after one Gauss-Newton step on the error rows `rows` alone (the least joint
    motion, or the least kinetic energy `by_mass`; the pseudoinverse up to its ridge), each joint
    clamped into its limits."""
    jac = tree.jacobian(frames, heads, ends)[rows]
    scale = _weights(tree, tree.inertia(frames, heads) if by_mass else None, None)
    y = _back(scale, steps.inverse(_into(scale, jac, None)[0], error[rows], "pseudoinverse", 0.0))
    step = np.zeros(3 * tree.m)
    step[tree.cols] = y
    turn = np.empty((tree.m, 4))
    turn[:, 0] = 1.0
    turn[:, 1:] = 0.5 * step.reshape(tree.m, 3)
    out = _multiply(local, turn)
    out /= np.sqrt(np.einsum("ij,ij->i", out, out))[:, None]
    if tree.limits is not None and len(tree.limited):
        out[tree.limited] = joint_limits.clamp(tree.limits, tree.limited, out[tree.limited])
    return out
