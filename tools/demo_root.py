"""Move Root's picture for the README: Rigify's metarig reaching for a target 25% beyond its arm's reach
(measured from the hips), level and in front, both feet pinned; before (grey) and after (blue), the
target red, side and front views. Drawn as tools/demo_bake.py draws its picture.

Run with a bpy venv's Python:  <venv>/bin/python tools/demo_root.py [--method jacobian] [--png out/move_root.png]
(the README shows docs/move_root.png, a copy of one run).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import bpy
import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(REPO / "bench"))

from bench_root import issue_scene  # noqa: E402
from blender_bench import exit_after_main, load_extension  # noqa: E402
from demo_bake import draw_line, write_png  # noqa: E402


def bones(obj) -> list[tuple[np.ndarray, np.ndarray]]:
    """Every deforming bone outside the face, as (head, tail) in world space."""
    bpy.context.view_layer.update()
    world = obj.matrix_world
    out = []
    for pb in obj.pose.bones:
        if pb.name.startswith(("face", "nose", "lip", "jaw", "chin", "ear", "eye", "lid", "brow", "cheek", "forehead",
                               "temple", "tongue", "teeth")):  # fmt: skip
            continue
        out.append((np.array(world @ pb.head), np.array(world @ pb.tail)))
    return out


def picture(before, after, target, path: Path, size: int = 420) -> None:
    """Side (y, z) and front (x, z) views: before grey, after blue, the target a red cross."""
    img = np.full((size, 2 * size, 3), 255, dtype=np.uint8)
    points = np.array([p for pair in before + after for p in pair] + [target])
    for view, (u, v) in enumerate(((1, 2), (0, 2))):
        lo, hi = points[:, [u, v]].min(axis=0), points[:, [u, v]].max(axis=0)
        scale = 0.85 * size / max(hi - lo)
        mid = (lo + hi) / 2

        def px(p, view=view, u=u, v=v, mid=mid, scale=scale):
            return (view * size + size / 2 + (p[u] - mid[0]) * scale, size / 2 - (p[v] - mid[1]) * scale)

        for pose, color in ((before, (175, 175, 175)), (after, (60, 100, 215))):
            for a, b in pose:
                draw_line(img, px(a), px(b), color, 2)
        x, y = px(target)
        draw_line(img, (x - 7, y - 7), (x + 7, y + 7), (220, 30, 30), 3)
        draw_line(img, (x - 7, y + 7), (x + 7, y - 7), (220, 30, 30), 3)
    img[:, size - 1 : size + 1] = 0
    write_png(path, img)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--method", default="jacobian")
    parser.add_argument("--png", type=Path, default=REPO / "out" / "move_root.png")
    args = parser.parse_args()
    import addon_utils  # on the path once bpy is imported

    load_extension().register()
    addon_utils.enable("rigify", default_set=True)
    try:
        obj, goal = issue_scene(args.method)
        before = bones(obj)
        result = bpy.ops.chain_ik.solve()
        after = bones(obj)
        hand = obj.chain_ik.chains[0].result
        hips = np.linalg.norm(np.array(obj.pose.bones["spine"].head) - before_head(before, obj))
        print(f"Move Root demo ({args.method}): {result}, hand error {hand.error:.2e}, hips moved {hips:.3f}")
        picture(before, after, np.array(goal.matrix_world.translation), args.png)
        print(f"Move Root demo: {args.png}")
    finally:
        addon_utils.disable("rigify", default_set=True)
    return 0


def before_head(before, obj) -> np.ndarray:
    names = [pb.name for pb in obj.pose.bones if not pb.name.startswith(("face", "nose", "lip", "jaw", "chin", "ear",
             "eye", "lid", "brow", "cheek", "forehead", "temple", "tongue", "teeth"))]  # fmt: skip
    return before[names.index("spine")][0]


if __name__ == "__main__":
    code = main()
    exit_after_main()
    sys.exit(code)
