"""One [[shots]] entry of a shot list: its keys and values checked, as a Shot (format:
docs/shot_list.md). Numbers finite, names not empty, frames and TIP:LENGTH as cli.py reads them
(its own parsers), methods the solver registry's."""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from pathlib import Path

from .aim_axis_names import AIM_AXIS_NAMES
from .cli_arguments import INTERPOLATIONS, CliError, parse_chain, parse_frames
from .method_names import METHOD_NAMES
from .output_paths import check_output
from .shot_files import ListedFile

SHOT_KEYS = {
    "name", "blend", "output", "armature", "frames", "step", "interpolation", "reduce", "max_error", "chains",
    "contacts",
}  # fmt: skip
CHAIN_KEYS = {
    "chain", "target", "target_bone", "pole", "pole_bone", "pole_angle", "softness", "method", "aim_axis", "aim_spread",
    "move_root", "root_stiffness",
}  # fmt: skip
# Keys that name something: never empty. The others may be "" (as if left out): target_bone,
# pole, pole_bone.
NAMING_KEYS = {"name", "blend", "output", "armature", "interpolation", "chain", "target", "method"}
KIND_NAMES = {str: "a string", int: "an integer", float: "a number", bool: "true or false"}


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
    contacts: bool = False  # detect the feet's contacts, then bake honouring them (cli.py --contacts)


def _finite(value: float) -> bool:
    try:
        return math.isfinite(float(value))
    except OverflowError:
        return False


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
    if value == "" and key in NAMING_KEYS:
        problems.append(f"{where}: '{key}' is empty")
        return False
    return True


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
        return parse_frames(value)
    except CliError as exc:
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
            kinds = (int, float) if key in ("pole_angle", "softness", "aim_spread", "root_stiffness") else str
            kinds = bool if key == "move_root" else kinds
            if _check_type(at, key, entry[key], kinds, problems):
                chain[key] = entry[key]
        if "softness" in chain and not 0.0 <= chain["softness"] < 1.0:  # checked finite above
            got = chain["softness"]
            problems.append(f"{at}: 'softness' must be a share of the reach within 0..1 (below 1), got {got!r}")
        if "aim_spread" in chain and not 0.0 <= chain["aim_spread"] <= 1.0:
            problems.append(f"{at}: 'aim_spread' must be within 0..1, got {chain['aim_spread']!r}")
        if "aim_axis" in chain and chain["aim_axis"] not in AIM_AXIS_NAMES:
            problems.append(f"{at}: unknown aim_axis '{chain['aim_axis']}' (choose one of {', '.join(AIM_AXIS_NAMES)})")
        if "root_stiffness" in chain and not 0.0 <= chain["root_stiffness"] <= 1.0:
            got = chain["root_stiffness"]
            problems.append(f"{at}: 'root_stiffness' must be within 0..1 (0 moves the root most, 1 never), got {got!r}")
        if "chain" in chain:
            try:
                parse_chain(chain["chain"])
            except CliError as exc:
                problems.append(f"{at}: {str(exc).replace('--chain', 'chain')}")
        if "method" in chain and chain["method"] not in METHOD_NAMES:
            problems.append(f"{at}: unknown method '{chain['method']}' (choose one of {', '.join(METHOD_NAMES)})")
        chains.append(chain)
    return chains


def _is_file(path: Path) -> bool:
    try:
        return path.is_file()
    except (OSError, ValueError):  # a name too long, say: not a file this run can read
        return False


def _paths(where: str, values: dict, base: Path, problems: list[str], files: list[ListedFile]) -> tuple:
    """(blend, output): relative to the list's folder, absolute and normalised (links are followed
    only to compare files, so the path a farm maps stays the one written). Each is added to
    `files` when it is sound, even if the shot has other problems: it is checked against them."""
    blend, output = (Path(os.path.abspath(base / values[k])) if k in values else None for k in ("blend", "output"))
    if blend is not None and not _is_file(blend):
        problems.append(f"{where}: blend file not found: {blend}")
    elif blend is not None:
        files.append(ListedFile(where, "blend", blend))
    if output is not None:
        before = len(problems)
        if output.suffix != ".blend":
            problems.append(f"{where}: output must be a .blend file, got {output.name}")
        try:
            check_output(str(output), "output", writable=False)  # a folder, or a file in the way
        except ValueError as exc:
            problems.append(f"{where}: {exc}")
        if len(problems) == before:
            files.append(ListedFile(where, "output", output))
    return blend, output


def entry_shot(index: int, entry: dict, base: Path, problems: list[str], files: list[ListedFile]) -> Shot | None:
    """The shot of entry `index` (its [defaults] merged in), or None (its problems added).
    `files`: its blend and output, added whenever they are sound (see _paths)."""
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
                       ("interpolation", str), ("reduce", (int, float)), ("max_error", (int, float)),
                       ("contacts", bool)):  # fmt: skip
        if key in entry and _check_type(where, key, entry[key], kinds, problems):
            values[key] = entry[key]
    blend, output = _paths(where, values, base, problems, files)
    name = values.get("name")
    if name is not None and (not name.strip() or any(c in name for c in "/\\") or name in (".", "..")):
        problems.append(f"{where}: 'name' names the shot's log file: no slashes, not blank, got {name!r}")
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
    if values.get("contacts") and "chains" in entry:
        problems.append(f"{where}: 'contacts' keys the armature's panel chains' Contact: leave 'chains' out")
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
        contacts=bool(values.get("contacts", False)),
    )
