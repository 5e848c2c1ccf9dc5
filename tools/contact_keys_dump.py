"""Every F-Curve's keys after the planted bake, to prove a speed change changes no key (issue 21).

    <bpy venv>/bin/python tools/contact_keys_dump.py dump OUT.npz    (from the checkout to measure)
    python tools/contact_keys_dump.py compare A.npz B.npz

`dump` sets up each clip of ../shared/data/mocap as bench/bench_contacts.py does (both retargets,
Move Root on, ground plane, contacts detected), bakes each retarget on a copy of its input and saves
all 14 attributes of every key of every F-Curve it then plays (856 curves over the four clips) and
the bake report's figures (OUT.npz.figures.pkl). `compare` says which arrays or figures differ."""

from __future__ import annotations

import pickle
import sys
from pathlib import Path

import numpy as np

BENCH = Path(__file__).resolve().parents[1] / "bench"


def dump(out: str) -> None:
    sys.path.insert(0, str(BENCH))
    import bench_contacts as bc
    import bpy
    import mocap_rigs
    from blender_bench import load_extension

    mocap_rigs.require_clips(list(mocap_rigs.CLIPS))
    ext = load_extension("app.bake", "app.spec", "rig.keys", "rig.contacts")
    if not hasattr(bpy.types.Object, "chain_ik"):
        ext.register()
    keys, bake = ext.rig.keys, ext.app.bake
    arrays, figures = {}, {}
    for name, clip in mocap_rigs.CLIPS.items():
        bpy.ops.wm.read_homefile(use_empty=True)
        source = mocap_rigs.load_clip(name)
        mocap_rigs.add_leg_chains(source, clip)
        characters = {label: mocap_rigs.retarget(source, clip, s) for label, s in bc.LEG_SCALES.items() if s != 1.0}
        scene = bpy.context.scene
        frames = np.arange(scene.frame_start, scene.frame_end + 1)
        feet = ext.rig.contacts.sample_feet(bpy.context, source, source.chain_ik.chains, frames)
        ground = bc._ground_plane(min(float(track.toe[:, 2].min()) for track in feet))
        for obj in [source, *characters.values()]:
            obj.chain_ik.ground = ground
            bpy.context.view_layer.objects.active = obj
            bpy.ops.chain_ik.detect_contacts(frame_start=int(frames[0]), frame_end=int(frames[-1]))
        for label, obj in characters.items():
            bpy.context.view_layer.objects.active = obj
            for item in obj.chain_ik.chains:
                item.move_root = True
            specs = [ext.app.spec.spec_from_item(item) for item in obj.chain_ik.chains]
            source_action = obj.animation_data.action
            bc._assign(obj, source_action.copy())
            with bc.alone(obj):
                result = bake.bake(bpy.context, obj, specs, bake.BakeOptions(int(frames[0]), int(frames[-1])))
            figures[(name, label)] = (
                result.keys,
                result.worst_error,
                dict(result.per_chain_error),
                [repr(report.contacts) for report in result.chains],
                result.root_moved,
                result.reasons,
            )
            for fc in keys.assigned_fcurves(obj):
                count = len(fc.keyframe_points)
                for attribute, width, dtype in keys.KEY_ATTRIBUTES:
                    values = np.empty(width * count, dtype=dtype)
                    fc.keyframe_points.foreach_get(attribute, values)
                    arrays[f"{name}|{label}|{fc.data_path}|{fc.array_index}|{attribute}"] = values
            bc._assign(obj, source_action)
    np.savez(out, **arrays)
    with open(out + ".figures.pkl", "wb") as file:
        pickle.dump(figures, file)
    print(f"{len({k.rsplit('|', 1)[0] for k in arrays})} curves, {len(arrays)} arrays -> {out}")


def compare(first: str, second: str) -> bool:
    a, b = np.load(first), np.load(second)
    names = set(a.files) | set(b.files)

    def same(n: str) -> bool:
        return n in a.files and n in b.files and a[n].dtype == b[n].dtype and a[n].tobytes() == b[n].tobytes()

    differ = sorted(n for n in names if not same(n))
    with open(first + ".figures.pkl", "rb") as fa, open(second + ".figures.pkl", "rb") as fb:
        figures_a, figures_b = pickle.load(fa), pickle.load(fb)
    curves = len({n.rsplit("|", 1)[0] for n in names})
    identical = figures_a == figures_b
    print(f"{curves} curves, {len(names)} arrays: {len(differ)} differ {differ[:5]}; figures identical: {identical}")
    return not differ and figures_a == figures_b


if __name__ == "__main__":
    if sys.argv[1:2] == ["dump"] and len(sys.argv) == 3:
        dump(sys.argv[2])
        sys.stdout.flush()
        import os

        os._exit(0)  # the 4.x wheel can crash at exit after add-on classes were registered
    elif sys.argv[1:2] == ["compare"] and len(sys.argv) == 4:
        sys.exit(0 if compare(sys.argv[2], sys.argv[3]) else 1)
    else:
        sys.exit(__doc__)
