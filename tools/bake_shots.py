"""Bake many shots: one Blender process per shot, in parallel here or on a Dask cluster.

    python tools/bake_shots.py shots.toml --python /path/to/venv/bin/python --jobs 2
    python tools/bake_shots.py shots.toml --blender /opt/blender/blender --scheduler tcp://farm:8786

Runs outside Blender (Python 3.11+, standard library; Dask only for --scheduler).
Before anything bakes (and with --check, which then stops): the arguments, the
launcher and Dask; the shot list (docs/shot_list.md) in full; then, in Blender
on the route, the libraries every shot's blend links. Each shot runs cli.py in
its own process (tools/shot_runner.py); a JSON report lists every shot's status,
seconds, keys, worst tip error and log. Exit status: 0 every shot baked within
bounds, 1 some shot failed or missed --max-error, 2 a bad shot list or
arguments, or the route could not run, 130 interrupted.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.append(str(REPO))  # the headless package ships with the extension, beside cli.py
import shot_routes  # noqa: E402
import shot_runner  # noqa: E402

from headless import blender_command, library_scan, output_paths, shot_list  # noqa: E402
from headless.cli_arguments import finite  # noqa: E402

CLI = REPO / "cli.py"


class UsageError(Exception):
    """Bad arguments, a bad shot list or a missing tool: one line (or one per problem), exit status 2."""


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
    p.add_argument("--check", action="store_true", help="check everything a run checks before it bakes, and stop")
    return p.parse_args(argv)


def log_path(logs: Path, shot: shot_list.Shot) -> Path:
    return logs / f"{shot.name}.log"


def checked_arguments(args: argparse.Namespace) -> tuple[Path, Path]:
    """(report, logs folder), or UsageError before anything runs: the numbers, the report (a
    writable file, not a folder), the logs (no file in the way)."""
    if args.jobs < 1 or args.retries < 0:
        raise UsageError("--jobs must be at least 1 and --retries at least 0")
    if args.timeout is not None and args.timeout <= 0.0:
        raise UsageError(f"--timeout must be a number of seconds > 0, got {args.timeout:g}")
    if args.max_error is not None and args.max_error < 0.0:
        raise UsageError(f"--max-error must be a distance >= 0, got {args.max_error:g}")
    listed = Path(os.path.abspath(args.shot_list))
    report = Path(os.path.abspath(args.report or listed.with_suffix(".report.json")))
    logs = Path(os.path.abspath(args.logs or listed.with_suffix(".logs")))
    try:
        output_paths.check_output(str(report), "--report")
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    folder = logs
    while not folder.exists():
        folder = folder.parent
    if not folder.is_dir():
        raise UsageError(f"--logs {logs}: {folder} is a file, not a folder")
    return report, logs


def checked_launcher(args: argparse.Namespace) -> tuple[str, str]:
    """(kind, executable) that runs the shots, or UsageError: on this machine an executable file;
    for --scheduler, Dask importable here (the workers' launcher is tried by the library scan)."""
    try:
        if args.scheduler:
            shot_routes.dask_ready()
        return blender_command.find_launcher(args.blender, args.python, here=args.scheduler is None)
    except (ValueError, shot_routes.RouteError) as exc:
        raise UsageError(str(exc)) from None


def _writes(logs: Path):
    """What this route writes per shot, besides its output: the log and cli.py's summary."""
    return lambda shot: {"log": log_path(logs, shot), "summary": log_path(logs, shot).with_suffix(".json")}


def checked_list(args: argparse.Namespace, logs: Path, report: Path) -> list:
    """The shots, or UsageError naming every problem of the list (no Blender needed)."""
    try:
        return shot_list.load(args.shot_list, writes=_writes(logs), also={"--report": report})
    except shot_list.ShotListError as exc:
        raise UsageError(str(exc)) from None


def checked_libraries(args, shots: list, logs: Path, report: Path, launcher: tuple[str, str], route) -> list[str]:
    """Every file the run reads, or UsageError: Blender, on the route (which tries the launcher
    too), lists the libraries each shot's blend links; no file the run writes may be one."""
    prefix = blender_command.command(launcher[1], launcher[0], library_scan.SCRIPT, None, [])
    try:
        blends = list(dict.fromkeys(str(shot.blend) for shot in shots))  # shots may share one
        scanned = route.scan(prefix, blends, args.timeout, args.retries)
        shot_list.check_libraries(args.shot_list, shots, scanned, writes=_writes(logs), also={"--report": report})
    except (shot_list.ShotListError, library_scan.ScanError) as exc:
        raise UsageError(str(exc)) from None
    reads = {os.path.abspath(args.shot_list), *(str(shot.blend) for shot in shots)}
    reads.update(path for found in scanned.values() for path in found.get("libraries", []))
    return sorted(reads)


def tasks_for(shots: list, args: argparse.Namespace, logs: Path, launcher: tuple[str, str], reads) -> list[dict]:
    kind, exe = launcher
    return [{
        "name": shot.name,
        "command": blender_command.command(exe, kind, str(CLI), str(shot.blend),
                                           shot_list.cli_arguments(shot, args.max_error)),
        "output": str(shot.output),
        "log": str(log_path(logs, shot)),
        "timeout": args.timeout,
        "inputs": reads,
    } for shot in shots]  # fmt: skip


def write_report(path: Path, report: dict) -> None:
    """Atomically: a reader never sees half a report."""
    path.parent.mkdir(parents=True, exist_ok=True)
    part = path.with_name(f".{path.name}.part-{os.getpid()}")
    part.write_text(json.dumps(report, indent=1), encoding="utf-8")
    os.replace(part, path)


def _terminate(signum, frame) -> None:
    """SIGTERM (a farm or CI stopping the run) is handled as Ctrl-C is."""
    raise KeyboardInterrupt


def not_run(shots: list, logs: Path, why: str, status: str = "not run") -> list[dict]:
    """The report entries of shots that never started: the route could not run, or was stopped."""
    return [shot_runner.failed_entry({"name": s.name, "log": str(log_path(logs, s))}, why, status) for s in shots]


def finish(path: Path, args, route_name: str, started: float, entries: list[dict]) -> dict[str, int]:
    """Write the report (every shot, in list order); the count of each status."""
    counts: dict[str, int] = {}
    for entry in entries:
        counts[entry["status"]] = counts.get(entry["status"], 0) + 1
    write_report(path, {
        "shot_list": os.path.abspath(args.shot_list), "route": route_name, "max_error": args.max_error,
        "seconds": time.perf_counter() - started, "counts": counts, "shots": entries,
    })  # fmt: skip
    print(f"bake_shots: report: {path}", file=sys.stderr)
    return counts


def main(argv: list[str]) -> int:
    args = parse_args(argv)
    started = time.perf_counter()
    route_name = f"dask {args.scheduler}" if args.scheduler else f"local, {args.jobs} job(s)"
    route, shots, report_path = None, [], None
    try:
        report_path, logs = checked_arguments(args)
        shots = checked_list(args, logs, report_path)
        launcher = checked_launcher(args)
        if not args.check:
            signal.signal(signal.SIGTERM, _terminate)
        route = shot_routes.Dask(args.scheduler) if args.scheduler else shot_routes.Local(args.jobs)
        reads = checked_libraries(args, shots, logs, report_path, launcher, route)
        if args.check:
            print(f"bake_shots.py: {args.shot_list}: {len(shots)} shot(s), all valid; {len(reads)} file(s) read,"
                  f" none written over; {route_name} runs {launcher[1]}")  # fmt: skip
            return 0
        tasks = tasks_for(shots, args, logs, launcher, reads)
        print(f"bake_shots: {len(tasks)} shot(s), {route_name}", file=sys.stderr)
        status = 0
        try:
            results = route.bake(tasks, args.retries, shot_routes.ProgressBar(len(tasks)))
        except shot_routes.Interrupted as exc:
            results, status = exc.results, 130
            print("bake_shots: interrupted: no output was left half-written", file=sys.stderr)
        entries = [results.get(t["name"]) or shot_runner.failed_entry(t, "not run (interrupted)", "interrupted")
                   for t in tasks]  # fmt: skip
        counts = finish(report_path, args, route_name, started, entries)
        return status or (0 if counts.get("ok", 0) == len(entries) else 1)
    except UsageError as exc:
        print(f"bake_shots.py: error: {exc}", file=sys.stderr)
        return 2
    except shot_routes.RouteError as exc:  # nothing baked: the report says so, shot by shot
        print(f"bake_shots.py: error: {exc}", file=sys.stderr)
        if not args.check:
            finish(report_path, args, route_name, started, not_run(shots, logs, f"not run: {exc}"))
        return 2
    except KeyboardInterrupt:  # before any shot started (during the library scan)
        if shots and not args.check:
            entries = not_run(shots, logs, "not run (interrupted)", "interrupted")
            finish(report_path, args, route_name, started, entries)
        return 130
    finally:
        if route is not None:
            route.close()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
