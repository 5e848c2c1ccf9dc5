"""Grassia's mass-matrix weighting (issue 20 item 3): the joint-space inertia matrix M(q) of a
chain or a tree of bones, and the mass-weighted damped least-squares step with W = M^-1.

Grassia's slides (shared/references/grassia-cmu-ik-slides.txt): with f_G + f_C = M q', the constraint
force f_C = J^T lambda, the joint velocity that meets p' = J q' is q' = W J^T (J W J^T)^-1 p' with
W = M^-1: of all joint velocities that move the effectors as asked it has the least kinetic energy
1/2 q'^T M q'. The least-squares answer (W = I) treats a radian of the shoulder like a radian of the
wrist and so swings the heavy arm; the mass weighting moves the light distal joints more.

The body: each bone is a solid capsule of uniform density, the segment head -> tail as its core
(a cylinder of the bone's length and a radius r, a hemisphere of radius r over each end: the shape
Blender draws for a bone's envelope, a sphere at its head and at its tail swept along the bone).
The radii are an input (one per bone; the rig may pass the bone's B-Bone size or envelope radius);
the default is DEFAULT_RADIUS_SHARE of the bone's length, which is Blender's default B-Bone size
(bbone_x = bbone_z = 0.1 of a new bone's length). A radius must be positive: a rod (r = 0) has no
inertia about its own axis, and M would be singular in the joint's twist.

The joints (the parametrisation of solvers.jacobian (chain_numpy) and solvers.jacobian.tree): each joint is a
ball joint at its bone's head with 3 columns, one per axis u (world unit vectors, the columns of
`axes[k]`), turning that bone and everything below it about its head; column (k, a) moves a point
x below the joint at u x (x - head_k) and turns its bone at u.
- solvers.jacobian's unlimited chain: world axes (axes=None), rotation vectors summed down the chain;
- its limited chain and solvers.jacobian.tree: each bone's own frame F_k (axes = F_k as 3x3 matrices
  whose columns are the bone's X, Y, Z in world space), locked axes dropped (take M[cols][:, cols]:
  a principal submatrix is the inertia in the remaining columns).
With `root_translation` three translation columns (world X, Y, Z; moving every bone) come first,
for issue 20 item 1's movable root.

M = sum over bones of m J_v^T J_v + J_w^T I_world J_w (J_v: the velocity of the bone's centre of mass,
J_w: its angular velocity, I_world its inertia about its centre in world axes), symmetric positive
definite. Everything takes leading batch axes (k poses at once: heads (..., n, 3)). numpy only."""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence

import numpy as np

DEFAULT_RADIUS_SHARE = 0.1  # capsule radius / bone length when no radii are given (Blender's B-Bone size)
# Each joint's own inertia (its "armature", as MuJoCo's joint armature: the rotor inertia a drive adds
# to the diagonal of M), a share of the mean joint's inertia (weighting_inertia, docs/design.md).
ARMATURE_SHARE = 0.1
_LEVI_CIVITA = np.zeros((3, 3, 3))  # _LEVI_CIVITA[i] = [e_i]x, so sum_i r_i _LEVI_CIVITA[i] = [r]x (r x v = [r]x v)
for _i, _j, _k in ((0, 1, 2), (1, 2, 0), (2, 0, 1)):
    _LEVI_CIVITA[_k, _i, _j], _LEVI_CIVITA[_k, _j, _i] = -1.0, 1.0


def capsule_terms(lengths: object, radii: object, density: float = 1.0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(mass, transverse inertia, axial inertia) of solid capsules (arrays of any shape): a cylinder
    of height L and radius r with a hemisphere of radius r on each end, inertia about its centre.

    Cylinder m_c = rho pi r^2 L: axial m_c r^2/2, transverse m_c (r^2/4 + L^2/12). Each hemisphere
    m_h = rho 2/3 pi r^3, its centre 3r/8 from its flat face: axial 2/5 m_h r^2, transverse about its
    own centre 83/320 m_h r^2, moved (parallel axes) by (L/2 + 3r/8): m_h (2/5 r^2 + L^2/4 + 3 L r/8)."""
    length = np.asarray(lengths, dtype=float)
    r = np.asarray(radii, dtype=float)
    cyl = density * math.pi * r * r * length
    cap = density * (2.0 / 3.0) * math.pi * r**3
    r2 = r * r
    axial = cyl * r2 / 2.0 + 2.0 * cap * (2.0 / 5.0) * r2
    transverse = cyl * (r2 / 4.0 + length * length / 12.0) + 2.0 * cap * (
        (2.0 / 5.0) * r2 + length * length / 4.0 + 3.0 * length * r / 8.0
    )
    return cyl + 2.0 * cap, transverse, axial


def capsule_inertia(length: float, radius: float, density: float = 1.0) -> tuple[float, np.ndarray]:
    """(mass, 3x3 inertia tensor about the centre of mass in bone axes) of one solid capsule lying
    along the bone's +Y (as Blender's bones): diag(transverse, axial, transverse)."""
    for value, what in ((length, "length"), (radius, "radius"), (density, "density")):
        if not (math.isfinite(float(value)) and float(value) >= 0.0):
            raise ValueError(f"the capsule's {what} must be finite and >= 0, got {value!r}")
    mass, transverse, axial = capsule_terms(length, radius, density)
    return float(mass), np.diag([float(transverse), float(axial), float(transverse)])


def default_radii(lengths: object, share: float = DEFAULT_RADIUS_SHARE) -> np.ndarray:
    """Capsule radii of `share` x each bone's length."""
    return share * np.asarray(lengths, dtype=float)


def _check_parents(parents: Sequence[int], n: int) -> np.ndarray:
    if len(parents) != n:
        raise ValueError(f"parents must have one entry per bone ({n}), got {len(parents)}")
    for i, p in enumerate(parents):
        if not (p == -1 or 0 <= p < i):
            raise ValueError(f"bone {i}'s parent {p} must be -1 or an earlier bone")
    return np.asarray(parents, dtype=int)


def _check_joints(joints: Sequence[int] | None, n: int) -> np.ndarray:
    if joints is None:
        return np.arange(n)
    j = np.asarray(joints, dtype=int).reshape(-1)
    if len(set(j.tolist())) != len(j) or np.any((j < 0) | (j >= n)):
        raise ValueError(f"joints must be distinct bone indices in 0..{n - 1}, got {list(joints)}")
    return j


def _points(value: object, what: str) -> np.ndarray:
    p = np.asarray(value, dtype=float)
    if p.ndim < 2 or p.shape[-1] != 3 or not np.all(np.isfinite(p)):
        raise ValueError(f"{what} must be finite with shape (..., n, 3), got {p.shape}")
    return p


def ancestry(parents: Sequence[int], joints: Sequence[int] | None = None) -> np.ndarray:
    """(n, len(joints)) booleans: joint k turns bone i (joints[k] is bone i or one of its ancestors)."""
    n = len(parents)
    par = tuple(int(p) for p in _check_parents(parents, n))
    return _pairs(par, tuple(_check_joints(joints, n).tolist()))[0][:, _check_joints(joints, n)]


def _joint_axes(axes: object, heads: np.ndarray, count: int) -> np.ndarray:
    if axes is None:
        return np.broadcast_to(np.eye(3), (*heads.shape[:-2], count, 3, 3))
    a = np.asarray(axes, dtype=float)
    if a.shape[-3:] != (count, 3, 3) or not np.all(np.isfinite(a)):
        raise ValueError(f"axes must be finite with shape (..., {count}, 3, 3), got {a.shape}")
    return a


def position_jacobian(
    heads: object,
    parents: Sequence[int],
    bones: Sequence[int],
    points: object,
    joints: Sequence[int] | None = None,
    axes: object = None,
    root_translation: bool = False,
) -> np.ndarray:
    """(..., P, 3, columns): how points[p] (..., P, 3), each carried by bone bones[p], move per unit
    of each column (the module's joints; column (k, a) is u x (x - head_k), zero unless joint k turns
    that bone). The effector rows of solvers.jacobian (chain_numpy) and solvers.jacobian.tree in these columns."""
    h = _points(heads, "heads")
    n = h.shape[-2]
    x = _points(points, "points")
    owners = np.asarray(bones, dtype=int).reshape(-1)
    if x.shape[-2] != len(owners) or np.any((owners < 0) | (owners >= n)):
        raise ValueError("bones must name one bone (an index) per point")
    joint = _check_joints(joints, n)
    turns = ancestry(parents, joint)[owners]  # (P, nj)
    u = np.swapaxes(_joint_axes(axes, h, len(joint)), -1, -2)  # (..., nj, axis, component)
    arms = x[..., :, None, :] - h[..., None, joint, :]  # (..., P, nj, 3)
    moved = np.cross(u[..., None, :, :, :], arms[..., :, :, None, :]) * turns[:, :, None, None]
    moved = np.swapaxes(np.swapaxes(moved, -1, -2), -3, -2)  # (..., P, component, nj, axis)
    jac = moved.reshape(*moved.shape[:-2], 3 * len(joint))
    if root_translation:
        eye = np.broadcast_to(np.eye(3), (*jac.shape[:-1], 3))
        jac = np.concatenate((eye, jac), axis=-1)
    return jac


@functools.lru_cache(maxsize=64)
def _pairs(parents: tuple, joints: tuple) -> tuple[np.ndarray, np.ndarray]:
    """(below (n, n): below[i, b] when b is bone i or an ancestor of it; deeper (nj, nj): for joints j, k
    the joint bone whose subtree both turn (the deeper of the two when one is above the other), -1
    when neither is above the other). Cached: a solve asks for the same tree every iteration."""
    n = len(parents)
    below = np.eye(n, dtype=bool)
    for i, p in enumerate(parents):
        if p >= 0:
            below[i] |= below[p]
    j = np.array(joints, dtype=int)
    over = below[j][:, j]  # over[a, b]: joint b's bone is joint a's bone or above it
    deeper = np.where(over, j[:, None], np.where(over.T, j[None, :], -1))
    below.flags.writeable = deeper.flags.writeable = False
    return below, deeper


def mass_matrix(
    heads: object,
    tails: object,
    parents: Sequence[int],
    radii: object = None,
    density: float = 1.0,
    joints: Sequence[int] | None = None,
    axes: object = None,
    root_translation: bool = False,
) -> np.ndarray:
    """M(q) (..., c, c), c = 3 len(joints) (+ 3 with `root_translation`), for bones with `heads` and
    `tails` (..., n, 3) in world space, `parents` (n,) (-1 for a root, a parent before its children),
    capsule `radii` (n,) (default `default_radii`); `joints` the bones with columns in column order
    (default every bone; a bone without a joint still carries its mass and moves with its ancestors:
    pass the bones below the moved ones, fingers under a hand, so their weight counts); `axes`
    (..., len(joints), 3, 3) each joint's axes as matrix columns (default world X, Y, Z)."""
    h, t = _points(heads, "heads"), _points(tails, "tails")
    if h.shape != t.shape:
        raise ValueError(f"heads and tails must have the same shape, got {h.shape} and {t.shape}")
    n = h.shape[-2]
    _check_parents(parents, n)
    if not (math.isfinite(float(density)) and float(density) > 0.0):
        raise ValueError(f"density must be positive and finite, got {density!r}")
    bone = t - h
    length = np.sqrt(np.einsum("...i,...i->...", bone, bone))
    short = np.any(~(length > 0.0), axis=tuple(range(length.ndim - 1)))  # per bone, over the poses
    if np.any(short):
        raise ValueError(f"bone {int(np.flatnonzero(short)[0])} has zero length")
    r = default_radii(length) if radii is None else np.asarray(radii, dtype=float)
    if r.shape not in ((n,), length.shape) or not np.all(np.isfinite(r) & (r > 0.0)):
        raise ValueError(f"radii must be {n} positive finite numbers, got {np.shape(radii)}")
    mass, transverse, axial = capsule_terms(length, r, float(density))
    joint = _check_joints(joints, n)
    below, deeper = _pairs(tuple(int(p) for p in parents), tuple(joint.tolist()))
    a = _joint_axes(axes, h, len(joint))
    # Composite bodies: each bone's subtree summed (mass, first and second mass moments about the
    # origin, inertia about the bones' own centres: I_world = transverse I + (axial - transverse) y y^T).
    # Joints j, k (world axes) turn the bones of the deeper one's subtree together, so with
    # a = c - p_j, b = c - p_k summed over it: M_jk = sum m ((a.b) I - b a^T) + I_own (O(n^2) 3x3 blocks).
    # Moments about the first head, not the origin: a rig far from the origin loses no digits.
    origin = h[..., :1, :]
    h, centre = h - origin, 0.5 * (h + t) - origin
    ydir = bone / length[..., None]
    moment = mass[..., None] * centre
    own = (
        transverse[..., None, None] * np.eye(3)
        + ((axial - transverse)[..., None, None] * ydir[..., :, None]) * (ydir[..., None, :])
    )
    up = below.T.astype(float)  # up @ x: each bone's subtree sum
    s0, s1 = up @ mass[..., None], up @ moment  # (..., n, 1), (..., n, 3)
    s2 = np.einsum("bi,...ij,...ik->...bjk", up, moment, centre)
    sown = np.einsum("bi,...ijk->...bjk", up, own)
    pick = np.maximum(deeper, 0)
    m0, m1, m2, mown = s0[..., pick, :], s1[..., pick, :], s2[..., pick, :, :], sown[..., pick, :, :]
    pj, pk = h[..., joint, None, :], h[..., None, joint, :]  # (..., nj, 1, 3), (..., 1, nj, 3)
    dot = (
        np.trace(m2, axis1=-2, axis2=-1)
        - np.einsum("...i,...i->...", m1, pj + pk)
        + m0[..., 0] * np.einsum("...i,...i->...", pj, pk)
    )
    outer = m2 - m1[..., :, None] * pj[..., None, :] - pk[..., :, None] * m1[..., None, :]
    outer = outer + m0[..., None] * pk[..., :, None] * pj[..., None, :]
    blocks = dot[..., None, None] * np.eye(3) - outer + mown
    blocks = np.where((deeper >= 0)[:, :, None, None], blocks, 0.0)
    if axes is not None:
        blocks = np.swapaxes(a, -1, -2)[..., :, None, :, :] @ blocks @ a[..., None, :, :, :]
    count = 3 * len(joint)
    out = np.swapaxes(blocks, -3, -2).reshape(*blocks.shape[:-4], count, count)
    if root_translation:
        # The translation moves every bone: M_tt = total mass I, M_tk = -[sum m (c - p_k)]x A_k over joint k's subtree.
        total = np.sum(mass, axis=-1)[..., None, None] * np.eye(3)
        arm = s1[..., joint, :] - s0[..., joint, :] * h[..., joint, :]  # (..., nj, 3)
        cross = -np.einsum("...ki,ijl->...kjl", arm, _LEVI_CIVITA) @ a  # -[arm]x A_k: (..., nj, 3, 3)
        side = np.swapaxes(cross, -3, -2).reshape(*cross.shape[:-3], 3, count)
        top = np.concatenate((total, side), axis=-1)
        out = np.concatenate((top, np.concatenate((np.swapaxes(side, -1, -2), out), axis=-1)), axis=-2)
    return 0.5 * (out + np.swapaxes(out, -1, -2))  # exactly symmetric


def chain_mass_matrix(
    points: object,
    radii: object = None,
    density: float = 1.0,
    axes: object = None,
    root_translation: bool = False,
) -> np.ndarray:
    """`mass_matrix` of a chain given as its joints and end, `points` (..., n+1, 3) (solvers.jacobian's
    layout): bone i from points[i] to points[i+1], a joint at every bone's head."""
    p = _points(points, "points")
    n = p.shape[-2] - 1
    if n < 1:
        raise ValueError("a chain needs at least 2 points")
    return mass_matrix(p[..., :-1, :], p[..., 1:, :], range(-1, n - 1), radii, density, None, axes, root_translation)


def normalized(mass: object, skip: int = 0) -> np.ndarray:
    """M divided by the mean of its diagonal over the columns from `skip` on (skip=3 leaves the root
    translation columns out): the scale of W = M^-1 then matches today's W = diag(1 - stiffness),
    whose diagonal is at most 1, so the solvers' damping keeps its meaning. A common factor does not
    change the undamped step, only how the damping compares."""
    m = np.asarray(mass, dtype=float)
    diag = np.diagonal(m, axis1=-2, axis2=-1)[..., skip:]
    return m / np.mean(diag, axis=-1)[..., None, None]


def weighting_inertia(mass: object, skip: int = 0) -> np.ndarray:
    """The inertia the solvers' mass weighting uses, W = (this)^-1: `normalized` M plus ARMATURE_SHARE
    (of the mean joint's inertia, 1 after normalizing) on the diagonal of every turning column
    (from `skip` on; the root's translation columns get none). Why: with the capsules' M alone each
    iteration takes the least-energy step from where it stands, and a light distal bone (a hand
    weighs ~1% of the arm, its inertia about its joint less still) is nearly free to swing: over a
    sweep it turns ~90 degrees until its lever is spent, then the heavy joints catch up in big
    steps, and the motion as a whole costs more than the plain step's (bench/bench_mass.py: 1.14-1.16x
    on the 4-bone arm's sweep). A joint's own inertia bounds how cheap a turn can be, so the distal
    joints still move most (the shares stay far above the plain step's) but the hand no longer spends its
    lever on one frame's saving. Symmetric positive definite whenever M is."""
    m = normalized(mass, skip)
    turning = np.arange(m.shape[-1]) >= skip
    return m + ARMATURE_SHARE * np.diag(turning.astype(float))


def kinetic_energy(mass: object, qdot: object) -> np.ndarray | float:
    """1/2 q'^T M q' (batched over leading axes: M (..., c, c), q' (..., c))."""
    m, v = np.asarray(mass, dtype=float), np.asarray(qdot, dtype=float)
    out = 0.5 * np.einsum("...i,...ij,...j->...", v, m, v)
    return float(out) if np.ndim(out) == 0 else out


def _cholesky(mass: np.ndarray) -> np.ndarray:
    if mass.shape[-1] != mass.shape[-2] or not np.all(np.isfinite(mass)):
        raise ValueError(f"the mass matrix must be finite and square, got shape {mass.shape}")
    try:
        return np.linalg.cholesky(mass)
    except np.linalg.LinAlgError as exc:
        raise ValueError("the mass matrix is not positive definite") from exc


def whitening(mass: object) -> np.ndarray:
    """T (..., c, c) with T T^T = M^-1 (T = L^-T, M = L L^T): substituting q' = T y turns the
    M^-1-weighted problem into the plain one with J~ = J T, as solvers.jacobian.tree does today with
    T = diag(sqrt(1 - stiffness)); `weighted_step(J, e, M, lam)` = T @ (the plain DLS step of J T)."""
    low = _cholesky(np.asarray(mass, dtype=float))
    eye = np.broadcast_to(np.eye(low.shape[-1]), low.shape)
    return np.swapaxes(np.linalg.solve(low, eye), -1, -2)


def weighted_step(jacobian: object, error: object, mass: object, damping: float) -> np.ndarray:
    """The mass-weighted damped least-squares step q' = M^-1 J^T (J M^-1 J^T + lambda^2 I)^-1 e:
    `jacobian` (..., r, c), `error` (..., r), `mass` (..., c, c) symmetric positive definite,
    `damping` lambda >= 0 in the error's units (solvers.jacobian uses damping x chain length).
    With M = I it is the plain DLS step; with lambda = 0 it meets J q' = e with the least
    kinetic energy (needs J of full row rank)."""
    jac, err, m = (np.asarray(v, dtype=float) for v in (jacobian, error, mass))
    lam = float(damping)
    if not (math.isfinite(lam) and lam >= 0.0):
        raise ValueError(f"damping must be finite and >= 0, got {damping!r}")
    if jac.shape[-1] != m.shape[-1] or jac.shape[-2] != err.shape[-1]:
        raise ValueError(f"shapes do not match: J {jac.shape}, error {err.shape}, M {m.shape}")
    if not (np.all(np.isfinite(jac)) and np.all(np.isfinite(err))):
        raise ValueError("the Jacobian and the error must be finite")
    _cholesky(m)
    weighted = np.linalg.solve(m, np.swapaxes(jac, -1, -2))  # M^-1 J^T (..., c, r)
    system = jac @ weighted + lam * lam * np.eye(jac.shape[-2])
    try:
        beta = np.linalg.solve(system, err[..., None])
    except np.linalg.LinAlgError as exc:
        raise ValueError("J M^-1 J^T is singular: give a damping > 0") from exc
    return (weighted @ beta)[..., 0]


def weighted_whitening(mass: object, weights: object) -> np.ndarray:
    """T (..., c, c) for the mass weighting with per-column joint weights w (..., c) in 0..1
    (1 - stiffness; 0: a locked axis): T T^T = S^1/2 (M_ff)^-1 S^1/2 on the free columns f (w > 0;
    M_ff the principal submatrix: the inertia with the locked axes held still), zero rows and
    columns on the locked ones, S = diag(w). Substituting q' = T y in the plain problem of J T
    gives the M^-1 step with the stiffness on top (solvers.jacobian's limited chain and tree)."""
    m = np.asarray(mass, dtype=float)
    w = np.asarray(weights, dtype=float)
    free = w > 0.0
    # Locked columns decoupled (identity rows and columns): (M')^-1 is (M_ff)^-1 on the free block.
    held = ~(free[..., :, None] & free[..., None, :])
    decoupled = np.where(held, np.where(np.eye(m.shape[-1], dtype=bool), 1.0, 0.0), m)
    return np.sqrt(np.where(free, w, 0.0))[..., :, None] * whitening(decoupled)
