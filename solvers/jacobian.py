"""Jacobian IK with ball joints (3 world-axis DOF per joint), Parent ch. 5:
transpose (step scaled as in Buss), pseudoinverse (eq. 5.20-5.23) and
damped least squares (eq. 5.24, the default). The joint velocities are
integrated exactly: bone i turns by the sum of the rotation vectors of
joints 0..i, then forward kinematics rebuilds the points, so bone lengths
never drift."""

from __future__ import annotations

import numpy as np

from . import quat
from .chain import Chain, as_real

VARIANTS = ("dls", "pseudoinverse", "transpose")


def check_options(variant: str, damping: float, max_step: float) -> None:
    if not isinstance(variant, str) or variant not in VARIANTS:
        raise ValueError(f"unknown jacobian variant {variant!r}; choose one of {', '.join(VARIANTS)}")
    if as_real(damping, "damping") < 0.0:
        raise ValueError(f"damping must be a finite number >= 0, got {damping!r}")
    if as_real(max_step, "max_step") <= 0.0:
        raise ValueError(f"max_step must be a positive angle in radians, got {max_step!r}")


def make_step(chain: Chain, variant: str = "dls", damping: float = 0.05, max_step: float = 0.5):
    """`damping` is lambda relative to the chain length (J scales with it);
    `max_step` caps each joint's turn per iteration, in radians."""
    check_options(variant, damping, max_step)
    n = chain.n_bones
    lam2 = (damping * chain.total_length) ** 2
    lengths = chain.lengths
    eye = np.eye(3)

    def step(points: np.ndarray, targets: np.ndarray) -> np.ndarray:
        k = points.shape[0]
        tip = points[:, -1]
        err = targets - tip
        arms = tip[:, None, :] - points[:, :n, :]  # (k, n, 3)
        # d tip / d omega_jk = e_k x arm_j  ->  J (k, 3, 3n); e_k x r = -[r]x e_k.
        jac = -np.cross(arms[:, :, None, :], eye[None, None, :, :])  # (k, n, 3 axes, 3 comps)
        jac = jac.transpose(0, 3, 1, 2).reshape(k, 3, 3 * n)
        jt = jac.transpose(0, 2, 1)
        if variant == "transpose":
            dtheta = jt @ err[:, :, None]
            jjte = jac @ dtheta
            alpha = np.sum(err[:, :, None] * jjte, axis=(1, 2)) / np.maximum(np.sum(jjte * jjte, axis=(1, 2)), 1e-300)
            dtheta = alpha[:, None, None] * dtheta
        elif variant == "pseudoinverse":
            dtheta = np.linalg.pinv(jac, rcond=1e-10) @ err[:, :, None]
        else:
            beta = np.linalg.solve(jac @ jt + lam2 * eye, err[:, :, None])
            dtheta = jt @ beta
        omega = dtheta.reshape(k, n, 3)
        biggest = np.linalg.norm(omega, axis=2).max(axis=1)
        omega *= np.minimum(1.0, max_step / np.maximum(biggest, 1e-300))[:, None, None]
        turn = quat.from_rotation_vector(np.cumsum(omega, axis=1))
        dirs = quat.normalize(np.diff(points, axis=1))
        dirs = quat.rotate(turn, dirs)
        new = np.empty_like(points)
        new[:, 0] = points[:, 0]
        new[:, 1:] = points[:, :1] + np.cumsum(lengths[None, :, None] * dirs, axis=1)
        return new

    return step
