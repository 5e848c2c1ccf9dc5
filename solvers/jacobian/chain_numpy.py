"""Jacobian IK with ball joints (3 rotational DOF per joint), Parent ch. 5:
transpose (step scaled as in Buss), pseudoinverse (eq. 5.20-5.23) and
damped least squares (eq. 5.24, the default). The joint velocities are
integrated exactly: bone i turns by the sum of the rotation vectors of
joints 0..i, then forward kinematics rebuilds the points, so bone lengths
never drift.

With joint limits the DOF are each bone's own X, Y, Z axes: locked axes get
no column, stiffness scales a column by 1 - stiffness, and after a step
every local rotation is clamped into its limits. As in Blender's solver, when
a step had to be clamped the worst-clamped joint's clamped axes are locked
and the step solved again (a few times per iteration).

`joint_weighting` "MASS" (Grassia): the joint velocities are weighted by W = M(q)^-1, the
inverse of the chain's joint-space inertia (solvers.common.mass: each bone a capsule of its
length and `chain.radii`), so the step moves the tip as asked with the least kinetic energy;
it is solved as the plain problem in y with q' = T y, J~ = J T, T T^T = W (whitening), which
serves every variant. With limits the stiffness goes on top (W = S^1/2 M_ff^-1 S^1/2, locked
axes held still)."""

from __future__ import annotations

import numpy as np

from .. import quat
from ..common import constrained, mass
from ..limits import twist_swing
from ..model.chain import Chain, as_real

VARIANTS = ("dls", "pseudoinverse", "transpose")
WEIGHTINGS = ("STIFFNESS", "MASS")
RESOLVES = 3  # re-solves per iteration after locking a clamped joint


def check_options(variant: str, damping: float, max_step: float, joint_weighting: str = "STIFFNESS") -> None:
    if not isinstance(joint_weighting, str) or joint_weighting not in WEIGHTINGS:
        raise ValueError(f"joint_weighting must be one of {', '.join(WEIGHTINGS)}, got {joint_weighting!r}")
    if not isinstance(variant, str) or variant not in VARIANTS:
        raise ValueError(f"unknown jacobian variant {variant!r}; choose one of {', '.join(VARIANTS)}")
    if as_real(damping, "damping") < 0.0:
        raise ValueError(f"damping must be a finite number >= 0, got {damping!r}")
    if as_real(max_step, "max_step") <= 0.0:
        raise ValueError(f"max_step must be a positive angle in radians, got {max_step!r}")


def _joint_step(jac: np.ndarray, err: np.ndarray, variant: str, lam2: float) -> np.ndarray:
    """Joint velocities (k, 3n) for Jacobians (k, 3, 3n) and errors (k, 3)."""
    jt = jac.transpose(0, 2, 1)
    if variant == "transpose":
        dtheta = jt @ err[:, :, None]
        jjte = jac @ dtheta
        denom = np.maximum(np.sum(jjte * jjte, axis=(1, 2)), 1e-300)
        return (np.sum(err[:, :, None] * jjte, axis=(1, 2)) / denom)[:, None] * dtheta[:, :, 0]
    if variant == "pseudoinverse":
        return (np.linalg.pinv(jac, rcond=1e-10) @ err[:, :, None])[:, :, 0]
    beta = np.linalg.solve(jac @ jt + lam2 * np.eye(3), err[:, :, None])
    return (jt @ beta)[:, :, 0]


def _clamp_turns(omega: np.ndarray, max_step: float) -> np.ndarray:
    """Scale each target's joint rotation vectors (k, n, 3) so none exceeds max_step."""
    biggest = np.linalg.norm(omega, axis=2).max(axis=1)
    return omega * np.minimum(1.0, max_step / np.maximum(biggest, 1e-300))[:, None, None]


def make_step(
    chain: Chain,
    variant: str = "dls",
    damping: float = 0.05,
    max_step: float = 0.5,
    nullspace_gain: float = 0.0,
    attractor: str = "rest",
    joint_weighting: str = "STIFFNESS",
):
    """`damping` is lambda relative to the chain length (J scales with it);
    `max_step` caps each joint's turn per iteration, in radians. `nullspace_gain` and
    `attractor` act on several effectors only (solvers.jacobian.tree); a chain has no pull yet.
    `joint_weighting`: "STIFFNESS" (today's) or "MASS" (module doc)."""
    check_options(variant, damping, max_step, joint_weighting)
    lam2 = (damping * chain.total_length) ** 2
    radii = None
    if joint_weighting == "MASS":
        radii = mass.default_radii(chain.lengths) if chain.radii is None else chain.radii
    if chain.limits is not None:
        return _limited_step(chain, variant, lam2, max_step, radii)
    if radii is not None:
        return _mass_step(chain, variant, lam2, max_step, radii)
    n = chain.n_bones
    lengths = chain.lengths
    eye = np.eye(3)

    def step(points: np.ndarray, local: None, targets: np.ndarray):
        tip = points[:, -1]
        err = targets - tip
        arms = tip[:, None, :] - points[:, :n, :]  # (k, n, 3)
        # World-axis ball joints: J_j = -[r_j]x, so J J^T = sum_j (|r_j|^2 I - r_j r_j^T) is a 3x3
        # sum and J^T b has blocks r_j x b: no (3, 3n) matrix is ever built.
        jjt = np.einsum("knc,knc->k", arms, arms)[:, None, None] * eye - np.einsum("kni,knj->kij", arms, arms)
        if variant == "transpose":
            moved = jjt @ err[:, :, None]
            alpha = np.einsum("ki,ki->k", err, moved[:, :, 0]) / np.maximum(np.sum(moved * moved, axis=(1, 2)), 1e-300)
            beta = alpha[:, None] * err
        elif variant == "pseudoinverse":  # J+ = J^T (J J^T)+
            beta = (np.linalg.pinv(jjt, rcond=1e-10, hermitian=True) @ err[:, :, None])[:, :, 0]
        else:
            beta = np.linalg.solve(jjt + lam2 * eye, err[:, :, None])[:, :, 0]
        omega = _clamp_turns(quat.cross(arms, beta[:, None, :]), max_step)
        turn = quat.from_rotation_vector(np.cumsum(omega, axis=1))
        dirs = quat.rotate(turn, quat.normalize(np.diff(points, axis=1)))
        new = np.empty_like(points)
        new[:, 0] = points[:, 0]
        new[:, 1:] = points[:, :1] + np.cumsum(lengths[None, :, None] * dirs, axis=1)
        return new, None

    return step


def _relative_damping(lam2: float, jac: np.ndarray, weighted: np.ndarray) -> np.ndarray:
    """lambda^2 (k, 1, 1) scaled by tr(J W J^T) / tr(J J^T): the damping keeps its size relative to
    the weighted system. W = M^-1 is small on the heavy proximal joints; when limits leave only those
    free, a fixed lambda would swamp J W J^T and the chain would crawl toward its target."""
    ratio = np.einsum("kij,kij->k", weighted, weighted) / np.maximum(np.einsum("kij,kij->k", jac, jac), 1e-300)
    return lam2 * ratio[:, None, None]


def _rebuild(points: np.ndarray, lengths: np.ndarray, omega: np.ndarray) -> np.ndarray:
    """The chain's points (k, n+1, 3) after turning bone i by the joints 0..i's rotation vectors."""
    turn = quat.from_rotation_vector(np.cumsum(omega, axis=1))
    dirs = quat.rotate(turn, quat.normalize(np.diff(points, axis=1)))
    new = np.empty_like(points)
    new[:, 0] = points[:, 0]
    new[:, 1:] = points[:, :1] + np.cumsum(lengths[None, :, None] * dirs, axis=1)
    return new


def _mass_step(chain: Chain, variant: str, lam2: float, max_step: float, radii: np.ndarray):
    """The unlimited chain's step with W = M(q)^-1 (world-axis ball joints, as `make_step`'s)."""
    n = chain.n_bones
    lengths = chain.lengths

    def step(points: np.ndarray, local: None, targets: np.ndarray):
        k = points.shape[0]
        tip = points[:, -1]
        arms = tip[:, None, :] - points[:, :n, :]  # (k, n, 3)
        # Column (j, a) = e_a x r_j: the block of joint j is -[r_j]x.
        eye = np.broadcast_to(np.eye(3), (k, n, 3, 3))
        jac = np.cross(eye, arms[:, :, None, :]).transpose(0, 3, 1, 2).reshape(k, 3, 3 * n)
        whiten = mass.whitening(mass.weighting_inertia(mass.chain_mass_matrix(points, radii)))
        weighted = jac @ whiten
        y = _joint_step(weighted, targets - tip, variant, _relative_damping(lam2, jac, weighted))
        omega = _clamp_turns((whiten @ y[:, :, None])[:, :, 0].reshape(k, n, 3), max_step)
        return _rebuild(points, lengths, omega), None

    return step


def _limited_step(chain: Chain, variant: str, lam2: float, max_step: float, radii: np.ndarray | None = None):
    n = chain.n_bones
    lim = chain.limits
    base_weight = np.where(lim.lock, 0.0, 1.0 - lim.stiffness)  # (n, 3)
    eye = np.eye(3)
    bones = np.arange(n)

    def propose(frames, p, local, targets, weight):
        """One weighted step from (frames, p): unclamped new locals."""
        k = p.shape[0]
        tip = p[:, -1]
        axes = quat.rotate(frames[:, :, None, :], np.broadcast_to(eye, (k, n, 3, 3)))  # (k, n, axis, comp)
        arms = tip[:, None, :] - p[:, :n, :]
        if radii is None:
            jac = np.cross(axes, arms[:, :, None, :]) * weight[:, :, :, None]
            jac = jac.transpose(0, 3, 1, 2).reshape(k, 3, 3 * n)
            dtheta = _joint_step(jac, targets - tip, variant, lam2).reshape(k, n, 3) * weight
        else:  # W = S^1/2 M_ff^-1 S^1/2 in the bones' own axes (mass.weighted_whitening)
            jac = np.cross(axes, arms[:, :, None, :]).transpose(0, 3, 1, 2).reshape(k, 3, 3 * n)
            inertia = mass.weighting_inertia(mass.chain_mass_matrix(p, radii, axes=axes.transpose(0, 1, 3, 2)))
            whiten = mass.weighted_whitening(inertia, weight.reshape(k, 3 * n))
            weighted = jac @ whiten
            y = _joint_step(weighted, targets - tip, variant, _relative_damping(lam2, jac, weighted))
            dtheta = (whiten @ y[:, :, None])[:, :, 0].reshape(k, n, 3)
        omega = _clamp_turns(np.einsum("kna,knac->knc", dtheta, axes), max_step)
        new_frames = quat.multiply(quat.from_rotation_vector(np.cumsum(omega, axis=1)), frames)
        parents = np.concatenate((np.broadcast_to(chain.base_frame, (k, 1, 4)), new_frames[:, :-1]), axis=1)
        rest = quat.multiply(parents, chain.reference)
        return quat.multiply(quat.conjugate(rest), new_frames)

    def step(points: np.ndarray, local: np.ndarray, targets: np.ndarray):
        k = points.shape[0]
        frames, p = constrained.forward(chain, local)
        weight = np.array(np.broadcast_to(base_weight, (k, n, 3)))
        rows = np.arange(k)
        for attempt in range(RESOLVES + 1):
            wanted = propose(frames, p, local, targets, weight)
            clamped = constrained.clamp_local(chain, bones, wanted)
            over = quat.angle(quat.multiply(clamped, quat.conjugate(wanted)))  # (k, n)
            if attempt == RESOLVES or not np.any(over > 1e-12):
                break
            # Lock the clamped axes of each target's worst-clamped joint.
            worst = np.argmax(over, axis=1)
            hit = over[rows, worst] > 1e-12
            tw, sx, sz = twist_swing(wanted[rows, worst])
            cw, cx, cz = twist_swing(clamped[rows, worst])
            changed = np.stack((np.abs(sx - cx) > 1e-12, np.abs(tw - cw) > 1e-12, np.abs(sz - cz) > 1e-12), axis=1)
            weight[rows[hit], worst[hit]] *= ~changed[hit]
        return constrained.forward(chain, clamped)[1], clamped

    return step
