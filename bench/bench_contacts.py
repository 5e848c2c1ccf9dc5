"""Foot contacts on real motion capture: what the input looks like before any cleanup.

Run inside a bpy venv:  <venv>/bin/python bench/bench_contacts.py [--clips walk run_jog ...]

For each clip of ../shared/data/mocap (bench/mocap_rigs.py), on the clean source and on two quick
retargets (thighs and shins 20% longer, and 20% shorter; the hips' path scaled by the hip-height
ratio), with one Chain IK chain per leg (thigh, shin, foot) and a ground plane at the source's
lowest toe height: `chain_ik.detect_contacts` keys each foot's contacts (raycast on the plane),
then per foot, measured on the played-back motion:
- contacts found, and their frame-wise F1 against the source's contacts (goal: F1 >= 0.9);
- foot slide during contacts: how far the planted end (the stiller of heel and toe) moves per
  1/30 s inside a contact, mean, median and largest, in mm;
- the skating ratio (Guided Motion Diffusion: share of 20 fps steps where the foot, within 5 cm
  of the ground, moves faster than 0.5 m/s);
- the lowest height of the foot's ends above the ground (negative: below), in mm;
- the largest joint angular speed of the leg (thigh, shin, foot; over 1/30 s), in degrees per second.
The "after" column is for a bake that honours the contacts (issue 21), which does not exist yet:
the table measures the input only.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import bpy
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import mocap_rigs  # noqa: E402
from blender_bench import exit_after_main, load_extension  # noqa: E402

LEG_SCALES = {"source": 1.0, "legs +20%": 1.2, "legs -20%": 0.8}


@dataclass
class FootRow:
    clip: str
    character: str
    foot: str
    contacts: int
    f1: float | None
    slide_mean: float
    slide_median: float
    slide_largest: float
    skating: float
    lowest: float
    angular: float


def _ground_plane(height: float):
    mesh = bpy.data.meshes.new("Ground")
    size = 50.0
    mesh.from_pydata(
        [(-size, -size, height), (size, -size, height), (size, size, height), (-size, size, height)], [], [(0, 1, 2, 3)]
    )
    obj = bpy.data.objects.new("Ground", mesh)
    bpy.context.scene.collection.objects.link(obj)
    return obj


def measure_clip(name: str) -> tuple[list[FootRow], float]:
    """The rows of one clip (source and retargets), and the detection's seconds per frame."""
    ext = load_extension("rig.contacts", "solvers.contacts", "solvers.foot_metrics")
    rig_contacts, foot_metrics = ext.rig.contacts, ext.solvers.foot_metrics
    clip = mocap_rigs.CLIPS[name]
    bpy.ops.wm.read_homefile(use_empty=True)
    source = mocap_rigs.load_clip(name)
    mocap_rigs.add_leg_chains(source, clip)
    characters = {"source": source}
    for label, scale in LEG_SCALES.items():
        if scale != 1.0:
            characters[label] = mocap_rigs.retarget(source, clip, scale)
    scene = bpy.context.scene
    frames = np.arange(scene.frame_start, scene.frame_end + 1)
    fps = scene.render.fps / scene.render.fps_base
    samples = {
        label: rig_contacts.sample_feet(bpy.context, obj, obj.chain_ik.chains, frames, rotations=True)
        for label, obj in characters.items()
    }
    floor = min(float(track.toe[:, 2].min()) for track in samples["source"])
    ground = _ground_plane(floor)
    seconds = 0.0
    planted = {}
    for label, obj in characters.items():
        obj.chain_ik.ground = ground
        bpy.context.view_layer.objects.active = obj
        start = time.perf_counter()
        result = bpy.ops.chain_ik.detect_contacts(frame_start=int(frames[0]), frame_end=int(frames[-1]))
        seconds += time.perf_counter() - start
        assert result == {"FINISHED"}, result
        planted[label] = [rig_contacts.read_contacts(obj, item, frames) for item in obj.chain_ik.chains]
    rows = []
    for label, obj in characters.items():
        for c, item in enumerate(obj.chain_ik.chains):
            track, flags = samples[label][c], planted[label][c]
            slide = foot_metrics.foot_slide(track.heel, track.toe, flags, fps)
            rows.append(
                FootRow(
                    clip=name,
                    character=label,
                    foot=item.name,
                    contacts=len(ext.solvers.contacts.contact_runs(flags)),
                    f1=None if label == "source" else foot_metrics.contact_f1(flags, planted["source"][c]),
                    slide_mean=slide.mean,
                    slide_median=slide.median,
                    slide_largest=slide.largest,
                    skating=foot_metrics.skating_ratio(track.toe, fps, floor),
                    lowest=foot_metrics.lowest_height(track.heel, track.toe, floor),
                    angular=foot_metrics.largest_angular_speed(track.rotations, fps),
                )
            )
    return rows, seconds / (len(frames) * len(characters))


def table(rows: list[FootRow]) -> str:
    lines = [
        "| clip | character | foot | contacts | F1 vs source | slide mean / median / largest (mm per 1/30 s) |"
        " skating ratio | lowest (mm) | largest joint speed (°/s) | after (bake with contacts: not yet) |",
        "|---|---|---|---:|---:|---:|---:|---:|---:|---|",
    ]
    for r in rows:
        f1 = "" if r.f1 is None else f"{r.f1:.3f}" + ("" if r.f1 >= 0.9 else " (below 0.9)")
        lines.append(
            f"| {r.clip} | {r.character} | {r.foot} | {r.contacts} | {f1} |"
            f" {1000 * r.slide_mean:.1f} / {1000 * r.slide_median:.1f} / {1000 * r.slide_largest:.1f} |"
            f" {r.skating:.3f} | {1000 * r.lowest:.1f} | {math.degrees(r.angular):.0f} | – |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> list[FootRow]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clips", nargs="+", default=list(mocap_rigs.CLIPS), choices=list(mocap_rigs.CLIPS))
    args = parser.parse_args(argv)
    ext = load_extension()
    if not hasattr(bpy.types.Object, "chain_ik"):  # as a script; a test has it registered
        ext.register()
    rows, timing = [], {}
    for name in args.clips:
        clip_rows, timing[name] = measure_clip(name)
        rows.extend(clip_rows)
    print(f"Blender {bpy.app.version_string}; ground: a plane at the source's lowest toe height; input only")
    print()
    print(table(rows))
    print()
    worst = min(r.f1 for r in rows if r.f1 is not None)
    print(f"worst F1 of a retarget's contacts against the source's: {worst:.3f} (goal: at least 0.9)")
    print("detection, ms per frame and character: " + ", ".join(f"{n} {1000 * s:.2f}" for n, s in timing.items()))
    return rows


if __name__ == "__main__":
    main()
    exit_after_main()
