"""The shot list: a TOML file naming the shots to bake (format: docs/shot_list.md).

The one check every route applies before anything bakes: tools/bake_shots.py (here and on Dask,
and its --check) and the Flamenco submission (flamenco_submission.py, in the submitting Blender).
Two steps, each reporting every problem, one line each, in one ShotListError: `load` (the file,
every key and value, no file written over one read or written) needs no Blender; then
`check_libraries` with what Blender listed (library_scan.py) of each blend's libraries: no
output over any of them. `cli_arguments(shot)` is the one place that maps shot keys to cli.py
options."""

from __future__ import annotations

import os
import tomllib
from collections.abc import Callable
from pathlib import Path

from .aim_axis_names import DEFAULT_AIM_SPREAD
from .shot_entries import Shot, entry_shot
from .shot_files import ListedFile, clashes, library_files


class ShotListError(ValueError):
    """Everything wrong with a shot list, one problem per line."""

    def __init__(self, path: Path, problems: list[str]) -> None:
        self.problems = problems
        super().__init__(f"{path}: {len(problems)} problem(s):\n" + "\n".join(f"  {p}" for p in problems))


# What a route writes besides the outputs: per shot (what -> path: a log, a summary), and its own.
Writes = Callable[[Shot], dict[str, Path]] | None


def _read(path: Path) -> dict:
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise ShotListError(path, [f"cannot read the file: {exc.strerror or exc}"]) from None
    try:
        text = raw.decode("utf-8").removeprefix("\ufeff")  # a byte order mark, as some editors write
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        problem = f"not UTF-8 text (a TOML file is UTF-8): byte 0x{raw[exc.start]:02x} on line {line}"
        raise ShotListError(path, [problem + "; save the file as UTF-8"]) from None
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ShotListError(path, [f"not valid TOML: {exc}"]) from None


def _route_files(shots: list[Shot], writes: Writes, also: dict[str, Path] | None) -> list[ListedFile]:
    files = [ListedFile(shot.label, what, p) for shot in shots for what, p in (writes(shot) if writes else {}).items()]
    return files + [ListedFile("", what, p) for what, p in (also or {}).items()]


def load(path: str | Path, writes: Writes = None, also: dict[str, Path] | None = None) -> list[Shot]:
    """The shots of a shot list, or ShotListError naming every problem (nothing has run yet).

    No file a run writes may be a file it reads (the list, every shot's blend) or another
    file it writes: each shot's output, and what the route adds: `writes(shot)` (what ->
    path: a log, a summary) and `also` (the run's own files: what -> path, a report)."""
    path = Path(os.path.abspath(path))
    data = _read(path)
    problems: list[str] = []
    for key in sorted(set(data) - {"defaults", "shots"}):
        problems.append(f"unknown top-level key '{key}' (known: defaults, shots)")
    defaults = data.get("defaults", {})
    if not isinstance(defaults, dict):
        problems.append("'defaults' must be a table ([defaults])")
        defaults = {}
    entries = data.get("shots", [])
    if not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
        problems.append("'shots' must be an array of tables ([[shots]])")
        entries = []
    if not entries and not problems:
        problems.append("no shots: add [[shots]] tables")
    files: list[ListedFile] = []
    shots = [entry_shot(i, {**defaults, **entry}, path.parent, problems, files) for i, entry in enumerate(entries, 1)]
    valid = [shot for shot in shots if shot is not None]
    seen_names: dict[str, str] = {}
    for i, entry in enumerate(entries, 1):  # every shot's name, a shot with other problems too
        values = {**defaults, **entry}
        name = values.get("name") or (Path(values["blend"]).stem if isinstance(values.get("blend"), str) else None)
        if not isinstance(name, str):  # a wrong name's own problem is reported by entry_shot
            continue
        if name in seen_names:
            problems.append(f"shot {i} ('{name}'): the name is already used by {seen_names[name]}")
        seen_names.setdefault(name, f"shot {i}")
    reads = [ListedFile("", "the shot list", path)] + [f for f in files if f.what == "blend"]
    outputs = [f for f in files if f.what == "output"]
    problems += clashes(reads, outputs + _route_files(valid, writes, also))
    if problems:
        raise ShotListError(path, problems)
    return valid


def check_libraries(
    path: str | Path, shots: list[Shot], scanned: dict[str, dict], writes: Writes = None, also=None
) -> None:
    """ShotListError naming every file the run writes that is a library a shot's blend links
    (directly or not), and every blend Blender could not open. `scanned`: library_scan.scan's
    result for the shots' blends; `writes`, `also`: as given to `load`."""
    libraries, problems = library_files(shots, scanned)
    outputs = [ListedFile(shot.label, "output", shot.output) for shot in shots]
    problems += clashes(libraries, outputs + _route_files(shots, writes, also))
    if problems:
        raise ShotListError(Path(os.path.abspath(path)), problems)


def cli_arguments(shot: Shot, max_error: float | None = None) -> list[str]:
    """cli.py's arguments for `shot` (after `--`), without --output and --json (the route adds
    them). `max_error`: the run's bound, for a shot without its own. Every option as
    `--option=VALUE`: a value may start with '-' (an object named "-Goal")."""
    args = [f"--armature={shot.armature}", f"--step={shot.step}", f"--interpolation={shot.interpolation}"]
    if shot.frames is not None:
        args.append(f"--frames={shot.frames[0]}-{shot.frames[1]}")
    if shot.reduce > 0.0:
        args.append(f"--reduce={shot.reduce!r}")
    for chain in shot.chains:
        # Every option once per chain ('' where not set), so each lines up with its --chain.
        args += [f"--chain={chain['chain']}", f"--target={chain['target']}"]
        for key in ("target_bone", "pole", "pole_bone", "method"):
            args.append(f"--{key.replace('_', '-')}={chain.get(key, '')}")
    if any("pole_angle" in chain for chain in shot.chains):
        args += [f"--pole-angle={float(chain.get('pole_angle', 0.0))!r}" for chain in shot.chains]
    if any("softness" in chain for chain in shot.chains):
        args += [f"--softness={float(chain.get('softness', 0.0))!r}" for chain in shot.chains]
    if any("aim_axis" in chain for chain in shot.chains):
        args += [f"--aim-axis={chain.get('aim_axis', 'NONE')}" for chain in shot.chains]
    if any("aim_spread" in chain for chain in shot.chains):
        args += [f"--aim-spread={float(chain.get('aim_spread', DEFAULT_AIM_SPREAD))!r}" for chain in shot.chains]
    if shot.contacts:
        args.append("--contacts")
    if any("move_root" in chain for chain in shot.chains):
        args += [f"--move-root={'on' if chain.get('move_root', False) else 'off'}" for chain in shot.chains]
    if any("root_stiffness" in chain for chain in shot.chains):
        args += [f"--root-stiffness={float(chain.get('root_stiffness', 0.5))!r}" for chain in shot.chains]
    bound = shot.max_error if shot.max_error is not None else max_error
    if bound is not None:
        args.append(f"--max-error={float(bound)!r}")
    return args
