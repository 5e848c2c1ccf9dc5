"""A movable root (issue 20 item 1, solvers.common.root_move), in the core:

- off (or root_stiffness 1) it is today's solve to the bit, and so is a movable root whose
  targets are all within reach where the plain solve reaches them;
- it never moves a pinned effector: wherever the plain solve holds the pins, the movable root's
  holds them within the tolerance too (random trees, hinges and cones, targets far beyond reach);
- a target beyond reach is reached by moving the root, by every method, the pins held;
- a lone chain is a one-effector skeleton: it moves its root too; bad input is refused.
"""

import numpy as np
import pytest
import tree_shapes
from hypothesis import given, settings
from hypothesis import strategies as st

import solvers
from solvers import registry
from solvers.common import pins, root_move
from solvers.skeleton_effectors import resolve_pins
from solvers.skeleton_floats import moved_bones

METHODS = [m.name for m in registry.METHOD_LIST]


def _tolerance(skeleton, bones) -> float:
    return solvers.DEFAULT_RELATIVE_TOLERANCE * float(np.sum(skeleton.lengths[moved_bones(skeleton, bones)]))


def _far(skeleton, local, bone, rng, low=0.2, high=3.0) -> np.ndarray:
    _, _, ends = skeleton.forward(local)
    d = rng.normal(size=3)
    return ends[bone] + rng.uniform(low, high) * d / np.linalg.norm(d)


def _random_case(seed: int, limited: bool):
    rng = np.random.default_rng(seed)
    skeleton, local, bones = tree_shapes.random_tree(rng, limited=limited, leaves=True)
    pinned = int(rng.integers(0, len(bones)))  # 0: no pin
    effectors = [solvers.Effector(b, pin=True) for b in bones[:pinned]]
    effectors += [solvers.Effector(b, _far(skeleton, local, b, rng)) for b in bones[pinned:]]
    return skeleton, local, effectors, float(rng.uniform(0.0, 1.0))


@pytest.mark.parametrize("method", METHODS)
@settings(max_examples=15)
@given(seed=st.integers(0, 2**32 - 1), limited=st.booleans())
def test_off_and_stiff_are_the_plain_solve_to_the_bit(method, seed, limited):
    skeleton, local, effectors, _ = _random_case(seed, limited)
    plain = solvers.solve_skeleton(skeleton, local, effectors, method=method)
    off = solvers.solve_skeleton(skeleton, local, effectors, method=method, move_root=False, root_stiffness=0.0)
    stiff = solvers.solve_skeleton(skeleton, local, effectors, method=method, move_root=True, root_stiffness=1.0)
    assert plain.root_shift is None and off.root_shift is None
    assert np.array_equal(off.local, plain.local) and np.array_equal(off.error, plain.error)
    assert np.array_equal(stiff.local, plain.local) and np.array_equal(stiff.error, plain.error)
    assert np.array_equal(stiff.root_shift, np.zeros(3))


@pytest.mark.parametrize("method", METHODS)
@settings(max_examples=15)
@given(seed=st.integers(0, 2**32 - 1), limited=st.booleans())
def test_within_reach_the_root_stays_and_the_solve_is_the_plain_one(method, seed, limited):
    rng = np.random.default_rng(seed)
    skeleton, local, bones = tree_shapes.random_tree(rng, limited=limited, leaves=True)
    targets, _ = tree_shapes.fk_targets(skeleton, local, bones, rng)
    effectors = [solvers.Effector(b, t) for b, t in zip(bones, targets, strict=True)]
    plain = solvers.solve_skeleton(skeleton, local, effectors, method=method)
    moving = solvers.solve_skeleton(skeleton, local, effectors, method=method, move_root=True)
    if plain.reached:  # else the root may move to reach what the turns missed
        assert np.array_equal(moving.root_shift, np.zeros(3))
        assert np.array_equal(moving.local, plain.local)


@pytest.mark.parametrize("method", METHODS)
@settings(max_examples=20)
@given(seed=st.integers(0, 2**32 - 1), limited=st.booleans())
def test_a_movable_root_never_moves_a_pinned_effector(method, seed, limited):
    """Random trees, some leaves pinned, the others' targets 0.2-3 away (mostly beyond reach): where
    the plain solve holds every pin, the movable root's solve does too, whatever the stiffness."""
    skeleton, local, effectors, stiffness = _random_case(seed, limited)
    tol = _tolerance(skeleton, [e.bone for e in effectors])
    pins = [k for k, e in enumerate(effectors) if e.pin]
    plain = solvers.solve_skeleton(skeleton, local, effectors, method=method)
    moving = solvers.solve_skeleton(skeleton, local, effectors, method=method, move_root=True, root_stiffness=stiffness)
    if np.all(plain.error[pins] <= tol):
        assert np.all(moving.error[pins] <= tol), (moving.error[pins], tol, moving.root_shift)


def _body():
    skeleton, local, bones = tree_shapes.humanoid()
    arm = bones["forearm.L"]
    reach = root_move._Branch.of(skeleton, 0, solvers.Effector(arm, np.zeros(3))).reach
    _, heads, _ = skeleton.forward(local)
    anchor = heads[bones["spine"]]
    target = anchor + np.array([0.0, -1.25 * reach, 0.0])  # level, in front (-Y), 25% beyond reach
    return skeleton, local, bones, target


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("stiffness", [0.0, 0.5, 0.9])
def test_a_hand_beyond_reach_is_reached_with_the_feet_pinned(method, stiffness):
    skeleton, local, bones, target = _body()
    effectors = [
        solvers.Effector(bones["forearm.L"], target),
        solvers.Effector(bones["shin.L"], pin=True),
        solvers.Effector(bones["shin.R"], pin=True),
    ]
    _, _, ends = skeleton.forward(local)
    tol = _tolerance(skeleton, [e.bone for e in effectors])
    plain = solvers.solve_skeleton(skeleton, local, effectors, method=method)
    assert not plain.reached and plain.error[0] > 0.1  # honestly missed with the root nailed
    moving = solvers.solve_skeleton(skeleton, local, effectors, method=method, move_root=True, root_stiffness=stiffness)
    assert moving.reached, (moving.error, tol)
    assert np.linalg.norm(moving.root_shift) > 0.1
    shifted = root_move.shifted(skeleton, 0, moving.root_shift)
    _, _, got = shifted.forward(moving.local)
    for bone in (bones["shin.L"], bones["shin.R"]):
        assert np.linalg.norm(got[bone] - ends[bone]) <= tol
    assert np.linalg.norm(got[bones["forearm.L"]] - target) <= tol


def test_pins_first_puts_the_moved_pins_back_before_the_turns():
    """Method.root_pins_first (CCD): the root's move takes the pinned legs with it, and the turns
    start from the pins put back by the least-squares method's Newton steps on the bones only the
    pins hang from (common.pins.placed), the target's branch untouched; CCD then reaches with the
    same root as the others, in one round."""
    skeleton, local, bones, target = _body()
    effectors = [
        solvers.Effector(bones["forearm.L"], target),
        solvers.Effector(bones["shin.L"], pin=True),
        solvers.Effector(bones["shin.R"], pin=True),
    ]
    resolved = resolve_pins(skeleton, local, effectors)
    tol = _tolerance(skeleton, [e.bone for e in effectors])
    assert pins.placed(skeleton, local, resolved, tol, registry.LEAST_SQUARES) is local  # the pins hold
    moved = root_move.shifted(skeleton, 0, np.array([0.0, -0.3, -0.05]))
    before = max(d for _, d in pins.held(moved, local, resolved, tol))
    start = pins.placed(moved, local, resolved, tol, registry.LEAST_SQUARES)
    # (a pinned shin's frame is fixed, so a thigh alone cannot put it back exactly: nearer)
    assert max((d for _, d in pins.held(moved, start, resolved, tol)), default=0.0) < 0.2 * before
    arm = skeleton.branch(bones["forearm.L"])
    assert np.array_equal(start[arm], local[arm])
    assert [m.name for m in registry.METHOD_LIST if m.root_pins_first] == ["ccd"]
    ccd, fabrik = (
        solvers.solve_skeleton(skeleton, local, effectors, method=m, move_root=True) for m in ("ccd", "fabrik")
    )
    assert ccd.reached and np.allclose(ccd.root_shift, fabrik.root_shift, atol=1e-12)


def test_stiffer_roots_move_less():
    skeleton, local, bones, target = _body()
    effectors = [solvers.Effector(bones["forearm.L"], target), solvers.Effector(bones["shin.L"], pin=True)]
    moved = [
        np.linalg.norm(
            solvers.solve_skeleton(
                skeleton, local, effectors, method="fabrik", move_root=True, root_stiffness=s
            ).root_shift
        )
        for s in (0.0, 0.5, 0.9, 1.0)
    ]
    assert moved[0] > moved[1] > moved[2] > moved[3] == 0.0


@pytest.mark.parametrize("method", METHODS)
def test_a_lone_chain_moves_its_root_to_reach(method):
    chain = solvers.Chain([[0, 0, 0], [0, 1, 0], [0, 2, 0], [0, 3, 0]], frames=np.tile([1.0, 0, 0, 0], (3, 1)))
    skeleton, local = solvers.Skeleton.from_chain(chain)
    target = np.array([2.0, 3.0, 0.0])  # 3.6 from the root: beyond its reach of 3
    plain = solvers.solve_skeleton(skeleton, local, [solvers.Effector(2, target)], method=method)
    assert not plain.reached
    sol = solvers.solve_skeleton(skeleton, local, [solvers.Effector(2, target)], method=method, move_root=True)
    assert sol.reached and sol.error[0] <= 1e-3 * 3
    _, _, ends = root_move.shifted(skeleton, 0, sol.root_shift).forward(sol.local)
    assert np.linalg.norm(ends[2] - target) == pytest.approx(sol.error[0], abs=1e-12)
    # the root's own bone turns about its head; the rest is reached within 7/8 of the reach from there
    assert np.linalg.norm(target - (chain.points[1] + sol.root_shift)) <= root_move.comfort(0.5) * 2 + 1e-9


def test_frames_carry_the_root_move():
    skeleton, local, bones, target = _body()
    effectors = [solvers.Effector(bones["forearm.L"], target), solvers.Effector(bones["shin.L"], pin=True)]
    positions = np.array([[target], [target + [0, -0.05, 0]], [target + [0, -0.1, 0]]])
    positions = np.concatenate([positions, np.zeros((3, 1, 3))], axis=1)
    for entry in (solvers.solve_skeleton_sequence, solvers.solve_skeleton_many):
        batch = entry(skeleton, local, effectors, positions, method="jacobian", move_root=True)
        assert batch.reason == root_move.MOVING_ROOT and batch.root_shift.shape == (3, 3)
        assert np.all(batch.reached)
        assert np.all(np.linalg.norm(batch.root_shift, axis=1) > 0.1)
    plain = solvers.solve_skeleton_sequence(skeleton, local, effectors, positions, method="jacobian")
    assert plain.root_shift is None


def test_bad_input_is_refused():
    skeleton, local, bones, target = _body()
    effectors = [solvers.Effector(bones["forearm.L"], target)]
    for bad in (-0.1, 1.5, float("nan"), "0.5", True):
        with pytest.raises(ValueError, match="root_stiffness"):
            solvers.solve_skeleton(skeleton, local, effectors, method="ccd", move_root=True, root_stiffness=bad)
    two, two_local = solvers.Skeleton.from_bones([-1, -1], [[0, 0, 0], [1, 0, 0]], [[0, 1, 0], [1, 1, 0]])
    goals = [solvers.Effector(0, [0, 3, 0]), solvers.Effector(1, [1, 3, 0])]
    with pytest.raises(ValueError, match="one top bone"):
        solvers.solve_skeleton(two, two_local, goals, method="fabrik", move_root=True)
