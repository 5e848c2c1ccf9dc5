"""solvers.plant_legs: the planted leg's analytic two-bone turns, its new local rotations, the lift a
hold needs to stay within reach."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from solvers import quat
from solvers.plant_legs import basis_after, leg_turns, raised, reach_lift, reach_lifts


def _leg(rng, frames: int):
    hip = rng.normal(size=(frames, 3))
    upper = quat.normalize(rng.normal(size=(frames, 3))) * 0.45
    lower = quat.normalize(rng.normal(size=(frames, 3))) * 0.42
    return hip, hip + upper, hip + upper + lower


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**32 - 1))
def test_the_ankle_reaches_every_goal_within_reach_and_the_knee_keeps_its_swivel(seed):
    rng = np.random.default_rng(seed)
    hip, knee, ankle = _leg(rng, 20)
    direction = quat.normalize(rng.normal(size=(20, 3)))
    goal = hip + direction * rng.uniform(0.05, 0.86, size=(20, 1))
    turns = leg_turns(hip, knee, ankle, goal)
    assert turns.reached.all()
    new_knee = hip + quat.rotate(turns.thigh, knee - hip)
    new_ankle = new_knee + quat.rotate(turns.shin, ankle - knee)
    assert np.allclose(new_ankle, goal, atol=1e-12)
    assert np.allclose(turns.ankle, goal, atol=1e-12)
    # Bone lengths kept; the new knee in the plane of the hip-goal line and the input knee.
    assert np.allclose(np.linalg.norm(new_knee - hip, axis=1), 0.45)
    normal = quat.cross(goal - hip, knee - hip)
    side = np.sum(normal * (new_knee - hip), axis=1) / np.maximum(np.linalg.norm(normal, axis=1), 1e-300)
    assert np.all(np.abs(side) < 1e-9)


def test_a_goal_at_the_input_ankle_turns_nothing():
    rng = np.random.default_rng(3)
    hip, knee, ankle = _leg(rng, 30)
    turns = leg_turns(hip, knee, ankle, ankle)
    assert np.all(quat.angle(turns.thigh) < 1e-7) and np.all(quat.angle(turns.shin) < 1e-7)


def test_beyond_reach_the_leg_straightens_toward_the_goal_and_says_so():
    hip = np.zeros((1, 3))
    knee, ankle = np.array([[0.0, 0.1, -0.4]]), np.array([[0.0, 0.0, -0.8]])
    goal = np.array([[0.3, 0.0, -2.0]])
    turns = leg_turns(hip, knee, ankle, goal)
    reach = np.linalg.norm(knee) + np.linalg.norm(ankle - knee)
    assert not turns.reached[0]
    assert np.isclose(np.linalg.norm(turns.ankle[0]), reach)
    assert np.allclose(quat.normalize(turns.ankle), quat.normalize(goal))
    # Soft IK: aimed inside the reach, so the knee never quite straightens.
    soft = leg_turns(hip, knee, ankle, goal, softness=0.1)
    assert soft.reached[0] and np.linalg.norm(soft.goal[0]) < reach


def test_basis_after_composes_to_the_wanted_world_rotations():
    rng = np.random.default_rng(5)
    frames = 12
    rest = quat.normalize(rng.normal(size=(frames, 4)))  # parent x rest, per frame
    basis = quat.normalize(rng.normal(size=(frames, 4)))
    world = quat.multiply(rest, basis)
    parent_turn = quat.normalize(rng.normal(size=(frames, 4)))
    own_turn = quat.normalize(rng.normal(size=(frames, 4)))
    new = basis_after(basis, world, parent_turn, own_turn)
    # The parent turned: world' = parent_turn x rest x new, which must be own_turn x world.
    assert np.allclose(
        quat.angle_between(quat.multiply(parent_turn, quat.multiply(rest, new)), quat.multiply(own_turn, world)),
        0.0,
        atol=1e-9,
    )
    kept = basis_after(basis, world, parent_turn, None)
    assert np.allclose(quat.angle_between(quat.multiply(parent_turn, quat.multiply(rest, kept)), world), 0.0, atol=1e-9)


def test_reach_lift_raises_a_hold_just_enough():
    hips = np.array([[0.0, 0.0, 1.0], [0.3, 0.0, 1.0]])
    offsets = np.zeros((2, 3))
    held = np.array([0.0, 0.0, 0.0])
    lift = reach_lift(held, offsets, hips, 0.9)
    # The farther hip (0.3 sideways) needs the point at 1 - sqrt(0.81 - 0.09).
    assert np.isclose(lift, 1.0 - np.sqrt(0.72))
    assert reach_lift(held + [0.0, 0.0, lift], offsets, hips, 0.9) == pytest.approx(0.0, abs=1e-12)
    assert reach_lift(np.array([0.0, 0.0, 0.5]), offsets, hips, 0.9) == 0.0


def _one_lift(held, offsets, hips, reach):
    """The per-hold figure written out (the formula reach_lifts batches): a reference."""
    ankle = held + offsets
    side = np.linalg.norm((ankle - hips)[:, :2], axis=1)
    room = reach * reach - side * side
    ok = room > 0.0
    if not np.any(ok):
        return 0.0
    return float(max(0.0, np.max(hips[ok, 2] - np.sqrt(room[ok]) - ankle[ok, 2])))


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**32 - 1))
def test_reach_lifts_of_many_holds_are_each_holds_own_to_the_bit(seed):
    rng = np.random.default_rng(seed)
    frames = int(rng.integers(1, 40))
    offsets = rng.normal(scale=0.2, size=(frames, 3))
    hips = rng.normal(scale=0.5, size=(frames, 3)) + [0.0, 0.0, 0.9]
    cuts = np.sort(rng.choice(frames + 1, size=min(frames + 1, int(rng.integers(2, 8))), replace=False))
    spans = [(int(a), int(b)) for a, b in zip(cuts[:-1], cuts[1:], strict=True)]
    spans.append((int(cuts[0]), int(cuts[0])))  # an empty hold: no lift
    held = rng.normal(scale=0.3, size=(len(spans), 3))
    reach = float(rng.uniform(0.2, 1.2))  # some frames out of reach sideways
    lifts = reach_lifts(held, offsets, hips, spans, reach)
    want = [_one_lift(h, offsets[a:b], hips[a:b], reach) for h, (a, b) in zip(held, spans, strict=True)]
    assert lifts.tolist() == want and lifts[-1] == 0.0
    assert reach_lifts(np.zeros((0, 3)), offsets, hips, [], reach).shape == (0,)


def test_bad_input_is_named():
    hip = np.zeros((2, 3))
    with pytest.raises(ValueError, match="no length"):
        leg_turns(hip, hip, hip + 1.0, hip)
    with pytest.raises(ValueError, match="knee positions must have 2 frames"):
        leg_turns(hip, np.zeros((3, 3)), hip, hip)
    with pytest.raises(ValueError, match="softness"):
        leg_turns(hip, hip + [0, 0, -0.4], hip + [0, 0, -0.8], hip, softness=1.5)
    with pytest.raises(ValueError, match="alike"):
        basis_after(np.zeros((2, 4)), np.zeros((3, 4)), None, None)


def _fk(hip, rest, basis, lengths):
    """A leg's armature-space rotations (F, 3, 4) and joints (hip, knee, ankle, toe) from its rest
    orientations `rest` (3, 4: each bone's against its parent) and local rotations `basis`
    (F, 3, 4): a bone's world rotation is its parent's x rest x basis, the bone along its Y."""
    worlds, points = [], [hip]
    parent = np.zeros((len(hip), 4))
    parent[:, 0] = 1.0
    for b in range(3):
        world = quat.multiply(quat.multiply(parent, np.broadcast_to(rest[b], parent.shape)), basis[:, b])
        worlds.append(world)
        points.append(points[-1] + quat.rotate(world, np.broadcast_to([0.0, lengths[b], 0.0], hip.shape)))
        parent = world
    return np.stack(worlds, axis=1), points


@pytest.mark.parametrize("seed", range(4))
def test_raised_lifts_the_posed_tip_keeping_its_foot_and_swivel_and_turns_nothing_without_a_lift(seed):
    # The ground clamp of a planted bake (app.bake.contact_legs): an ease's frame lifted onto the
    # floor from its own pose, so a clamp that hardly lifts hardly turns a joint (start_walk_stop,
    # legs +20%: a solve from the input's pose popped the foot 14.5° in one frame at a hold's end).
    rng = np.random.default_rng(seed)
    frames, lengths = 16, (0.45, 0.42, 0.15)
    rest = quat.normalize(rng.normal(size=(3, 4)))
    basis = quat.normalize(np.array([1.0, 0.0, 0.0, 0.0]) + 0.3 * rng.normal(size=(frames, 3, 4)))
    hip = rng.normal(size=(frames, 3))
    world, (_, knee, ankle, toe) = _fk(hip, rest, basis, lengths)
    fix = quat.normalize(np.array([1.0, 0.0, 0.0, 0.0]) + 0.2 * rng.normal(size=(frames, 3, 4)))
    posed = quat.multiply(fix, basis)  # an ease's pose: a correction on each joint
    posed_world, posed_points = _fk(hip, rest, posed, lengths)
    lift = np.zeros((frames, 3))
    lift[:, 2] = rng.uniform(0.0, 0.02, size=frames)
    lift[:4, 2] = 0.0  # not lifted: the pose as it is
    lift[4:8, 2] = 1e-4  # hardly lifted
    out, misses = raised(hip, knee, ankle, toe, world, basis, posed, lift)
    out_world, out_points = _fk(hip, rest, out, lengths)
    assert np.allclose(out_points[3], posed_points[3] + lift, atol=1e-9) and np.all(misses < 1e-9)
    assert np.all(quat.angle_between(out_world[:, 2], posed_world[:, 2]) < 1e-9)  # the foot's own rotation
    turned = quat.angle_between(out, posed)
    assert np.all(turned[:4] < 1e-7)
    assert np.all(turned[4:8] < 0.01)  # 0.1 mm turns no joint by more than a fraction of a degree
