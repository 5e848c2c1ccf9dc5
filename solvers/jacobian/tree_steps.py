"""The tree Jacobian's linear algebra (solvers.jacobian.tree): a step per priority level, each in
the nullspace of the levels above; DLS, pseudoinverse or transpose; the Cholesky-based inverse
root that keeps off threaded LAPACK; the ranked costs' comparison; rotation logs."""

from __future__ import annotations

import numpy as np

from .. import quat
from .tree_settings import PROGRESS, RIDGE

# LAPACK's Cholesky without numpy's wrappers where numpy has it (a 15 x 15 factorisation is called
# every step; see inverse_root).
_cholesky = getattr(getattr(np.linalg, "_umath_linalg", None), "cholesky_lo", np.linalg.cholesky)
_BLOCKS: dict[int, np.ndarray] = {}  # rows -> inverse_root's block with its constant lower-left identity


def priority_steps(jac: np.ndarray, error: np.ndarray, levels: list, variant: str, lam2: float, pull):
    """The scaled joint steps y of each priority level (a generator: a caller stops when it needs no
    more), highest first, each solved in the nullspace of the ones above for the error they leave;
    then the pull (the secondary task) projected into the nullspace of them all."""
    if len(levels) == 1 and pull is None:
        yield inverse(jac, error, variant, lam2)
        return
    y = np.zeros(jac.shape[1])
    null = None  # the projector onto what the levels so far leave free (None: everything)
    for k, rows in enumerate(levels):
        part = jac[rows] if null is None else jac[rows] @ null
        step = inverse(part, error[rows] - jac[rows] @ y, variant, lam2)
        yield step
        y = y + step
        if k + 1 < len(levels) or pull is not None:
            null = shrink(null, part)
    if pull is not None:
        yield null @ pull


def priority_step(jac: np.ndarray, error: np.ndarray, levels: list, variant: str, lam2: float, pull) -> np.ndarray:
    """The whole scaled joint step (the sum of `priority_steps`)."""
    return np.sum(list(priority_steps(jac, error, levels, variant, lam2, pull)), axis=0)


def inverse(jac: np.ndarray, error: np.ndarray, variant: str, lam2: float) -> np.ndarray:
    """The joint step for `error` through `jac` (R, C): DLS J^T (J J^T + lam2 I)^-1 e, the
    pseudoinverse (the same, with only a RIDGE against rounding) or the transpose (Buss's length)."""
    if variant == "transpose":
        direction = jac.T @ error
        moved = jac @ direction
        return (error @ moved) / max(moved @ moved, 1e-300) * direction
    root = inverse_root(jac, lam2 if variant == "dls" else 0.0)
    return jac.T @ (root @ (error @ root))


def inverse_root(jac: np.ndarray, lam2: float) -> np.ndarray:
    """W = L^-T with L L^T = J J^T + lam2 I (lam2 at least RIDGE), so (J J^T + lam2 I)^-1 = W W^T.

    One Cholesky factorisation of [[J J^T + lam2 I, .], [I, c I]], whose lower-left block is L^-T
    (c only keeps the whole positive definite): np.linalg.solve, svd and the like go through
    OpenBLAS's threaded LAPACK, and on a busy machine one 15 x 15 solve then takes milliseconds."""
    rows = jac.shape[0]
    square = jac @ jac.T
    lam2 = max(lam2, RIDGE * float(square.trace()) / max(rows, 1), 1e-100)
    template = _BLOCKS.get(rows)
    if template is None:
        template = _BLOCKS[rows] = np.zeros((2 * rows, 2 * rows))
        template[rows:, :rows] = np.eye(rows)
    block = template.copy()
    block[:rows, :rows] = square
    diagonal = block.reshape(-1)[:: 2 * rows + 1]  # a view: the diagonal
    diagonal[:rows] += lam2
    diagonal[rows:] = 2.0 / lam2  # > the largest eigenvalue of (J J^T + lam2 I)^-1
    return _cholesky(block)[rows:, :rows]


def shrink(null: np.ndarray | None, part: np.ndarray) -> np.ndarray:
    """N - part^+ part: the projector `null` without the row space of `part` (= jac N)."""
    z = part.T @ inverse_root(part, 0.0)
    start = np.eye(part.shape[1]) if null is None else null
    return start - z @ z.T


def compare(costs: list, best: list) -> int:
    """1 if the ranked costs beat `best` by more than PROGRESS, 0 if by less, -1 if not at all: the
    first entry that differs decides (a met level costs 0)."""
    for new, old in zip(costs, best, strict=True):
        if new < old:
            return 1 if new < old * (1.0 - PROGRESS) else 0
        if new > old:
            return -1
    return -1


def log_rotations(rotation: np.ndarray) -> np.ndarray:
    """Rotation vectors (k, 3) of rotation matrices (k, 3, 3) (angles below a half turn)."""
    v = 0.5 * np.stack(
        (
            rotation[:, 2, 1] - rotation[:, 1, 2],
            rotation[:, 0, 2] - rotation[:, 2, 0],
            rotation[:, 1, 0] - rotation[:, 0, 1],
        ),
        axis=-1,
    )
    s = quat.norm(v)
    c = 0.5 * (np.trace(rotation, axis1=1, axis2=2) - 1.0)
    angle = np.arctan2(s, c)
    return v * np.where(s > 1e-300, angle / np.where(s > 1e-300, s, 1.0), 1.0)[:, None]
