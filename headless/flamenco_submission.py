"""The Flamenco job type's `shots_json` setting, computed in the submitting Blender.

A job compiler can read no file, so the Flamenco add-on evaluates the hidden setting in Blender
at submission: `submission(list, Max Error)` applies the shot list's whole check (shot_list.py,
as tools/bake_shots.py does, the libraries included: a background Blender lists them) and
returns JSON of the checked shots, each with its whole cli.py argument list, or of the problems.
farm/flamenco/chain_ik_bake.js authors tasks from nothing else."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

from . import library_scan
from .blender_command import command
from .shot_entries import Shot
from .shot_list import ShotListError, check_libraries, cli_arguments, load

# Marks a submission() document: the job type authors tasks from nothing else.
CHECKED_BY = "chain_ik shot_list 1"


def summary_path(shot: Shot) -> Path:
    """Where a Flamenco task's cli.py writes its JSON summary: beside the output."""
    return shot.output.with_suffix(".bake.json")


def _summaries(shot: Shot) -> dict[str, Path]:
    return {"summary": summary_path(shot)}


def this_blender() -> tuple[str, str]:
    """(kind, executable) of the Blender this runs in: its binary, or the bpy wheel's Python."""
    import bpy

    return ("blender", bpy.app.binary_path) if bpy.app.binary_path else ("python", sys.executable)


def submission(path: str | Path, max_error: float = 0.0, launcher: tuple[str, str] | None = None) -> str:
    """JSON of the checked shots (name, blend, output and cli.py's whole argument list each), or
    of the problems (the job type then refuses the job, naming them). `max_error`: the job's Max
    Error (0: no bound), for shots without their own. `launcher`: (kind, executable) that lists
    the blends' libraries; default: a background run of the Blender this runs in."""
    document = {"checked_by": CHECKED_BY, "shot_list": str(path)}
    bound_ok = isinstance(max_error, int | float) and math.isfinite(max_error) and max_error >= 0.0
    problems = []
    try:
        shots = load(path, writes=_summaries)
        kind, executable = launcher or this_blender()
        prefix = command(executable, kind, library_scan.SCRIPT, None, [])
        scanned = library_scan.scan(prefix, list(dict.fromkeys(str(shot.blend) for shot in shots)))
        check_libraries(path, shots, scanned, writes=_summaries)
    except ShotListError as exc:
        problems = exc.problems
    except library_scan.ScanError as exc:
        problems = [f"the libraries the shots link could not be listed: {exc}"]
    if not bound_ok:
        problems.append(f"Max Error must be a finite number >= 0, got {max_error!r}")
    if problems:
        return json.dumps({**document, "problems": problems})
    bound = float(max_error) if max_error > 0.0 else None
    return json.dumps({**document, "shots": [
        {"name": shot.name, "blend": str(shot.blend), "output": str(shot.output),
         "arguments": [*cli_arguments(shot, bound), f"--output={shot.output}", f"--json={summary_path(shot)}"]}
        for shot in shots
    ]})  # fmt: skip
