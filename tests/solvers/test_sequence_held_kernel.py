"""A sequence's frames through the least-squares kernel held for them (skeleton_sequence's
`Frames.steps`, the prediction, and `Frames.own`, the least-squares method's own solve:
jacobian.tree.Steps) are the frames through least_squares_steps and solve_skeleton: the same bits."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
import tree_shapes
from test_tree_sequence import sway

import solvers
from solvers import skeleton_held
from solvers.jacobian import tree as jacobian_tree

METHODS = [m.name for m in solvers.registry.METHOD_LIST if m.tree is not None]
CASES = ["whole", "some bones", "pole", "pin", "tolerance per frame", "default tolerance", "options"]


def _case(case: str):
    """(skeleton, input pose, effectors, their bones): the upper body (every bone moved) or the
    humanoid (its legs not moved), hands and head."""
    if case == "whole":
        names, skeleton, local = tree_shapes.upper_body()
        bones = [names.index(b) for b in ("hand.L", "hand.R", "head")]
    else:
        skeleton, local, names = tree_shapes.humanoid()
        bones = [names[b] for b in ("forearm.L", "forearm.R", "head")]
    effectors = [solvers.Effector(b, position=np.zeros(3)) for b in bones]
    if case == "pole":
        effectors[0] = replace(effectors[0], pole=np.array([0.4, -1.0, 1.4]))
    if case == "pin":
        effectors.append(solvers.Effector(names["shin.L"], pin=True))
    return skeleton, local, effectors, bones


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("method", METHODS)
def test_the_held_kernel_changes_no_frame(method, case, monkeypatch):
    """Every frame's rotations, errors, reached flags and iterations, and the batch's method and
    reason, with the kernel held and without (each frame through least_squares_steps and, for the
    least-squares method, solve_skeleton); some frames met as they start (each pose held a frame)
    and some not. Where the layout is the written-out case the held kernel serves every frame."""
    skeleton, local, effectors, bones = _case(case)
    positions, _ = sway(skeleton, local, bones, np.random.default_rng(4), 16, spread=0.3, amplitude=0.05)
    positions = np.repeat(positions, 2, axis=0)
    rows = np.concatenate([positions, np.zeros((len(positions), len(effectors) - len(bones), 3))], axis=1)
    goals = [e if e.pin else replace(e, position=rows[0, k]) for k, e in enumerate(effectors)]
    settings: dict = {"tolerance": 1e-4}
    if case == "tolerance per frame":
        settings["tolerance"] = np.where(np.arange(len(rows)) % 3 == 0, 1e-4, 3e-4)
    if case == "default tolerance":
        settings["tolerance"] = None
    if case == "options" and method == "jacobian":
        settings.update(damping=0.1, max_step=0.3)
    held: list = []
    steps, own = skeleton_held.held_steps, skeleton_held.held_own
    monkeypatch.setattr(skeleton_held, "held_steps", lambda *a: held.append(steps(*a)) or held[-1])
    monkeypatch.setattr(skeleton_held, "held_own", lambda *a: held.append(own(*a)) or held[-1])

    def bake():
        return solvers.solve_skeleton_sequence(skeleton, local, goals, rows, method=method, **settings)

    fast = bake()
    assert len(held) == 1
    served = case != "pin"  # (held with a pole too: poles are left to the method, or its own solve)
    assert isinstance(held[0], jacobian_tree.Steps) == served, held
    monkeypatch.setattr(skeleton_held, "held_steps", lambda *a: "not held")
    monkeypatch.setattr(skeleton_held, "held_own", lambda *a: "not held")
    slow = bake()
    for name in ("local", "error", "reached", "iterations"):
        np.testing.assert_array_equal(getattr(fast, name), getattr(slow, name))
    assert (fast.method, fast.reason) == (slow.method, slow.reason)
    if method != "jacobian" and case != "pole":  # (some frames kept, some solved; a pole's never kept)
        assert 0 < np.count_nonzero(fast.iterations == 0) < len(rows)


def test_steps_say_why_not():
    """jacobian.tree.steps names why a layout is not its written-out case (a pin's orientation
    goal, another variant)."""
    skeleton, local, names = tree_shapes.humanoid()
    goals = [solvers.Effector(names[b], position=np.zeros(3)) for b in ("forearm.L", "forearm.R")]
    defaults = solvers.registry.LEAST_SQUARES.defaults
    assert isinstance(jacobian_tree.steps(skeleton, goals, defaults), jacobian_tree.Steps)
    turned = [goals[0], replace(goals[1], orientation=np.array([1.0, 0.0, 0.0, 0.0]))]
    assert isinstance(jacobian_tree.steps(skeleton, turned, defaults), str)
    assert isinstance(jacobian_tree.steps(skeleton, goals, dict(defaults, variant="transpose")), str)


@pytest.mark.parametrize("previous", ["not finite", "another shape"])
@pytest.mark.parametrize("method", METHODS)
def test_a_previous_solution_is_checked_before_the_held_kernel(method, previous):
    """A `previous` the first frame continues that is not finite or not the pose's shape is refused,
    as solve_skeleton refuses such a start: the held kernel, which skips solve_skeleton's checks, must
    not solve from it (it gave NaN rotations for the least-squares method, and an unpacking error)."""
    skeleton, local, effectors, bones = _case("whole")
    ends = skeleton.forward(local)[2][bones]
    rows = np.repeat(ends[None], 3, axis=0) + 0.01
    goals = [replace(e, position=rows[0, k]) for k, e in enumerate(effectors)]
    start = np.full_like(local, np.nan) if previous == "not finite" else local[:-1]
    with pytest.raises(ValueError, match="previous"):
        solvers.solve_skeleton_sequence(skeleton, local, goals, rows, method=method, tolerance=1e-4, previous=start)
