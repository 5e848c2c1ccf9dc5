"""Shared hypothesis strategies, method configurations and invariant checks
for the solver tests (loaded through sys.path set up in conftest.py)."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import strategies as st

import solvers
from solvers import quat

# Every method configuration the properties must hold for: (method, options).
CONFIGS = [
    ("triangulation", {}),
    ("triangulation", {"fold_angle": 90.0}),
    ("fabrik", {}),
    ("fabrik", {"placement": "sphere"}),
    ("ccd", {}),
    ("jacobian", {"variant": "dls"}),
    ("jacobian", {"variant": "pseudoinverse"}),
    ("jacobian", {"variant": "transpose"}),
]
CONFIG_IDS = [m + "".join(f"-{k}={v}" for k, v in o.items()) for m, o in CONFIGS]
TRIANGULATION_CONFIGS = [c for c in CONFIGS if c[0] == "triangulation"]
TRIANGULATION_IDS = [i for i, c in zip(CONFIG_IDS, CONFIGS, strict=True) if c[0] == "triangulation"]
ITERATIVE_CONFIGS = [c for c in CONFIGS if c[0] != "triangulation"]
ITERATIVE_IDS = [i for i, c in zip(CONFIG_IDS, CONFIGS, strict=True) if c[0] != "triangulation"]

LENGTH_RTOL = 1e-9
ROTATION_ATOL = 1e-9


# --------------------------------------------------------------------------- strategies


@st.composite
def unit_vectors(draw) -> np.ndarray:
    """Uniform-ish unit vectors (z, azimuth parametrisation: no rejection)."""
    z = draw(st.floats(-1.0, 1.0))
    phi = draw(st.floats(0.0, 2.0 * math.pi))
    r = math.sqrt(max(0.0, 1.0 - z * z))
    return np.array([r * math.cos(phi), r * math.sin(phi), z])


def perpendicular(v: np.ndarray) -> np.ndarray:
    return quat.any_perpendicular(v)


def turn(direction: np.ndarray, bend: float, azimuth: float) -> np.ndarray:
    """`direction` tilted by `bend` radians, the tilt plane chosen by `azimuth`."""
    p = perpendicular(direction)
    q = np.cross(direction, p)
    side = math.cos(azimuth) * p + math.sin(azimuth) * q
    d = math.cos(bend) * direction + math.sin(bend) * side
    return d / np.linalg.norm(d)


def chain_points(root, lengths, first_dir, bends, azimuths) -> np.ndarray:
    d = np.asarray(first_dir, dtype=float)
    pts = [np.asarray(root, dtype=float)]
    for i, length in enumerate(lengths):
        if i > 0:
            d = turn(d, bends[i - 1], azimuths[i - 1])
        pts.append(pts[-1] + length * d)
    return np.array(pts)


@st.composite
def chains(draw, min_bones: int = 1, max_bones: int = 30) -> solvers.Chain:
    """Random chains: 1..30 bones, lengths 0.1..10, random bends (0..180°,
    including straight and fully folded joints) and a random 3D orientation."""
    n = draw(st.integers(min_bones, max_bones))
    lengths = draw(st.lists(st.floats(0.1, 10.0), min_size=n, max_size=n))
    root = draw(st.tuples(*[st.floats(-100.0, 100.0)] * 3))
    first = draw(unit_vectors())
    bends = draw(st.lists(st.floats(0.0, math.pi), min_size=n - 1, max_size=n - 1))
    azimuths = draw(st.lists(st.floats(0.0, 2.0 * math.pi), min_size=n - 1, max_size=n - 1))
    return solvers.Chain(chain_points(root, lengths, first, bends, azimuths))


@st.composite
def reachable_targets(draw, chain: solvers.Chain) -> np.ndarray:
    """A target reached by forward kinematics with random bone directions for
    the chain's own bone lengths: truly reachable by construction."""
    dirs = [draw(unit_vectors()) for _ in range(chain.n_bones)]
    return chain.root + np.sum(chain.lengths[:, None] * np.array(dirs), axis=0)


@st.composite
def unreachable_targets(draw, chain: solvers.Chain) -> np.ndarray:
    """A target strictly beyond full reach (|target - root| > total length)."""
    u = draw(unit_vectors())
    factor = draw(st.floats(1.0 + 1e-6, 10.0))
    return chain.root + chain.total_length * factor * u


@st.composite
def chain_and_reachable(draw, min_bones: int = 1, max_bones: int = 30):
    chain = draw(chains(min_bones, max_bones))
    return chain, draw(reachable_targets(chain))


@st.composite
def chain_and_unreachable(draw, min_bones: int = 1, max_bones: int = 30):
    chain = draw(chains(min_bones, max_bones))
    return chain, draw(unreachable_targets(chain))


@st.composite
def chain_and_any_target(draw, min_bones: int = 1, max_bones: int = 30):
    """Reachable, unreachable or anywhere in a box of twice the chain's reach."""
    chain = draw(chains(min_bones, max_bones))
    kind = draw(st.sampled_from(["reachable", "unreachable", "box"]))
    if kind == "reachable":
        target = draw(reachable_targets(chain))
    elif kind == "unreachable":
        target = draw(unreachable_targets(chain))
    else:
        offset = draw(st.tuples(*[st.floats(-2.0, 2.0)] * 3))
        target = chain.root + chain.total_length * np.array(offset)
    return chain, target


def rng_reachable_targets(chain: solvers.Chain, m: int, seed: int) -> np.ndarray:
    """m reachable targets by forward kinematics with seeded random directions."""
    rng = np.random.default_rng(seed)
    dirs = rng.normal(size=(m, chain.n_bones, 3))
    dirs /= np.linalg.norm(dirs, axis=2, keepdims=True)
    return chain.root + np.einsum("b,mbk->mk", chain.lengths, dirs)


# --------------------------------------------------------------------------- checks


def check_invariants(chain: solvers.Chain, sol, target) -> None:
    """Everything that must hold for any solve of any method."""
    n = chain.n_bones
    pts = np.asarray(sol.points)
    rots = np.asarray(sol.rotations)
    assert pts.shape == (n + 1, 3)
    assert rots.shape == (n, 4)
    assert np.all(np.isfinite(pts)), "non-finite points"
    assert np.all(np.isfinite(rots)), "non-finite rotations"
    assert math.isfinite(sol.error)
    # Root fixed (exactly: it is never moved).
    np.testing.assert_array_equal(pts[0], chain.root)
    # Bone lengths kept.
    lengths = np.linalg.norm(np.diff(pts, axis=0), axis=1)
    np.testing.assert_allclose(lengths, chain.lengths, rtol=LENGTH_RTOL, atol=0, err_msg="bone lengths drifted")
    # Error is the tip-target distance; reached is error <= tolerance.
    distance = float(np.linalg.norm(pts[-1] - np.asarray(target, dtype=float)))
    assert math.isclose(sol.error, distance, rel_tol=1e-12, abs_tol=1e-14 * chain.total_length)
    # Iterative methods report 0 iterations when the start pose already reaches.
    assert isinstance(sol.iterations, int) and sol.iterations >= 0
    check_rotations(chain, pts, rots)


def check_rotations(chain: solvers.Chain, pts: np.ndarray, rots: np.ndarray) -> None:
    """Unit quaternions, consistent with the points, minimal swing relative to the parent."""
    np.testing.assert_allclose(np.linalg.norm(rots, axis=-1), 1.0, atol=1e-12, err_msg="rotations not unit")
    solved = np.diff(pts, axis=-2)
    solved = solved / np.linalg.norm(solved, axis=-1, keepdims=True)
    rest = np.broadcast_to(chain.directions, solved.shape)
    np.testing.assert_allclose(
        quat.rotate(rots, rest), solved, atol=ROTATION_ATOL, err_msg="rotation does not take input to solved direction"
    )
    # Minimal swing relative to the parent: bone i inherits its parent's
    # rotation R_{i-1}, then turns by D_i = R_i R_{i-1}^-1 whose axis (vector
    # part) is perpendicular to the inherited direction R_{i-1} d_i, i.e. no
    # twist about the bone in its local (parent-relative) rotation.
    identity = np.zeros(rots.shape[:-2] + (1, 4))
    identity[..., 0] = 1.0
    parents = np.concatenate((identity, rots[..., :-1, :]), axis=-2)
    inverse = parents * np.array([1.0, -1.0, -1.0, -1.0])
    local = quat.multiply(rots, inverse)
    inherited = quat.rotate(parents, rest)
    np.testing.assert_allclose(
        np.sum(local[..., 1:] * inherited, axis=-1),
        0.0,
        atol=ROTATION_ATOL,
        err_msg="rotation has twist about the bone",
    )


def check_straight_toward(chain: solvers.Chain, pts: np.ndarray, target, atol_rel: float = 1e-9) -> None:
    """All bones parallel to target - root and the tip at full length along it."""
    target = np.asarray(target, dtype=float)
    u = (target - chain.root) / np.linalg.norm(target - chain.root)
    dirs = np.diff(pts, axis=0) / chain.lengths[:, None]
    np.testing.assert_allclose(dirs, np.broadcast_to(u, dirs.shape), atol=atol_rel, err_msg="bones not along target")
    np.testing.assert_allclose(
        pts[-1],
        chain.root + chain.total_length * u,
        atol=atol_rel * chain.total_length,
        err_msg="tip not at full reach",
    )


def solve(chain, target, config, **kwargs):
    method, options = config
    return solvers.solve(chain, target, method=method, **options, **kwargs)


def solve_batch(chain, targets, config, **kwargs):
    method, options = config
    return solvers.solve_batch(chain, targets, method=method, **options, **kwargs)


def nudged_target(chain: solvers.Chain, angle: float, seed: int) -> np.ndarray:
    """Forward kinematics of the chain's own pose with every bone direction
    tilted by `angle` radians in a random plane: reachable and near the tip."""
    rng = np.random.default_rng(seed)
    dirs = [turn(d, angle, float(rng.uniform(0.0, 2.0 * math.pi))) for d in chain.directions]
    return chain.root + np.sum(chain.lengths[:, None] * np.array(dirs), axis=0)


def describe(chain: solvers.Chain, target=None) -> None:
    """Record the example in full (shown by hypothesis when it fails) so a
    failure can be reproduced without hypothesis."""
    from hypothesis import note

    text = f"Chain({np.asarray(chain.points).tolist()!r})"
    if target is not None:
        text += f", target={np.asarray(target, dtype=float).tolist()!r}"
    note(text)


# --------------------------------------------------------------------------- joint limits and goals


def frames_along(directions: np.ndarray, rolls) -> np.ndarray:
    """Blender-like bone frames (n, 4): Y along each bone direction, X rolled by
    `rolls` (radians) about it."""
    mats = []
    for d, roll in zip(np.asarray(directions, dtype=float), rolls, strict=True):
        p = quat.any_perpendicular(d)
        q = np.cross(p, d)
        x = math.cos(roll) * p + math.sin(roll) * q
        mats.append(np.column_stack((x, d, np.cross(x, d))))
    return quat.from_matrix(np.array(mats))


@st.composite
def bone_limits(draw) -> dict:
    """One bone's limits as make_limits fields: free, hinge, random locks,
    per-axis ranges (asymmetric, possibly not containing 0), a cone, stiffness."""
    kind = draw(st.sampled_from(["free", "hinge", "locks", "ranges", "cone", "ranges+cone"]))
    lock = [False, False, False]
    use = [False, False, False]
    lo = [-math.pi] * 3
    hi = [math.pi] * 3
    cone = math.pi
    if kind == "hinge":
        lock = [False, True, True]
        if draw(st.booleans()):
            use[0] = True
            lo[0], hi[0] = sorted(draw(st.tuples(st.floats(-math.pi, math.pi), st.floats(-math.pi, math.pi))))
    elif kind == "locks":
        lock = list(draw(st.tuples(st.booleans(), st.booleans(), st.booleans())))
    if kind in ("ranges", "ranges+cone"):
        use = list(draw(st.tuples(st.booleans(), st.booleans(), st.booleans())))
        for k in range(3):
            a, b = sorted(draw(st.tuples(st.floats(-math.pi, math.pi), st.floats(-math.pi, math.pi))))
            lo[k], hi[k] = a, b
        if draw(st.booleans()):
            lock[draw(st.integers(0, 2))] = True
    if kind in ("cone", "ranges+cone"):
        cone = draw(st.floats(0.0, math.pi))
    stiffness = list(draw(st.tuples(*[st.sampled_from([0.0, 0.0, 0.3, 0.9, 0.99])] * 3)))
    return {"lock": lock, "use_limit": use, "minimum": lo, "maximum": hi, "cone": cone, "stiffness": stiffness}


def make_chain_limits(fields: list[dict]) -> solvers.JointLimits:
    """make_limits from per-bone field dicts. Where a bone's X/Z region misses
    its cone (invalid), the cone is dropped, then (X and Z ranges both far
    from zero: their corner is past a half-turn swing) the Z range too."""
    fields = [dict(f) for f in fields]
    for f in fields:
        for fix in ("cone", "z"):
            try:
                solvers.make_limits(1, **f)
                break
            except ValueError:
                if fix == "cone":
                    f["cone"] = math.pi
                else:
                    f["use_limit"] = [f["use_limit"][0], f["use_limit"][1], False]
    keys = ["lock", "use_limit", "minimum", "maximum", "cone", "stiffness"]
    return solvers.make_limits(len(fields), **{k: np.array([f[k] for f in fields]) for k in keys})


@st.composite
def limited_chains(draw, min_bones: int = 1, max_bones: int = 12) -> solvers.Chain:
    """Random chains with frames (random rolls, Y along each bone), random
    limits and, sometimes, a random base frame (the root's parent)."""
    plain = draw(chains(min_bones, max_bones))
    n = plain.n_bones
    rolls = draw(st.lists(st.floats(-math.pi, math.pi), min_size=n, max_size=n))
    limits = make_chain_limits([draw(bone_limits()) for _ in range(n)])
    base = None
    if draw(st.booleans()):
        axis = draw(unit_vectors())
        base = quat.from_axis_angle(axis, draw(st.floats(-math.pi, math.pi)))
    return solvers.Chain(plain.points, frames_along(plain.directions, rolls), limits=limits, base_frame=base)


def solved_locals(chain: solvers.Chain, rotations: np.ndarray) -> np.ndarray:
    """Local rotations (..., n, 4) of a solve: L = (P R)^-1 F with F the solved
    frames and P the parent's solved frame (the base frame for the root)."""
    rotations = np.asarray(rotations, dtype=float)
    frames = quat.multiply(rotations, chain.frames)
    base = np.broadcast_to(chain.base_frame, frames.shape[:-2] + (1, 4))
    parents = np.concatenate((base, frames[..., :-1, :]), axis=-2)
    return quat.multiply(quat.conjugate(quat.multiply(parents, chain.reference)), frames)


def limit_violation(chain: solvers.Chain, rotations: np.ndarray) -> np.ndarray:
    """Per bone, radians outside the limits of a solve's rotations (..., n)."""
    from solvers import limits as joint_limits

    return joint_limits.violation(chain.limits, solved_locals(chain, rotations))


def forward_kinematics(chain: solvers.Chain, locals_: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Frames (n, 4) and points (n+1, 3) of one pose given as local rotations
    (n, 4): F_i = P_i R_i L_i, p_{i+1} = p_i + l_i F_i (bone's link in its frame)."""
    n = chain.n_bones
    frames = np.empty((n, 4))
    points = np.empty((n + 1, 3))
    points[0] = chain.root
    base, reference = joint_model(chain)
    parent = base
    for i in range(n):
        parent = quat.multiply(quat.multiply(parent, reference[i]), locals_[i])
        frames[i] = parent
        link = quat.rotate(quat.conjugate(chain.frames[i]), chain.directions[i])
        points[i + 1] = points[i] + chain.lengths[i] * quat.rotate(parent, link)
    return frames, points


def joint_model(chain: solvers.Chain) -> tuple[np.ndarray, np.ndarray]:
    """(base frame, reference) of a framed chain; for one built without
    limits, reference or base frame: identity and the input pose as rest."""
    base = getattr(chain, "base_frame", None)
    if base is not None:
        return base, chain.reference
    base = np.array([1.0, 0.0, 0.0, 0.0])
    parents = np.concatenate((base[None], chain.frames[:-1]))
    return base, quat.multiply(quat.conjugate(parents), chain.frames)


def random_rotations(rng: np.random.Generator, shape: tuple) -> np.ndarray:
    """Uniform random unit quaternions (*shape, 4)."""
    q = rng.normal(size=tuple(shape) + (4,))
    return q / np.linalg.norm(q, axis=-1, keepdims=True)


def allowed_pose(chain: solvers.Chain, rng: np.random.Generator, spread: float = 1.0) -> np.ndarray:
    """A random pose (n, 4) inside the chain's limits: random local rotations
    (angles scaled by `spread`) clamped into them."""
    from solvers import limits as joint_limits

    local = quat.from_rotation_vector(spread * quat.to_rotation_vector(random_rotations(rng, (chain.n_bones,))))
    if chain.limits is None:
        return local
    return joint_limits.clamp(chain.limits, np.arange(chain.n_bones), local)


def check_limited_solution(chain: solvers.Chain, points, rotations, *, violation_atol: float = 1e-9) -> None:
    """A limited chain's solve (single or batch): finite, root fixed, lengths
    kept, rotations unit and consistent with the points, no limit violated."""
    pts = np.asarray(points)
    rots = np.asarray(rotations)
    assert np.all(np.isfinite(pts)), "non-finite points"
    assert np.all(np.isfinite(rots)), "non-finite rotations"
    np.testing.assert_array_equal(pts[..., 0, :], np.broadcast_to(chain.root, pts[..., 0, :].shape))
    lengths = np.linalg.norm(np.diff(pts, axis=-2), axis=-1)
    np.testing.assert_allclose(
        lengths, np.broadcast_to(chain.lengths, lengths.shape), rtol=LENGTH_RTOL, err_msg="bone lengths drifted"
    )
    np.testing.assert_allclose(np.linalg.norm(rots, axis=-1), 1.0, atol=1e-12, err_msg="rotations not unit")
    solved = np.diff(pts, axis=-2)
    solved = solved / np.linalg.norm(solved, axis=-1, keepdims=True)
    np.testing.assert_allclose(
        quat.rotate(rots, np.broadcast_to(chain.directions, solved.shape)),
        solved,
        atol=ROTATION_ATOL,
        err_msg="rotations do not take the input directions to the solved ones",
    )
    worst = limit_violation(chain, rots)
    if np.max(worst) >= violation_atol:
        at = np.unravel_index(np.argmax(worst), worst.shape)
        local = solved_locals(chain, rots)[at]
        raise AssertionError(
            f"limits violated: {np.max(worst):.3g} rad, worst at {list(map(int, at))} (local rotation"
            f" {local.tolist()}); all at {np.argwhere(worst >= violation_atol)[:5].tolist()}"
        )
