"""CCD's tree step near the goals (solvers.ccd.tree_near): its sweep is the whole-turn sweep CCD took
there before, its rescale of the turns is never worse than that sweep, and near the goals one step
does what plain sweeps took several for (a bake's frames)."""

import math

import numpy as np
import pytest
import tree_shapes
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from test_ccd_tree_floats import reference_sweep

import solvers
from solvers import limits as joint_limits
from solvers.ccd import tree as ccd_tree
from solvers.ccd import tree_near
from solvers.common.tree_mixing import goal_pairs
from solvers.common.tree_plan import make_plan
from solvers.skeleton_floats import end_point, forward, rows


def _near_case(seed: int, limited: bool, oriented: bool):
    """A random tree and effectors whose targets are a tiny random turn of every joint away (within
    NEAR of the pose, as a bake's predicted frames are); one with an orientation goal if `oriented`."""
    rng = np.random.default_rng(seed)
    skeleton, local, bones = tree_shapes.random_tree(rng, limited=limited)
    targets, posed = tree_shapes.fk_targets(skeleton, local, bones, rng, spread=3e-4)
    frames = skeleton.forward(posed)[0]
    effectors = [
        solvers.Effector(b, t, orientation=frames[b] if oriented and k == 0 else None)
        for k, (b, t) in enumerate(zip(bones, targets, strict=True))
    ]
    return skeleton, local, effectors


def _start(skeleton, local, effectors):
    plan = make_plan(skeleton, effectors)
    state = rows(local)
    frames, heads = forward(skeleton, state)
    return plan, state, frames, heads


def _near_step(skeleton, plan, effectors, write_out: bool = True):
    visits = ccd_tree.bone_visits(skeleton, plan, effectors)
    return tree_near.make_near_step(skeleton, plan, effectors, visits, ccd_tree._one_pair, write_out)


def _cost(skeleton, plan, effectors, frames, heads) -> float:
    """The weighted squared error of the goals' pairs (common.tree_mixing's measure)."""
    pairs = ([], [], [])
    bones = [e.bone for e in effectors]
    for k in range(len(bones)):
        goal_pairs(skeleton, plan, bones, k, (0.0, 0.0, 0.0), frames, heads, pairs)
    return sum(w * math.dist(a, b) ** 2 for a, b, w in zip(*pairs, strict=True))


def _is_near(skeleton, plan, effectors, frames, heads) -> bool:
    near = ccd_tree.NEAR * plan.length
    return all(math.dist(end_point(skeleton, frames, heads, e.bone), e.position.tolist()) <= near for e in effectors)


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**32 - 1), st.booleans(), st.booleans())
def test_near_sweep_is_the_whole_turn_sweep(seed, limited, oriented):
    """With the rescale held at its sweep's turns (a ridge that swamps it), the near step's pose is
    the sweep CCD took near the goals before (every bone turned whole; tracked points instead of
    every frame below a bone turned again: the same pose to rounding)."""
    skeleton, local, effectors = _near_case(seed, limited, oriented)
    plan, state, frames, heads = _start(skeleton, local, effectors)
    assume(_is_near(skeleton, plan, effectors, frames, heads))
    want = (list(state), list(frames), list(heads))
    reference_sweep(skeleton, plan, effectors, whole_near=True)(*want)
    saved = tree_near.RIDGE
    tree_near.RIDGE = 1e20
    try:
        assert _near_step(skeleton, plan, effectors)(state, frames, heads, ccd_tree.NEAR * plan.length, [])
    finally:
        tree_near.RIDGE = saved
    for got, wanted in zip((state, frames, heads), want, strict=True):
        np.testing.assert_allclose(np.array([got[i] for i in plan.moved]), np.array([wanted[i] for i in plan.moved]),
                                   atol=1e-10)  # fmt: skip


@settings(max_examples=80, deadline=None)
@given(st.integers(0, 2**32 - 1), st.booleans(), st.booleans())
def test_near_step_is_never_worse_than_its_sweep(seed, limited, oriented):
    """The rescaled turns are kept only where they beat the sweep's own pose: a near step's error is
    at most the whole-turn sweep's, its locals are within the limits, and its frames and heads are
    the forward kinematics of its locals."""
    skeleton, local, effectors = _near_case(seed, limited, oriented)
    plan, state, frames, heads = _start(skeleton, local, effectors)
    assume(_is_near(skeleton, plan, effectors, frames, heads))
    swept = (list(state), list(frames), list(heads))
    reference_sweep(skeleton, plan, effectors, whole_near=True)(*swept)
    before = _cost(skeleton, plan, effectors, frames, heads)
    _near_step(skeleton, plan, effectors)(state, frames, heads, ccd_tree.NEAR * plan.length, [])
    after = _cost(skeleton, plan, effectors, frames, heads)
    assert after <= _cost(skeleton, plan, effectors, *swept[1:]) * (1.0 + 1e-9) + 1e-24
    assert after <= before * (1.0 + 1e-9) + 1e-24
    pose = np.array(state)
    if skeleton.limits is not None:
        moved = np.array(plan.moved)
        np.testing.assert_allclose(joint_limits.clamp(skeleton.limits, moved, pose[moved]), pose[moved], atol=1e-12)
    fk_frames, fk_heads = forward(skeleton, rows(pose))
    np.testing.assert_allclose(np.array([frames[i] for i in plan.moved]), np.array([fk_frames[i] for i in plan.moved]))
    np.testing.assert_allclose(np.array([heads[i] for i in plan.moved]), np.array([fk_heads[i] for i in plan.moved]))


def test_near_step_is_not_taken_far_from_the_goals():
    """Some effector beyond NEAR of its target: the near step does nothing (the mixed sweeps serve)."""
    skeleton, local, bones = tree_shapes.y_tree()
    targets, _ = tree_shapes.fk_targets(skeleton, local, bones, np.random.default_rng(3), spread=0.5)
    effectors = [solvers.Effector(b, t) for b, t in zip(bones, targets, strict=True)]
    plan, state, frames, heads = _start(skeleton, local, effectors)
    assert not _is_near(skeleton, plan, effectors, frames, heads)
    kept = (list(state), list(frames), list(heads))
    assert not _near_step(skeleton, plan, effectors)(state, frames, heads, ccd_tree.NEAR * plan.length, [])
    assert (state, frames, heads) == kept


@pytest.mark.parametrize(("shape", "drop"), [("y_tree", 1e-2), ("humanoid", 0.1)])
def test_one_near_step_does_what_plain_sweeps_took_several_for(shape, drop):
    """From a start a few tolerances off (a bake's predicted frame), the near step leaves a small
    share of the squared error the whole-turn sweep leaves (median: a hundredth on the Y tree; a
    tenth on five effectors, whose 15 bones' turns do not span their 15 errors, the next step's
    joining them), and the solve meets a fifth of the start's error in one or two steps."""
    if shape == "y_tree":
        skeleton, local, bones = tree_shapes.y_tree()
    else:
        skeleton, local, named = tree_shapes.humanoid()
        bones = [named[n] for n in ("head", "forearm.L", "forearm.R", "shin.L", "shin.R")]
    rng = np.random.default_rng(7)
    steps, drops = [], []
    for _ in range(10):
        targets, _ = tree_shapes.fk_targets(skeleton, local, bones, rng, spread=2e-4)
        effectors = [solvers.Effector(b, t) for b, t in zip(bones, targets, strict=True)]
        plan, state, frames, heads = _start(skeleton, local, effectors)
        error = max(math.dist(end_point(skeleton, frames, heads, e.bone), e.position.tolist())
                    for e in effectors)  # fmt: skip
        swept = (list(state), list(frames), list(heads))
        reference_sweep(skeleton, plan, effectors, whole_near=True)(*swept)
        plain = _cost(skeleton, plan, effectors, *swept[1:])
        _near_step(skeleton, plan, effectors)(state, frames, heads, ccd_tree.NEAR * plan.length, [])
        drops.append(_cost(skeleton, plan, effectors, frames, heads) / plain)
        solved = solvers.solve_skeleton(skeleton, local, effectors, method="ccd", tolerance=error / 5.0)
        assert solved.reached
        steps.append(solved.iterations)
    assert max(steps) <= 2 and np.mean(steps) <= 1.5, steps
    assert np.median(drops) <= drop, drops


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(1, 3))
def test_written_out_sweep_is_the_general_one_to_the_bit(seed, steps):
    """Trees without limits or orientations take the sweep written out for their layout
    (ccd.tree_near_written): the same locals, frames and heads as the general sweep, bit for bit,
    over a few near steps (the rescale's history included)."""
    skeleton, local, effectors = _near_case(seed, False, False)
    plan, state, frames, heads = _start(skeleton, local, effectors)
    assume(_is_near(skeleton, plan, effectors, frames, heads))
    general = (list(state), list(frames), list(heads))
    near = ccd_tree.NEAR * plan.length
    written_step, general_step = _near_step(skeleton, plan, effectors), _near_step(skeleton, plan, effectors, False)
    written_history, general_history = [], []
    for _ in range(steps):
        assert written_step(state, frames, heads, near, written_history)
        assert general_step(*general, near, general_history)
        assert (state, frames, heads) == general


def test_a_layout_too_big_to_compile_takes_the_general_sweep(monkeypatch):
    """Compiling grows with visits x points (~1 s at 200 bones x 20 effectors): beyond
    tree_near_written.MOST_TERMS the near step takes the general sweep, with its numbers."""
    from solvers.ccd import tree_near_written

    assert tree_near_written.make([(0, -1, [0])], tree_near_written.MOST_TERMS + 1) is None
    assert tree_near_written.make([(0, -1, [0])], 1) is not None
    skeleton, local, effectors = _near_case(3, False, False)
    plan, state, frames, heads = _start(skeleton, local, effectors)
    assert _is_near(skeleton, plan, effectors, frames, heads)
    general = (list(state), list(frames), list(heads))
    near = ccd_tree.NEAR * plan.length
    monkeypatch.setattr(tree_near_written, "MOST_TERMS", 0)
    capped, general_step = _near_step(skeleton, plan, effectors), _near_step(skeleton, plan, effectors, False)
    assert capped(state, frames, heads, near, [])
    assert general_step(*general, near, [])
    assert (state, frames, heads) == general


@pytest.mark.parametrize("seed", [1, 3, 5])
def test_without_numpys_private_solve_the_public_one_gives_the_same_bits(monkeypatch, seed):
    """tree_near._solve takes numpy's private gufunc where present; a numpy without it takes
    np.linalg.solve, the same LAPACK routine: the same near steps, bit for bit."""
    skeleton, local, effectors = _near_case(seed, False, False)
    plan, state, frames, heads = _start(skeleton, local, effectors)
    near = ccd_tree.NEAR * plan.length
    public = (list(state), list(frames), list(heads))
    solves, solve = [], tree_near._solve
    monkeypatch.setattr(tree_near, "_solve", lambda *args: solves.append(tree_near._SOLVE1) or solve(*args))
    assert _near_step(skeleton, plan, effectors)(state, frames, heads, near, []) is not None
    monkeypatch.setattr(tree_near, "_SOLVE1", None)
    assert _near_step(skeleton, plan, effectors)(*public, near, []) is not None
    assert (state, frames, heads) == public
    assert solves[0] is not None and None in solves  # both routes ran
