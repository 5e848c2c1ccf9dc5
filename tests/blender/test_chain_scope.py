"""Per-chain mute, and Solve/Live/Bake/Compare acting on all chains or the ticked ones."""

from __future__ import annotations

from types import SimpleNamespace

import bpy
import pytest
from builders import add_empty, channel_state, make_armature
from recording import RecordingLayout
from test_bake import fcurves

# Three separate two-bone chains on one armature.
BONES = [
    (f"{side}{i}", (x, 0, i), (x, 0, i + 1), f"{side}{i - 1}" if i else None, True, 0.0)
    for side, x in (("a", 0.0), ("b", 2.0), ("c", 4.0))
    for i in range(2)
]


@pytest.fixture
def rig(scene):
    obj = make_armature(BONES)
    for side, x in (("a", 0.0), ("b", 2.0), ("c", 4.0)):
        item = obj.chain_ik.chains.add()
        item.name, item.tip, item.chain_length = f"Chain {side}", f"{side}1", 2
        item.target = add_empty(f"Goal {side}", (x + 0.8, 0.3, 1.2))
    bpy.context.view_layer.objects.active = obj
    return obj


def _moved(obj, before) -> set[str]:
    after = channel_state(obj)
    return {n[0] for n in after if after[n] != before[n]}


def test_muted_chains_are_left_out_of_solve(rig):
    chains = rig.chain_ik.chains
    chains["Chain b"].mute = True
    before = channel_state(rig)
    assert bpy.ops.chain_ik.solve() == {"FINISHED"}
    assert _moved(rig, before) == {"a", "c"}
    with pytest.raises(RuntimeError, match="chain 'Chain b' is muted"):
        bpy.ops.chain_ik.solve(chain_index=1)
    rig.chain_ik.active_index = 1
    with pytest.raises(RuntimeError, match="chain 'Chain b' is muted"):
        bpy.ops.chain_ik.solve(target="Goal a")
    for item in chains:
        item.mute = True
    with pytest.raises(RuntimeError, match="every chain in scope is muted"):
        bpy.ops.chain_ik.solve()


def test_selected_scope_solves_bakes_and_compares_only_the_ticked_chains(rig):
    settings = rig.chain_ik
    settings.scope = "SELECTED"
    with pytest.raises(RuntimeError, match="no chain is selected"):
        bpy.ops.chain_ik.solve()
    settings.chains["Chain c"].select = True
    before = channel_state(rig)
    assert bpy.ops.chain_ik.solve() == {"FINISHED"}
    assert _moved(rig, before) == {"c"}
    assert bpy.ops.chain_ik.bake(frame_start=1, frame_end=3) == {"FINISHED"}
    assert {fc.data_path.split('"')[1] for fc in fcurves(rig)} == {"c0", "c1"}
    assert bpy.ops.chain_ik.compare() == {"FINISHED"}
    assert [len(c.comparison) for c in settings.chains] == [0, 0, 4]
    settings.scope = "ALL"
    assert bpy.ops.chain_ik.compare() == {"FINISHED"}
    assert [len(c.comparison) for c in settings.chains] == [4, 4, 4]


def test_live_button_switches_the_chains_in_scope(rig):
    settings = rig.chain_ik
    settings.scope = "SELECTED"
    settings.chains["Chain a"].select = settings.chains["Chain b"].select = True
    settings.chains["Chain b"].mute = True
    assert bpy.ops.chain_ik.live_toggle() == {"FINISHED"}
    assert [c.live for c in settings.chains] == [True, False, False]
    # Live solves the live chain when its target moves; a muted live chain stays as it is.
    settings.chains["Chain b"].live = True
    before = channel_state(rig)
    bpy.data.objects["Goal a"].location.x += 0.1
    bpy.data.objects["Goal b"].location.x += 0.1
    bpy.context.view_layer.update()
    assert _moved(rig, before) == {"a"}
    assert bpy.ops.chain_ik.live_toggle() == {"FINISHED"}  # all in scope on: switch them off
    assert [c.live for c in settings.chains] == [False, True, False]
    for c in settings.chains:
        c.live = False


def test_panel_shows_the_scope_and_the_mute_switches(rig):
    from chain_ik.ui.panels import CHAINIK_UL_chains, VIEW3D_PT_chain_ik

    settings = rig.chain_ik
    settings.chains[0].mute = True
    settings.scope = "SELECTED"
    settings.chains[1].select = True
    layout = RecordingLayout()
    VIEW3D_PT_chain_ik.draw(SimpleNamespace(layout=layout), bpy.context)
    assert ("prop", settings, "scope") in layout.log
    assert ("label", "Acts on 1 of 3 chain(s), 1 muted") in layout.log
    assert ("operator", "chain_ik.live_toggle") in layout.log
    layout = RecordingLayout()
    CHAINIK_UL_chains.draw_item(SimpleNamespace(), bpy.context, layout, settings, settings.chains[0], 0, settings,
                                "active_index", 0)  # fmt: skip
    assert ("prop", settings.chains[0], "mute") in layout.log and ("prop", settings.chains[0], "select") in layout.log
