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
