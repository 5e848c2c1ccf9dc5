"""The main job, end to end: build a rig, bake it headless with cli.py, check playback, draw the paths.

Run with a bpy venv's Python:
    <venv>/bin/python tools/demo_bake.py [--frames 240] [--png out/bake_demo.png] [--blend-dir out]

1. Builds a 4-bone arm and an empty circling a tilted figure-eight in reach,
   saved as out/arm.blend (kept, as is the bake: open them in Blender, or rerun the command).
2. Bakes it into out/arm_baked.blend with `cli.py` in a subprocess (exactly as `blender
   --background scene.blend --python cli.py -- ...` would), printing the command and the CLI's summary.
3. Opens the baked file, plays it back and reports the worst tip error.
4. Draws the target path, the baked tip path and a few arm poses (front and
   top views) into a PNG written with the standard library (zlib + struct).
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import math
import os
import shlex
import struct
import subprocess
import sys
import time
import zlib
from pathlib import Path

import bpy
import numpy as np
from mathutils import Vector

REPO = Path(__file__).resolve().parents[1]
BONES = 4


def build_scene(path: Path, frames: int) -> None:
    bpy.ops.wm.read_homefile(use_empty=True)
    arm = bpy.data.armatures.new("Arm")
    obj = bpy.data.objects.new("Arm", arm)
    bpy.context.scene.collection.objects.link(obj)
    bpy.context.view_layer.objects.active = obj
    bpy.ops.object.mode_set(mode="EDIT")
    head, parent = Vector((0, 0, 0)), None
    for i, (dx, dz) in enumerate(((0.1, 1.0), (0.3, 0.8), (0.2, 0.7), (0.05, 0.4))):
        eb = arm.edit_bones.new(f"arm{i}")
        eb.head, eb.tail = head, head + Vector((dx, 0.0, dz))
        if parent is not None:
            eb.parent, eb.use_connect = parent, True
        head, parent = eb.tail.copy(), eb
    bpy.ops.object.mode_set(mode="OBJECT")
    goal = bpy.data.objects.new("Goal", None)
    bpy.context.scene.collection.objects.link(goal)
    for f in range(1, frames + 1):
        a = 2.0 * math.pi * (f - 1) / (frames - 1)
        goal.location = (0.9 + 0.8 * math.sin(a), 0.6 * math.sin(2 * a), 1.8 + 0.7 * math.cos(a))
        goal.keyframe_insert("location", frame=f)
    scene = bpy.context.scene
    scene.frame_start, scene.frame_end = 1, frames
    with blender_log_hidden():
        bpy.ops.wm.save_as_mainfile(filepath=str(path))


@contextlib.contextmanager
def blender_log_hidden():
    """Blender's own lines on saving and opening a file ('Info: Saved as ...', 'Read blend: ...') kept
    off the demo's output. They are C stdio writes to file descriptor 1, so that descriptor is pointed at
    /dev/null meanwhile, C's buffer flushed before it is restored; errors still raise."""
    sys.stdout.flush()
    libc = ctypes.CDLL(None)
    saved = os.dup(1)
    try:
        with open(os.devnull, "w") as null:
            os.dup2(null.fileno(), 1)
        yield
    finally:
        libc.fflush(None)
        os.dup2(saved, 1)
        os.close(saved)


def bake_command(scene_path: Path, out_path: Path, frames: int) -> list[str]:
    cmd = [sys.executable, str(REPO / "cli.py"), str(scene_path), "--", "--armature", "Arm"]
    cmd += ["--chain", f"arm{BONES - 1}:{BONES}", "--target", "Goal", "--method", "triangulation"]
    return cmd + ["--frames", f"1-{frames}", "--output", str(out_path)]


def bake(cmd: list[str]) -> tuple[str, float]:
    start = time.perf_counter()
    run = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    seconds = time.perf_counter() - start
    if run.returncode != 0:
        sys.exit(f"cli.py failed ({run.returncode}):\n{run.stdout}\n{run.stderr}")
    summary = "\n".join(line for line in run.stdout.splitlines() if "%" not in line and line.startswith("Chain IK"))
    return summary, seconds


def play_back(out_path: Path, frames: int) -> tuple[np.ndarray, np.ndarray, list[np.ndarray]]:
    """(tip path, target path, arm poses at a few frames), world space."""
    with blender_log_hidden():
        bpy.ops.wm.open_mainfile(filepath=str(out_path))
    scene = bpy.context.scene
    arm, goal = bpy.data.objects["Arm"], bpy.data.objects["Goal"]
    tips, targets, poses = [], [], []
    for f in range(1, frames + 1):
        scene.frame_set(f)
        bones = [arm.pose.bones[f"arm{i}"] for i in range(BONES)]
        tips.append((arm.matrix_world @ bones[-1].tail)[:])
        targets.append(goal.matrix_world.translation[:])
        if (f - 1) % (frames // 8) == 0:
            poses.append(np.array([(arm.matrix_world @ b.head)[:] for b in bones] + [tips[-1]]))
    return np.array(tips), np.array(targets), poses


def draw_line(img: np.ndarray, a, b, color, width: int = 1) -> None:
    n = int(max(abs(b[0] - a[0]), abs(b[1] - a[1]))) + 1
    xs = np.linspace(a[0], b[0], n).round().astype(int)
    ys = np.linspace(a[1], b[1], n).round().astype(int)
    for dx in range(-(width // 2), width - width // 2):
        for dy in range(-(width // 2), width - width // 2):
            x, y = xs + dx, ys + dy
            ok = (x >= 0) & (x < img.shape[1]) & (y >= 0) & (y < img.shape[0])
            img[y[ok], x[ok]] = color


def picture(tips, targets, poses, path: Path, size: int = 420) -> None:
    """Front (x, z) and top (x, y) views side by side: target path thick grey, tip path red, poses blue."""
    img = np.full((size, 2 * size, 3), 255, dtype=np.uint8)
    everything = np.concatenate([tips, targets, *poses])
    for view, (u, v) in enumerate(((0, 2), (0, 1))):
        lo, hi = everything[:, [u, v]].min(axis=0), everything[:, [u, v]].max(axis=0)
        scale = 0.85 * size / max(hi - lo)
        mid = (lo + hi) / 2

        def px(p, view=view, u=u, v=v, mid=mid, scale=scale):
            return (view * size + size / 2 + (p[u] - mid[0]) * scale, size / 2 - (p[v] - mid[1]) * scale)

        for pose in poses:
            for a, b in zip(pose[:-1], pose[1:], strict=True):
                draw_line(img, px(a), px(b), (70, 110, 220), 2)
        for a, b in zip(targets[:-1], targets[1:], strict=True):
            draw_line(img, px(a), px(b), (170, 170, 170), 6)
        for a, b in zip(tips[:-1], tips[1:], strict=True):
            draw_line(img, px(a), px(b), (220, 30, 30), 2)
    img[:, size - 1 : size + 1] = 0
    write_png(path, img)


def write_png(path: Path, rgb: np.ndarray) -> None:
    height, width, _ = rgb.shape
    raw = b"".join(b"\x00" + rgb[y].tobytes() for y in range(height))

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(
        b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b"")
    )


def main() -> int:
    parser = argparse.ArgumentParser(description="Build a rig, bake it headless with cli.py, draw the paths.")
    parser.add_argument("--frames", type=int, default=240)
    parser.add_argument("--png", type=Path, default=REPO / "out" / "bake_demo.png")
    parser.add_argument("--blend-dir", type=Path, default=REPO / "out", help="where arm.blend and arm_baked.blend go")
    args = parser.parse_args()
    if args.frames < 2:
        parser.error(f"--frames must be at least 2, got {args.frames}")
    sys.path.append(str(REPO))  # headless/ ships with the extension: cli.py's own output-path check
    from headless.output_paths import check_output

    scene_path, out_path = args.blend_dir / "arm.blend", args.blend_dir / "arm_baked.blend"
    try:  # the picture is written last: a bad path is said before any work, as cli.py does
        check_output(str(args.png), "--png")
        for path in (scene_path, out_path):
            check_output(str(path), "--blend-dir")
    except ValueError as exc:
        parser.error(str(exc))
    args.blend_dir.mkdir(parents=True, exist_ok=True)
    for path in (scene_path, out_path):  # the demo's own files: a rerun replaces them, leaving no .blend1
        path.unlink(missing_ok=True)
    build_scene(scene_path, args.frames)
    cmd = bake_command(scene_path, out_path, args.frames)
    print(f"Demo: the scene is {scene_path}; baking it headless with:\n  {shlex.join(cmd)}")
    summary, seconds = bake(cmd)
    print(summary)
    print(f"Demo: the headless bake process took {seconds:.2f} s in all (Python start, open, bake, check, save)")
    tips, targets, poses = play_back(out_path, args.frames)
    errors = np.linalg.norm(tips - targets, axis=1)
    print(f"Demo: played back {args.frames} frames here: worst tip error {errors.max():.2e} (mean {errors.mean():.2e})")
    picture(tips, targets, poses, args.png)
    print(f"Demo: picture of the tip path (red) on the target path (grey), arm poses (blue): {args.png}")
    print(f"Demo: open {out_path} in Blender to play the baked keys")
    return 0 if errors.max() < 1e-3 else 1


if __name__ == "__main__":
    status = main()
    sys.stdout.flush()
    if bpy.app.version < (5, 0, 0):
        import os

        os._exit(status)  # 4.2 wheel: skip interpreter finalisation (see tests/blender/conftest.py)
    sys.exit(status)
