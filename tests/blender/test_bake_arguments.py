"""Issue 22 class 6: a bad bake argument (a NaN, infinite or negative tolerance, a bad frame
range or step...) is refused before anything is created: no action, no slot, the rig's
animation data as it was, and no pose or key changed."""

from __future__ import annotations

import math

import bpy
import pytest
from builders import add_empty, straight_chain

NAN, INF = math.nan, math.inf
BAD = [
    ({"reduce": True, "reduce_tolerance": NAN}, "Max Tip Error"),
    ({"reduce": True, "reduce_tolerance": INF}, "Max Tip Error"),
    ({"reduce": True, "reduce_tolerance": -1e-3}, "Max Tip Error"),
    ({"reduce": True, "reduce_tolerance": 0.0}, "Max Tip Error"),
    ({"reduce": True, "reduce_mode": "ANGLE", "reduce_angle": NAN}, "Max Joint Error"),
    ({"reduce": True, "reduce_mode": "ANGLE", "reduce_angle": -INF}, "Max Joint Error"),
    ({"reduce": True, "reduce_mode": "DISTANCE"}, "unknown reduction mode"),
    ({"step": 0}, "step must be at least 1"),
    ({"step": 1.5}, "step must be a whole number"),
    ({"frame_start": NAN}, "frame start must be a whole number"),
    ({"frame_end": INF}, "frame end must be a whole number"),
    ({"frame_start": 5, "frame_end": 2}, "before frame start"),
    ({"frame_end": 2_000_000}, "beyond Blender's limit"),
    ({"interpolation": "SPLINE"}, "unknown interpolation"),
]


def _rig(state: str):
    """A 3-bone chain and its target; `state`: no animation data, animation data without an
    action, or an action already keying another bone (with its slot on 4.4+)."""
    obj = straight_chain(3)
    add_empty("Goal", (0.5, 0.5, 2.0))
    if state == "animation data":
        obj.animation_data_create()
    elif state == "action":
        obj.pose.bones["b0"].keyframe_insert("location", frame=1)
    bpy.context.view_layer.objects.active = obj
    return obj


def _state(obj) -> tuple:
    ad = obj.animation_data
    slot = getattr(ad, "action_slot", None) if ad else None
    return (
        ad is None,
        ad and ad.action and ad.action.name,
        slot and slot.identifier,
        ad and ad.action and len(getattr(ad.action, "slots", ())),
        sorted(a.name for a in bpy.data.actions),
        [tuple(pb.rotation_quaternion) + tuple(pb.scale) for pb in obj.pose.bones],
    )


@pytest.mark.parametrize("state", ["none", "animation data", "action"])
@pytest.mark.parametrize(("bad", "message"), BAD, ids=[str(b) for b, _ in BAD])
def test_bad_bake_argument_is_refused_before_anything_is_created(scene, state, bad, message):
    from chain_ik.app import bake as bake_run
    from chain_ik.app import spec as app_spec

    obj = _rig(state)
    before = _state(obj)
    specs = [s for _, s in app_spec.specs_from_arguments(obj, "b2", 3, "Goal", "", "triangulation", -1)]
    options = bake_run.BakeOptions(**{"frame_start": 1, "frame_end": 10, **bad})
    with pytest.raises(ValueError, match=message):
        bake_run.bake(bpy.context, obj, specs, options)
    assert _state(obj) == before


@pytest.mark.parametrize("value", [NAN])
@pytest.mark.parametrize("mode", ["TIP", "ANGLE"])
def test_operator_and_panel_refuse_a_non_finite_tolerance(scene, mode, value):
    """The operator's and the panel's fields take NaN (their minimum does not stop it; infinity
    they clamp to the largest float): refused with nothing created, from a script and from the
    panel's settings."""
    obj = _rig("none")
    field = "reduce_tolerance" if mode == "TIP" else "reduce_angle"
    with pytest.raises(RuntimeError, match="must be a finite number > 0"):
        bpy.ops.chain_ik.bake(tip="b2", chain_length=3, target="Goal", frame_start=1, frame_end=10,
                              reduce=True, reduce_mode=mode, **{field: value})  # fmt: skip
    settings = obj.chain_ik.bake
    settings.use_scene_range, settings.frame_start, settings.frame_end = False, 1, 10
    settings.reduce, settings.reduce_mode = True, mode
    setattr(settings, field, value)
    item = obj.chain_ik.chains.add()
    item.tip, item.chain_length, item.target = "b2", 3, bpy.data.objects["Goal"]
    with pytest.raises(RuntimeError, match="must be a finite number > 0"):
        bpy.ops.chain_ik.bake()
    assert obj.animation_data is None and not bpy.data.actions


def test_bake_fk_refuses_a_nan_tolerance_before_anything_is_created(scene):
    obj = _rig("none")
    with pytest.raises(RuntimeError, match="must be a finite number > 0"):
        bpy.ops.chain_ik.bake_fk(pairs="b1:b2", frame_start=1, frame_end=10, reduce=True, reduce_tolerance=NAN)
    assert obj.animation_data is None and not bpy.data.actions


CHAIN_BAD = [
    ("tolerance", "reach tolerance must be a finite distance"),  # before: read as 0 (the default)
    ("rotation_weight", "rotation weight must be within 0..1"),  # before: Rotation silently off
    ("weight", "weight must be a finite number > 0"),
    ("influence", "influence must be within 0..1"),
    ("pole_angle", "pole_angle must be finite"),
    ("fold_angle", "fold_angle must be finite"),
    ("damping", "damping must be finite"),
]


@pytest.mark.parametrize(("field", "message"), CHAIN_BAD)
def test_a_nan_chain_setting_is_refused_by_bake_and_solve(scene, field, message):
    """The chains' own settings are bake arguments too: a NaN is refused, never read as off or
    as the default, before anything is created or posed."""
    obj = _rig("none")
    item = obj.chain_ik.chains.add()
    item.tip, item.chain_length, item.target = "b2", 3, bpy.data.objects["Goal"]
    item.use_rotation = field == "rotation_weight"
    if field == "pole_angle":
        item.pole_target = add_empty("Pole", (1.0, 0.0, 1.0))
    if field == "damping":
        item.method = "jacobian"
    setattr(item, field, NAN)
    settings = obj.chain_ik.bake
    settings.use_scene_range, settings.frame_start, settings.frame_end = False, 1, 10
    before = _state(obj)
    with pytest.raises(RuntimeError, match=message):
        bpy.ops.chain_ik.bake()
    with pytest.raises(RuntimeError, match=message):
        bpy.ops.chain_ik.solve()
    assert _state(obj) == before
