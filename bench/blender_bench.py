"""What the benchmarks run inside Blender share: loading the extension from this checkout,
selecting bones, and timing Blender's own Bake Action (the anchor of every bake table)."""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
import time
from pathlib import Path

import bpy

REPO = Path(__file__).resolve().parents[1]


def load_extension(*submodules: str):
    """The extension from this checkout as the package `chain_ik` (the one already loaded when
    a test runs a benchmark in-process), with `submodules` imported."""
    module = sys.modules.get("chain_ik")
    if module is None:
        spec = importlib.util.spec_from_file_location(
            "chain_ik", REPO / "__init__.py", submodule_search_locations=[str(REPO)]
        )
        module = importlib.util.module_from_spec(spec)
        sys.modules["chain_ik"] = module
        spec.loader.exec_module(module)
    for name in submodules:
        importlib.import_module(f"chain_ik.{name}")
    return module


def chosen_methods(parser, asked: list[str] | None, known) -> list[str]:
    """The methods asked for on the command line, in `known`'s order, all of them when none was
    asked; spaces or commas separate them. An unknown name is a usage error: a typo or a comma
    list would otherwise measure nothing, silently."""
    names = [n.strip() for text in asked or [] for n in text.split(",") if n.strip()]
    unknown = sorted(set(names) - set(known))
    if unknown:
        parser.error(f"unknown method(s) {', '.join(unknown)}; known: {' '.join(known)}")
    return [m for m in known if not names or m in names]


def select_only(obj, names) -> None:
    """Select exactly the pose bones `names` (pose-bone selection from 5.0, bone before)."""
    for pb in obj.pose.bones:
        state = pb.name in names
        if "select" in pb.bl_rna.properties:
            pb.select = state
        else:
            pb.bone.select = state


def bake_action(frames: int) -> float:
    """Seconds for Blender's Bake Action (visual keying, constraints cleared) of the selected
    pose bones over frames 1..frames."""
    start = time.perf_counter()
    result = bpy.ops.nla.bake(
        frame_start=1,
        frame_end=frames,
        only_selected=True,
        visual_keying=True,
        clear_constraints=True,
        bake_types={"POSE"},
    )
    seconds = time.perf_counter() - start
    assert result == {"FINISHED"}, result
    return seconds


def exit_after_main() -> None:
    """Flush the output; on the 4.x bpy wheel leave at once: it can crash at interpreter exit after
    add-on classes were registered or Rigify enabled (tests/blender/conftest.py). Call it only
    when a bench runs as a script (a test importing a bench keeps its process)."""
    sys.stdout.flush()
    if bpy.app.version < (5, 0, 0):
        os._exit(0)
