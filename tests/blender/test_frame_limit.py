"""headless/frame_limit.py's MAX_FRAME, which cli.py and the shot list check without bpy, is the
limit Blender itself enforces (its MAXFRAME) on this Blender version: the scene's range stops
there, and the current frame (which a bake steps through) stops at ±MAX_FRAME."""

from __future__ import annotations

import bpy

from headless.frame_limit import MAX_FRAME


def test_max_frame_is_the_limit_blender_enforces(scene):
    props = bpy.types.Scene.bl_rna.properties
    assert props["frame_start"].hard_max == props["frame_end"].hard_max == MAX_FRAME
    assert (props["frame_current"].hard_min, props["frame_current"].hard_max) == (-MAX_FRAME, MAX_FRAME)
    scene.frame_end = MAX_FRAME + 10
    assert scene.frame_end == MAX_FRAME
    for asked, got in ((MAX_FRAME + 10, MAX_FRAME), (MAX_FRAME, MAX_FRAME), (-MAX_FRAME - 10, -MAX_FRAME)):
        scene.frame_set(asked)
        assert scene.frame_current == got
