"""Planted feet planned on real motion capture (solvers.plant on a shared CMU clip): the feet sampled
as the contact detection samples them (rig.contacts), contacts from solvers.contacts, a ground plane
at the source's lowest toe height (as bench/bench_contacts.py puts it); on the source and on a quick
retarget with legs 20% longer, the planted tip's target does not slide during contacts, never goes
below the ground and moves continuously."""

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


def test_planted_targets_hold_on_a_real_walk(scene):
    from chain_ik.rig import contacts as rig_contacts
    from chain_ik.solvers.contacts import ContactSettings, contact_runs, detect_contacts
    from chain_ik.solvers.plant import STEEPEST, head_targets, plan, plant_metrics, tip_down

    clip = mocap_rigs.CLIPS["walk"]
    source = mocap_rigs.load_clip("walk")
    mocap_rigs.add_leg_chains(source, clip)
    longer = mocap_rigs.retarget(source, clip, 1.2)
    scene = bpy.context.scene
    frames = np.arange(scene.frame_start, scene.frame_end + 1)
    fps = scene.render.fps / scene.render.fps_base
    tracks = {
        label: rig_contacts.sample_feet(bpy.context, obj, obj.chain_ik.chains, frames)
        for label, obj in (("source", source), ("legs +20%", longer))
    }
    ground = min(float(track.toe[:, 2].min()) for track in tracks["source"])
    figures = {}
    for label, obj in (("source", source), ("legs +20%", longer)):
        for item, track in zip(obj.chain_ik.chains, tracks[label], strict=True):
            settings = ContactSettings.for_leg(rig_contacts.leg_length(obj, item))
            planted = detect_contacts(track.heel, track.toe, fps, settings, ground)
            assert len(contact_runs(planted)) >= 3, (label, item.name)
            result = plan(track.toe, planted, fps, ground=ground)
            before = plant_metrics(track.toe, planted, fps, ground)
            after = plant_metrics(result.target, planted, fps, result.ground)
            figures[label, item.name] = (before, after)
            # No slide at all during contacts (every 1/30 s span inside one), where the input slides.
            assert after.slide.samples == before.slide.samples > 100
            assert after.slide.largest == 0.0 < before.slide.largest
            for hold in result.holds:
                assert np.all(result.target[hold.start : hold.end] == hold.point)
                assert hold.point[2] == ground
            # Never below the ground; the target moves no faster than the input's fastest frame plus
            # the ease's share (the module's bound, in its global form).
            assert after.lowest >= -1e-12 and np.all(result.target[:, 2] >= ground)
            step = np.linalg.norm(np.diff(result.target, axis=0), axis=1).max()
            offsets = max(np.linalg.norm(track.toe - h.point, axis=1).max() for h in result.holds)
            snaps = max(abs(h.snap) * STEEPEST / (h.ease_in + 1) for h in result.holds)
            input_step = np.linalg.norm(np.diff(track.toe, axis=0), axis=1).max()
            assert step <= input_step + STEEPEST / (result.blend + 1) * offsets + snaps + 1e-12
            # The ankle's targets keep the foot's captured pitch: the foot vector is the input's.
            ankle = head_targets(result.target, track.heel, track.toe)
            assert np.allclose(ankle - result.target, track.heel - track.toe, atol=1e-12)
            # Held from heel strike (where the contact keys start), the tip is snapped down by cm and
            # the ankle, keeping the foot's pitch, goes below the ground; held from where the tip
            # itself lands (tip_down), the ankle stays above it.
            landed = plan(track.toe, tip_down(planted, track.toe, fps, settings, ground), fps, ground=ground)
            ankle_landed = head_targets(landed.target, track.heel, track.toe)
            assert ankle[:, 2].min() < ground < ankle_landed[:, 2].min()
            assert max(abs(h.snap) for h in landed.holds) < max(abs(h.snap) for h in result.holds)
    # The retarget's feet slide more than the source's before (what a plant is for).
    retarget_slide = max(before.slide.mean for (label, _), (before, _) in figures.items() if label != "source")
    source_slide = max(before.slide.mean for (label, _), (before, _) in figures.items() if label == "source")
    assert retarget_slide > source_slide
    for key, (before, after) in figures.items():
        print(
            f"{key}: slide mean/largest mm per 1/30 s before {1000 * before.slide.mean:.2f}/"
            f"{1000 * before.slide.largest:.2f} after {1000 * after.slide.mean:.2f}/{1000 * after.slide.largest:.2f};"
            f" lowest mm before {1000 * before.lowest:.1f} after {1000 * after.lowest:.1f}"
        )
