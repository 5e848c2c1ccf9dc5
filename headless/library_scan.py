"""Which libraries each .blend links, directly or through another library: only Blender can tell
(a .blend is often compressed, and its paths are relative to the file that links them), so a
batch run opens every shot's blend in Blender once, before any shot bakes, to list them.

Run as a script by Blender (`blender --background --python library_scan.py -- A.blend ...`) or
the `bpy` wheel's Python (`python library_scan.py -- A.blend ...`), it opens each file (its
scripts not run) and prints one marked JSON line per file: {"blend", "libraries"} or {"blend",
"error"}. `scan` runs it (standard library only, importing nothing: on a Dask worker it travels
by value) and reads those lines; `linked_libraries` is what it lists, and what cli.py checks its
outputs against.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

MARK = "chain_ik library scan: "
SCRIPT = str(Path(__file__).resolve())


class ScanError(RuntimeError):
    """The launcher did not run the scan at all: not Blender, no bpy, or it could not start."""


def linked_libraries() -> list[str]:
    """Every library the open .blend links, directly or indirectly, as an absolute path (an
    indirect library's path is relative to the library that links it). Inside Blender only."""
    import bpy

    return [bpy.path.abspath(library.filepath, library=library.parent) for library in bpy.data.libraries]


def _text(output) -> str:
    return output.decode("utf-8", "replace") if isinstance(output, bytes) else output or ""


def _run(prefix: list[str], blends: list[str], timeout: float | None) -> tuple[list[dict], str, bool]:
    """(the marked lines of one scan process, why it ended early ('' when it exited 0), whether it
    died without saying why: a signal or a timeout)."""
    limit = None if timeout is None else timeout * (len(blends) + 1)  # a file each, and Blender's start
    try:
        run = subprocess.run([*prefix, *blends], capture_output=True, stdin=subprocess.DEVNULL, timeout=limit)
        out, err = _text(run.stdout), _text(run.stderr)
        ended, crashed = (f"exited with status {run.returncode}" if run.returncode else ""), run.returncode < 0
    except subprocess.TimeoutExpired as exc:
        out, err, ended, crashed = _text(exc.stdout), _text(exc.stderr), f"took longer than {limit:g} s", True
    except OSError as exc:
        raise ScanError(f"cannot start {prefix[0]}: {exc.strerror or exc}") from None
    lines = [json.loads(line[len(MARK) :]) for line in out.splitlines() if line.startswith(MARK)]
    if not crashed and not any(line.get("ready") for line in lines):
        said = [line.strip() for line in (err + out).splitlines() if line.strip()]
        raise ScanError(
            f"{prefix[0]} did not run Blender's Python ({ended or 'no output'}"
            f"{': ' + said[-1][:300] if said else ''}): is it Blender, or a Python with the bpy wheel?"
        )
    return lines, ended, crashed


def scan(prefix: list[str], blends: list[str], timeout: float | None = None, retries: int = 0) -> dict:
    """blend -> {"libraries": [absolute paths]} or {"error": why Blender could not open it}, for
    every blend given. `prefix`: the command running this script, up to its '--' (the blends are
    appended: blender_command.command(launcher, kind, SCRIPT, None, [])). ScanError when the
    launcher does not run the scan. A Blender that dies (a signal) or hangs (`timeout` seconds a
    file, and as many for its start) is started again, up to `retries` times for each file it was opening (or before it
    started on any); past that, that file's error, and the files after it scanned anew."""
    found: dict[str, dict] = {}
    remaining = list(dict.fromkeys(blends))
    attempts: dict[str | None, int] = {}
    while remaining:
        lines, ended, crashed = _run(prefix, remaining, timeout)
        for line in lines:
            if line.get("blend") in remaining:
                found[line["blend"]] = {k: v for k, v in line.items() if k != "blend"}
        rest = [blend for blend in remaining if blend not in found]
        ready = any(line.get("ready") for line in lines)
        if rest and crashed:  # died while opening rest[0] (or while starting)
            culprit = rest[0] if ready else None
            attempts[culprit] = attempts.get(culprit, 0) + 1
            if attempts[culprit] <= retries:
                remaining = rest
                continue
            if culprit is None:
                raise ScanError(f"{prefix[0]} {ended} before it ran Blender's Python, {attempts[None]} time(s)")
        if rest:
            found[rest[0]] = {"error": f"Blender {ended or 'stopped'} while opening it"}
        remaining = rest[1:]
    return found


def main(blends: list[str]) -> None:
    import bpy

    print(MARK + json.dumps({"ready": True}), flush=True)
    for blend in blends:
        try:
            bpy.ops.wm.open_mainfile(filepath=blend, load_ui=False, use_scripts=False)
        except RuntimeError as exc:
            line = {"blend": blend, "error": " ".join(str(exc).split()) or "Blender could not open it"}
        else:
            line = {"blend": blend, "libraries": linked_libraries()}
        print(MARK + json.dumps(line), flush=True)


if __name__ == "__main__":
    main(sys.argv[sys.argv.index("--") + 1 :] if "--" in sys.argv else sys.argv[1:])
