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

Modules: jacobian.tree_structure (the layout and a solve's goals: forward kinematics, errors,
the Jacobian), jacobian.tree_iterate (the iteration above), jacobian.tree_steps (each level's
step). The common case (positions only, one level, no limits, stiffness, mass or pull) runs in
jacobian.tree_plain: this very iteration laid out for numpy's per-call cost (written out as
straight-line Python on small trees: jacobian.tree_unrolled)."""

from __future__ import annotations

import math

import numpy as np

from .. import limits as joint_limits
from .. import quat
from ..common import goals
from ..model.chain import Chain
from ..skeleton import Effector, Skeleton, SkeletonSolution, finish
from . import tree_iterate, tree_plain, tree_structure, tree_unrolled
from .tree_structure import Tree


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
    held = tree_structure.kept(skeleton, effectors, frozen)
    variant, gain = options["variant"], float(options["nullspace_gain"])
    by_mass = options.get("joint_weighting", "STIFFNESS") == "MASS"
    lam2 = (options["damping"] * held.mean_span) ** 2
    if variant == "dls" and lam2 == 0.0:
        variant = "pseudoinverse"
    if variant != "dls":
        lam2 = 0.0  # the pseudoinverse is undamped until a step is refused, the transpose never damped
    local = np.asarray(local, dtype=float)
    whole = held.m == len(local)  # every bone moved (tree.moved ascending: all of them, in order)
    error = None
    if _plain(held, effectors, variant, gain, by_mass):
        # The common case straight from the effectors (no Tree: on a small tree its construction
        # cost a twentieth of the solve): what tree_plain.iterate runs for it, the same floats.
        segments: list = []
        start = local if whole else local[held.moved]
        max_step = float(options["max_step"])
        if held.written_out:
            targets = [c for e in effectors for c in e.position.tolist()]
            current, iterations, squares = tree_unrolled.run(
                held, start, targets, tolerance, max_iterations, lam2, max_step
            )
        else:
            targets = np.array([e.position for e in effectors])  # (Tree.targets)
            current, iterations, squares = tree_plain.run(
                held, start, targets, tolerance, max_iterations, lam2, max_step
            )
        error = np.array([math.sqrt(square) for square in squares])  # (np.sqrt costs more on a few)
    else:
        tree = Tree(skeleton, effectors, frozen, held)
        segments = _pole_segments(skeleton, tree, effectors)
        if isinstance(segments, str):
            return segments
        if tree_plain.applies(tree, variant, gain, by_mass):  # no limited joint; it never writes its start
            max_step = float(options["max_step"])
            start = local if whole else local[tree.moved]
            current, iterations, squares = tree_plain.iterate(tree, start, tolerance, max_iterations, lam2, max_step)
            if not segments:  # its last forward kinematics is of the locals returned: their errors
                error = np.array([math.sqrt(square) for square in squares])
        else:
            start = np.array(local[tree.moved], dtype=float)
            if tree.limits is not None:
                start[tree.limited] = joint_limits.clamp(tree.limits, tree.limited, start[tree.limited])
            current, iterations = tree_iterate.iterate(
                tree, start, tolerance, max_iterations, options, variant, by_mass, lam2
            )
            whole = False  # (its locals may be `start` itself)
    if whole:  # the plain kernel's locals: a new array
        out = current
    else:
        out = np.array(local, dtype=float)
        out[held.moved] = current
    for effector, segment in segments:
        out = _spin_to_pole(skeleton, out, effector, segment)
    return finish(skeleton, out, effectors, tolerance, iterations, "jacobian", error=error)


class Steps:
    """`solve`'s written-out case (`_plain` on a written-out layout: positions only, equal weights,
    no pole, limit or frozen bone, DLS) held for many solves of one layout on one skeleton (a
    bake's predictions, solvers.skeleton_sequence), the kernel called on floats: (the moved
    bones' locals (m x 4 floats, flat), the iterations, the squared distances at them), the very
    numbers `solve` turns into its result (each call's Structure look-up, option checks and
    result spared). Made by `steps`, which says why a layout is not this case."""

    __slots__ = ("_damping", "_layout", "held", "lam2", "max_step", "whole")

    def __init__(self, skeleton: Skeleton, effectors: list[Effector], options: dict, held) -> None:
        self._layout = effectors  # (their bones, levels and orientation goals: the Structure's key)
        self._damping, self.max_step = options["damping"], float(options["max_step"])
        self._hold(skeleton, held)

    def _hold(self, skeleton: Skeleton, held) -> None:
        self.held, self.whole = held, held.m == skeleton.n_bones
        self.lam2 = (self._damping * held.mean_span) ** 2

    def __call__(
        self, skeleton: Skeleton, local: np.ndarray, targets: list[float], tolerance: float, max_iterations: int
    ) -> tuple[tuple, int, list[float]]:
        """`local` (n, 4, float) toward `targets` (the effectors' positions, flat floats) as `solve`
        takes it with `tolerance` and `max_iterations`."""
        held = self.held
        if held.source is not skeleton:  # another skeleton of this topology measured it since
            self._hold(skeleton, tree_structure.kept(skeleton, self._layout))
            held = self.held
        start = local if self.whole else local[held.moved]
        kernel = held.unrolled.kernel or held.unrolled.compiled()
        return kernel(
            start.ravel().tolist(), held.unrolled_measures, targets, tolerance * tolerance, max_iterations,
            self.lam2, self.max_step,
        )  # fmt: skip


def steps(skeleton: Skeleton, effectors: list[Effector], options: dict) -> Steps | str:
    """`Steps` for `effectors`' layout on `skeleton` with `options`, or why `solve` would not take
    its written-out case straight from these effectors (their positions aside)."""
    held = tree_structure.kept(skeleton, effectors)
    lam2 = (options["damping"] * held.mean_span) ** 2
    if options["variant"] != "dls" or lam2 == 0.0:
        return "not damped least squares"
    by_mass = options.get("joint_weighting", "STIFFNESS") == "MASS"
    if not (held.written_out and _plain(held, effectors, "dls", float(options["nullspace_gain"]), by_mass)):
        return "not the written-out case (limits, orientations, priorities, weights, poles, options or size)"
    return Steps(skeleton, effectors, options, held)


def _plain(held, effectors: list[Effector], variant: str, gain: float, by_mass: bool) -> bool:
    """Whether the solve is tree_plain's case (tree_plain.applies: the layout's terms kept on the
    structure, `plain`; here the options, equal weights (every row as it is) and no pole)."""
    if not (held.plain and variant == "dls" and gain == 0.0 and not by_mass):
        return False
    weight = None  # (one pass, no set: a solve asks per call)
    for e in effectors:
        if e.pole is not None:
            return False
        if weight is None:
            weight = float(e.weight)
        elif float(e.weight) != weight:
            return False
    return weight is not None


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
