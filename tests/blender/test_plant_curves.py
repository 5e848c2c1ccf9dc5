"""rig.plant_curves writes the legs' Euler turns and local matrices component by component: the same
figures, to the bit, as quaternions made and multiplied axis after axis (quat.from_axis_angle,
quat.multiply) and quat.to_matrix times the scale, as the planted bake's keys depend on them."""

from __future__ import annotations

import numpy as np
import pytest

ORDERS = ("XYZ", "XZY", "YXZ", "YZX", "ZXY", "ZYX")


def _angles(rows: int) -> np.ndarray:
    """Angles of every size and sign, exact zeros of both signs, half and whole turns among them."""
    rng = np.random.default_rng(7)
    values = rng.normal(size=(rows, 3)) * rng.choice([1e-12, 1e-3, 1.0, 3.0, 10.0, 1e6], size=(rows, 3))
    values[::7] = 0.0
    values[1::11, 1] = -0.0
    values[2::13] = np.pi
    values[3::17, 2] = -np.pi
    values[4::19, 0] = 2.0 * np.pi
    return values


def _reference_turns(mode: str, values: np.ndarray) -> np.ndarray:
    from chain_ik.solvers import quat

    out = np.zeros((len(values), 4))
    out[:, 0] = 1.0
    for axis in mode:  # X applied first for 'XYZ'
        unit = np.zeros(3)
        unit["XYZ".index(axis)] = 1.0
        out = quat.multiply(quat.from_axis_angle(unit, values[:, "XYZ".index(axis)]), out)
    return out


@pytest.mark.parametrize("mode", ORDERS)
def test_euler_turns_are_the_axis_quaternions_products(ext, mode):
    from chain_ik.rig import plant_curves

    values = _angles(3000)
    assert plant_curves._rotation(mode, values).tobytes() == _reference_turns(mode, values).tobytes()


def test_local_matrices_are_to_matrix_times_the_scale(ext):
    from chain_ik.rig import plant_curves
    from chain_ik.solvers import quat

    values = _angles(3000)
    turns = _reference_turns("ZXY", values)
    location = np.random.default_rng(3).normal(size=(len(turns), 3))
    scale = np.abs(np.random.default_rng(4).normal(size=(len(turns), 3))) + 0.5
    scale[::3] = 1.0
    for scaled, given in ((scale, scale), (np.ones_like(scale), None)):  # None: every scale 1
        reference = np.zeros((len(turns), 4, 4))
        reference[:, :3, :3] = quat.to_matrix(turns) * scaled[:, None, :]
        reference[:, :3, 3] = location
        reference[:, 3, 3] = 1.0
        assert plant_curves._basis(turns, location, given).tobytes() == reference.tobytes()


@pytest.mark.parametrize("frames", [1, 2, 3, 31, 343, 1000])
def test_stack_products_are_matmuls_one_by_one(ext, frames):
    """The forward kinematics' stack-by-matrix products as one 2D product: the same bits as numpy's
    matmul of the stack (one BLAS call per matrix), both sides, affine and general matrices."""
    from chain_ik.rig import plant_curves

    rng = np.random.default_rng(frames)
    for scale in (1e-3, 1.0, 1e4):
        stack = rng.normal(size=(frames, 4, 4)) * scale
        matrix = rng.normal(size=(4, 4))
        for affine in (False, True):
            if affine:
                stack[:, 3], matrix[3] = (0.0, 0.0, 0.0, 1.0), (0.0, 0.0, 0.0, 1.0)
            left = plant_curves._times_each(matrix, stack)
            right = plant_curves._each_times(stack, matrix)
            assert left.flags.c_contiguous and right.flags.c_contiguous
            assert (left.view(np.int64) == (matrix @ stack).view(np.int64)).all()
            assert (right.view(np.int64) == (stack @ matrix).view(np.int64)).all()
            vector = np.array([0.0, rng.random() * scale, 0.0, 1.0])
            assert (plant_curves._each_times(stack, vector) == stack @ vector).all()
            legs = rng.normal(size=(frames, 3, 4, 4)) * scale  # a leg's stacked matrices, a bone's strided view
            toe = plant_curves._each_times(legs[:, 2], vector)
            assert (toe.view(np.int64) == (legs[:, 2] @ vector).view(np.int64)).all()
