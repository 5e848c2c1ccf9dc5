"""Blender's frame limit (MAXFRAME), known without bpy: cli.py and the shot list refuse a frame
beyond it before any work, and the bake, the panel's range and its properties stop there.
tests/blender/test_frame_limit.py proves it is what Blender enforces."""

MAX_FRAME = 1_048_574


def check_frames(first: int, last: int) -> None:
    """ValueError for a frame beyond Blender's limit: Blender stops there, and a range to
    100,000,000 would exhaust memory before the first frame is solved."""
    for frame in (first, last):
        if abs(frame) > MAX_FRAME:
            raise ValueError(f"frame {frame} is beyond Blender's limit (±{MAX_FRAME:,})")
