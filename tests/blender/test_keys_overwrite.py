"""rig.keys.write_keys_in overwrites keys in place where the keys it replaces sit on the new frames (a
capture keyed on every frame, as a planted bake writes it): the F-Curve must be the one the rebuild
gives, every key attribute of every key, kept and new."""

from __future__ import annotations

import bpy
import numpy as np
import pytest


def _curve(name: str):
    from chain_ik.rig import keys

    obj = bpy.data.objects.new(name, None)
    bpy.context.scene.collection.objects.link(obj)
    obj.keyframe_insert("location", index=0, frame=1)
    fc = keys.assigned_fcurves(obj)[0]
    kp = fc.keyframe_points
    kp.clear()
    frames = np.arange(1, 31, dtype=np.float32)
    kp.add(len(frames))
    co = np.empty(2 * len(frames), dtype=np.float32)
    co[0::2], co[1::2] = frames, np.sin(frames / 4.0)
    kp.foreach_set("co", co)
    # Keys not as new keys come: other interpolations, handle types, easings, key types, selection.
    for i, key in enumerate(kp):
        key.interpolation = ("LINEAR", "CONSTANT", "BEZIER", "ELASTIC")[i % 4]
        key.handle_left_type = key.handle_right_type = ("VECTOR", "AUTO", "FREE", "ALIGNED", "AUTO_CLAMPED")[i % 5]
        key.easing = ("EASE_IN", "AUTO")[i % 2]
        key.type = ("BREAKDOWN", "KEYFRAME", "JITTER")[i % 3]
        key.back, key.amplitude, key.period = 1.5, 0.3, 2.0
        key.select_control_point = bool(i % 2)
    fc.update()
    return fc


def _attributes(fc) -> dict:
    from chain_ik.rig import keys

    kp = fc.keyframe_points
    out = {}
    for name, width, dtype in keys.KEY_ATTRIBUTES:
        array = np.empty(width * len(kp), dtype=dtype)
        kp.foreach_get(name, array)
        out[name] = array
    return out


@pytest.mark.parametrize("interpolation", ["BEZIER", "LINEAR"])
def test_an_overwrite_in_place_gives_the_rebuilds_curve(scene, monkeypatch, interpolation):
    from chain_ik.rig import keys

    frames = np.arange(8, 21, dtype=float)
    spans = [(8.0, 12.0), (15.0, 20.0)]
    at = frames[(frames <= 12.0) | (frames >= 15.0)]
    new = np.cos(at)
    in_place, rebuilt = _curve("A"), _curve("B")
    assert keys._same_frames(at.astype(np.float32), at.astype(np.float32))
    written = keys.write_keys_in(in_place, at, new, spans, interpolation)
    monkeypatch.setattr(keys, "_same_frames", lambda old, new: False)  # the rebuild
    assert keys.write_keys_in(rebuilt, at, new, spans, interpolation) == written == len(at)
    a, b = _attributes(in_place), _attributes(rebuilt)
    assert len(a["co"]) == 2 * 30
    for name in a:
        assert np.array_equal(a[name], b[name]), name
    # The keys between the spans (13, 14) and outside them kept their own attributes.
    kept = np.isin(np.arange(1, 31), at, invert=True)
    assert np.array_equal(a["co"][1::2][kept], _attributes(_curve("C"))["co"][1::2][kept])


def test_assigned_fcurve_finds_what_assigned_fcurves_lists(scene):
    """rig.keys.assigned_fcurve looks a curve up by path and index (Blender's find) among the curves
    assigned_fcurves lists (the assigned slot's on 4.4+): the same curve, None where there is none."""
    from chain_ik.rig import keys

    fc = _curve("A")
    obj = bpy.data.objects["A"]
    obj.keyframe_insert("location", index=2, frame=1)
    listed = {(c.data_path, c.array_index): c for c in keys.assigned_fcurves(obj)}
    assert set(listed) == {("location", 0), ("location", 2)}
    for (path, index), curve in listed.items():
        assert keys.assigned_fcurve(obj, path, index) == curve
    assert keys.assigned_fcurve(obj, "location", 0) == fc
    assert keys.assigned_fcurve(obj, "location", 1) is None
    assert keys.assigned_fcurve(obj, "rotation_euler") is None
    empty = bpy.data.objects.new("Empty", None)
    assert keys.assigned_fcurve(empty, "location") is None


def test_spans_are_the_runs_of_keyed_frames():
    """rig.plant_keys.spans: (first, last) action frame of each run of keyed frames, lowest first
    within a run (a reversed NLA strip maps the frames backwards); none where nothing is keyed."""
    from chain_ik.rig import plant_keys

    frames = np.arange(10.0, 20.0)
    keyed = np.array([1, 1, 0, 0, 1, 0, 1, 1, 1, 1], dtype=bool)
    assert plant_keys.spans(frames, keyed) == [(10.0, 11.0), (14.0, 14.0), (16.0, 19.0)]
    assert plant_keys.spans(frames[::-1].copy(), keyed) == [(18.0, 19.0), (15.0, 15.0), (10.0, 13.0)]
    assert plant_keys.spans(frames, np.zeros(10, dtype=bool)) == []
    assert plant_keys.spans(frames, np.ones(10, dtype=bool)) == [(10.0, 19.0)]


@pytest.mark.parametrize("in_place", [True, False])
def test_keys_given_as_read_write_the_same_curve(scene, monkeypatch, in_place):
    """write_keys_in with the curve's co given (as curve_values read it: `read`) writes what it
    writes reading them itself; a co of another length (stale) is read again."""
    from chain_ik.rig import keys, sampling

    if not in_place:
        monkeypatch.setattr(keys, "_same_frames", lambda old, new: False)  # the rebuild
    frames = np.arange(8, 21, dtype=float)
    spans = [(8.0, 12.0), (15.0, 20.0)]
    at = frames[(frames <= 12.0) | (frames >= 15.0)]
    new = np.cos(at)
    read: dict = {}
    given, itself, stale = _curve("A"), _curve("B"), _curve("C")
    sampling.curve_values(given, np.arange(1.0, 31.0), {}, read, "A")
    assert len(read["A"]) == 2 * 30
    keys.write_keys_in(given, at, new, spans, "BEZIER", seen={}, co=read["A"])
    keys.write_keys_in(itself, at, new, spans, "BEZIER", seen={})
    keys.write_keys_in(stale, at, new, spans, "BEZIER", seen={}, co=np.zeros(2 * 29, dtype=np.float32))
    a, b, c = _attributes(given), _attributes(itself), _attributes(stale)
    for name in a:
        assert np.array_equal(a[name], b[name]) and np.array_equal(a[name], c[name]), name
