"""Bake one shot in its own Blender process: the unit of work of tools/bake_shots.py.

Standard library only (and headless.output_paths, shipped with it), so a Dask
worker can run `run_with_retries` shipped by value, without this repository
installed. The output is written under a hidden temporary name beside it and
renamed into place only when cli.py reports success, and never over a file the
run reads: a failed, missed or killed shot never leaves a half-written (or
unchecked) file at the output path, and no source is ever replaced.
`run_with_retries` is what every route runs per shot (attempts counted alike).
The shot list was checked before (headless/shot_list.py, the libraries each
blend links included): a task here is a checked shot.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
import uuid
from collections.abc import Callable
from pathlib import Path

from headless.output_paths import same_file

# cli.py's exit statuses: 0 baked, 1 error (reported), 2 bad arguments, 3 missed --max-error.
REPORTED = (0, 1, 2, 3)


class ShotCrashed(RuntimeError):
    """Blender died without reporting (a signal, a crash, a timeout): worth another attempt."""


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


def _read_file(output: Path, inputs: list[str]) -> str:
    """The file of `inputs` that `output` is (by any name), or ''."""
    return next((str(path) for path in inputs if same_file(output, path)), "")


def run_shot(task: dict, on_start: Callable | None = None) -> dict:
    """Bake one shot; the report entry (a dict) for it, or ShotCrashed.

    `task`: name, command (without --output/--json), output, log, timeout (seconds or None),
    inputs (every file the run reads: the rename never lands on one).
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
            # cli.py checks the final output too: it is never the opened file or a library it links.
            cmd = [*task["command"], f"--output={part}", f"--final-output={output}", f"--json={summary_path}"]
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
        source = _read_file(output, [*task.get("inputs", []), *summary.get("libraries", [])])
        if code == 0 and summary.get("status") == "ok" and part.is_file() and source:
            result["error"] = f"not saved: the output {output} is a file the run reads ({source})"
        elif code == 0 and summary.get("status") == "ok" and part.is_file():
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
