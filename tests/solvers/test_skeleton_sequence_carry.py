"""solve_skeleton_sequence as the bake carries a unit (app.bake.bake_unit): per-frame tip
orientations and tolerances (a parent whose scale moves), and chunks that continue the last one's
solution (`previous`, a modal bake) with the frames of one call."""

from __future__ import annotations

import numpy as np
import pytest

import solvers
from solvers import quat
from solvers.skeleton_solve import branch_locals, chain_pose

METHODS = list(solvers.REGISTRY)


def _arm():
    chain = solvers.Chain([[0, 0, 0], [0, 1, 0], [0.2, 1.9, 0], [0.3, 2.8, 0.1]], np.tile([1.0, 0, 0, 0], (3, 1)))
    skeleton, local = solvers.Skeleton.from_chain(chain)
    return chain, skeleton, local


def _path(m: int) -> np.ndarray:
    t = np.linspace(0.0, 2.0, m)[:, None]
    return np.hstack((0.8 + 0.4 * np.cos(t), 1.6 + 0.3 * np.sin(t), 0.3 * t))


@pytest.mark.parametrize("method", METHODS)
def test_one_effector_per_frame_orientations_and_tolerances_are_solve_sequences(method):
    chain, skeleton, local = _arm()
    targets = _path(9)
    turns = quat.normalize(np.array([[1.0, 0.1 * k, 0.2, -0.05 * k] for k in range(9)]))
    tolerances = np.linspace(1e-4, 3e-4, 9)
    want = solvers.solve_sequence(
        chain, targets, method=method, tolerance=tolerances, target_rotation=turns, rotation_weight=0.5
    )
    effector = solvers.Effector(2, position=targets[0], orientation=turns[0], rotation_weight=0.5)
    got = solvers.solve_skeleton_sequence(
        skeleton,
        local,
        [effector],
        targets[:, None],
        orientations=turns[:, None],
        method=method,
        tolerance=tolerances,
        pose=chain_pose(chain),
    )
    assert np.array_equal(got.local, branch_locals(skeleton, local, [0, 1, 2], want.frames))
    assert np.array_equal(got.error[:, 0], want.error) and got.reason == want.reason


@pytest.mark.parametrize("method", METHODS)
def test_chunks_continuing_the_last_solution_are_one_call(method):
    """Two effectors (frame after frame in the core): chunks give one call's frames to the bit; one
    effector (the chain's sequence kernel, rebuilt from the last solution): within rounding."""
    chain, skeleton, local = _arm()
    targets = _path(10)
    two = [solvers.Effector(1, position=targets[0] * 0.7), solvers.Effector(2, position=targets[0])]
    for effectors, rows in ((two, np.stack((targets * 0.7, targets), axis=1)), (two[1:], targets[:, None])):
        whole = solvers.solve_skeleton_sequence(skeleton, local, effectors, rows, method=method)
        first = solvers.solve_skeleton_sequence(skeleton, local, effectors, rows[:4], method=method)
        rest = solvers.solve_skeleton_sequence(
            skeleton, local, effectors, rows[4:], method=method, previous=first.local[-1]
        )
        chunked = np.concatenate((first.local, rest.local))
        if len(effectors) > 1:
            assert np.array_equal(chunked, whole.local)
        else:
            assert np.allclose(np.abs(np.sum(chunked * whole.local, axis=-1)), 1.0, atol=1e-9)


def test_orientations_given_on_some_frames_only_are_refused():
    _, skeleton, local = _arm()
    targets = _path(3)[:, None]
    turns = np.full((3, 1, 4), np.nan)
    turns[0, 0] = (1.0, 0.0, 0.0, 0.0)
    with pytest.raises(ValueError, match="every frame or none"):
        solvers.solve_skeleton_sequence(
            skeleton, local, [solvers.Effector(2, position=targets[0, 0])], targets, orientations=turns, method="ccd"
        )
