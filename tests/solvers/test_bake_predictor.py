"""A bake frame's start (solvers.skeleton_sequence): the one least-squares predictor, skeleton_solve's
steps (`least_squares_steps`, which `stepped_start` takes after its first look), then the frame's
method from their pose."""

import numpy as np
import pytest
import tree_shapes
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from test_tree_solvers import trees

import solvers
from solvers import quat, registry, skeleton_sequence
from solvers.skeleton_effectors import merge_shared, resolve_pins
from solvers.skeleton_solve import START_WITHIN, least_squares_steps, stepped_start

TOLERANCE = 1e-4
PREDICTED = [name for name, entry in registry.REGISTRY.items() if entry.tree is not None and not entry.least_squares]


def _goals(skeleton, local, bones, rng, spread: float, pinned: bool = False) -> list:
    turned = quat.multiply(local, quat.from_rotation_vector(rng.uniform(-spread, spread, (len(local), 3))))
    ends = skeleton.forward(turned)[2]
    effectors = [solvers.Effector(b, position=ends[b]) for b in bones]
    if pinned:
        effectors[0] = solvers.Effector(bones[0], pin=True)
    return effectors


@pytest.mark.parametrize("method", PREDICTED)
@settings(max_examples=15, deadline=None)
@given(st.booleans().flatmap(lambda limited: trees(limited=limited)), st.booleans())
def test_a_continued_frame_is_its_method_from_the_least_squares_steps(method, tree, pinned):
    """A continued frame (no pole, the input pose unchanged) is the frame's method solved from the
    last solution moved by least_squares_steps (PREDICT_STEPS within PREDICT_WITHIN tolerances):
    the same numbers to the bit, for every method the predictor serves (within 1e-12 where that
    start meets every goal already: the frame is kept without the method's call, test_bake_kept_frame)."""
    skeleton, local, bones, rng = tree
    if len(bones) < 2 and not pinned:
        return  # one effector is a chain: the chain route, no predictor
    previous = quat.normalize(quat.multiply(local, quat.from_rotation_vector(rng.uniform(-0.2, 0.2, (len(local), 3)))))
    effectors = _goals(skeleton, local, bones, rng, 0.4, pinned)
    frame = solvers.solve_skeleton_next(skeleton, local, effectors, previous, method=method, tolerance=TOLERANCE)
    goals = resolve_pins(skeleton, local, effectors)
    near = skeleton_sequence.PREDICT_WITHIN * TOLERANCE
    start = least_squares_steps(skeleton, previous, merge_shared(goals), near, skeleton_sequence.PREDICT_STEPS)[0]
    direct = solvers.solve_skeleton(skeleton, start, goals, method=method, tolerance=TOLERANCE)
    if direct.iterations == 0:  # a start meeting every goal is kept without the call: up to rounding
        assert frame.iterations == 0 and frame.reached == direct.reached
        np.testing.assert_allclose(frame.local, direct.local, rtol=0, atol=1e-12)
        np.testing.assert_allclose(frame.error, direct.error, rtol=0, atol=1e-12)
        return
    np.testing.assert_array_equal(frame.local, direct.local)
    np.testing.assert_array_equal(frame.error, direct.error)


@settings(max_examples=30, deadline=None)
@given(st.booleans().flatmap(lambda limited: trees(limited=limited)))
def test_stepped_start_is_its_first_look_then_the_same_steps(tree):
    """stepped_start (a tree solve's start) is the input pose when every tip is near already, else
    least_squares_steps from it: one predictor for Solve's FABRIK start and a bake's frames."""
    skeleton, local, bones, rng = tree
    effectors = merge_shared(resolve_pins(skeleton, local, _goals(skeleton, local, bones, rng, 0.8)))
    near = START_WITHIN * TOLERANCE
    ends = skeleton.forward(local)[2]
    start = stepped_start(skeleton, local, effectors, TOLERANCE, 3)
    if all(np.linalg.norm(ends[e.bone] - e.position) <= near for e in effectors):
        assert start is local
    else:
        np.testing.assert_array_equal(start, least_squares_steps(skeleton, local, effectors, near, 3)[0])


@settings(max_examples=30, deadline=None)
@given(st.booleans().flatmap(lambda limited: trees(limited=limited)), st.floats(0.1, 30.0))
def test_a_start_error_spares_the_first_look_and_changes_nothing(tree, off):
    """solve_skeleton's `start_error` (a bake passes its prediction's distances): a start whose
    tips are all within START_WITHIN tolerances takes no step and is not measured again
    (stepped_start returns it as it is), one farther is stepped as without it; FABRIK's solve is
    the same to the bit either way (the steps' kernel measures what it is given, to rounding)."""
    skeleton, local, bones, rng = tree
    if len(bones) < 2:
        return
    ends = skeleton.forward(local)[2]
    direction = rng.normal(size=(len(bones), 3))
    direction /= np.linalg.norm(direction, axis=1, keepdims=True)
    goals = [solvers.Effector(b, position=ends[b] + off * TOLERANCE * d) for b, d in zip(bones, direction, strict=True)]
    near = START_WITHIN * TOLERANCE
    assume(abs(off - START_WITHIN) > 1e-6)  # (exactly that near: the look and the distances may round apart)
    start, measured = least_squares_steps(skeleton, local, goals, near, 0)  # the distances alone, as measured
    assert start is local
    if off < START_WITHIN * 0.99:
        assert stepped_start(skeleton, local, goals, TOLERANCE, 3, measured) is local
    plain = solvers.solve_skeleton(skeleton, local, goals, method="fabrik", tolerance=TOLERANCE)
    given = solvers.solve_skeleton(skeleton, local, goals, method="fabrik", tolerance=TOLERANCE, start_error=measured)
    np.testing.assert_array_equal(given.local, plain.local)
    np.testing.assert_array_equal(given.error, plain.error)


def test_a_start_error_of_another_length_is_refused():
    skeleton, local, names = tree_shapes.humanoid()
    goals = [solvers.Effector(names[b], position=np.zeros(3)) for b in ("forearm.L", "forearm.R")]
    with pytest.raises(ValueError, match="one distance per effector"):
        solvers.solve_skeleton(skeleton, local, goals, method="fabrik", start_error=[0.0])


@pytest.mark.parametrize("root", [{}, {"move_root": True}])
@pytest.mark.parametrize("bad", [[0.0], [0.0, float("nan")], [-1e-3, 0.0]])
def test_a_start_error_that_is_no_distance_per_effector_is_refused_on_every_path(root, bad):
    """A start_error of another length, NaN or negative is bad input wherever the solve goes (a
    moving root's solve, which does not use it, included), never silently ignored."""
    skeleton, local, names = tree_shapes.humanoid()
    goals = [solvers.Effector(names[b], position=np.zeros(3)) for b in ("forearm.L", "forearm.R")]
    with pytest.raises(ValueError, match="start_error"):
        solvers.solve_skeleton(skeleton, local, goals, method="fabrik", start_error=bad, **root)
