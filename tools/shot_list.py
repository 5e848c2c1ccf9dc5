"""The shot list: a TOML file naming the shots tools/bake_shots.py bakes (format: docs/shot_list.md).

`load(path)` reads and validates the whole file before anything runs: every bad
entry is reported, one line each, in one ShotListError. `cli_arguments(shot)` is
the cli.py argument list for one shot (after the `--`), the one place that maps
shot keys to cli.py options (the Flamenco job type mirrors it in JavaScript).
"""

from __future__ import annotations

import importlib.util
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SHOT_KEYS = {
    "name", "blend", "output", "armature", "frames", "step", "interpolation", "reduce", "max_error", "chains",
}  # fmt: skip
CHAIN_KEYS = {"chain", "target", "target_bone", "pole", "pole_bone", "pole_angle", "method"}
INTERPOLATIONS = ("BEZIER", "LINEAR", "CONSTANT")


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
    max_error: float | None = None  # None: the run's --max-error, if any
    chains: list[dict] = field(default_factory=list)  # empty: the armature's chains from the panel


def _cli():
    """cli.py's own parsers (TIP:LENGTH, START-END), so the list accepts exactly what cli.py does."""
    spec = importlib.util.spec_from_file_location("_chain_ik_cli_parsers", REPO / "cli.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _methods() -> tuple[str, ...] | None:
    try:  # the solver registry needs numpy: without it, cli.py checks the method itself
        import sys

        if str(REPO) not in sys.path:
            sys.path.append(str(REPO))
        from solvers import METHODS
    except ImportError:
        return None
    return tuple(METHODS)


KIND_NAMES = {str: "a string", int: "an integer", float: "a number"}


def _check_type(where: str, key: str, value, kinds, problems: list[str]) -> bool:
    kinds = kinds if isinstance(kinds, tuple) else (kinds,)
    # TOML's true/false are Python ints too: never accepted as numbers.
    if isinstance(value, kinds) and not (isinstance(value, bool) and bool not in kinds):
        return True
    name = KIND_NAMES[float] if float in kinds else KIND_NAMES[kinds[0]]
    problems.append(f"{where}: '{key}' must be {name}, got {value!r}")
    return False


def _frames(where: str, value, cli, problems: list[str]) -> tuple[int, int] | None:
    integers = isinstance(value, list) and all(isinstance(v, int) and not isinstance(v, bool) for v in value)
    if integers and len(value) == 2:
        value = f"{value[0]}-{value[1]}"
    elif isinstance(value, int) and not isinstance(value, bool):
        value = str(value)
    if not isinstance(value, str):
        problems.append(f"{where}: 'frames' must be \"START-END\" or [START, END], got {value!r}")
        return None
    try:
        return cli.parse_frames(value)
    except cli.CliError as exc:
        problems.append(f"{where}: {str(exc).replace('--frames', 'frames')}")
        return None


def _chains(where: str, value, cli, methods, problems: list[str]) -> list[dict]:
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
        for key in CHAIN_KEYS & set(entry):
            kinds = (int, float) if key == "pole_angle" else str
            if _check_type(at, key, entry[key], kinds, problems):
                chain[key] = entry[key]
        if "chain" in chain:
            try:
                cli.parse_chain(chain["chain"])
            except cli.CliError as exc:
                problems.append(f"{at}: {str(exc).replace('--chain', 'chain')}")
        if methods is not None and chain.get("method") and chain["method"] not in methods:
            problems.append(f"{at}: unknown method '{chain['method']}' (choose one of {', '.join(methods)})")
        chains.append(chain)
    return chains


def _shot(index: int, entry: dict, base: Path, cli, methods, problems: list[str]) -> Shot | None:
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
    blend = (base / values["blend"]).resolve() if "blend" in values else None
    output = (base / values["output"]).resolve() if "output" in values else None
    if blend is not None and not blend.is_file():
        problems.append(f"{where}: blend file not found: {blend}")
    if output is not None:
        if output.suffix != ".blend":
            problems.append(f"{where}: output must be a .blend file, got {output.name}")
        if output == blend:
            problems.append(f"{where}: output is the blend file itself (the source stays untouched)")
        if output.is_dir():
            problems.append(f"{where}: output is a folder: {output}")
    name = values.get("name")
    if name is not None and (not name.strip() or any(c in name for c in "/\\") or name in (".", "..")):
        problems.append(f"{where}: 'name' names the shot's log file: no slashes, not empty, got {name!r}")
    if values.get("armature") == "":
        problems.append(f"{where}: 'armature' is empty")
    if values.get("step", 1) < 1:
        problems.append(f"{where}: 'step' must be at least 1, got {values['step']}")
    if values.get("interpolation", "BEZIER") not in INTERPOLATIONS:
        problems.append(f"{where}: 'interpolation' must be one of {', '.join(INTERPOLATIONS)}")
    for key in ("reduce", "max_error"):
        if values.get(key, 0.0) < 0.0:
            problems.append(f"{where}: '{key}' must be >= 0, got {values[key]}")
    frames = _frames(where, entry["frames"], cli, problems) if "frames" in entry else None
    chains = _chains(where, entry["chains"], cli, methods, problems) if "chains" in entry else []
    if len(problems) > before:
        return None
    return Shot(
        name=values.get("name") or blend.stem,
        blend=blend,
        output=output,
        armature=values["armature"],
        frames=frames,
        step=values.get("step", 1),
        interpolation=values.get("interpolation", "BEZIER"),
        reduce=float(values.get("reduce", 0.0)),
        max_error=None if "max_error" not in values else float(values["max_error"]),
        chains=chains,
    )


def load(path: str | Path) -> list[Shot]:
    """The shots of a shot list, or ShotListError naming every problem (nothing has run yet)."""
    path = Path(path).resolve()
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ShotListError(path, [f"cannot read the file: {exc.strerror}"]) from None
    except tomllib.TOMLDecodeError as exc:
        raise ShotListError(path, [f"not valid TOML: {exc}"]) from None
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
    cli, methods = _cli(), _methods()
    shots = [_shot(i, {**defaults, **entry}, path.parent, cli, methods, problems) for i, entry in enumerate(entries, 1)]
    seen_names: dict[str, int] = {}
    seen_outputs: dict[Path, int] = {}
    for i, shot in enumerate(shots, 1):
        if shot is None:
            continue
        if shot.name in seen_names:
            problems.append(f"shot {i} ('{shot.name}'): the name is already used by shot {seen_names[shot.name]}")
        if shot.output in seen_outputs:
            problems.append(f"shot {i} ('{shot.name}'): output {shot.output} is shot {seen_outputs[shot.output]}'s too")
        seen_names.setdefault(shot.name, i)
        seen_outputs.setdefault(shot.output, i)
    if problems:
        raise ShotListError(path, problems)
    return shots


def cli_arguments(shot: Shot) -> list[str]:
    """cli.py's arguments for `shot` (after `--`), without --output and --json (the runner adds them)."""
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
    return args
