"""Bake one shot in its own Blender process: the unit of work of tools/bake_shots.py.

Self-contained (standard library only, no module globals in the work path), so a
Dask worker can run `run_shot` shipped by value, without this repository
installed. The output is written under a hidden temporary name beside it and
renamed into place only when cli.py reports success: a failed, missed or killed
shot never leaves a half-written (or unchecked) file at the output path.
`run_with_retries` is what every route runs per shot (attempts counted alike).
The shot list was checked before (shot_list.py): a task here is a checked shot.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
import uuid
from collections.abc import Callable
from pathlib import Path

# cli.py's exit statuses: 0 baked, 1 error (reported), 2 bad arguments, 3 missed --max-error.
REPORTED = (0, 1, 2, 3)


class ShotCrashed(RuntimeError):
    """Blender died without reporting (a signal, a crash, a timeout): worth another attempt."""


def command(launcher: list[str], kind: str, cli: str, blend: str, arguments: list[str]) -> list[str]:
    """The command baking `blend` with cli.py `arguments`: a `blender` binary, or the bpy wheel's Python."""
    if kind == "blender":
        # --python-exit-code: a Python error in cli.py fails the run (Blender would exit 0).
        return [*launcher, "--background", blend, "--python-exit-code", "1", "--python", cli, "--", *arguments]
    if kind == "python":
        return [*launcher, cli, blend, "--", *arguments]
    raise ValueError(f"unknown launcher kind '{kind}' (blender or python)")


def _remove(*paths: Path) -> None:
    for path in paths:
        try:
            path.unlink()
        except FileNotFoundError:
            pass


def _last_error(log: Path) -> str:
    """The last 'error' line of a log (or its last line): the message a report shows."""
    try:
        text = log.read_text(encoding="utf-8", errors="replace")
        lines = [line.strip() for line in text.splitlines() if line.strip()]
    except OSError:
        return ""
    errors = [line for line in lines if "error" in line.lower()]
    return (errors or lines or [""])[-1][:500]


def run_shot(task: dict, on_start: Callable | None = None) -> dict:
    """Bake one shot; the report entry (a dict) for it, or ShotCrashed.

    `task`: name, command (without --output/--json), output, log, timeout (seconds or None).
    `on_start(process)`: called with the Popen once started (so a caller can kill it)."""
    output, log = Path(task["output"]), Path(task["log"])
    part = output.with_name(f".{output.stem}.part-{uuid.uuid4().hex[:12]}.blend")
    summary_path = log.with_suffix(".json")
    output.parent.mkdir(parents=True, exist_ok=True)
    log.parent.mkdir(parents=True, exist_ok=True)
    _remove(summary_path)
    started = time.perf_counter()
    # Blender saves through '<path>@' then renames: both names are cleaned up on failure.
    temporaries = (part, part.with_name(part.name + "@"))
    result = {"name": task["name"], "status": "failed", "seconds": 0.0, "keys": 0, "worst_error": None,
              "log": str(log), "output": None, "error": "", "per_chain": []}  # fmt: skip
    try:
        with open(log, "w", encoding="utf-8") as log_file:
            cmd = [*task["command"], "--output", str(part), "--json", str(summary_path)]
            log_file.write("$ " + " ".join(cmd) + "\n")
            log_file.flush()
            process = subprocess.Popen(cmd, stdout=log_file, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
            if on_start is not None:
                on_start(process)
            try:
                code = process.wait(timeout=task.get("timeout"))
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
                raise ShotCrashed(f"shot '{task['name']}' took longer than {task['timeout']} s (log: {log})") from None
        result["seconds"] = time.perf_counter() - started
        try:
            summary = json.loads(summary_path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            summary = None
        if code not in REPORTED:
            raise ShotCrashed(f"shot '{task['name']}': Blender exited with status {code} (log: {log})")
        summary = summary or {"status": "error", "error": _last_error(log)}
        result.update(
            keys=summary.get("keys", 0),
            worst_error=summary.get("playback_error"),
            per_chain=summary.get("per_chain", []),
            error=summary.get("error", ""),
        )
        if code == 0 and summary.get("status") == "ok" and part.is_file():
            os.replace(part, output)
            result.update(status="ok", output=str(output))
        elif code == 3 or summary.get("status") == "missed":
            result.update(status="missed", error=f"playback misses by {result['worst_error']:.3g} (log: {log})")
        elif not result["error"]:
            result["error"] = _last_error(log)
        return result
    finally:
        _remove(*temporaries)


def failed_entry(task: dict, error: BaseException | str, status: str = "failed", attempts: int | None = 0) -> dict:
    """The report entry of a shot that did not report itself: failed, interrupted or never run."""
    return {"name": task["name"], "status": status, "seconds": 0.0, "keys": 0, "worst_error": None,
            "log": task["log"], "output": None, "error": str(error), "per_chain": [], "attempts": attempts}  # fmt: skip


def run_with_retries(
    task: dict, retries: int, on_start: Callable | None = None, stopped: Callable | None = None
) -> dict:
    """Bake one shot, with `retries` new attempts if Blender dies without reporting; its report
    entry, `attempts` included. Every route runs this (a local thread, a Dask task), so the
    attempts are counted the same way. `stopped()`: true once the run is interrupted."""
    attempt = 0
    while True:
        if stopped is not None and stopped():
            return failed_entry(task, "interrupted before it finished", "interrupted", attempt)
        attempt += 1
        try:
            entry = run_shot(task, on_start)
        except ShotCrashed as exc:
            if stopped is not None and stopped():
                return failed_entry(task, "interrupted before it finished", "interrupted", attempt)
            if attempt <= retries:
                continue
            entry = failed_entry(task, exc)
        except OSError as exc:  # Blender would not start, or its log cannot be written: not worth a retry
            entry = failed_entry(task, f"shot '{task['name']}': {exc}")
        entry["attempts"] = attempt
        return entry
