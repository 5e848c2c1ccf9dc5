"""A bake's frame whose predicted start already meets every goal is kept without the method's call
(solvers.skeleton_sequence._kept): it must be the method's own result from that start, for every
method, with and without limits, pins, orientations and poles (a pole is never kept)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
import tree_shapes
from test_tree_sequence import sway

import solvers
from solvers import quat, skeleton_sequence
from solvers.skeleton_effectors import resolve_pins
from solvers.skeleton_floats import moved_bones

METHODS = [m.name for m in solvers.registry.METHOD_LIST]
TOLERANCE = 1e-4
CASES = ["plain", "limits", "pin", "orientation", "pole"]


def _limited_humanoid():
    """tree_shapes.humanoid with cones and twist limits on every bone (its input pose within them)."""
    skeleton, local, names = tree_shapes.humanoid()
    n = skeleton.n_bones
    limits = solvers.make_limits(
        n, use_limit=np.full((n, 3), True), minimum=np.full((n, 3), -0.5), maximum=np.full((n, 3), 0.5),
        cone=np.full(n, 1.2),
    )  # fmt: skip
    return replace(skeleton, limits=limits), local, names


def _case(case: str):
    """(skeleton, input pose, effectors (positions to be set), the bones whose ends are the goals)."""
    skeleton, local, names = _limited_humanoid() if case == "limits" else tree_shapes.humanoid()
    bones = [names[b] for b in ("forearm.L", "forearm.R", "head")]
    effectors = [solvers.Effector(b, position=np.zeros(3)) for b in bones]
    if case == "pin":
        effectors.append(solvers.Effector(names["shin.L"], pin=True))
    if case == "orientation":
        effectors[2] = replace(effectors[2], orientation=np.array([1.0, 0.0, 0.0, 0.0]), rotation_weight=0.5)
    if case == "pole":
        effectors[0] = replace(effectors[0], pole=np.array([0.4, -1.0, 1.4]))
    return skeleton, local, effectors, bones


def _clamped(skeleton, local: np.ndarray) -> np.ndarray:
    if skeleton.limits is None:
        return local
    return solvers.limits.clamp(skeleton.limits, np.arange(skeleton.n_bones), local)


def _settings(method: str) -> dict:
    return {"method": method, "tolerance": TOLERANCE, "max_iterations": None}


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("method", METHODS)
def test_a_kept_frame_is_the_methods_own_result(method, case):
    """From starts near a pose (its ends a fraction of the tolerance off the goals; with an
    orientation goal, its bone's own frame), the kept result equals solve_skeleton's from that
    start within 1e-12: local rotations, errors, reached, iterations, method, reason, unheld.
    Every start is kept but with a pole; one a tolerance off is not. (The Jacobian's too, though
    a bake never asks: its own solve is the prediction.)"""
    skeleton, local, effectors, bones = _case(case)
    rng = np.random.default_rng(7)
    for trial in range(6):
        start = quat.multiply(local, quat.from_rotation_vector(rng.uniform(-0.3, 0.3, (skeleton.n_bones, 3))))
        if skeleton.limits is not None:  # a start off the limits too (the kernels clamp it first)
            start = start if trial % 2 else _clamped(skeleton, start)
        frames, _, ends = skeleton.forward(_clamped(skeleton, start))
        offset = rng.normal(size=(len(bones), 3))
        offset *= 0.3 * TOLERANCE / np.linalg.norm(offset, axis=1, keepdims=True)
        goals = []
        for k, e in enumerate(effectors):
            if not e.pin:
                e = replace(e, position=ends[e.bone] + offset[k])
                if e.orientation is not None:
                    e = replace(e, orientation=frames[e.bone])
            goals.append(e)
        goals = resolve_pins(skeleton, local, goals)  # a pin where the input pose has it: met only if start holds it
        if case == "pin":  # the pin's point where the start has its end (a bake's frame holds it)
            goals[-1] = replace(goals[-1], position=ends[goals[-1].bone], orientation=frames[goals[-1].bone])
        settings = _settings(method)
        moved = moved_bones(skeleton, [e.bone for e in goals])
        kept = skeleton_sequence._kept(skeleton, start, goals, settings, moved)
        own = solvers.solve_skeleton(skeleton, start, goals, **settings)
        if case == "pole":
            assert kept is None
            continue
        assert kept is not None, trial
        assert own.iterations == 0 and kept.iterations == 0
        np.testing.assert_allclose(kept.local, own.local, rtol=0, atol=1e-12)
        np.testing.assert_allclose(kept.error, own.error, rtol=0, atol=1e-12)
        assert (kept.reached, kept.method, kept.reason, kept.unheld) == (
            own.reached,
            own.method,
            own.reason,
            own.unheld,
        )
        far = [replace(goals[0], position=goals[0].position + [0.0, 0.0, 1.5 * TOLERANCE]), *goals[1:]]
        assert skeleton_sequence._kept(skeleton, start, far, settings, moved) is None


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("method", METHODS)
def test_every_kept_frame_of_a_bake_is_the_methods_own_result(method, case, monkeypatch):
    """A whole bake (solve_skeleton_sequence on a slow sway, each pose held a frame): every frame
    kept equals solve_skeleton's from the same start within 1e-12 (as above), and some frames are
    kept (none with a pole, none by the least-squares method: its own solve is the prediction).
    (Against a bake with no frame kept, the frames differ by the kept ones' rounding carried on
    through later iterative solves: bench/bench_tree_kept.py.)"""
    skeleton, local, effectors, bones = _case(case)
    positions, poses = sway(skeleton, local, bones, np.random.default_rng(11), 30, spread=0.3, amplitude=0.01)
    positions = np.repeat(positions, 2, axis=0)  # every pose held a frame: its second frame met as it starts
    orientations = None
    if case == "orientation":  # every tip's frame along the sway's own poses
        orientations = np.repeat([skeleton.forward(p)[0][bones] for p in poses], 2, axis=0)
    goals = [e if e.pin else replace(e, position=positions[0, k]) for k, e in enumerate(effectors)]
    rows = np.concatenate([positions, np.zeros((len(positions), len(goals) - len(bones), 3))], axis=1)
    kept, original = [], skeleton_sequence._kept

    def checked(skeleton, start, goals, settings, moved, *floats):
        out = original(skeleton, start, goals, settings, moved, *floats)
        if out is not None:
            own = solvers.solve_skeleton(skeleton, start, goals, **settings)
            kept.append(float(max(np.max(np.abs(out.local - own.local)), np.max(np.abs(out.error - own.error)))))
            assert (out.reached, out.iterations, out.method, out.reason, out.unheld) == (
                own.reached, own.iterations, own.method, own.reason, own.unheld,
            )  # fmt: skip
        return out

    monkeypatch.setattr(skeleton_sequence, "_kept", checked)
    solvers.solve_skeleton_sequence(
        skeleton, local, goals, rows, method=method, tolerance=1e-3, orientations=orientations
    )
    least_squares = solvers.registry.get(method).least_squares  # its own solve is the steps: never kept
    assert (not kept) if case == "pole" or least_squares else (len(kept) >= 10), len(kept)
    assert max(kept, default=0.0) <= 1e-12


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("method", METHODS)
def test_the_predictions_measures_change_no_frame(method, case, monkeypatch):
    """The distances the prediction measured (least_squares_steps' second value), which spare a
    frame clearly off its goals `_kept`'s forward kinematics and a start that near its method's
    first look (stepped_start), change no frame of a bake: the same bits as without them."""
    skeleton, local, effectors, bones = _case(case)
    positions, poses = sway(skeleton, local, bones, np.random.default_rng(5), 30, spread=0.3, amplitude=0.02)
    positions, poses = np.repeat(positions, 2, axis=0), np.repeat(poses, 2, axis=0)  # some frames kept too
    orientations = None
    if case == "orientation":
        orientations = np.array([skeleton.forward(p)[0][bones] for p in poses])
    goals = [e if e.pin else replace(e, position=positions[0, k]) for k, e in enumerate(effectors)]
    rows = np.concatenate([positions, np.zeros((len(positions), len(goals) - len(bones), 3))], axis=1)

    def bake():
        return solvers.solve_skeleton_sequence(
            skeleton, local, goals, rows, method=method, tolerance=1e-3, orientations=orientations
        )

    measured = bake()
    predict = skeleton_sequence._predict  # (least_squares_steps, or its kernel held for the frames)
    monkeypatch.setattr(skeleton_sequence, "_predict", lambda *a: (lambda out: (out[0], None, out[2]))(predict(*a)))
    unmeasured = bake()
    np.testing.assert_array_equal(measured.local, unmeasured.local)
    np.testing.assert_array_equal(measured.error, unmeasured.error)
    np.testing.assert_array_equal(measured.iterations, unmeasured.iterations)
