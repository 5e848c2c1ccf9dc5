"""Bone frames: carried through every solver as rotations x frames, kept
orthonormal, never changing the solved points (for triangulation they only
break ties when a rotation axis is undefined)."""

import math

import ik_strategies as ik
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import solvers
from solvers import quat


def bone_frames(chain, rolls):
    """Blender-like frames: Y along the bone, X rolled by `rolls` (radians)
    about it. (n, 3, 3) rotation matrices, columns = the frame's X, Y, Z."""
    mats = []
    for d, roll in zip(chain.directions, rolls, strict=True):
        p = quat.any_perpendicular(d)
        q = np.cross(p, d)
        x = math.cos(roll) * p + math.sin(roll) * q
        z = np.cross(x, d)
        mats.append(np.column_stack((x, d, z)))
    return np.array(mats)


@st.composite
def chain_frames_target(draw, max_bones=30):
    plain, target = draw(ik.chain_and_any_target(max_bones=max_bones))
    rolls = draw(st.lists(st.floats(-math.pi, math.pi), min_size=plain.n_bones, max_size=plain.n_bones))
    as_quaternions = draw(st.booleans())
    mats = bone_frames(plain, rolls)
    frames = quat.from_matrix(mats) if as_quaternions else mats
    return plain, solvers.Chain(plain.points, frames=frames), mats, target, not any(rolls)


@pytest.mark.parametrize("config", ik.CONFIGS, ids=ik.CONFIG_IDS)
@settings(max_examples=30)
@given(case=chain_frames_target())
def test_frames_follow_the_rotations_and_do_not_change_points(config, case):
    plain, framed, mats, target, no_roll = case
    ik.describe(plain, target)
    with_frames = ik.solve(framed, target, config)
    without = ik.solve(plain, target, config)
    ik.check_invariants(framed, with_frames, target)
    assert without.frames(plain) is None
    # Same pose with or without frames. Triangulation, CCD (for an exactly
    # opposite tip) and FABRIK's sphere placement (a joint on its neighbours'
    # axis, where the circle has no nearest point) use the frame X axis to break
    # ties when a direction is undefined (straight sub-chain, target near its
    # line), so with a roll there they may pick another, equally good pose. With
    # zero roll the frame X axis equals the frameless fallback axis, so the pose
    # must be identical.
    scale = plain.total_length
    ties = config[0] in ("triangulation", "ccd") or config[1].get("placement") == "sphere"
    if no_roll or not ties:
        np.testing.assert_allclose(with_frames.points, without.points, rtol=0, atol=1e-12 * scale)
    elif without.error <= 1e-9 * scale:
        assert with_frames.error <= 1e-9 * scale
    out = with_frames.frames(framed)
    assert out.shape == (plain.n_bones, 4)
    np.testing.assert_allclose(out, quat.multiply(with_frames.rotations, framed.frames), atol=1e-15)
    np.testing.assert_allclose(np.linalg.norm(out, axis=1), 1.0, atol=1e-12)
    m = quat.to_matrix(out)
    np.testing.assert_allclose(np.einsum("nji,njk->nik", m, m), np.broadcast_to(np.eye(3), m.shape), atol=1e-12)
    np.testing.assert_allclose(np.linalg.det(m), 1.0, atol=1e-12)
    # The frames' Y axis was along each bone; it still is after the solve.
    solved = np.diff(with_frames.points, axis=0) / plain.lengths[:, None]
    np.testing.assert_allclose(m[:, :, 1], solved, atol=1e-9)


def test_matrix_and_quaternion_frames_agree():
    chain = solvers.Chain([[0, 0, 0], [0, 1, 0], [1, 1, 0], [1, 1, 2]])
    mats = bone_frames(chain, [0.3, -2.0, math.pi])
    a = solvers.Chain(chain.points, frames=mats)
    b = solvers.Chain(chain.points, frames=quat.from_matrix(mats))
    c = solvers.Chain(chain.points, frames=-quat.from_matrix(mats))  # q and -q: the same rotation
    np.testing.assert_allclose(quat.to_matrix(a.frames), mats, atol=1e-12)
    np.testing.assert_allclose(quat.to_matrix(b.frames), mats, atol=1e-12)
    np.testing.assert_allclose(quat.to_matrix(c.frames), mats, atol=1e-12)


STRAIGHT_POINTS = [[0, 0, 0], [0, 9, 0], [0, 18, 0], [0, 27, 0], [0, 36, 0], [0, 40, 0]]


@pytest.mark.parametrize("config", ik.CONFIGS, ids=ik.CONFIG_IDS)
@pytest.mark.parametrize("target", [[0.0, -10.0, 0.0], [0.0, 13.5, 0.0], [0.0, 0.0, 0.0], [0.0, 20.0, 0.0]])
@pytest.mark.parametrize("roll", [0.0, math.pi / 2, 1.0])
def test_straight_chain_target_on_its_line_is_deterministic_and_finite(config, target, roll):
    """The rotation axis is undefined here; the result must be finite,
    valid and the same on every call (and in a batch)."""
    plain = solvers.Chain(STRAIGHT_POINTS)
    framed = solvers.Chain(STRAIGHT_POINTS, frames=bone_frames(plain, [roll] * plain.n_bones))
    a = ik.solve(framed, target, config)
    b = ik.solve(framed, target, config)
    ik.check_invariants(framed, a, target)
    np.testing.assert_array_equal(a.points, b.points)
    np.testing.assert_array_equal(a.rotations, b.rotations)
    batch = ik.solve_batch(framed, [target, target], config)
    np.testing.assert_allclose(batch.points[0], a.points, atol=1e-12 * plain.total_length)
    np.testing.assert_array_equal(batch.points[0], batch.points[1])
    f = quat.to_matrix(a.frames(framed))
    np.testing.assert_allclose(np.einsum("nji,njk->nik", f, f), np.broadcast_to(np.eye(3), f.shape), atol=1e-12)
    if config[0] == "triangulation":
        reach = 2 * plain.lengths.max() - plain.total_length
        if np.linalg.norm(target) >= reach:
            assert a.error <= 1e-9 * plain.total_length


@pytest.mark.parametrize("config", ik.TRIANGULATION_CONFIGS, ids=ik.TRIANGULATION_IDS)
@pytest.mark.parametrize("roll", [0.0, math.pi / 2, 0.7])
def test_triangulation_bends_about_the_frame_x_axis_when_the_axis_is_undefined(config, roll):
    """Straight chain, target behind the root on its line: the bend axis is
    undefined, so the bone's frame X axis is the tie-breaker and the whole
    solved chain lies in the plane through the line perpendicular to X."""
    plain = solvers.Chain(STRAIGHT_POINTS)
    mats = bone_frames(plain, [roll] * plain.n_bones)
    framed = solvers.Chain(STRAIGHT_POINTS, frames=mats)
    x_axis = mats[0][:, 0]
    sol = ik.solve(framed, [0.0, -10.0, 0.0], config)
    assert sol.error <= 1e-9 * plain.total_length
    np.testing.assert_allclose(sol.points @ x_axis, 0.0, atol=1e-9 * plain.total_length)
    batch = ik.solve_batch(framed, [[0.0, -10.0, 0.0]], config)
    np.testing.assert_allclose(batch.points[0] @ x_axis, 0.0, atol=1e-9 * plain.total_length)
