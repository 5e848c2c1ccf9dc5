"""rig.modes: any rotation written in any mode reads back as the same rotation."""

from __future__ import annotations

import numpy as np
import pytest
from builders import straight_chain
from mathutils import Quaternion

MODES = ("QUATERNION", "AXIS_ANGLE", "XYZ", "XZY", "YXZ", "YZX", "ZXY", "ZYX")


@pytest.mark.parametrize("mode", MODES)
def test_values_round_trip_from_random_current_values(scene, mode):
    from chain_ik.rig import modes

    pb = straight_chain(1).pose.bones["b0"]
    pb.rotation_mode = mode
    rng = np.random.default_rng(len(mode))
    for _ in range(200):
        current = Quaternion(rng.normal(size=4)).normalized()
        modes.set_values(pb, modes.values_for(pb, current))  # some current value in this mode
        q = Quaternion(rng.normal(size=4)).normalized()
        values = modes.values_for(pb, q)
        assert all(np.isfinite(values))
        back = modes.to_quaternion(mode, values)
        assert abs(abs(back.dot(q)) - 1.0) < 1e-6, (mode, tuple(q), values)
    # Near-identity and exact identity rotations too (axis-angle with a zero angle).
    for q in (Quaternion(), Quaternion((1.0, 1e-9, 0.0, 0.0)).normalized()):
        back = modes.to_quaternion(mode, modes.values_for(pb, q))
        assert abs(abs(back.dot(q)) - 1.0) < 1e-9
