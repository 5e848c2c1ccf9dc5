"""Every draw() of the panel and list against a recording layout, in each state."""

from __future__ import annotations

from types import SimpleNamespace

import bpy
import pytest
from builders import add_empty, straight_chain
from recording import RecordingLayout


def _draw(panel_cls, context) -> RecordingLayout:
    layout = RecordingLayout()
    # Panels cannot be instantiated headless; draw() only uses self.layout.
    assert panel_cls.poll(context)
    panel_cls.draw(SimpleNamespace(layout=layout), context)
    return layout


def _panels():
    from chain_ik.ui import panels

    return panels


@pytest.fixture
def rig(scene):
    obj = straight_chain(3)
    bpy.context.view_layer.objects.active = obj
    return obj


def test_panel_classes_are_in_the_sidebar_tab(ext):
    panels = _panels()
    for cls in (panels.VIEW3D_PT_chain_ik, panels.VIEW3D_PT_chain_ik_settings, panels.VIEW3D_PT_chain_ik_result):
        assert (cls.bl_space_type, cls.bl_region_type, cls.bl_category) == ("VIEW_3D", "UI", "Chain IK")
        assert hasattr(bpy.types, cls.__name__)


def test_panels_hidden_without_an_armature(scene):
    panels = _panels()
    add_empty()
    bpy.context.view_layer.objects.active = bpy.data.objects["Target"]
    assert not panels.VIEW3D_PT_chain_ik.poll(bpy.context)


def test_main_panel_without_chains(rig):
    layout = _draw(_panels().VIEW3D_PT_chain_ik, bpy.context)
    assert ("template_list", "CHAINIK_UL_chains", "chains") in layout.log
    ops = {c[1] for c in layout.calls("operator")}
    assert ops == {
        "chain_ik.chain_add",
        "chain_ik.chain_remove",
        "chain_ik.chain_from_selected",
        "chain_ik.chain_mirror",
        "chain_ik.chains_from_constraints",
        "chain_ik.solve",
        "chain_ik.live_toggle",
    }
    assert not _panels().VIEW3D_PT_chain_ik_settings.poll(bpy.context)


@pytest.mark.parametrize("method", ["triangulation", "fabrik", "ccd", "jacobian"])
@pytest.mark.parametrize("target_kind", ["empty", "armature", "none"])
def test_settings_panel_each_solver(rig, method, target_kind):
    item = rig.chain_ik.chains.add()
    item.tip, item.method = "b2", method
    if target_kind == "empty":
        item.target = add_empty()
    elif target_kind == "armature":
        other = straight_chain(1, name="Other")
        bpy.ops.object.mode_set(mode="OBJECT")
        bpy.context.view_layer.objects.active = rig
        item.target = other
    layout = _draw(_panels().VIEW3D_PT_chain_ik_settings, bpy.context)
    props = {c[2] for c in layout.calls("prop") + layout.calls("prop_search")}
    assert {"tip", "chain_length", "target", "method", "influence", "use_tail", "tolerance"} <= props
    assert ("target_bone" in props) == (target_kind == "armature")
    own = {"triangulation": "fold_angle", "fabrik": "fabrik_placement", "jacobian": "max_step"}
    assert own.get(method, "tolerance") in props
    from chain_ik import solvers

    assert ("label", solvers.METHODS[method]) in layout.log  # the one-line description
    main = _draw(_panels().VIEW3D_PT_chain_ik, bpy.context)
    assert ("operator", "chain_ik.live_toggle") in main.log


def test_result_panel_before_and_after_solve_and_compare(rig):
    item = rig.chain_ik.chains.add()
    item.tip, item.chain_length, item.target = "b2", 3, add_empty(location=(1, 0, 2))
    layout = _draw(_panels().VIEW3D_PT_chain_ik_result, bpy.context)
    assert ("label", "Not solved yet") in layout.log
    assert bpy.ops.chain_ik.solve() == {"FINISHED"}
    assert bpy.ops.chain_ik.compare() == {"FINISHED"}
    layout = _draw(_panels().VIEW3D_PT_chain_ik_result, bpy.context)
    labels = [c[1] for c in layout.calls("label")]
    assert any(text.startswith("Tip error") and "ms" in text for text in labels)
    assert sum(text in {"triangulation", "fabrik", "ccd", "jacobian"} for text in labels) == 4
    assert ("operator", "chain_ik.compare") in layout.log


def test_ui_list_draw_item(rig):
    from chain_ik.ui.panels import CHAINIK_UL_chains

    item = rig.chain_ik.chains.add()
    for tip, live in (("b2", True), ("", False)):
        item.tip, item.live = tip, live
        layout = RecordingLayout()
        CHAINIK_UL_chains.draw_item(
            SimpleNamespace(), bpy.context, layout, rig.chain_ik, item, 0, rig.chain_ik, "active_index", 0
        )
        assert ("prop", item, "name") in layout.log and ("prop", item, "live") in layout.log
    item.live = False


def test_recording_layout_catches_typos(rig):
    layout = RecordingLayout()
    item = rig.chain_ik.chains.add()
    with pytest.raises(AssertionError, match="no property 'chain_lenght'"):
        layout.prop(item, "chain_lenght")
    with pytest.raises(AssertionError, match="has no property 'tipp'"):
        layout.operator("chain_ik.solve").tipp = "x"


@pytest.mark.parametrize("use_scene_range", [True, False])
@pytest.mark.parametrize("reduce", [True, False])
def test_bake_panel(rig, use_scene_range, reduce):
    panels = _panels()
    assert (panels.VIEW3D_PT_chain_ik_bake.bl_category, panels.VIEW3D_PT_chain_ik_bake.bl_parent_id) == (
        "Chain IK",
        "VIEW3D_PT_chain_ik",
    )
    bake = rig.chain_ik.bake
    bake.use_scene_range, bake.reduce = use_scene_range, reduce
    layout = _draw(panels.VIEW3D_PT_chain_ik_bake, bpy.context)
    props = {(type(c[1]).__name__, c[2]) for c in layout.calls("prop")}
    owner = "Scene" if use_scene_range else "ChainIKBake"
    assert {(owner, "frame_start"), (owner, "frame_end")} <= props
    names = {name for _, name in props}
    assert {"use_scene_range", "step", "interpolation", "reduce", "reduce_tolerance"} <= names
    assert ("operator", "chain_ik.bake") in layout.log


def test_bake_panel_shows_the_last_bake(rig):
    """The Result panel shows the last Solve; the Bake panel the last Bake's summary, as reported."""
    item = rig.chain_ik.chains.add()
    item.tip, item.chain_length, item.target = "b2", 3, add_empty(location=(1, 0, 2))
    panels = _panels()
    layout = _draw(panels.VIEW3D_PT_chain_ik_bake, bpy.context)
    assert not any(text.startswith("Last:") for _, text, *_ in layout.calls("label"))
    assert bpy.ops.chain_ik.bake(frame_start=1, frame_end=5) == {"FINISHED"}
    summary = rig.chain_ik.bake.last_bake
    assert summary.startswith("baked 5 frame(s) of 1 chain(s): ") and " keys on 3 bone(s), " in summary
    assert "(measured in " in summary and summary.endswith(" s")
    labels = [c[1] for c in _draw(panels.VIEW3D_PT_chain_ik_bake, bpy.context).calls("label")]
    assert labels[0] == "Last: baked 5 frame(s) of 1 chain(s)"
    assert labels[1].endswith("keys on 3 bone(s)") and labels[2].startswith("worst tip error")


@pytest.mark.parametrize("pole_kind", ["none", "empty", "armature"])
def test_settings_panel_limits_pole_and_rotation(rig, pole_kind):
    import math

    item = rig.chain_ik.chains.add()
    item.tip, item.chain_length = "b2", 2
    if pole_kind == "empty":
        item.pole_target = add_empty("Pole")
    elif pole_kind == "armature":
        item.pole_target = straight_chain(1, name="Poles")
        bpy.ops.object.mode_set(mode="OBJECT")
        bpy.context.view_layer.objects.active = rig
    layout = _draw(_panels().VIEW3D_PT_chain_ik_settings, bpy.context)
    props = {c[2] for c in layout.calls("prop") + layout.calls("prop_search")}
    assert {"use_limits", "pole_target", "use_rotation", "rotation_weight"} <= props
    assert ("pole_subtarget" in props) == (pole_kind == "armature")
    assert ("pole_angle" in props) == (pole_kind != "none")
    assert ("label", "No IK limits on the chain's bones") in layout.log
    b2 = rig.pose.bones["b2"]
    b2.lock_ik_y = b2.lock_ik_z = True
    b2.use_ik_limit_x, b2.ik_min_x, b2.ik_max_x, b2.ik_stiffness_x = True, 0.0, math.radians(150.0), 0.25
    rig.pose.bones["b0"].lock_ik_x = True  # outside the 2-bone chain: not listed
    labels = [c[1] for c in _draw(_panels().VIEW3D_PT_chain_ik_settings, bpy.context).calls("label")]
    assert "b2: X 0°..150°, X stiffness 0.25, Y Z locked" in labels
    assert not any(text.startswith("b0") for text in labels)
    item.tip = "missing"  # an invalid chain draws no summary and does not fail
    labels = [c[1] for c in _draw(_panels().VIEW3D_PT_chain_ik_settings, bpy.context).calls("label")]
    assert not any(text.startswith("b2") for text in labels)


def test_groups_in_list_and_settings(rig):
    """Two chains sharing bones: the list tags both G1; the settings say which chain leads."""
    from chain_ik.ui.panels import CHAINIK_UL_chains

    target = add_empty(location=(1, 0, 2))
    for name, tip, length in (("Long", "b2", 3), ("Short", "b1", 2)):
        item = rig.chain_ik.chains.add()
        item.name, item.tip, item.chain_length, item.target = name, tip, length, target
    for index, item in enumerate(rig.chain_ik.chains):
        layout = RecordingLayout()
        CHAINIK_UL_chains.draw_item(
            SimpleNamespace(), bpy.context, layout, rig.chain_ik, item, 0, rig.chain_ik, "active_index", index
        )
        assert ("label", "G1") in layout.log
    rig.chain_ik.active_index = 1
    layout = _draw(_panels().VIEW3D_PT_chain_ik_settings, bpy.context)
    assert ("label", "Group G1: solved with Long") in layout.log
    assert ("label", "Influence, limits, locks, solver: from 'Long'") in layout.log
    props = {c[2] for c in layout.calls("prop")}
    assert {"weight", "priority", "pin"} <= props
    rig.chain_ik.chains[0].mute = True  # muted: out of the group
    layout = _draw(_panels().VIEW3D_PT_chain_ik_settings, bpy.context)
    assert ("label", "Solved alone (shares no bone with another chain)") in layout.log


@pytest.mark.parametrize("with_chain", [False, True])
def test_contacts_panel(rig, with_chain):
    """Ground, Detect and Clear (the chains in scope); the active chain's Contact, keyable there."""
    panels = _panels()
    cls = panels.VIEW3D_PT_chain_ik_contacts
    assert (cls.bl_category, cls.bl_parent_id) == ("Chain IK", "VIEW3D_PT_chain_ik")
    assert hasattr(bpy.types, cls.__name__)
    if with_chain:
        item = rig.chain_ik.chains.add()
        item.name, item.tip = "Left Foot", "b2"
    layout = _draw(cls, bpy.context)
    props = [(c[1], c[2]) for c in layout.calls("prop")]
    assert (rig.chain_ik, "ground") in props
    assert {c[1] for c in layout.calls("operator")} == {"chain_ik.detect_contacts", "chain_ik.clear_contacts"}
    assert any(name == "contact" for _, name in props) == with_chain
