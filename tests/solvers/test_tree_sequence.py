"""A bake's frames of one tree, each continuing the last (solvers.skeleton_sequence)."""

from dataclasses import replace

import numpy as np
import pytest
import tree_shapes

import solvers
from solvers import quat
from solvers.skeleton_sequence import largest_turn

TREE_METHODS = [m.name for m in solvers.registry.METHOD_LIST if m.tree is not None]
TOLERANCE = 1e-5


def sway(skeleton, local, bones, rng, frames: int, spread: float = 0.6, amplitude: float = 0.3):
    """(targets (frames, k, 3), the FK poses (frames, n, 4) that reach them): every joint swinging
    sinusoidally about a random pose (two periods over the frames)."""
    base = quat.multiply(local, quat.from_rotation_vector(rng.uniform(-spread, spread, local.shape[:-1] + (3,))))
    swing = rng.uniform(-amplitude, amplitude, local.shape[:-1] + (3,))
    phase = rng.uniform(0.0, 2.0 * np.pi, local.shape[:-1] + (1,))
    t = np.arange(frames)[:, None, None]
    poses = quat.multiply(base[None], quat.from_rotation_vector(swing * np.sin(4.0 * np.pi * t / frames + phase)))
    return np.array([skeleton.forward(p)[2][bones] for p in poses]), poses


def turns(local: np.ndarray) -> np.ndarray:
    """(frames-1,) the largest joint turn (radians) between consecutive frames."""
    return np.array([largest_turn(a, b) for a, b in zip(local[:-1], local[1:], strict=True)])


def five():
    skeleton, local, names = tree_shapes.humanoid()
    return skeleton, local, [names[n] for n in ("forearm.L", "forearm.R", "head", "shin.L", "shin.R")]


@pytest.mark.parametrize("method", TREE_METHODS)
def test_a_smooth_path_turns_no_joint_faster_than_its_motion(method):
    """Five effectors on a humanoid following an FK sway: every method's frames turn no joint
    more than twice as far per frame as the motion that made the targets (on the goals: CCD's
    100 sweeps leave a few frames short of 1e-5); restarting each frame from the input pose (what
    a bake did) pops for FABRIK."""
    skeleton, local, bones = five()
    positions, poses = sway(skeleton, local, bones, np.random.default_rng(3), 120)
    effectors = [solvers.Effector(b, position=p) for b, p in zip(bones, positions[0], strict=True)]
    batch = solvers.solve_skeleton_sequence(skeleton, local, effectors, positions, method=method, tolerance=TOLERANCE)
    assert np.max(batch.error) < 1e-3 and np.mean(batch.reached) > 0.9
    assert turns(batch.local).max() <= 2.0 * turns(poses).max(), (turns(batch.local).max(), turns(poses).max())
    if method == "fabrik":
        cold = solvers.solve_skeleton_many(skeleton, local, effectors, positions, method=method, tolerance=TOLERANCE)
        assert turns(cold.local).max() > 4.0 * turns(poses).max()


@pytest.mark.parametrize("method", TREE_METHODS)
def test_the_sequence_is_next_frame_after_frame(method):
    """solve_skeleton_sequence is solve_skeleton_next over its frames (the bake's two routes give
    the same poses); frame 0 meets its goals from the input pose (the Jacobian's: its solve_skeleton)."""
    skeleton, local, bones = tree_shapes.y_tree()
    positions, _ = sway(skeleton, local, bones, np.random.default_rng(5), 12)
    effectors = [solvers.Effector(b, position=p) for b, p in zip(bones, positions[0], strict=True)]
    batch = solvers.solve_skeleton_sequence(skeleton, local, effectors, positions, method=method, tolerance=TOLERANCE)
    previous = None
    for f, row in enumerate(positions):
        frame = [replace(e, position=p) for e, p in zip(effectors, row, strict=True)]
        sol = solvers.solve_skeleton_next(skeleton, local, frame, previous, method=method, tolerance=TOLERANCE)
        np.testing.assert_array_equal(sol.local, batch.local[f])
        previous = sol.local
    assert batch.reached[0]
    if method == "jacobian":
        first = solvers.solve_skeleton(skeleton, local, effectors, method=method, tolerance=TOLERANCE)
        np.testing.assert_array_equal(first.local, batch.local[0])


@pytest.mark.parametrize("tolerance", ["per frame", None])
@pytest.mark.parametrize("method", TREE_METHODS)
def test_what_every_frame_works_out_alike_is_worked_out_once(method, tolerance):
    """A sequence works out once what its frames share (the moved bones, the method and its tree
    kernel, the kept check's tolerance: skeleton_held.Frames), where each frame's own call
    works it out again: the frames are still solve_skeleton_next's to the bit, with a tolerance per
    frame (two values) or the default, a pin among the effectors, and frames kept (each pose held
    for a second frame, met as it starts)."""
    skeleton, local, bones = five()
    positions, _ = sway(skeleton, local, bones, np.random.default_rng(9), 10, spread=0.3, amplitude=0.01)
    positions = np.repeat(positions, 2, axis=0)
    effectors = [solvers.Effector(b, position=p) for b, p in zip(bones, positions[0], strict=True)]
    effectors[3] = solvers.Effector(bones[3], pin=True)
    per_frame = np.where(np.arange(len(positions)) % 4 < 2, 1e-4, 2e-4)
    given = per_frame if tolerance == "per frame" else None
    batch = solvers.solve_skeleton_sequence(skeleton, local, effectors, positions, method=method, tolerance=given)
    previous, kept = None, 0
    for f, row in enumerate(positions):
        frame = [e if e.pin else replace(e, position=p) for e, p in zip(effectors, row, strict=True)]
        at = None if given is None else float(per_frame[f])
        sol = solvers.solve_skeleton_next(skeleton, local, frame, previous, method=method, tolerance=at)
        np.testing.assert_array_equal(sol.local, batch.local[f])
        np.testing.assert_array_equal(sol.error, batch.error[f])
        assert (sol.reached, sol.iterations) == (batch.reached[f], batch.iterations[f])
        kept += f % 2 == 1 and sol.iterations == 0
        previous = sol.local
    assert kept >= 5 or solvers.registry.get(method).least_squares, kept


@pytest.mark.parametrize("method", TREE_METHODS)
def test_a_pin_holds_its_input_point_every_frame(method):
    """A pinned foot while the hands and head sway: every frame holds the foot where the input
    pose has it as well as the frame's own solve from the input pose does (exactly for FABRIK and
    CCD): continuing the last frame moves no pin."""
    skeleton, local, bones = five()
    positions, _ = sway(skeleton, local, bones, np.random.default_rng(7), 40, spread=0.3, amplitude=0.2)
    pinned = skeleton.forward(local)[2][bones[3]]
    effectors = [solvers.Effector(b, position=p) for b, p in zip(bones, positions[0], strict=True)]
    effectors[3] = solvers.Effector(bones[3], pin=True)
    batch = solvers.solve_skeleton_sequence(skeleton, local, effectors, positions, method=method, tolerance=TOLERANCE)
    own = solvers.solve_skeleton_many(skeleton, local, effectors, positions, method=method, tolerance=TOLERANCE)

    def slide(local_rotations) -> float:
        ends = np.array([skeleton.forward(q)[2][bones[3]] for q in local_rotations])
        return float(np.max(np.linalg.norm(ends - pinned, axis=1)))

    assert slide(batch.local) <= max(slide(own.local), TOLERANCE) + TOLERANCE


def test_a_pole_keeps_each_frames_own_solve_where_it_does_not_pop():
    """With a pole the input pose means something (the pole spins the bend it gives): where the
    frames' own solves (from the input pose) move smoothly, as the Jacobian's do, each frame is
    its own solve."""
    skeleton, local, bones = five()
    positions, _ = sway(skeleton, local, bones, np.random.default_rng(2), 30, spread=0.3, amplitude=0.2)
    poles = np.full(positions.shape, np.nan)
    poles[:, 0] = (1.0, -1.0, 1.4)
    effectors = [solvers.Effector(b, position=p) for b, p in zip(bones, positions[0], strict=True)]
    kw = {"method": "jacobian", "tolerance": TOLERANCE}
    batch = solvers.solve_skeleton_sequence(skeleton, local, effectors, positions, poles=poles, **kw)
    own = solvers.solve_skeleton_many(skeleton, local, effectors, positions, poles=poles, **kw)
    np.testing.assert_allclose(np.abs(np.sum(batch.local * own.local, axis=-1)), 1.0, atol=1e-12)


def test_an_input_pose_that_changes_carries_into_the_next_frame():
    """A bone whose twist no goal sees (an arm's tip bone): its input pose twisting between two
    frames twists the continued frame by as much, the targets unchanged."""
    skeleton, local, names = tree_shapes.humanoid()
    bones = [names["forearm.L"], names["forearm.R"]]
    targets, _ = tree_shapes.fk_targets(skeleton, local, bones, np.random.default_rng(1), 0.4)
    effectors = [solvers.Effector(b, position=p) for b, p in zip(bones, targets, strict=True)]
    kw = {"method": "fabrik", "tolerance": TOLERANCE}
    first = solvers.solve_skeleton_next(skeleton, local, effectors, **kw)
    twisted = local.copy()
    twist = quat.from_axis_angle(np.array([0.0, 1.0, 0.0]), np.array(0.7))
    twisted[bones[0]] = quat.multiply(local[bones[0]], twist)
    sol = solvers.solve_skeleton_next(skeleton, twisted, effectors, first.local, local, **kw)
    assert sol.reached
    relative = quat.multiply(quat.conjugate(first.local[bones[0]]), sol.local[bones[0]])
    assert abs(np.abs(np.dot(relative, twist)) - 1.0) < 1e-9
