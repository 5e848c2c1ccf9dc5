"""A chain's sequence (a lone chain's bake) has no first-frame special case.

The demo arm baked with FABRIK or CCD over 120 frames turns a joint most at frame 2 (9.2 degrees;
8.4 by frame 5, 6.4 at most once the loop has run once). That is the methods' own response to the
targets, not the sequence's: step k depends only on step k-1's pose and its target (a sequence
restarted from any step's solution continues it exactly), and the same targets followed from the
pose the loop settles on turn a third less. FABRIK and CCD move the tip bone first: a target step
across it turns it by about step / tip length (a towed rod), and the first frame's pose, solved
from the straight rest pose, has the tip bone across the target's path where the path leaves the
arm's plane fastest. The tip bone then swings into line over some ten frames (a smooth decay, no
step between frames). A start pose chosen to avoid it would need the motion still to come.
"""

from __future__ import annotations

import ik_strategies as ik
import numpy as np
import pytest

import solvers
from solvers import quat

METHODS = ["triangulation", "fabrik", "ccd", "jacobian"]
TOLERANCE = 1e-5


def demo_chain() -> solvers.Chain:
    """tools/demo_bake.py's arm: four bones in the XZ plane, Blender-like frames (roll 0)."""
    points = np.cumsum([(0.0, 0.0, 0.0), (0.1, 0.0, 1.0), (0.3, 0.0, 0.8), (0.2, 0.0, 0.7), (0.05, 0.0, 0.4)], axis=0)
    directions = np.diff(points, axis=0)
    directions /= np.linalg.norm(directions, axis=1, keepdims=True)
    return solvers.Chain(points, ik.frames_along(directions, [0.0] * 4))


def demo_targets(frames: int) -> np.ndarray:
    """tools/demo_bake.py's goal: a tilted figure-eight, one loop over `frames` (the last = the first)."""
    a = 2.0 * np.pi * np.arange(frames) / (frames - 1)
    return np.stack((0.9 + 0.8 * np.sin(a), 0.6 * np.sin(2.0 * a), 1.8 + 0.7 * np.cos(a)), axis=1)


def largest_turns(frames: np.ndarray) -> np.ndarray:
    """(m-1,) per step, the largest angle (degrees) any bone's local rotation turns: bench_smooth_bake's measure."""
    parents = np.concatenate((np.broadcast_to([1.0, 0.0, 0.0, 0.0], frames[:, :1].shape), frames[:, :-1]), axis=1)
    local = quat.multiply(quat.conjugate(parents), frames)
    dots = np.clip(np.abs(np.sum(local[1:] * local[:-1], axis=-1)), 0.0, 1.0)
    return np.degrees(2.0 * np.arccos(dots)).max(axis=1)


@pytest.mark.parametrize("method", METHODS)
def test_a_restarted_sequence_continues_it_exactly(method):
    # No first-frame special case: from step k's solution, the rest of the sequence is the same.
    chain, targets = demo_chain(), demo_targets(40)
    whole = solvers.solve_sequence(chain, targets, method=method, tolerance=TOLERANCE)
    for k in (0, 1, 7):
        rebuilt = solvers.Chain(
            whole.points[k], whole.frames[k], reference=chain.reference, base_frame=chain.base_frame
        )
        rest = solvers.solve_sequence(rebuilt, targets[k + 1 :], method=method, tolerance=TOLERANCE)
        assert np.allclose(rest.points, whole.points[k + 1 :], rtol=0.0, atol=1e-12)
        assert np.all(np.abs(np.abs(np.sum(rest.frames * whole.frames[k + 1 :], axis=-1)) - 1.0) <= 1e-12)
        assert np.array_equal(rest.iterations, whole.iterations[k + 1 :])


@pytest.mark.parametrize("method", ["fabrik", "ccd"])
def test_the_demo_start_turn_is_the_start_pose_not_the_targets(method):
    frames = 120
    once = demo_targets(frames)
    twice = np.concatenate((once, once[1:]))
    turns = largest_turns(solvers.solve_sequence(demo_chain(), twice, method=method, tolerance=TOLERANCE).frames)
    first, second = turns[: frames - 1], turns[frames - 1 :]
    # The bake's largest turn is its first step, and it decays smoothly (no step-to-step jump) ...
    assert first.argmax() == 0
    assert np.all(np.abs(np.diff(first[:10])) < 0.2 * first[0])
    # ... while the same targets from the pose the loop settles on turn a third less at the start
    # and less than the first bake's start anywhere in the loop.
    assert second[:5].max() < 0.7 * first[0]
    assert second.max() < 0.9 * first[0]
    # The first step: the tip bone swings by about the target's step across it over its length.
    seq = solvers.solve_sequence(demo_chain(), once[:2], method=method, tolerance=TOLERANCE)
    tip = np.diff(seq.points[:, -2:], axis=1)[:, 0]
    length = np.linalg.norm(tip[0])
    tip /= np.linalg.norm(tip, axis=1, keepdims=True)
    step = once[1] - once[0]
    across = np.linalg.norm(step - np.dot(step, tip[0]) * tip[0]) / length
    swing = np.arccos(np.clip(np.dot(tip[0], tip[1]), -1.0, 1.0))
    assert 0.8 * across < swing < 1.05 * across
