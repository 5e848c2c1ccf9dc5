"""A planted foot is never held lower than the capture put it (a user trial on the raw CMU
start-walk-stop clip: a 2.5 s contact of standing, pivots and a heel rise, pivoted about a point
under its first frame's heel, held the tip 58 mm below the capture's lowest without a ground, and
lifted the foot 33 mm for 2 s onto one; solvers.plant.heel_first)."""

from __future__ import annotations

import sys
from pathlib import Path

import bpy
import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "bench"))

import mocap_rigs  # noqa: E402

pytestmark = pytest.mark.skipif(not mocap_rigs.MOCAP_DIR.is_dir(), reason=f"no clips at {mocap_rigs.MOCAP_DIR}")


def _feet(obj, frames):
    from chain_ik.rig import contacts as rig_contacts

    return rig_contacts.sample_feet(bpy.context, obj, obj.chain_ik.chains, frames)


@pytest.mark.parametrize("ground", [False, True])
def test_the_raw_clip_keeps_its_planted_feet_where_the_capture_has_them(scene, ground, capfd):
    from chain_ik.rig import contacts as rig_contacts

    clip = mocap_rigs.CLIPS["start_walk_stop"]
    obj = mocap_rigs.load_clip("start_walk_stop")
    mocap_rigs.add_leg_chains(obj, clip)
    if ground:
        bpy.ops.mesh.primitive_plane_add(size=50.0, location=(0.0, 0.0, 0.0))
        obj.chain_ik.ground = bpy.context.object
        bpy.context.view_layer.objects.active = obj
    scene = bpy.context.scene
    frames = np.arange(scene.frame_start, scene.frame_end + 1)
    before = _feet(obj, frames)
    assert bpy.ops.chain_ik.detect_contacts() == {"FINISHED"}
    planted = [rig_contacts.read_contacts(obj, item, frames) for item in obj.chain_ik.chains]
    assert bpy.ops.chain_ik.bake(frame_start=int(frames[0]), frame_end=int(frames[-1])) == {"FINISHED"}
    # The left foot's 2.5 s contact (standing, pivots, a shuffle, a crouch) is held far from the
    # capture's tip by its end: the figures say so (the pin held; the report said nothing).
    left, right = (item.contact_figures for item in obj.chain_ik.chains)
    assert "from the input's tip (a contact may join several placements" in left
    assert "from the input's tip" not in right
    out = capfd.readouterr().out.splitlines()  # the figures (Info) and a warning, the left foot's only
    warned = [line for line in out if "from the input's tip" in line and line.startswith("Warning")]
    assert len(warned) == 1 and f"chain '{obj.chain_ik.chains[0].name}'" in warned[0]
    after = _feet(obj, frames)
    for item, was, now, down in zip(obj.chain_ik.chains, before, after, planted, strict=True):
        lowest = min(was.heel[:, 2].min(), was.toe[:, 2].min())
        if not ground:  # nothing below the lowest the capture itself reached (was 58 mm below)
            assert min(now.heel[:, 2].min(), now.toe[:, 2].min()) >= lowest - 1e-3, item.name
            # nor the planted heel (the ankle) far below the capture's (was 84 mm below, 88 frames)
            sunk = (now.heel[:, 2] - was.heel[:, 2] < -0.025) & down
            assert not sunk.any(), (item.name, np.flatnonzero(sunk)[:10])
        else:  # on the ground, never under it; and on the clip's own proportions a planted foot
            # is not lifted for long: its heel within 25 mm of the capture's on all but 0.1 s of
            # its contacts (was 207 frames 25-47 mm up)
            assert min(now.heel[:, 2].min(), now.toe[:, 2].min()) >= -1e-3, item.name
            lifted = (now.heel[:, 2] - was.heel[:, 2] > 0.025) & down
            assert np.count_nonzero(lifted) <= 12, (item.name, np.flatnonzero(lifted)[:10])
