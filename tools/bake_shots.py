"""Bake many shots: one Blender process per shot, in parallel here or on a Dask cluster.

    python tools/bake_shots.py shots.toml --python /path/to/venv/bin/python --jobs 2
    python tools/bake_shots.py shots.toml --blender /opt/blender/blender --scheduler tcp://farm:8786

Runs outside Blender (Python 3.11+, standard library; Dask only for --scheduler).
The shot list (docs/shot_list.md) is validated in full before anything runs.
Each shot runs cli.py in its own process (tools/shot_runner.py); a JSON report
lists every shot's status, seconds, keys, worst tip error and log. Exit status:
0 every shot baked within bounds, 1 some shot failed or missed --max-error,
2 a bad shot list or arguments, 130 interrupted.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.append(str(REPO))  # shot_list.py ships with the extension, beside cli.py
import shot_runner  # noqa: E402

import shot_list  # noqa: E402

CLI = REPO / "cli.py"
finite = shot_list.cli().finite  # argparse type: NaN and infinities are refused


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="bake_shots.py", description=__doc__.split("\n\n")[0], allow_abbrev=False)
    p.add_argument("shot_list", help="the shot list (.toml)")
    launcher = p.add_mutually_exclusive_group()
    launcher.add_argument("--blender", metavar="PATH", help="run each shot with this Blender binary")
    launcher.add_argument("--python", metavar="PATH", help="run each shot with this Python (bpy wheel installed)")
    route = p.add_mutually_exclusive_group()
    route.add_argument("--jobs", type=int, default=1, metavar="N", help="shots baked at once here (default 1)")
    route.add_argument("--scheduler", metavar="ADDRESS", help="submit to this Dask scheduler (tcp://host:8786)")
    p.add_argument("--retries", type=int, default=1, metavar="N", help="new attempts for a shot whose Blender crashed")
    p.add_argument("--max-error", type=finite, metavar="E", help="fail shots whose playback misses by more than E")
    p.add_argument("--timeout", type=finite, metavar="S", help="kill (and retry) a shot running longer than S seconds")
    p.add_argument("--report", metavar="PATH", help="JSON report (default: <list>.report.json beside the list)")
    p.add_argument("--logs", metavar="DIR", help="one log per shot (default: <list>.logs/ beside the list)")
    p.add_argument("--check", action="store_true", help="validate the shot list and stop")
    return p.parse_args(argv)


def launcher(args: argparse.Namespace) -> tuple[str, str]:
    """(kind, executable): the one the user named, else `blender` on PATH."""
    if args.python:
        return "python", args.python
    found = args.blender or shutil.which("blender")
    if not found:
        raise UsageError("name the program that runs the shots: --blender PATH or --python PATH")
    return "blender", found


def log_path(logs: Path, shot: shot_list.Shot) -> Path:
    return logs / f"{shot.name}.log"


def checked_paths(args: argparse.Namespace) -> tuple[Path, Path]:
    """(report, logs folder), or UsageError before anything runs: the report is written here (a
    writable file, not a folder), the logs by whichever machine runs the shot (no file in the way)."""
    listed = Path(os.path.abspath(args.shot_list))
    report = Path(os.path.abspath(args.report or listed.with_suffix(".report.json")))
    logs = Path(os.path.abspath(args.logs or listed.with_suffix(".logs")))
    try:
        shot_list.cli().check_output(str(report), "--report")
    except shot_list.cli().CliError as exc:
        raise UsageError(str(exc)) from None
    folder = logs
    while not folder.exists():
        folder = folder.parent
    if not folder.is_dir():
        raise UsageError(f"--logs {logs}: {folder} is a file, not a folder")
    return report, logs


def tasks_for(shots: list[shot_list.Shot], args: argparse.Namespace, logs: Path) -> list[dict]:
    kind, exe = launcher(args)
    tasks = []
    for shot in shots:
        arguments = shot_list.cli_arguments(shot, args.max_error)
        tasks.append({
            "name": shot.name,
            "command": shot_runner.command([exe], kind, str(CLI), str(shot.blend), arguments),
            "output": str(shot.output),
            "log": str(log_path(logs, shot)),
            "timeout": args.timeout,
        })  # fmt: skip
    return tasks


class ProgressBar:
    """A bar redrawn on a terminal; one line per finished shot either way (farm logs keep them)."""

    WIDTH = 30

    def __init__(self, total: int, stream=sys.stderr) -> None:
        self.total, self.stream, self.started = total, stream, time.perf_counter()
        self.counts: dict[str, int] = {}
        self.tty = stream.isatty()
        self.lock = threading.Lock()
        self._draw()

    def done(self, entry: dict) -> None:
        with self.lock:
            self.counts[entry["status"]] = self.counts.get(entry["status"], 0) + 1
            error = "" if entry["worst_error"] is None else f", worst tip error {entry['worst_error']:.3g}"
            detail = f" ({entry['error']})" if entry["status"] != "ok" and entry.get("error") else ""
            self._clear()
            print(f"bake_shots: {entry['name']}: {entry['status']} in {entry['seconds']:.1f} s{error}{detail}",
                  file=self.stream)  # fmt: skip
            self._draw()

    def _clear(self) -> None:
        if self.tty:
            self.stream.write("\r\033[K")

    def _draw(self) -> None:
        finished = sum(self.counts.values())
        if not self.tty and finished < self.total:
            return
        filled = self.WIDTH * finished // max(self.total, 1)
        states = ", ".join(f"{n} {s}" for s, n in sorted(self.counts.items()))
        line = (f"[{'#' * filled}{'.' * (self.WIDTH - filled)}] {finished}/{self.total} shots"
                f"{' (' + states + ')' if states else ''}, {time.perf_counter() - self.started:.1f} s")  # fmt: skip
        self.stream.write(("\r" + line) if self.tty else line + "\n")
        if self.tty and finished == self.total:
            self.stream.write("\n")
        self.stream.flush()


def run_local(tasks: list[dict], jobs: int, retries: int, progress: ProgressBar) -> dict[str, dict]:
    """Bake on this machine, `jobs` processes at once; on Ctrl-C or SIGTERM kill them all, cleanly."""
    stop = threading.Event()
    live: set = set()
    lock = threading.Lock()

    def started(process) -> None:
        with lock:
            live.add(process)
        if stop.is_set():
            process.kill()

    def one(task: dict) -> dict:
        return shot_runner.run_with_retries(task, retries, on_start=started, stopped=stop.is_set)

    results: dict[str, dict] = {}
    pool = ThreadPoolExecutor(max_workers=max(1, jobs))
    futures = {pool.submit(one, task): task for task in tasks}
    try:
        for future in as_completed(futures):
            entry = future.result()
            results[entry["name"]] = entry
            progress.done(entry)
    except KeyboardInterrupt:
        stop.set()
        with lock:
            for process in live:
                if process.poll() is None:
                    process.kill()
        pool.shutdown(wait=True, cancel_futures=True)  # each runner removes its temporary file
        for future, task in futures.items():
            if future.done() and not future.cancelled() and task["name"] not in results:
                results[task["name"]] = future.result()
        raise Interrupted(results) from None
    pool.shutdown(wait=True)
    return results


def run_dask(tasks: list[dict], address: str, retries: int, progress: ProgressBar) -> dict[str, dict]:
    """One Dask task per shot on the scheduler at `address`; a crashed Blender is tried again
    inside the task (shot_runner.run_with_retries, as here), which counts the attempts."""
    try:
        import cloudpickle
        from dask.distributed import Client
        from dask.distributed import as_completed as dask_completed
    except ImportError:
        raise UsageError("--scheduler needs Dask: pip install 'dask[distributed]'") from None
    # Workers need not have this repository: the runner travels with each task (paths must be shared).
    cloudpickle.register_pickle_by_value(shot_runner)
    results: dict[str, dict] = {}
    with Client(address, timeout="30s") as client:
        # A lambda: plain pickle cannot take it, so Dask falls back to cloudpickle for the task,
        # which then ships shot_runner by value (a bare shot_runner.run_shot would go by name).
        futures = {
            client.submit(lambda t: shot_runner.run_with_retries(t, retries), task, pure=False,
                          key=f"chain-ik-bake-{task['name']}-{os.getpid()}-{i}"): task
            for i, task in enumerate(tasks)
        }  # fmt: skip
        try:
            for future in dask_completed(futures):
                task = futures[future]
                try:
                    entry = future.result()
                except Exception as exc:  # a lost worker (Dask re-ran it on another: attempts unknown)
                    entry = shot_runner.failed_entry(task, exc, attempts=None)
                results[task["name"]] = entry
                progress.done(entry)
        except KeyboardInterrupt:
            client.cancel(list(futures))  # a shot already running finishes; its output is complete or absent
            raise Interrupted(results) from None
    return results


class UsageError(Exception):
    """Bad arguments or a missing tool: one line, exit status 2."""


class Interrupted(Exception):
    def __init__(self, results: dict[str, dict]) -> None:
        self.results = results


def write_report(path: Path, report: dict) -> None:
    """Atomically: a reader never sees half a report."""
    path.parent.mkdir(parents=True, exist_ok=True)
    part = path.with_name(f".{path.name}.part-{os.getpid()}")
    part.write_text(json.dumps(report, indent=1), encoding="utf-8")
    os.replace(part, path)


def _terminate(signum, frame) -> None:
    """SIGTERM (a farm or CI stopping the run) is handled as Ctrl-C is."""
    raise KeyboardInterrupt


def main(argv: list[str]) -> int:
    args = parse_args(argv)
    try:
        if args.jobs < 1 or args.retries < 0:
            raise UsageError("--jobs must be at least 1 and --retries at least 0")
        if args.timeout is not None and args.timeout <= 0.0:
            raise UsageError(f"--timeout must be a number of seconds > 0, got {args.timeout:g}")
        if args.max_error is not None and args.max_error < 0.0:
            raise UsageError(f"--max-error must be a distance >= 0, got {args.max_error:g}")
        report_path, logs = checked_paths(args)
    except UsageError as exc:
        print(f"bake_shots.py: error: {exc}", file=sys.stderr)
        return 2
    try:
        # Nothing this run writes may be a file it reads, or another file it writes.
        shots = shot_list.load(
            args.shot_list,
            writes=lambda shot: {"log": log_path(logs, shot), "summary": log_path(logs, shot).with_suffix(".json")},
            also={"--report": report_path},
        )
    except shot_list.ShotListError as exc:
        print(f"bake_shots.py: error: {exc}", file=sys.stderr)
        return 2
    if args.check:
        print(f"bake_shots.py: {args.shot_list}: {len(shots)} shot(s), all valid")
        return 0
    listed = Path(os.path.abspath(args.shot_list))
    try:
        tasks = tasks_for(shots, args, logs)
    except UsageError as exc:
        print(f"bake_shots.py: error: {exc}", file=sys.stderr)
        return 2
    route = f"dask {args.scheduler}" if args.scheduler else f"local, {args.jobs} job(s)"
    print(f"bake_shots: {len(tasks)} shot(s), {route}", file=sys.stderr)
    signal.signal(signal.SIGTERM, _terminate)
    started = time.perf_counter()
    progress = ProgressBar(len(tasks))
    status = 0
    try:
        if args.scheduler:
            results = run_dask(tasks, args.scheduler, args.retries, progress)
        else:
            results = run_local(tasks, args.jobs, args.retries, progress)
    except UsageError as exc:
        print(f"bake_shots.py: error: {exc}", file=sys.stderr)
        return 2
    except Interrupted as exc:
        results, status = exc.results, 130
        print("bake_shots: interrupted: no output was left half-written", file=sys.stderr)
    entries = [results.get(t["name"]) or shot_runner.failed_entry(t, "not run (interrupted)", "interrupted")
               for t in tasks]
    counts: dict[str, int] = {}
    for entry in entries:
        counts[entry["status"]] = counts.get(entry["status"], 0) + 1
    write_report(report_path, {
        "shot_list": str(listed), "route": route, "max_error": args.max_error,
        "seconds": time.perf_counter() - started, "counts": counts, "shots": entries,
    })  # fmt: skip
    print(f"bake_shots: report: {report_path}", file=sys.stderr)
    if status == 0 and counts.get("ok", 0) != len(entries):
        status = 1
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
