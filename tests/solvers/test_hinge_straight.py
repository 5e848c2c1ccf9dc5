"""A hinged arm swept through full reach (a user trial): Rigify's metarig left arm (its numbers as
the extension reads them), the forearm a hinge (Lock IK Y and Z), the target going from 0.9 to 1.1
of the reach. Each step starts from the last (a bake). Near a straight chain every twist of the upper
arm ties but for rounding; the limited triangulation pass picked one per step (60-150 degree spins
on every step past reach), where FABRIK, CCD and Blender's IK constraint turn ~0.1 degree a step."""

import math

import numpy as np
import pytest

import solvers

POINTS = [
    [0.19530001282691956, 0.02669999748468399, 1.5845999717712402],
    [0.4424000382423401, 0.08850003778934479, 1.4491000175476074],
    [0.6594000458717346, 0.04920002445578575, 1.3061000108718872],
    [0.7234000563621521, 0.041200023144483566, 1.2584999799728394],
]
FRAMES = [
    [0.39698102449685563, 0.31936937071323407, 0.6704537167645822, -0.5393524681655006],
    [0.3092220809313692, 0.3595243493998179, 0.5741254250351591, -0.6674608177124027],
    [0.3012321649550682, 0.33296669172529897, 0.5994659778014515, -0.6625955828833618],
]
REFERENCE = [
    [0.6124069615070611, -0.0554200329492582, 0.7406039146509708, -0.27090990208785226],
    [0.9824975389470534, 0.18181385961716404, 0.00134164881912828, -0.04050316521630978],
    [0.9992825182790496, -0.025046714996243467, -0.0035539275699191966, -0.028186527430764594],
]
BASE = [0.8680710533865512, -0.0002292826616100846, 0.00017358465476047347, -0.4964398891811495]


def hinged_arm() -> solvers.Chain:
    lock = [[False, False, False], [False, True, True], [False, False, False]]
    limits = solvers.make_limits(3, lock=lock)
    return solvers.Chain(POINTS, FRAMES, limits=limits, reference=REFERENCE, base_frame=BASE)


def sweep(chain: solvers.Chain, m: int = 40) -> np.ndarray:
    way = np.array([0.6, -0.5, -0.3]) / np.linalg.norm([0.6, -0.5, -0.3])
    f = np.arange(1, m + 1)[:, None]
    return chain.root + way * chain.total_length * (0.9 + 0.2 * f / m) + np.array([0.0, 0.002, 0.0]) * f


def step_turns(frames: np.ndarray) -> np.ndarray:
    """Largest bone turn (world frame) from each step to the next, degrees."""
    dots = np.abs(np.sum(frames[1:] * frames[:-1], axis=-1)).clip(0.0, 1.0)
    return np.degrees(2.0 * np.arccos(dots)).max(axis=1)


@pytest.mark.parametrize("method", ["triangulation", "fabrik", "ccd"])
def test_past_reach_the_arm_holds_still(method):
    """Past reach the chain points at the target with the start's twist: ~0.1 degree a step."""
    chain = hinged_arm()
    targets = sweep(chain)
    steps = solvers.solve_sequence(chain, targets, method=method)
    past = np.linalg.norm(targets - chain.root, axis=1) > chain.total_length
    turns = step_turns(steps.frames)
    assert turns[past[1:] & past[:-1]].max() < 1.0, turns.round(1).tolist()


def test_triangulation_sweeps_through_reach_without_spins():
    """Within reach too: no step turns a bone by more than 15 degrees but the one where the hinge
    leaves the target's reach."""
    chain = hinged_arm()
    steps = solvers.solve_sequence(chain, sweep(chain), method="triangulation")
    turns = np.sort(step_turns(steps.frames))
    assert turns[-2] <= 15.0, turns.round(1).tolist()


def two_bone_arm() -> solvers.Chain:
    """hinged_arm's upper arm and forearm as Rigify's IK arm chain has them: the forearm's rest bent
    about its X axis only (the metarig's is also turned 5 degrees about Z, so its hinge is not square
    to the upper arm and the arm never lies straight), its pose as the metarig's."""
    limits = solvers.make_limits(2, lock=[[False, False, False], [False, True, True]])
    bend = math.atan2(np.linalg.norm(REFERENCE[1][1:]), REFERENCE[1][0])
    square = [math.cos(bend), math.sin(bend), 0.0, 0.0]
    return solvers.Chain(POINTS[:3], FRAMES[:2], limits=limits, reference=[REFERENCE[0], square], base_frame=BASE)


def _back_into_reach(chain: solvers.Chain) -> np.ndarray:
    """Past reach, then back within it on the same line but for a rounding-sized offset, the line
    through the root and the input pose's tip (the trial's Rigify arm: its swing parent tracks the
    target, so in the chain's space the target moves along that line only)."""
    way = (np.asarray(chain.points[-1]) - chain.root) / np.linalg.norm(np.asarray(chain.points[-1]) - chain.root)
    # The offset along the hinge's axis: the plane through the arm and the target then stands square
    # to the hinge's own plane.
    axis = solvers.quat.rotate(np.asarray(FRAMES[0]), np.array([1.0, 0.0, 0.0]))
    side = axis - (axis @ way) * way
    side /= np.linalg.norm(side)
    return chain.root + chain.total_length * np.array([1.05 * way, 0.98 * way + 1.4e-7 * side])


def test_from_a_straight_arm_the_hinge_bends_in_its_own_plane():
    """Solved from the straight arm (the bake's last frame past reach), the upper arm keeps its twist:
    the plane through the arm and the target is rounding's there, and bending in it twisted the
    upper arm 56 degrees, where the hinge's own plane needs ~10."""
    method = "triangulation"
    chain = two_bone_arm()
    targets = _back_into_reach(chain)
    past = solvers.solve(chain, targets[0], method=method)
    straight = solvers.Chain(past.points, past.frames(chain), limits=chain.limits, reference=chain.reference,
                             base_frame=chain.base_frame)  # fmt: skip
    back = solvers.solve(straight, targets[1], method=method)
    assert back.reached
    turn = np.degrees(2.0 * np.arccos(np.abs(back.rotations[:, 0]).clip(0.0, 1.0)))
    assert turn[0] < 15.0, turn.round(1).tolist()


@pytest.mark.parametrize("method", ["triangulation", "fabrik", "ccd"])
def test_back_into_reach_a_sequence_bends_as_a_solve_from_the_input_pose(method):
    """The step after one past reach starts straight: neither the bend's plane nor its sense follows
    from it (FABRIK bent the elbow backward, CCD stayed straight and missed), so it is solved from
    the input pose too and that kept (it does not pop): the step is what `solve` gives there."""
    chain = two_bone_arm()
    targets = _back_into_reach(chain)
    steps = solvers.solve_sequence(chain, targets, method=method)
    alone = solvers.solve(chain, targets[1], method=method)
    assert steps.error[1] <= alone.error and (alone.reached or method == "ccd")  # CCD: 2.6e-5, 100 sweeps
    assert np.allclose(steps.points[1], alone.points, atol=1e-12), (steps.points[1], alone.points)
