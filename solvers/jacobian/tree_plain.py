"""The tree Jacobian's common case in few numpy calls: positions only, one priority level, every axis
free with no stiffness or limit, DLS, no pull, no mass weighting (a character's hands, head and feet
reaching). It runs jacobian.tree_iterate.iterate's iteration (the same step, damping, trust region and
stop: the same poses to rounding, tests/solvers/test_tree_plain.py), laid out for numpy's per-call
cost, which on a tree of 10-20 bones is the whole cost:

- the unknowns are rest_i L_i, left unnormalised between steps (a turn L_i (1, d/2) is the same
  product on the right; the frames are those of the unit quaternions);
- forward kinematics on 4 x 4 affines (frames, heads and the effectors' end points at once) by
  pointer jumping: a gather and one batched product a round;
- the joints' rotation vectors in world axes (the DLS step is the same, each joint's change of axes
  being orthogonal), so J^T is a product of the points with constant matrices;
- (J J^T + lam2 I) x = e is one small LAPACK solve (positive definite with the damping), without
  np.linalg.solve's wrapper;
- no product large enough for OpenBLAS to split over threads (milliseconds on a busy machine).
"""

from __future__ import annotations

import math

import numpy as np

from .. import quat
from . import tree_unrolled
from .tree_settings import CALM, ERROR_DAMPING, LM_DOWN, LM_FLOOR, LM_FLOOR_REFUSED, LM_UP, PATIENCE, PROGRESS, RIDGE

# The largest J^T map (points to J^T, entries) taken as one product: beyond, two smaller products
# and a mask cost less (on the metarig: two hands' 4k entries faster, 12k slower; and from about
# 10k entries OpenBLAS splits a product over threads, milliseconds on a busy machine).
ONE_PRODUCT = 6000
# The raw gufunc np.linalg.solve wraps (its checks cost more than the 6-15 row solve).
_solve = getattr(getattr(np.linalg, "_umath_linalg", None), "solve1", np.linalg.solve)


def _bilinear(product) -> np.ndarray:
    """(16, k): `product` of two quaternions as one matrix product of their outer product (a_i b_j)."""
    eye = np.eye(4)
    return np.array([product(eye[i], eye[j]) for i in range(4) for j in range(4)])


# Rotation matrices of unit quaternions and Hamilton products, each one matrix product (few numpy calls
# per iteration: the solve's cost is their count, not their size).
TO_MATRIX = _bilinear(
    lambda a, b: np.array(
        [
            [
                a[0] * b[0] + a[1] * b[1] - a[2] * b[2] - a[3] * b[3],
                2 * (a[1] * b[2] - a[0] * b[3]),
                2 * (a[1] * b[3] + a[0] * b[2]),
            ],
            [
                2 * (a[1] * b[2] + a[0] * b[3]),
                a[0] * b[0] - a[1] * b[1] + a[2] * b[2] - a[3] * b[3],
                2 * (a[2] * b[3] - a[0] * b[1]),
            ],
            [
                2 * (a[1] * b[3] - a[0] * b[2]),
                2 * (a[2] * b[3] + a[0] * b[1]),
                a[0] * b[0] - a[1] * b[1] - a[2] * b[2] + a[3] * b[3],
            ],
        ]
    ).ravel()
)
MULTIPLY = _bilinear(quat.multiply)
# q (1, d/2) from q and (1, d): the products with d's entries halved.
_MULTIPLY_HALF = MULTIPLY * np.where(np.arange(16) % 4 == 0, 1.0, 0.5)[:, None]
# The rotation matrix of an unnormalised quaternion times its squared norm, and the squared norm (last).
_TO_SCALED = np.concatenate((TO_MATRIX, np.eye(4).reshape(16, 1)), axis=1)


def applies(tree, variant: str, gain: float, by_mass: bool) -> bool:
    """Whether `tree` (a jacobian.tree_structure.Tree) and the options are this kernel's case."""
    return (
        variant == "dls"
        and gain == 0.0
        and not by_mass
        and tree.every_col
        and tree.unit_cols
        and tree.row_scale is None
        and not len(tree.turned)
        and len(tree.effector_levels) == 1
        and (tree.limits is None or not len(tree.limited))
    )


def prepare(tree) -> None:
    """The topology's terms on `tree` (a jacobian.tree_structure.Structure). Nodes: the moved bones, then one
    end point below each effector's bone; pointer-jumping rounds over them (index n: the identity
    above every root). J^T in world axes: joint i's rows are (ends - head_i) @ cross, masked."""
    m, count = tree.m, len(tree.bones)
    n = m + count
    parent = np.concatenate((np.where(tree.root, n, tree.parent), tree.bones))
    tree.node_jumps, up = [], np.append(parent, n)
    while np.any(up[:n] != n):
        tree.node_jumps.append(up.copy())  # (n + 1,): the identity's own entry n keeps it
        up = up[up]
    levi = np.zeros((3, 3, 3))
    levi[0, 1, 2] = levi[1, 2, 0] = levi[2, 0, 1] = 1.0
    levi[0, 2, 1] = levi[2, 1, 0] = levi[1, 0, 2] = -1.0
    cross = np.zeros((count, 3, 3, count, 3))  # (e, b) x (k, e', c): c of e_k x r_e
    for e in range(count):
        cross[e, :, :, e, :] = levi.transpose(2, 1, 0)  # [b, k, c] = eps_{c k b}
    cross = cross.reshape(3 * count, 9 * count)
    mask = np.repeat(np.tile(tree.mask.T[:, None, :], (1, 3, 1)), 3, axis=2).reshape(m, 9 * count)
    tree.cross, tree.cross_mask = cross, mask
    tree.cross_heads = cross.reshape(count, 3, 9 * count).sum(axis=0)  # one head subtracted from every end
    tree.arms = None
    if 3 * n * m * 9 * count <= ONE_PRODUCT:  # J^T flattened = the points flattened (3n) @ arms
        arms = np.zeros((n, 3, m, 9 * count))
        for i in range(m):
            arms[m:, :, i, :] = cross.reshape(count, 3, 9 * count)
            arms[i, :, i, :] = -tree.cross_heads
        tree.arms = (arms * mask[None, None]).reshape(3 * n, m * 9 * count)
    tree_unrolled.prepare(tree)


def measure(tree, offsets: np.ndarray, ends: np.ndarray) -> None:
    """The measures' terms on `tree`: the nodes' affines without their rotations (offsets in the
    parent's frame; an end point: no rotation, its bone's link). (Its rests, `rest_turns` and their
    conjugates `rest_backs`, come with the structure's other rest terms: jacobian.tree.)"""
    m, n = tree.m, tree.m + len(tree.bones)
    start = np.zeros((n + 1, 4, 4))
    start[:, 3, 3] = 1.0
    start[m:, :3, :3] = np.eye(3)
    start[:m, :3, 3] = offsets
    start[m:n, :3, 3] = ends
    tree.affine_start = start
    tree_unrolled.measure(tree, offsets, ends)


def _product(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Hamilton products a_i b_i of (m, 4) quaternions, one matrix product (quat.multiply takes a
    dozen numpy calls)."""
    return np.dot((a[:, :, None] * b[:, None, :]).reshape(-1, 16), MULTIPLY)


def _forward(tree, turned: np.ndarray):
    """(nodes' world affines (n + 1, 4, 4)) of the moved bones' rest_i L_i `turned` (m, 4, not
    necessarily of unit length): frames [:m, :3, :3], heads [:m, :3, 3], ends [m:n, :3, 3]; pointer
    jumping, one numpy call a round and a gather."""
    m = len(turned)
    turned = turned.reshape(m, 4, 1)
    nodes = tree.affine_start.copy()
    scaled = np.dot((turned * turned.reshape(m, 1, 4)).reshape(m, 16), _TO_SCALED)
    nodes[:m, :3, :3] = (scaled[:, :9] / scaled[:, 9:]).reshape(m, 3, 3)
    for up in tree.node_jumps:
        nodes = np.matmul(nodes.take(up, 0), nodes)
    return nodes


def iterate(tree, start: np.ndarray, tolerance: float, max_iterations: int, lam2: float, max_step: float):
    """jacobian.tree_iterate.iterate for this case: (the moved bones' locals (m, 4), the iterations, the
    effectors' squared distances at them: forward kinematics of those very locals). A small tree
    runs written out (jacobian.tree_unrolled: the same iteration)."""
    if tree.unrolled is not None:
        return tree_unrolled.iterate(tree, start, tolerance, max_iterations, lam2, max_step)
    return run(tree, start, tree.targets, tolerance, max_iterations, lam2, max_step)


def run(
    tree, start: np.ndarray, targets: np.ndarray, tolerance: float, max_iterations: int, lam2: float,
    max_step: float,
):  # fmt: skip
    """`iterate` (not written out) on a structure (jacobian.tree_structure.Structure) and the targets
    (E, 3): what jacobian.tree runs straight from the effectors on a tree too large to write out."""
    m, count = tree.m, len(tree.bones)
    n, rows = m + count, 3 * count
    bound = tolerance * tolerance
    arms, cross, cross_heads, cross_mask = tree.arms, tree.cross, tree.cross_heads, tree.cross_mask
    dot, matmul = np.dot, np.matmul
    lam2_base, lam2_floor = lam2, LM_FLOOR * lam2
    turn = np.empty((m, 4))
    turn[:, 0] = 1.0
    # The unknowns: rest_i L_i (a turn L_i (1, d/2) is the same product on the right).
    current = _product(tree.rest_turns, start)
    nodes = _forward(tree, current)
    error = (targets - nodes[m:n, :3, 3]).reshape(rows)
    squares = [x * x + y * y + z * z for x, y, z in error.reshape(count, 3).tolist()]
    cost, done = sum(squares), max(squares) <= bound
    radius, stale, iterations, kept, jt, damped = max_step, 0, 0, CALM, None, False
    error_damping = ERROR_DAMPING
    while iterations < max_iterations and not done:
        if jt is None:  # J^T in world axes (3m, R) at the current pose (a refused step keeps it)
            if arms is not None:
                jt = dot(nodes[:n, :3, 3].reshape(3 * n), arms).reshape(3 * m, rows)
            else:
                jt = dot(nodes[m:n, :3, 3].reshape(rows), cross) - dot(nodes[:m, :3, 3], cross_heads)
                jt = (jt * cross_mask).reshape(3 * m, rows)
            square = dot(jt.T, jt)
            trace = sum(square.reshape(-1)[:: rows + 1].tolist())
            pulled = dot(jt, error)
            removable = float(dot(pulled, pulled)) * rows / max(trace, 1e-300)
        elif damped:  # a refused step's: J J^T again, undamped
            square = dot(jt.T, jt)
        damped = True
        square.reshape(-1)[:: rows + 1] += max(lam2, error_damping * removable, RIDGE * trace / rows, 1e-100)
        step = dot(jt, _solve(square, error))
        if float(dot(step, step)) > radius * radius:  # some joint may turn more than the radius
            step = step.reshape(m, 3)
            biggest = math.sqrt(max(np.einsum("ij,ij->i", step, step).tolist()))
            if biggest > radius:
                step = step * (radius / biggest)
        # Each joint's turn in its own axes, d_i = F_i^T w_i; L (1, d/2) as jacobian.tree, its length
        # left as it comes (the frames are of L / |L|; normalised once, at the end).
        matmul(step.reshape(m, 1, 3), nodes[:m, :3, :3], out=turn[:, None, 1:])
        trial = dot((current.reshape(m, 4, 1) * turn.reshape(m, 1, 4)).reshape(m, 16), _MULTIPLY_HALF)
        iterations += 1
        trial_nodes = _forward(tree, trial)
        trial_error = (targets - trial_nodes[m:n, :3, 3]).reshape(rows)
        trial_squares = [x * x + y * y + z * z for x, y, z in trial_error.reshape(count, 3).tolist()]
        trial_done = max(trial_squares) <= bound
        trial_cost = 0.0 if trial_done else sum(trial_squares)
        # jacobian.tree_steps.compare on the one level's cost, and the trust region of jacobian.tree_iterate.iterate
        verdict = (1 if trial_cost < cost * (1.0 - PROGRESS) else 0) if trial_cost < cost else -1
        if verdict >= 0:
            current, nodes, error, squares, jt = trial, trial_nodes, trial_error, trial_squares, None
            cost, done = trial_cost, trial_done
            kept += 1
            if kept > CALM:
                radius = min(2.0 * radius, max_step)
                lam2_floor = LM_FLOOR * lam2_base  # calm again: the floor as before the refusal
                lam2 = max(LM_DOWN * lam2, lam2_floor)
        else:
            radius *= 0.5
            lam2_floor = LM_FLOOR_REFUSED * lam2_base
            lam2 = LM_UP * max(lam2, lam2_floor)
            kept = 0
        stale = 0 if verdict > 0 else stale + 1
        if verdict <= 0:  # as jacobian.tree_iterate.iterate: the error has stopped falling
            error_damping = 0.0
        if stale >= PATIENCE:
            break
    local = _product(tree.rest_backs, current)
    return local / np.sqrt(np.einsum("ij,ij->i", local, local))[:, None], iterations, squares
