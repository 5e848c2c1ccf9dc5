"""rig.euler_series: the same float32 bits as mathutils' `Quaternion.to_euler(order, compat)` frame
after frame, on smooth series (either solution, any turns), spinning, near-gimbal, random and zero
quaternions, several series at once; and a planted leg's runs converted at once as run by run."""

from __future__ import annotations

import bpy
import numpy as np
import pytest
from mathutils import Euler, Quaternion

ORDERS = ("XYZ", "XZY", "YXZ", "YZX", "ZXY", "ZYX")


def frame_by_frame(mode: str, quats: np.ndarray, first) -> np.ndarray:
    prev, out = Euler(tuple(first), mode), []
    for q in quats.tolist():
        prev = Quaternion(q).to_euler(mode, prev)
        out.append(prev[:])
    return np.array(out).reshape(-1, 3)


def quaternions(mode: str, angles: np.ndarray) -> np.ndarray:
    return np.array([Euler(a, mode).to_quaternion()[:] for a in angles.tolist()])


def cases(mode: str, rng):
    n = 300
    axis = "XYZ".index(mode[1])  # the middle angle
    for step in (0.002, 0.05, 0.3, 1.0):  # smooth to spinning
        angles = np.cumsum(rng.normal(0.0, step, (n, 3)), axis=0) + rng.normal(0.0, 6.0, 3)
        yield "steps", quaternions(mode, angles) * rng.choice([-1.0, 1.0], (n, 1)), angles
        beyond = angles.copy()
        beyond[:, axis] += np.pi  # the second solution
        yield "second", quaternions(mode, beyond), beyond
    gimbal = np.cumsum(rng.normal(0.0, 0.05, (n, 3)), axis=0)
    gimbal[:, axis] = np.pi / 2 + rng.normal(0.0, 1e-4, n)
    yield "gimbal", quaternions(mode, gimbal), gimbal
    noisy = quaternions(mode, np.cumsum(rng.normal(0.0, 0.02, (n, 3)), axis=0)) + rng.normal(0.0, 1e-4, (n, 4))
    noisy[rng.integers(0, n, 3)] = 0.0  # normalize_qt's (0, 1, 0, 0)
    yield "noisy", noisy, None
    yield "random", rng.normal(size=(n, 4)), None


@pytest.mark.parametrize("mode", ORDERS)
def test_series_is_mathutils_frame_by_frame(scene, mode):
    from chain_ik.rig import euler_series

    if euler_series.reason():  # the bake converts frame by frame here (numpy's arctan2 its own)
        pytest.skip(euler_series.reason())
    rng = np.random.default_rng(ORDERS.index(mode))
    for name, quats, angles in cases(mode, rng):
        for cuts in (np.array([0]), np.array([0, 7, 8, 150, 299])):  # one series, or several
            near = angles[cuts] if angles is not None else rng.normal(0.0, 3.0, (len(cuts), 3))
            for firsts in (near + rng.normal(0.0, 1e-3, near.shape), rng.normal(0.0, 4.0, near.shape)):
                ends = [*cuts[1:], len(quats)]
                want = np.concatenate(
                    [frame_by_frame(mode, quats[a:b], f) for a, b, f in zip(cuts, ends, firsts, strict=True)]
                )
                got = euler_series.series(mode, quats, firsts, cuts)
                assert got is not None, (name, cuts)
                assert got.dtype == want.dtype and np.array_equal(got, want), (name, cuts)


def test_not_finite_left_to_the_caller(scene):
    from chain_ik.rig import euler_series

    quats = np.tile([1.0, 0.0, 0.0, 0.0], (5, 1))
    quats[2, 1] = np.nan
    assert euler_series.series("XYZ", quats, np.zeros((1, 3)), np.array([0])) is None


def test_a_planted_bake_says_where_its_euler_keys_were_converted_frame_by_frame(scene, monkeypatch):
    """No silent fallback (review13): where the whole-column conversion does not serve, the
    chain's report says so, and the keys are mathutils' own (the frame-by-frame path)."""
    from chain_ik.app import bake as baking
    from chain_ik.app.spec import spec_from_item
    from chain_ik.rig import euler_series
    from test_contact_bake import FIRST, LAST, built_walk

    obj = built_walk()
    for name in ("thigh", "shin", "foot"):
        obj.pose.bones[name].rotation_mode = "XYZ"
    monkeypatch.setattr(euler_series, "_REASON", ["numpy's arctan2 is not the C library's here"])
    result = baking.bake(bpy.context, obj, [spec_from_item(obj.chain_ik.chains[0])], baking.BakeOptions(FIRST, LAST))
    assert "Euler keys converted frame by frame: numpy's arctan2 is not the C library's here" in result.reasons["Foot"]
