"""The shot list: a TOML file naming the shots to bake (format: docs/shot_list.md).

The one check every route applies before anything runs: tools/bake_shots.py (here and on Dask,
and its --check) calls `load`; the Flamenco job type's hidden `shots_json` setting calls
`submission` in the submitting Blender, and the job is authored from what it returns (a job
compiler can read no file). Every bad entry is reported, one line each, in one ShotListError.
Standard library only, so it runs on a Python without numpy (the Dask driver); it ships with the
extension, beside cli.py, whose parsers and path checks it uses. `cli_arguments(shot)` is the one
place that maps shot keys to cli.py options.
"""

from __future__ import annotations

import functools
import importlib.util
import json
import math
import os
import sys
import tomllib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
SHOT_KEYS = {
    "name", "blend", "output", "armature", "frames", "step", "interpolation", "reduce", "max_error", "chains",
}  # fmt: skip
CHAIN_KEYS = {"chain", "target", "target_bone", "pole", "pole_bone", "pole_angle", "method"}
INTERPOLATIONS = ("BEZIER", "LINEAR", "CONSTANT")
# Marks a submission() document: the Flamenco job type authors tasks from nothing else.
CHECKED_BY = "chain_ik shot_list 1"


class ShotListError(ValueError):
    """Everything wrong with a shot list, one problem per line."""

    def __init__(self, path: Path, problems: list[str]) -> None:
        self.problems = problems
        super().__init__(f"{path}: {len(problems)} problem(s):\n" + "\n".join(f"  {p}" for p in problems))


@dataclass
class Shot:
    name: str
    blend: Path
    output: Path
    armature: str
    frames: tuple[int, int] | None = None  # None: the file's scene range
    step: int = 1
    interpolation: str = "BEZIER"
    reduce: float = 0.0
    max_error: float | None = None  # None: the run's bound, if any
    chains: list[dict] = field(default_factory=list)  # empty: the armature's chains from the panel
    label: str = ""  # "shot 2 ('sh020')": how problems name it


@functools.cache
def _beside(name: str):
    """The module `name`.py beside this file, loaded by path (no package, no numpy)."""
    spec = importlib.util.spec_from_file_location(f"_chain_ik_shot_list_{name}", HERE / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def cli():
    """cli.py: its parsers (TIP:LENGTH, START-END), path checks and number type, so the list
    accepts exactly what cli.py does."""
    return _beside("cli")


def method_names() -> tuple[str, ...]:
    """The solver registry's method names (method_names.py: known without numpy)."""
    return _beside("method_names").METHOD_NAMES


KIND_NAMES = {str: "a string", int: "an integer", float: "a number"}


def _check_type(where: str, key: str, value, kinds, problems: list[str]) -> bool:
    kinds = kinds if isinstance(kinds, tuple) else (kinds,)
    # TOML's true/false are Python ints too: never accepted as numbers.
    if not isinstance(value, kinds) or (isinstance(value, bool) and bool not in kinds):
        name = KIND_NAMES[float] if float in kinds else KIND_NAMES[kinds[0]]
        problems.append(f"{where}: '{key}' must be {name}, got {value!r}")
        return False
    # TOML has nan and inf: they compare false with every bound, so they are refused here (and
    # an integer too large for a float, as tomllib reads any size).
    if float in kinds and not isinstance(value, str) and not _finite(value):
        problems.append(f"{where}: '{key}' must be a finite number, got {value!r}")
        return False
    if isinstance(value, str) and "\0" in value:  # no command line or file name can hold one
        problems.append(f"{where}: '{key}' holds a NUL character: {value!r}")
        return False
    return True


def _finite(value: float) -> bool:
    try:
        return math.isfinite(float(value))
    except OverflowError:
        return False


def _frames(where: str, value, problems: list[str]) -> tuple[int, int] | None:
    integers = isinstance(value, list) and all(isinstance(v, int) and not isinstance(v, bool) for v in value)
    if integers and len(value) == 2:
        value = f"{value[0]}-{value[1]}"
    elif isinstance(value, int) and not isinstance(value, bool):
        value = str(value)
    if not isinstance(value, str):
        problems.append(f"{where}: 'frames' must be \"START-END\" or [START, END], got {value!r}")
        return None
    try:
        return cli().parse_frames(value)
    except cli().CliError as exc:
        problems.append(f"{where}: {str(exc).replace('--frames', 'frames')}")
        return None


def _chains(where: str, value, problems: list[str]) -> list[dict]:
    if not isinstance(value, list) or not all(isinstance(c, dict) for c in value):
        problems.append(f"{where}: 'chains' must be a list of tables ([[shots.chains]])")
        return []
    chains = []
    for i, entry in enumerate(value, 1):
        at = f"{where}, chain {i}"
        for key in sorted(set(entry) - CHAIN_KEYS):
            problems.append(f"{at}: unknown key '{key}' (known: {', '.join(sorted(CHAIN_KEYS))})")
        for key in ("chain", "target"):
            if key not in entry:
                problems.append(f"{at}: '{key}' is required")
        chain = {}
        for key in sorted(CHAIN_KEYS & set(entry)):
            kinds = (int, float) if key == "pole_angle" else str
            if _check_type(at, key, entry[key], kinds, problems):
                chain[key] = entry[key]
        if "chain" in chain:
            try:
                cli().parse_chain(chain["chain"])
            except cli().CliError as exc:
                problems.append(f"{at}: {str(exc).replace('--chain', 'chain')}")
        if chain.get("method") and chain["method"] not in method_names():
            problems.append(f"{at}: unknown method '{chain['method']}' (choose one of {', '.join(method_names())})")
        chains.append(chain)
    return chains


def _path(base: Path, text: str) -> Path:
    """A path of the list: relative to the list's folder; absolute and normalised (links are
    followed only to compare files, so the path a farm maps stays the one written)."""
    return Path(os.path.abspath(base / text))


def _shot(index: int, entry: dict, base: Path, problems: list[str], files: list[_File]) -> Shot | None:
    """The shot, or None (its problems added). `files`: its blend and output, added whenever
    they are sound (the shot may have other problems): each is checked against the others."""
    label = entry.get("name") if isinstance(entry.get("name"), str) else None
    where = f"shot {index}" + (f" ('{label}')" if label else "")
    before = len(problems)
    for key in sorted(set(entry) - SHOT_KEYS):
        problems.append(f"{where}: unknown key '{key}' (known: {', '.join(sorted(SHOT_KEYS))})")
    for key in ("blend", "output", "armature"):
        if key not in entry:
            problems.append(f"{where}: '{key}' is required")
    values = {}
    for key, kinds in (("name", str), ("blend", str), ("output", str), ("armature", str), ("step", int),
                       ("interpolation", str), ("reduce", (int, float)), ("max_error", (int, float))):  # fmt: skip
        if key in entry and _check_type(where, key, entry[key], kinds, problems):
            values[key] = entry[key]
    for key in ("blend", "output", "armature"):
        if values.get(key) == "":
            problems.append(f"{where}: '{key}' is empty")
            del values[key]
    blend = _path(base, values["blend"]) if "blend" in values else None
    output = _path(base, values["output"]) if "output" in values else None
    if blend is not None and not _is_file(blend):
        problems.append(f"{where}: blend file not found: {blend}")
    output_problems = len(problems)
    if output is not None:
        if output.suffix != ".blend":
            problems.append(f"{where}: output must be a .blend file, got {output.name}")
        try:
            cli().check_output(str(output), "output", writable=False)  # a folder, or a file in the way
        except cli().CliError as exc:
            problems.append(f"{where}: {exc}")
    if blend is not None and _is_file(blend):
        files.append(_File(where, "blend", blend))
    if output is not None and len(problems) == output_problems:
        files.append(_File(where, "output", output))
    name = values.get("name")
    if name is not None and (not name.strip() or any(c in name for c in "/\\") or name in (".", "..")):
        problems.append(f"{where}: 'name' names the shot's log file: no slashes, not empty, got {name!r}")
    elif name is not None and len(name.encode("utf-8")) > 200:
        problems.append(f"{where}: 'name' names the shot's log file: at most 200 bytes, got {len(name.encode())}")
    if values.get("step", 1) < 1:
        problems.append(f"{where}: 'step' must be at least 1, got {values['step']}")
    if values.get("interpolation", "BEZIER") not in INTERPOLATIONS:
        problems.append(f"{where}: 'interpolation' must be one of {', '.join(INTERPOLATIONS)}")
    for key in ("reduce", "max_error"):
        if values.get(key, 0.0) < 0.0:
            problems.append(f"{where}: '{key}' must be >= 0, got {values[key]}")
    frames = _frames(where, entry["frames"], problems) if "frames" in entry else None
    chains = _chains(where, entry["chains"], problems) if "chains" in entry else []
    if len(problems) > before:
        return None
    shot_name = values.get("name") or blend.stem
    return Shot(
        name=shot_name,
        blend=blend,
        output=output,
        armature=values["armature"],
        frames=frames,
        step=values.get("step", 1),
        interpolation=values.get("interpolation", "BEZIER"),
        reduce=float(values.get("reduce", 0.0)),
        max_error=None if "max_error" not in values else float(values["max_error"]),
        chains=chains,
        label=f"shot {index} ('{shot_name}')",
    )


def _is_file(path: Path) -> bool:
    try:
        return path.is_file()
    except (OSError, ValueError):  # a name too long, say: not a file this run can read
        return False


@dataclass(frozen=True)
class _File:
    owner: str  # "shot 2 ('sh020')", or '' for a file of the run
    what: str  # "blend", "output", "log", "--report", "the shot list"
    path: Path

    def naming(self) -> str:
        return f"{self.owner}: {self.what} {self.path}" if self.owner else f"{self.what} {self.path}"

    def as_other(self, writer: _File) -> str:
        if self.owner == writer.owner and self.what == "blend":
            return "the shot's own blend file"
        return f"{self.owner}'s {self.what}" if self.owner else f"{self.what} itself"


def clashes(reads: list[_File], writes: list[_File]) -> list[str]:
    """A problem for each written file that is a read one (it would be overwritten) or another
    written one. Files are compared by resolved path (links followed) and, where they exist,
    by device and inode (a hard link; another case on a case-insensitive disk)."""
    keys = cli().file_keys
    read: dict[tuple, list[_File]] = {}
    for entry in reads:
        for key in keys(entry.path):
            read.setdefault(key, []).append(entry)
    written: dict[tuple, _File] = {}
    problems = []
    for entry in writes:
        mine = keys(entry.path)
        sources = [source for k in sorted(mine) for source in read.get(k, [])]
        # Its own shot's blend first: the commonest slip, and the plainest message.
        source = min(sources, key=lambda s: s.owner != entry.owner, default=None)
        other = next((written[k] for k in sorted(mine) if k in written), None)
        if source is not None:
            problems.append(f"{entry.naming()} is {source.as_other(entry)}: it would be overwritten")
        elif other is not None:
            problems.append(f"{entry.naming()} is also {other.as_other(entry)}")
        for key in mine:
            written.setdefault(key, entry)
    return problems


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


def load(
    path: str | Path,
    writes: Callable[[Shot], dict[str, Path]] | None = None,
    also: dict[str, Path] | None = None,
) -> list[Shot]:
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
    files: list[_File] = []
    shots = [_shot(i, {**defaults, **entry}, path.parent, problems, files) for i, entry in enumerate(entries, 1)]
    seen_names: dict[str, str] = {}
    extras = []
    for shot in shots:
        if shot is None:
            continue
        if shot.name in seen_names:
            problems.append(f"{shot.label}: the name is already used by {seen_names[shot.name]}")
        seen_names.setdefault(shot.name, shot.label.partition(" (")[0])
        extras += [_File(shot.label, what, p) for what, p in (writes(shot) if writes else {}).items()]
    extras += [_File("", what, p) for what, p in (also or {}).items()]
    reads = [_File("", "the shot list", path)] + [f for f in files if f.what == "blend"]
    outputs = [f for f in files if f.what == "output"]
    problems += clashes(reads, outputs + extras)
    if problems:
        raise ShotListError(path, problems)
    return shots


def cli_arguments(shot: Shot, max_error: float | None = None) -> list[str]:
    """cli.py's arguments for `shot` (after `--`), without --output and --json (the route adds
    them). `max_error`: the run's bound, for a shot without its own."""
    args = ["--armature", shot.armature, "--step", str(shot.step), "--interpolation", shot.interpolation]
    if shot.frames is not None:
        args.append(f"--frames={shot.frames[0]}-{shot.frames[1]}")
    if shot.reduce > 0.0:
        args += ["--reduce", repr(shot.reduce)]
    for chain in shot.chains:
        # Every option once per chain ('' where not set), so each lines up with its --chain.
        args += ["--chain", chain["chain"], "--target", chain["target"]]
        for key in ("target_bone", "pole", "pole_bone", "method"):
            args += [f"--{key.replace('_', '-')}", chain.get(key, "")]
    if any("pole_angle" in chain for chain in shot.chains):
        for chain in shot.chains:
            args.append(f"--pole-angle={float(chain.get('pole_angle', 0.0))!r}")
    bound = shot.max_error if shot.max_error is not None else max_error
    if bound is not None:
        args += ["--max-error", repr(float(bound))]
    return args


def summary_path(shot: Shot) -> Path:
    """Where a Flamenco task's cli.py writes its JSON summary: beside the output."""
    return shot.output.with_suffix(".bake.json")


def submission(path: str | Path, max_error: float = 0.0) -> str:
    """The Flamenco job type's `shots_json` setting, computed in the submitting Blender: JSON of
    the checked shots (name, blend, output and cli.py's whole argument list each), or of the
    problems (the job type then refuses the job, naming them). `max_error`: the job's Max Error
    (0: no bound), for shots without their own."""
    document = {"checked_by": CHECKED_BY, "shot_list": str(path)}
    bound_ok = isinstance(max_error, int | float) and math.isfinite(max_error) and max_error >= 0.0
    try:
        shots = load(path, writes=lambda shot: {"summary": summary_path(shot)})
    except ShotListError as exc:
        problems = exc.problems
    else:
        problems = []
    if not bound_ok:
        problems.append(f"Max Error must be a finite number >= 0, got {max_error!r}")
    if problems:
        return json.dumps({**document, "problems": problems})
    bound = float(max_error) if max_error > 0.0 else None
    return json.dumps({**document, "shots": [
        {"name": shot.name, "blend": str(shot.blend), "output": str(shot.output),
         "arguments": [*cli_arguments(shot, bound), "--output", str(shot.output), "--json", str(summary_path(shot))]}
        for shot in shots
    ]})  # fmt: skip
