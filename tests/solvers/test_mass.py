"""solvers.common.mass: the joint-space inertia matrix and the mass-weighted step (issue 20 item 3)."""

from __future__ import annotations

import importlib.util
import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from solvers import quat
from solvers.common import mass

_bench_path = Path(__file__).resolve().parents[2] / "bench" / "bench_mass.py"
_bench_spec = importlib.util.spec_from_file_location("_bench_mass", _bench_path)
bench_mass = importlib.util.module_from_spec(_bench_spec)
_bench_spec.loader.exec_module(bench_mass)


def analytic_capsule(length: float, radius: float, density: float) -> tuple[float, float, float]:
    """(mass, transverse, axial) written out: cylinder + two hemispheres, parallel axes for the caps."""
    r, h = radius, length
    mc = density * math.pi * r * r * h
    mh = density * 2.0 / 3.0 * math.pi * r**3
    axial = mc * r * r / 2.0 + 2.0 * (2.0 / 5.0) * mh * r * r
    cap_own = 83.0 / 320.0 * mh * r * r  # a hemisphere about its centre of mass (3r/8 off its face)
    transverse = mc * (r * r / 4.0 + h * h / 12.0) + 2.0 * (cap_own + mh * (h / 2.0 + 3.0 * r / 8.0) ** 2)
    return mc + 2.0 * mh, transverse, axial


def integrated_capsule(length: float, radius: float, density: float) -> tuple[float, float, float]:
    """(mass, transverse, axial) by slicing the capsule into discs along its axis y (Gauss-Legendre:
    exact here, every integrand is a polynomial in y on each of the three pieces)."""
    nodes, weights = np.polynomial.legendre.leggauss(8)
    r, h = radius, length
    total = np.zeros(3)
    for lo, hi in ((-h / 2 - r, -h / 2), (-h / 2, h / 2), (h / 2, h / 2 + r)):
        y = 0.5 * (hi - lo) * nodes + 0.5 * (hi + lo)
        w = 0.5 * (hi - lo) * weights
        centre = np.clip(y, -h / 2, h / 2)
        a2 = r * r - (y - centre) ** 2  # the disc's radius squared
        disc = density * math.pi * a2  # mass per unit length
        # a disc about its own axis: m a^2/2; about a diameter: m a^2/4, moved by y
        total += [w @ disc, w @ (disc * (a2 / 4.0 + y * y)), w @ (disc * a2 / 2.0)]
    return tuple(total)


@given(st.floats(0.01, 10.0), st.floats(0.001, 5.0), st.floats(0.1, 10.0))
def test_capsule_inertia_is_the_analytic_capsule(length, radius, density):
    m, inertia = mass.capsule_inertia(length, radius, density)
    expected = analytic_capsule(length, radius, density)
    sliced = integrated_capsule(length, radius, density)
    got = (m, inertia[0, 0], inertia[1, 1])
    assert got == pytest.approx(expected, rel=1e-12)
    assert got == pytest.approx(sliced, rel=1e-10)
    assert inertia[2, 2] == inertia[0, 0] and np.count_nonzero(inertia - np.diag(np.diag(inertia))) == 0


def test_a_thin_rod_about_its_end_is_m_l2_over_3():
    length, r = 2.0, 1e-6
    m, _ = mass.capsule_inertia(length, r)
    M = mass.chain_mass_matrix([[0.0, 0.0, 0.0], [0.0, length, 0.0]], radii=[r])
    assert m == pytest.approx(math.pi * r * r * length, rel=1e-5)
    assert M[0, 0] == pytest.approx(m * length**2 / 3.0, rel=1e-5)
    assert M[2, 2] == pytest.approx(m * length**2 / 3.0, rel=1e-5)
    assert M[1, 1] == pytest.approx(m * r * r / 2.0, rel=1e-5)  # about its own axis: next to nothing
    # Tilted, in its own frame's axes: the same numbers (X and Z across the bone).
    frame = quat.from_axis_angle(np.array([1.0, 2.0, 0.5]) / math.sqrt(5.25), 0.7)
    tip = quat.rotate(frame, np.array([0.0, length, 0.0]))
    axes = quat.to_matrix(frame)[None]
    F = mass.chain_mass_matrix([[0.0, 0.0, 0.0], tip], radii=[r], axes=axes)
    assert np.diag(F) == pytest.approx([m * length**2 / 3.0, m * r * r / 2.0, m * length**2 / 3.0], rel=1e-5)


# Random trees: parents before children, heads anywhere (a child's head need not be its parent's tail).


@st.composite
def trees(draw, max_bones: int = 7):
    n = draw(st.integers(1, max_bones))
    parents = [-1] + [draw(st.integers(-1, i - 1)) for i in range(1, n)]
    coord = st.floats(-2.0, 2.0)
    heads = np.array(draw(st.lists(st.tuples(coord, coord, coord), min_size=n, max_size=n)))
    bones = np.array(draw(st.lists(st.tuples(coord, coord, coord), min_size=n, max_size=n)))
    lengths = np.linalg.norm(bones, axis=1)
    bones[lengths < 0.05] = (0.0, 0.5, 0.0)
    radii = np.array(draw(st.lists(st.floats(0.02, 0.5), min_size=n, max_size=n)))
    return parents, heads, heads + bones, radii


def random_frames(rng: np.random.Generator, count: int) -> np.ndarray:
    return quat.to_matrix(quat.normalize(rng.normal(size=(count, 4))))


@given(trees(), st.booleans(), st.booleans(), st.integers(0, 2**32 - 1))
def test_the_mass_matrix_is_symmetric_positive_definite(tree, own_axes, translation, seed):
    parents, heads, tails, radii = tree
    n = len(parents)
    axes = random_frames(np.random.default_rng(seed), n) if own_axes else None
    M = mass.mass_matrix(heads, tails, parents, radii, axes=axes, root_translation=translation)
    assert M.shape == (3 * n + 3 * translation,) * 2
    assert np.array_equal(M, M.T)
    eig = np.linalg.eigvalsh(M)
    # Positive definite beyond eigvalsh's rounding (~1e-16 of the largest): a thin short bone's spin
    # about its own axis is legitimately ~1e-9 of a long one's swing (m r^2 against m L^2).
    assert eig.min() > 1e-12 * eig.max()


def independent_inertia(heads, tails, radii, density, about, bones) -> tuple[float, np.ndarray]:
    """(total mass, inertia tensor about `about` in world axes) of `bones`, summed directly."""
    total_m, total = 0.0, np.zeros((3, 3))
    for i in bones:
        axis = tails[i] - heads[i]
        length = float(np.linalg.norm(axis))
        m, transverse, axial = analytic_capsule(length, radii[i], density)
        y = axis / length
        own = transverse * np.eye(3) + (axial - transverse) * np.outer(y, y)
        c = 0.5 * (heads[i] + tails[i]) - about
        total += own + m * (c @ c * np.eye(3) - np.outer(c, c))
        total_m += m
    return total_m, total


@given(trees(), st.integers(0, 2**32 - 1))
def test_turning_a_subtree_about_its_joint_has_the_rigid_body_energy(tree, seed):
    """Turning one joint (the rest still) moves its bone and everything below as one rigid body:
    1/2 q'^T M q' = 1/2 w^T I w with I the subtree's inertia about the joint, summed independently.
    Joint 0 of a chain is the whole chain about its root; world and own-frame axes alike."""
    parents, heads, tails, radii = tree
    n = len(parents)
    rng = np.random.default_rng(seed)
    axes = random_frames(rng, n)
    w = rng.normal(size=3)
    below = mass.ancestry(parents)
    for k in range(n):
        _, inertia = independent_inertia(heads, tails, radii, 1.0, heads[k], np.flatnonzero(below[:, k]))
        expected = 0.5 * w @ inertia @ w
        qdot = np.zeros(3 * n)
        qdot[3 * k : 3 * k + 3] = w
        world = mass.mass_matrix(heads, tails, parents, radii)
        assert mass.kinetic_energy(world, qdot) == pytest.approx(expected, rel=1e-10)
        qdot[3 * k : 3 * k + 3] = axes[k].T @ w  # the same turn in the joint's own axes
        own = mass.mass_matrix(heads, tails, parents, radii, axes=axes)
        assert mass.kinetic_energy(own, qdot) == pytest.approx(expected, rel=1e-10)


@given(trees(), st.integers(0, 2**32 - 1))
def test_moving_the_root_has_the_translation_energy(tree, seed):
    parents, heads, tails, radii = tree
    n = len(parents)
    v = np.random.default_rng(seed).normal(size=3)
    M = mass.mass_matrix(heads, tails, parents, radii, density=2.5, root_translation=True)
    total, _ = independent_inertia(heads, tails, radii, 2.5, np.zeros(3), range(n))
    qdot = np.concatenate((v, np.zeros(3 * n)))
    assert mass.kinetic_energy(M, qdot) == pytest.approx(0.5 * total * v @ v, rel=1e-12)
    # The rotation block is the fixed-root matrix.
    fixed = mass.mass_matrix(heads, tails, parents, radii, density=2.5)
    assert np.allclose(M[3:, 3:], fixed, rtol=1e-12, atol=0.0)


def chain_points(directions: np.ndarray, lengths: np.ndarray, omega: np.ndarray, t: float) -> np.ndarray:
    """solvers.jacobian's step for world rotation vectors `omega` (n, 3) scaled by t: bone i turns by
    the sum of omega[0..i], points rebuilt from the root."""
    turn = quat.from_rotation_vector(t * np.cumsum(omega, axis=0))
    dirs = quat.rotate(turn, directions)
    return np.concatenate((np.zeros((1, 3)), np.cumsum(lengths[:, None] * dirs, axis=0)))


@given(st.integers(1, 6), st.integers(0, 2**32 - 1))
def test_world_axis_columns_are_solvers_jacobian_motion(n, seed):
    """The chain's M in world axes is the energy of solvers.jacobian's own step: the centres'
    velocities and the bones' turn rates found by finite differences of that step."""
    rng = np.random.default_rng(seed)
    directions = quat.normalize(rng.normal(size=(n, 3)))
    lengths = rng.uniform(0.3, 2.0, n)
    radii = rng.uniform(0.02, 0.3, n)
    omega = rng.normal(size=(n, 3))
    h = 1e-6
    before, after = chain_points(directions, lengths, omega, -h), chain_points(directions, lengths, omega, h)
    centres = lambda p: 0.5 * (p[:-1] + p[1:])  # noqa: E731
    v = (centres(after) - centres(before)) / (2 * h)
    w = np.cumsum(omega, axis=0)  # each bone's angular velocity
    points = chain_points(directions, lengths, omega, 0.0)
    energy = 0.0
    for i in range(n):
        m, transverse, axial = analytic_capsule(lengths[i], radii[i], 1.0)
        y = directions[i]
        own = transverse * np.eye(3) + (axial - transverse) * np.outer(y, y)
        energy += 0.5 * m * v[i] @ v[i] + 0.5 * w[i] @ own @ w[i]
    M = mass.chain_mass_matrix(points, radii)
    assert mass.kinetic_energy(M, omega.ravel()) == pytest.approx(energy, rel=1e-7)


def tree_pose(parents, offsets, lengths, locals_, turn):
    """Heads, tails, frames of a skeleton (solvers.skeleton's model, references identity) with each
    local rotation L_i followed by exp(turn_i) in the bone's own frame (solvers.jacobian.tree's step)."""
    n = len(parents)
    heads, tails, frames = np.zeros((n, 3)), np.zeros((n, 3)), np.zeros((n, 3, 3))
    for i, p in enumerate(parents):
        rot = quat.to_matrix(quat.multiply(locals_[i], quat.from_rotation_vector(turn[i])))
        parent = np.eye(3) if p == -1 else frames[p]
        frames[i] = parent @ rot
        heads[i] = offsets[i] if p == -1 else heads[p] + parent @ offsets[i]
        tails[i] = heads[i] + frames[i] @ np.array([0.0, lengths[i], 0.0])
    return heads, tails, frames


@given(trees(), st.integers(0, 2**32 - 1))
def test_own_frame_columns_are_solvers_tree_jacobian_motion(tree, seed):
    """In each bone's own axes (axes = frames), the energy of the tree solver's step L_i <- L_i exp(d_i):
    position_jacobian predicts the tails' motion, and M the energy, by finite differences."""
    parents, heads0, tails0, radii = tree
    n = len(parents)
    rng = np.random.default_rng(seed)
    lengths = np.linalg.norm(tails0 - heads0, axis=1)
    offsets = rng.normal(size=(n, 3))
    locals_ = quat.normalize(rng.normal(size=(n, 4)))
    d = rng.normal(size=(n, 3))
    h = 1e-6
    heads, tails, frames = tree_pose(parents, offsets, lengths, locals_, np.zeros((n, 3)))
    h_after, t_after, f_after = tree_pose(parents, offsets, lengths, locals_, h * d)
    h_before, t_before, f_before = tree_pose(parents, offsets, lengths, locals_, -h * d)
    jac = mass.position_jacobian(heads, parents, range(n), tails, axes=frames)
    assert np.allclose(jac @ d.ravel(), (t_after - t_before) / (2 * h), rtol=0.0, atol=1e-6)
    energy = 0.0
    for i in range(n):
        m, transverse, axial = analytic_capsule(lengths[i], radii[i], 1.0)
        y = frames[i][:, 1]
        own = transverse * np.eye(3) + (axial - transverse) * np.outer(y, y)
        spin = (f_after[i] - f_before[i]) / (2 * h) @ frames[i].T  # [w]x
        w = np.array([spin[2, 1], spin[0, 2], spin[1, 0]])
        vc = ((h_after[i] + t_after[i]) - (h_before[i] + t_before[i])) / (4 * h)
        energy += 0.5 * m * vc @ vc + 0.5 * w @ own @ w
    M = mass.mass_matrix(heads, tails, parents, radii, axes=frames)
    assert mass.kinetic_energy(M, d.ravel()) == pytest.approx(energy, rel=1e-6)


def test_batched_poses_match_one_by_one():
    rng = np.random.default_rng(3)
    points = rng.normal(size=(4, 5, 3))
    axes = random_frames(rng, 16).reshape(4, 4, 3, 3)
    batch = mass.chain_mass_matrix(points, axes=axes, root_translation=True)
    for k in range(4):
        one = mass.chain_mass_matrix(points[k], axes=axes[k], root_translation=True)
        assert np.allclose(batch[k], one, rtol=1e-13, atol=0.0)


def test_bones_without_joints_still_weigh():
    """A hand below the last joint (no columns of its own) adds to the forearm joint's inertia."""
    heads = np.array([[0.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 2.0, 0.0]])
    tails = np.array([[0.0, 1.0, 0.0], [0.0, 2.0, 0.0], [0.0, 2.5, 0.0]])
    with_hand = mass.mass_matrix(heads, tails, [-1, 0, 1], joints=[0, 1])
    without = mass.mass_matrix(heads[:2], tails[:2], [-1, 0])
    assert with_hand.shape == without.shape == (6, 6)
    assert with_hand[3, 3] > without[3, 3] and with_hand[0, 0] > without[0, 0]


# The weighted step.


@given(st.integers(1, 6), st.integers(1, 6), st.floats(0.0, 2.0), st.integers(0, 2**32 - 1))
def test_with_the_identity_the_weighted_step_is_plain_dls(rows, cols, damping, seed):
    rng = np.random.default_rng(seed)
    J, e = rng.normal(size=(rows, cols)), rng.normal(size=rows)
    if damping < 1e-3 and rows > cols:
        # (Nearly) undamped needs full row rank: with more rows than columns J J^T + d^2 I has
        # condition ~1/d^2, and the reference below is rounding noise (d = 1e-9 gave 1e18).
        damping = 0.5
    plain = J.T @ np.linalg.solve(J @ J.T + damping**2 * np.eye(rows), e)
    got = mass.weighted_step(J, e, np.eye(cols), damping)
    assert np.allclose(got, plain, rtol=1e-9, atol=1e-9 * np.abs(plain).max())


@given(trees(max_bones=5), st.floats(0.0, 1.0), st.integers(0, 2**32 - 1))
def test_the_weighted_step_through_whitening(tree, damping, seed):
    """weighted_step = T (the plain DLS step of J T) with T T^T = M^-1 (how solvers.jacobian.tree
    would use it); undamped it meets J q' = e with the least energy of all steps that do."""
    parents, heads, tails, radii = tree
    n = len(parents)
    rng = np.random.default_rng(seed)
    M = mass.mass_matrix(heads, tails, parents, radii)
    J = mass.position_jacobian(heads, parents, [n - 1], tails[n - 1 :])[0] + 1e-3 * rng.normal(size=(3, 3 * n))
    e = rng.normal(size=3)
    T = mass.whitening(M)
    assert np.allclose(T @ T.T, np.linalg.inv(M), rtol=1e-6, atol=1e-8 * np.abs(np.linalg.inv(M)).max())
    step = mass.weighted_step(J, e, M, damping + 0.05)
    JT = J @ T
    plain = JT.T @ np.linalg.solve(JT @ JT.T + (damping + 0.05) ** 2 * np.eye(3), e)
    assert np.allclose(step, T @ plain, rtol=1e-7, atol=1e-9 * np.abs(step).max())
    exact = mass.weighted_step(J, e, M, 0.0)
    assert np.allclose(J @ exact, e, atol=1e-8 * (1.0 + np.abs(e).max()))
    # Any other step meeting the goal (exact + a null-space motion) costs more energy.
    null = np.linalg.svd(J)[2][3:].T
    other = exact + null @ rng.normal(size=null.shape[1])
    assert mass.kinetic_energy(M, other) >= mass.kinetic_energy(M, exact) * (1.0 - 1e-9)


def test_the_mass_weighting_moves_the_tip_joint_more():
    """A bent 3-bone arm asked to move its tip sideways: the plain step turns the shoulder more
    than the wrist; the mass-weighted step turns the wrist more (the issue's goal), at a lower energy."""
    points = np.array([[0.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.3, 1.75, 0.0], [0.55, 2.2, 0.0]])
    heads = points[:-1]
    M = mass.chain_mass_matrix(points, radii=[0.12, 0.09, 0.06])
    J = mass.position_jacobian(heads, [-1, 0, 1], [2], points[3:])[0]
    e = np.array([0.0, 0.0, 0.1])
    plain = mass.weighted_step(J, e, np.eye(9), 0.0)
    weighted = mass.weighted_step(J, e, M, 0.0)
    turns = lambda q: np.linalg.norm(q.reshape(3, 3), axis=1)  # noqa: E731
    assert turns(plain)[0] > turns(plain)[2]
    assert turns(weighted)[2] > turns(weighted)[0]
    assert mass.kinetic_energy(M, weighted) < mass.kinetic_energy(M, plain)
    assert np.allclose(J @ weighted, e) and np.allclose(J @ plain, e)


def test_normalized_scales_the_rotation_diagonal_to_one():
    M = mass.chain_mass_matrix(np.array([[0.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 2.0, 0.0]]), root_translation=True)
    N = mass.normalized(M, skip=3)
    assert np.mean(np.diag(N)[3:]) == pytest.approx(1.0)
    assert np.allclose(N * (M[3, 3] / N[3, 3]), M)


def test_the_weighting_inertia_adds_each_joints_armature_to_the_turning_columns():
    M = mass.chain_mass_matrix(np.array([[0.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 1.5, 0.3]]), root_translation=True)
    W = mass.weighting_inertia(M, skip=3)
    diff = W - mass.normalized(M, skip=3)
    assert np.allclose(diff, np.diag([0.0] * 3 + [mass.ARMATURE_SHARE] * 6), rtol=0.0, atol=1e-12)
    assert np.array_equal(W, W.T) and np.linalg.eigvalsh(W).min() > 0.0


@pytest.mark.parametrize("arm", [a for a in bench_mass.ARMS if a[0].startswith("4-bone")], ids=lambda a: a[0])
def test_the_mass_weighting_lowers_the_energy_of_the_4_bone_sweep(arm):
    """Issue 20 item 3 on bench/bench_mass.py's hardest row (the 4-bone arm's sweep, through the real
    solver, each frame from the previous pose): with the capsules' M alone the light hand swung and the
    motion cost 1.14-1.16x the plain step's energy; with each joint's armature (weighting_inertia) it
    costs less, the hand still turns the most and the root less than in the plain step, every frame reached."""
    name, lengths, radii = arm
    la = np.asarray(lengths, dtype=float)
    ra = None if radii is None else np.asarray(radii, dtype=float)
    start = bench_mass.points_of(bench_mass.start_pose(len(la)), la)[-1]
    path = bench_mass.sequences(start, float(la.sum()), 30)["sweep"]
    plain = bench_mass.run(la, ra, path, False, bench_mass.solve_frame_solver)
    weighted = bench_mass.run(la, ra, path, True, bench_mass.solve_frame_solver)
    assert weighted["energy"] < 0.97 * plain["energy"]
    assert weighted["share"][-1] > plain["share"][-1] + 0.15
    assert weighted["share"][0] < plain["share"][0]
    assert max(plain["miss"], weighted["miss"]) <= 2.0 * bench_mass.TOLERANCE * la.sum()


# Bad input.


def test_bad_input_is_refused():
    heads = np.zeros((2, 3))
    tails = np.array([[0.0, 1.0, 0.0], [0.0, 2.0, 0.0]])
    with pytest.raises(ValueError, match="parent"):
        mass.mass_matrix(heads, tails, [-1, 1])
    with pytest.raises(ValueError, match="one entry per bone"):
        mass.mass_matrix(heads, tails, [-1])
    with pytest.raises(ValueError, match="zero length"):
        mass.mass_matrix(heads, heads, [-1, 0])
    with pytest.raises(ValueError, match="radii"):
        mass.mass_matrix(heads, tails, [-1, 0], radii=[0.1, 0.0])
    with pytest.raises(ValueError, match="radii"):
        mass.mass_matrix(heads, tails, [-1, 0], radii=[0.1])
    with pytest.raises(ValueError, match="density"):
        mass.mass_matrix(heads, tails, [-1, 0], density=float("nan"))
    with pytest.raises(ValueError, match="heads"):
        mass.mass_matrix([[0.0, float("nan"), 0.0], [0, 0, 0]], tails, [-1, 0])
    with pytest.raises(ValueError, match="joints"):
        mass.mass_matrix(heads, tails, [-1, 0], joints=[0, 0])
    with pytest.raises(ValueError, match="axes"):
        mass.mass_matrix(heads, tails, [-1, 0], axes=np.eye(3))
    with pytest.raises(ValueError, match="capsule's radius"):
        mass.capsule_inertia(1.0, -0.1)
    with pytest.raises(ValueError, match="positive definite"):
        mass.weighted_step(np.eye(3), np.ones(3), -np.eye(3), 0.1)
    with pytest.raises(ValueError, match="damping"):
        mass.weighted_step(np.eye(3), np.ones(3), np.eye(3), -0.1)
    with pytest.raises(ValueError, match="singular"):
        mass.weighted_step(np.zeros((3, 3)), np.ones(3), np.eye(3), 0.0)
    with pytest.raises(ValueError, match="shapes"):
        mass.weighted_step(np.eye(3), np.ones(2), np.eye(3), 0.1)


@given(trees(), st.booleans(), st.booleans(), st.integers(0, 2**32 - 1))
def test_the_mass_matrix_is_its_definition(tree, own_axes, translation, seed):
    """M = sum over bones of m J_v^T J_v + J_w^T I_world J_w, built literally from each bone's centre
    velocity Jacobian (position_jacobian) and angular velocity Jacobian, over a subset of joints."""
    parents, heads, tails, radii = tree
    n = len(parents)
    rng = np.random.default_rng(seed)
    joints = [int(j) for j in rng.permutation(n)[: rng.integers(1, n + 1)]]
    axes = random_frames(rng, len(joints)) if own_axes else None
    A = np.broadcast_to(np.eye(3), (len(joints), 3, 3)) if axes is None else axes
    jv = mass.position_jacobian(heads, parents, range(n), 0.5 * (heads + tails), joints, axes, translation)
    turns = mass.ancestry(parents, joints)
    expected = np.zeros((jv.shape[-1],) * 2)
    for i in range(n):
        jw = np.zeros((3, jv.shape[-1]))
        for k in range(len(joints)):
            if turns[i, k]:
                jw[:, 3 * translation + 3 * k : 3 * translation + 3 * k + 3] = A[k]
        axis = tails[i] - heads[i]
        length = float(np.linalg.norm(axis))
        m, transverse, axial = analytic_capsule(length, radii[i], 1.0)
        y = axis / length
        own = transverse * np.eye(3) + (axial - transverse) * np.outer(y, y)
        expected += m * jv[i].T @ jv[i] + jw.T @ own @ jw
    M = mass.mass_matrix(heads, tails, parents, radii, joints=joints, axes=axes, root_translation=translation)
    assert np.allclose(M, expected, rtol=1e-10, atol=1e-12 * np.abs(expected).max())


@given(trees(), st.tuples(*[st.floats(-1e4, 1e4)] * 3))
def test_the_mass_matrix_does_not_depend_on_where_the_rig_stands(tree, shift):
    parents, heads, tails, radii = tree
    M = mass.mass_matrix(heads, tails, parents, radii, root_translation=True)
    moved = mass.mass_matrix(heads + shift, tails + shift, parents, radii, root_translation=True)
    assert np.allclose(moved, M, rtol=1e-9, atol=1e-9 * np.abs(M).max())
