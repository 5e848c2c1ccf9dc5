"""rig.unit_layout: a unit's layout is built once and handed out again while the rig stays the same
(its fingerprint), and built afresh after any edit the layout is made of: the rest pose (Edit
Mode, roll, Apply Pose as Rest), a bone's name, parent or Inherit Rotation, its IK settings, and
for a group the bones above a chain's top. Each check compares with a layout built from scratch
(rig.tree.tree_layout), and a Solve through the cache with one without it."""

from __future__ import annotations

import math

import bpy
import numpy as np
import pytest
from builders import add_empty, bent_rolled_disconnected, random_pose

CHAIN = [("hand", 3, True)]  # upper, fore, hand
GROUP = [("other", 1, True), ("hand", 2, True)]  # other (under root); fore, hand (under upper)


@pytest.fixture
def layouts(ext, monkeypatch):
    """rig.unit_layout, emptied, counting its builds in `.builds`."""
    from chain_ik.rig import unit_layout

    unit_layout.forget()
    builds = []
    build = unit_layout.tree_layout

    def counted(*args, **kwargs):
        builds.append(args[1])
        return build(*args, **kwargs)

    monkeypatch.setattr(unit_layout, "tree_layout", counted)
    unit_layout.builds = builds
    yield unit_layout
    unit_layout.forget()


def _same(a, b) -> bool:
    """Two TreeLayouts hold the same layout (numpy fields compared bit for bit)."""
    plain = ("names", "parents", "effectors", "ends", "root_parents", "hinges", "writer_rests")
    if any(getattr(a, f) != getattr(b, f) for f in plain):
        return False
    if not (np.array_equal(a.rests, b.rests) and np.array_equal(a.rests_read, b.rests_read)):
        return False
    if not np.array_equal(a.radii, b.radii):
        return False
    if (a.limits is None) != (b.limits is None):
        return False
    return a.limits is None or all(
        np.array_equal(getattr(a.limits, f), getattr(b.limits, f))
        for f in ("lock", "use_limit", "minimum", "maximum", "cone", "stiffness")
    )


def _fresh(obj, chains):
    from chain_ik.rig import tree

    return tree.tree_layout(obj, chains, hinges=True)


def _edit(obj, change) -> None:
    bpy.ops.object.mode_set(mode="EDIT")
    change(obj.data.edit_bones)
    bpy.ops.object.mode_set(mode="POSE")


def test_a_layout_is_built_once_while_the_rig_stays_the_same(scene, layouts):
    obj = bent_rolled_disconnected()
    rng = np.random.default_rng(3)
    got = []
    for _ in range(3):
        random_pose(obj, ["upper", "fore", "hand"], rng)  # posing is no edit of the layout
        bpy.context.view_layer.update()
        got.append(layouts.unit_layout(obj, CHAIN))
    assert len(layouts.builds) == 1
    assert all(_same(layout, _fresh(obj, CHAIN)) for layout in got)
    # Each hand-out carries its own skeleton slot: no skeleton passes from one read to another.
    assert got[0].last == [] and got[0].last is not got[1].last
    got[0].last.append("read")
    assert layouts.unit_layout(obj, CHAIN).last == []


def _move_tail(bones):
    bones["fore"].tail.x += 0.2


def _roll(bones):
    bones["upper"].roll += 0.3


def _rename(obj):
    obj.data.bones["fore"].name = "forearm"


def _limit(obj):
    pb = obj.pose.bones["fore"]
    pb.use_ik_limit_x, pb.ik_min_x, pb.ik_max_x = True, -0.4, 0.9


def _stiffen(obj):
    obj.pose.bones["upper"].ik_stiffness_z = 0.5


def _lock(obj):
    obj.pose.bones["hand"].lock_ik_y = True


def _hinge(obj):
    obj.data.bones["fore"].use_inherit_rotation = False


def _apply_rest(obj):
    obj.pose.bones["fore"].rotation_mode = "XYZ"
    obj.pose.bones["fore"].rotation_euler = (0.4, 0.0, 0.2)
    bpy.ops.pose.armature_apply()


def _thicken(obj):
    obj.data.bones["fore"].bbone_x = 0.3  # the mass weighting's capsule radius (rig.capsules)


def _reparent(obj):
    _edit(obj, lambda bones: setattr(bones["upper"], "parent", bones["other"]))


EDITS = {
    "rest in Edit Mode": lambda obj: _edit(obj, _move_tail),
    "roll": lambda obj: _edit(obj, _roll),
    "rename": _rename,
    "IK limit": _limit,
    "IK stiffness": _stiffen,
    "IK lock": _lock,
    "Inherit Rotation": _hinge,
    "Apply Pose as Rest": _apply_rest,
    "parent": _reparent,
    "B-Bone size": _thicken,
}


@pytest.mark.parametrize("edit", list(EDITS))
def test_an_edit_the_layout_is_made_of_builds_it_again(scene, layouts, edit):
    obj = bent_rolled_disconnected()
    before = layouts.unit_layout(obj, CHAIN)
    EDITS[edit](obj)
    bpy.context.view_layer.update()
    after = layouts.unit_layout(obj, CHAIN)
    assert len(layouts.builds) == 2
    assert _same(after, _fresh(obj, CHAIN))
    assert not _same(after, before)


def test_a_group_top_hung_from_another_chain_through_a_bone_of_none_is_refused_after_the_edit(scene, layouts):
    """The bones above a chain's top are in a group's fingerprint: re-parenting a bone outside
    the group (its rests unchanged) can make the tree one that tree_layout refuses."""
    obj = bent_rolled_disconnected()
    assert set(layouts.unit_layout(obj, GROUP).names) == {"other", "fore", "hand"}
    _reparent(obj)  # upper (no chain's) now hangs from other (a chain's): fore hangs through it
    with pytest.raises(ValueError, match="hangs from 'other' through 'upper'"):
        _fresh(obj, GROUP)
    with pytest.raises(ValueError, match="hangs from 'other' through 'upper'"):
        layouts.unit_layout(obj, GROUP)


@pytest.mark.parametrize("edit", ["IK limit", "rest in Edit Mode", "Inherit Rotation", "rename"])
def test_a_solve_after_an_edit_writes_what_a_solve_without_the_kept_layout_writes(scene, layouts, edit):
    from chain_ik.app import solve as run

    obj = bent_rolled_disconnected()
    target = add_empty(location=(0.5, 0.6, 1.8))
    spec = run.ChainSpec(tip="hand", chain_length=3, target=target, method="fabrik", use_limits=True)

    def solve():
        depsgraph = bpy.context.evaluated_depsgraph_get()
        return run.solve_unit(obj, [spec], depsgraph)[0]

    solve()  # keeps the layout
    EDITS[edit](obj)
    bpy.context.view_layer.update()
    kept = solve()
    layouts.forget()
    fresh = solve()
    assert kept.names == fresh.names
    assert kept.write.values == fresh.write.values
    assert kept.error == fresh.error and not math.isnan(kept.error)


def test_a_lone_stretched_chain_bake_builds_its_layout_once(scene, layouts, monkeypatch):
    """The bake of a lone stretching chain reads it as Solve does, frame by frame (app.solve.read_alone):
    its layout is built once per bake and handed out again at every frame."""
    obj = bent_rolled_disconnected()
    obj.pose.bones["hand"].ik_stretch = 0.5  # its tail leads the link: no shear below it
    target = add_empty(location=(0.5, 0.6, 1.8))
    for frame, where in ((1, (0.5, 0.6, 1.8)), (10, (2.0, 2.5, 3.0))):
        target.location = where
        target.keyframe_insert("location", frame=frame)
    reads = []
    fingerprint = layouts.fingerprint
    monkeypatch.setattr(layouts, "fingerprint", lambda obj, chains: reads.append(chains) or fingerprint(obj, chains))
    bpy.context.view_layer.objects.active = obj
    result = bpy.ops.chain_ik.bake(tip="hand", chain_length=3, target=target.name, frame_start=1, frame_end=10)
    assert result == {"FINISHED"}
    assert len(reads) >= 10  # every frame read through the kept layout
    assert len(layouts.builds) == 2  # once for the bake's unit, once for the chain's reading (hinges)
