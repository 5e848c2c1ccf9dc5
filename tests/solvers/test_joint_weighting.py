"""The Jacobian's `joint_weighting` (issue 20 item 3): "STIFFNESS" (the default) is today's solve to
the bit; "MASS" (Grassia's W = M(q)^-1, solvers.common.mass) reaches what it reaches, honours the
limits, says why the float and block kernels do not serve it, and moves the distal joints more."""

import dataclasses

import ik_strategies as iks
import numpy as np
import pytest
import tree_shapes
from hypothesis import given, settings
from hypothesis import strategies as st

import solvers
from solvers import limits as joint_limits
from solvers import quat
from solvers.common import mass
from solvers.jacobian import tree as tree_jacobian

SKELETON, LOCAL, NAMES = tree_shapes.humanoid()
ARM = ([0.16, 0.30, 0.27, 0.09], [0.05, 0.05, 0.04, 0.03])  # clavicle, upper arm, forearm, hand; radii


def arm_chain(radii=None) -> solvers.Chain:
    """A 4-bone arm with frames: the clavicle sideways, the rest bent forward and down."""
    dirs = quat.normalize(np.array([[1.0, 0.05, 0.0], [0.3, 0.8, -0.4], [0.2, 0.9, 0.3], [0.1, 0.9, -0.2]]))
    points = np.concatenate((np.zeros((1, 3)), np.cumsum(np.array(ARM[0])[:, None] * dirs, axis=0)))
    return solvers.Chain(points, iks.frames_along(dirs, [0.0] * 4), radii=radii)


def joint_turns(chain: solvers.Chain, rotations: np.ndarray) -> np.ndarray:
    """Each joint's turn (radians) from the input pose to the solved one, in its parent's frame."""
    start = iks.solved_locals(chain, np.tile([1.0, 0.0, 0.0, 0.0], (chain.n_bones, 1)))
    return quat.angle(quat.multiply(iks.solved_locals(chain, rotations), quat.conjugate(start)))


@settings(max_examples=25, deadline=None)
@given(iks.chain_and_reachable(1, 8), st.booleans())
def test_stiffness_is_the_default_to_the_bit_on_chains(case, numpy_kernel):
    chain, target = case
    if numpy_kernel:  # the batch kernel (numpy) as well as the float one
        plain = solvers.solve_batch(chain, target[None], method="jacobian")
        named = solvers.solve_batch(chain, target[None], method="jacobian", joint_weighting="STIFFNESS")
    else:
        plain = solvers.solve(chain, target, method="jacobian")
        named = solvers.solve(chain, target, method="jacobian", joint_weighting="STIFFNESS")
    np.testing.assert_array_equal(named.points, plain.points)
    assert named.iterations == plain.iterations and named.reason == plain.reason


@settings(max_examples=20, deadline=None)
@given(iks.limited_chains(2, 8), st.integers(0, 2**16))
def test_stiffness_is_the_default_to_the_bit_on_limited_chains(chain, seed):
    target = iks.forward_kinematics(chain, iks.allowed_pose(chain, np.random.default_rng(seed)))[1][-1]
    plain = solvers.solve(chain, target, method="jacobian")
    named = solvers.solve(chain, target, method="jacobian", joint_weighting="STIFFNESS")
    np.testing.assert_array_equal(named.points, plain.points)
    np.testing.assert_array_equal(named.rotations, plain.rotations)


def limited_humanoid(rng) -> solvers.Skeleton:
    n = SKELETON.n_bones
    half = np.radians(rng.uniform(10.0, 90.0, size=(n, 3)))
    limits = solvers.make_limits(
        n,
        lock=rng.random((n, 3)) < 0.2,
        use_limit=rng.random((n, 3)) < 0.7,
        minimum=-half,
        maximum=half,
        stiffness=np.where(rng.random((n, 3)) < 0.3, rng.uniform(0.0, 0.9, size=(n, 3)), 0.0),
    )
    s = SKELETON
    return solvers.Skeleton(s.parents, s.offsets, s.links, s.lengths, s.reference, s.base_frame, limits)


def humanoid_effectors(count: int, seed: int) -> list:
    bones = [NAMES[n] for n in ["forearm.L", "forearm.R", "head", "shin.L", "shin.R"][:count]]
    targets, _ = tree_shapes.fk_targets(SKELETON, LOCAL, bones, np.random.default_rng(seed))
    return [solvers.Effector(b, t) for b, t in zip(bones, targets, strict=True)]


@settings(max_examples=15, deadline=None)
@given(st.sampled_from([2, 3, 5]), st.booleans(), st.integers(0, 2**16))
def test_stiffness_is_the_default_to_the_bit_on_trees(count, limited, seed):
    skeleton = limited_humanoid(np.random.default_rng(seed)) if limited else SKELETON
    effs = humanoid_effectors(count, seed)
    plain = solvers.solve_skeleton(skeleton, LOCAL, effs, method="jacobian", max_iterations=60)
    named = solvers.solve_skeleton(
        skeleton, LOCAL, effs, method="jacobian", max_iterations=60, joint_weighting="STIFFNESS"
    )
    np.testing.assert_array_equal(named.local, plain.local)
    assert named.iterations == plain.iterations


@settings(max_examples=30, deadline=None)
@given(st.integers(1, 8), st.integers(0, 2**16), st.booleans())
def test_mass_reaches_reachable_targets_on_chains(n, seed, batch):
    rng = np.random.default_rng(seed)
    lengths = rng.uniform(0.2, 1.0, n)
    dirs = quat.normalize(rng.normal(size=(n, 3)) * [0.3, 1.0, 0.3])
    chain = solvers.Chain(np.concatenate((np.zeros((1, 3)), np.cumsum(lengths[:, None] * dirs, axis=0))))
    target = iks.rng_reachable_targets(chain, 1, seed)[0]  # by forward kinematics: reachable
    if batch:
        sol = solvers.solve_batch(chain, target[None], method="jacobian", joint_weighting="MASS")
        assert sol.reached[0], sol.error
    else:
        sol = solvers.solve(chain, target, method="jacobian", joint_weighting="MASS")
        assert sol.reached, sol.error
        iks.check_invariants(chain, sol, target)
    assert "mass weighting" in sol.reason  # the numpy kernel served, and the result says why


@settings(max_examples=25, deadline=None)
@given(iks.limited_chains(2, 8), st.integers(0, 2**16))
def test_mass_honours_limits_and_reaches_on_limited_chains(chain, seed):
    pose = iks.allowed_pose(chain, np.random.default_rng(seed), spread=0.5)
    target = iks.forward_kinematics(chain, pose)[1][-1]
    sol = solvers.solve(chain, target, method="jacobian", joint_weighting="MASS")
    iks.check_limited_solution(chain, sol.points, sol.rotations)
    # Limits can trap a local search short of an allowed target (either weighting): the solve never
    # ends farther than it started, and the limited arm below reaches.
    assert sol.error <= np.linalg.norm(chain.points[-1] - target) + 1e-9


@pytest.mark.parametrize("seed", range(10))
def test_mass_reaches_on_a_limited_arm(seed):
    plain = arm_chain(ARM[1])
    n = plain.n_bones
    limits = solvers.make_limits(
        n,
        lock=[[False, True, False]] * n,
        use_limit=[[True, False, True]] * n,
        minimum=[[-1.2, 0.0, -1.2]] * n,
        maximum=[[1.2, 0.0, 1.2]] * n,
        stiffness=[[0.3, 0.0, 0.3]] + [[0.0, 0.0, 0.0]] * (n - 1),
    )
    chain = solvers.Chain(plain.points, plain.frames, limits=limits, radii=ARM[1])
    pose = iks.allowed_pose(chain, np.random.default_rng(seed), spread=0.4)
    target = iks.forward_kinematics(chain, pose)[1][-1]
    sol = solvers.solve(chain, target, method="jacobian", joint_weighting="MASS")
    iks.check_limited_solution(chain, sol.points, sol.rotations)
    assert sol.reached, sol.error


@settings(max_examples=20, deadline=None)
@given(st.sampled_from([2, 3, 5]), st.booleans(), st.integers(0, 2**16))
def test_mass_reaches_and_honours_limits_on_trees(count, limited, seed):
    skeleton = limited_humanoid(np.random.default_rng(seed)) if limited else SKELETON
    effs = humanoid_effectors(count, seed)
    sol = solvers.solve_skeleton(skeleton, LOCAL, effs, method="jacobian", joint_weighting="MASS")
    assert np.all(np.isfinite(sol.local))
    if limited:
        assert np.all(joint_limits.violation(skeleton.limits, sol.local) <= 1e-9)
    else:
        assert sol.reached, sol.error


@pytest.mark.parametrize("seed", range(8))
def test_mass_moves_the_distal_joints_more(seed):
    chain = arm_chain(ARM[1])
    rng = np.random.default_rng(seed)
    target = 0.8 * chain.points[-1] + 0.1 * chain.total_length * quat.normalize(rng.normal(size=3))
    plain = solvers.solve(chain, target, method="jacobian")
    by_mass = solvers.solve(chain, target, method="jacobian", joint_weighting="MASS")
    assert plain.reached and by_mass.reached
    shares = [t / t.sum() for t in (joint_turns(chain, plain.rotations), joint_turns(chain, by_mass.rotations))]
    assert shares[1][-1] > shares[0][-1]  # the hand turns a larger share
    assert shares[1][0] < shares[0][0]  # the clavicle a smaller one


@pytest.mark.parametrize("seed", range(6))
def test_mass_on_a_tree_lowers_the_energy_of_the_move(seed):
    """Two hands on the humanoid: the pose change's kinetic energy 1/2 d^T M d (d each moved joint's
    rotation vector in its own axes, M at the input pose) is lower with the mass weighting."""
    effs = humanoid_effectors(2, seed)
    tree = tree_jacobian.Tree(SKELETON, effs)
    frames, heads, _ = tree.forward(LOCAL[tree.moved])
    inertia = tree.inertia(frames, heads)
    energy = []
    for weighting in ("STIFFNESS", "MASS"):
        sol = solvers.solve_skeleton(SKELETON, LOCAL, effs, method="jacobian", joint_weighting=weighting)
        assert sol.reached
        d = quat.to_rotation_vector(quat.multiply(quat.conjugate(LOCAL[tree.moved]), sol.local[tree.moved]))
        energy.append(mass.kinetic_energy(inertia, d.ravel()))
    assert energy[1] < energy[0]


def test_radii_are_checked_and_change_the_solve():
    with pytest.raises(ValueError, match="radii"):
        arm_chain([0.05, -0.01, 0.04, 0.03])
    with pytest.raises(ValueError, match="radii"):
        arm_chain([0.05, 0.04])
    s = SKELETON
    with pytest.raises(ValueError, match="radii"):
        solvers.Skeleton(s.parents, s.offsets, s.links, s.lengths, s.reference, s.base_frame, None, np.ones(2))
    target = arm_chain().points[-1] + [0.1, 0.05, -0.1]
    light, heavy = arm_chain(ARM[1]), arm_chain([0.05, 0.05, 0.04, 0.3])  # a heavy hand moves less
    turns = [
        joint_turns(c, solvers.solve(c, target, method="jacobian", joint_weighting="MASS").rotations)
        for c in (light, heavy)
    ]
    assert turns[1][-1] / turns[1].sum() < turns[0][-1] / turns[0].sum()
    default = solvers.solve(arm_chain(), target, method="jacobian", joint_weighting="MASS")
    share = arm_chain(0.1 * np.array(ARM[0]))
    np.testing.assert_allclose(
        default.points, solvers.solve(share, target, method="jacobian", joint_weighting="MASS").points, atol=1e-12
    )


def test_a_skeletons_radii_reach_its_branchs_chain():
    """A lone branch of a skeleton is solved as its chain (skeleton_solve.branch_chain): the radii
    the rig read come with it, so the mass-weighted solve is the chain's with those radii."""
    chain = arm_chain([0.05, 0.05, 0.04, 0.3])
    skeleton, local = solvers.Skeleton.from_chain(chain)
    target = chain.points[-1] + [0.1, 0.05, -0.1]
    options = {"method": "jacobian", "joint_weighting": "MASS"}
    direct = solvers.solve(chain, target, **options)
    one = solvers.solve_skeleton(skeleton, local, [solvers.Effector(3, target)], **options)
    np.testing.assert_allclose(skeleton.forward(one.local)[1], direct.points[:-1], atol=1e-9)
    bare = dataclasses.replace(skeleton, radii=None)  # the default share of each length instead
    other = solvers.solve_skeleton(bare, local, [solvers.Effector(3, target)], **options)
    assert np.abs(bare.forward(other.local)[1] - direct.points[:-1]).max() > 1e-3


def test_the_option_is_declared_once_and_checked():
    option = {o.name: o for o in solvers.REGISTRY["jacobian"].options}["joint_weighting"]
    assert option.default == "STIFFNESS" and [c[0] for c in option.choices] == ["STIFFNESS", "MASS"]
    with pytest.raises(ValueError, match="joint_weighting"):
        solvers.solve(arm_chain(), [0.1, 0.2, 0.3], method="jacobian", joint_weighting="INERTIA")
