"""Bake Chain IK headless.

Inside Blender (the .blend is opened by Blender itself):
    blender --background scene.blend --python cli.py -- --armature Rig --chain hand.L:3 --target Goal \\
        --method triangulation --frames 1-250 [--step 1] [--output baked.blend] [--pole Knee --pole-angle -90]
With the `bpy` wheel's Python (the script opens the .blend):
    python cli.py scene.blend -- --armature Rig --chain hand.L:3 --target Goal --frames 1-250 --output baked.blend
    python cli.py --blend scene.blend -- ...

Without --chain, the armature's chains from the Chain IK panel are baked (all of
them, with --method over their solvers when given); a --chain takes nothing from
the panel and needs --target. --chain may be repeated (each chain option then
once per chain, or once for all). Under `blender` the arguments go after '--'.
The extension is used as installed when it is enabled; otherwise the package
this file belongs to is loaded by path and registered for the run. Prints a
progress line about every 10% and a summary (frames, seconds, keys written,
worst tip error on playback, and per chain: frames that missed, worst error,
largest jump); --json PATH writes it as JSON too. Every argument and output path
is checked before the file is opened, and --output/--json are never the opened
.blend or a library it links. Exit status: 0 baked, 1 an error (one-line
message), 2 bad arguments (a number that is not finite too), 3 playback missed by
more than --max-error (nothing saved). Without --output the file is not saved. Bones with IK
Stretch lengthen to reach (Y scale keys on them) unless --no-stretch.
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib.util
import json
import math
import os
import re
import sys
import tempfile
from pathlib import Path
from typing import NamedTuple

# Run by Blender's --python, bpy is already imported; run by a plain Python, it is not yet.
INSIDE_BLENDER = "bpy" in sys.modules
HERE = Path(__file__).resolve().parent
PACKAGE_FALLBACK_NAME = "chain_ik"


class CliError(Exception):
    """A user error: printed as one line, exit status 1."""


def _beside(name: str):
    """The module `name`.py beside this file, loaded by path (cli.py may run as a plain script)."""
    spec = importlib.util.spec_from_file_location(f"_chain_ik_cli_{name}", HERE / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def method_names() -> str:
    """The solver registry's method names, for the help (method_names.py: no numpy needed)."""
    return ", ".join(_beside("method_names").METHOD_NAMES)


def finite(text: str) -> float:
    """argparse type: a finite number. NaN and infinities are refused here: NaN compares false
    with every bound, so a check like `reduce > 0` would silently skip the work."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"must be a finite number, got {text!r}")
    return value


def parser(standalone: bool) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="cli.py", description="Bake Chain IK chains to rotation keys, headless.", allow_abbrev=False
    )
    if standalone:
        p.add_argument("blend_file", nargs="?", help="the .blend to open (or --blend)")
        p.add_argument("--blend", help="the .blend to open")
    p.add_argument("--armature", required=True, help="armature object name")
    # Repeat --chain for several chains; the chain options then come once each (the i-th --target
    # goes with the i-th --chain) or once for all.
    p.add_argument("--chain", action="append", help="TIP:LENGTH (default: the armature's chains from the panel)")
    p.add_argument("--target", action="append", help="target object name (with --chain)")
    p.add_argument("--target-bone", action="append", help="bone of an armature target")
    p.add_argument("--pole", action="append", help="pole target object name (with --chain)")
    p.add_argument("--pole-bone", action="append", help="bone of an armature pole target")
    p.add_argument("--pole-angle", action="append", type=finite, metavar="DEG", help="pole angle in degrees")
    p.add_argument("--method", action="append", help=f"solver: {method_names()} (default: the panel's)")
    p.add_argument(
        "--no-stretch",
        action="store_true",
        help="bones with IK Stretch do not lengthen to reach (default: they do, on chains with Stretch on)",
    )
    p.add_argument("--frames", help="START-END, inclusive (default: the scene's frame range); --frames=-10-20")
    p.add_argument("--step", type=int, default=1, help="key every STEP frames (default 1)")
    p.add_argument("--interpolation", default="BEZIER", choices=("BEZIER", "LINEAR", "CONSTANT"))
    p.add_argument("--reduce", type=finite, default=0.0, metavar="TOL", help="fewer keys: tips within TOL of the bake")
    p.add_argument("--output", help="save the baked file here (.blend)")
    p.add_argument(
        "--max-error", type=finite, metavar="E", help="exit with status 3, not saving, when playback misses by more"
    )
    p.add_argument("--json", metavar="PATH", help="also write the summary to this JSON file")
    return p


def split_argv(argv: list[str]) -> tuple[list[str], list[str]]:
    """(arguments before '--', arguments after it)."""
    if "--" in argv:
        i = argv.index("--")
        return argv[:i], argv[i + 1 :]
    return argv, []


def parse_args(argv: list[str]) -> argparse.Namespace:
    before, after = split_argv(argv)
    if INSIDE_BLENDER:
        if "--" not in argv:
            # Blender would read them as its own arguments (or as files to open).
            raise CliError(
                "put cli.py's arguments after '--': blender --background scene.blend --python cli.py -- --armature ..."
            )
        return parser(False).parse_args(after)
    return parser(True).parse_args(before[1:] + after)  # the bpy wheel's Python: '--' is optional


def parse_chain(text: str) -> tuple[str, int]:
    tip, sep, length = text.rpartition(":")
    if not sep or not tip:
        raise CliError(f"--chain must be TIP:LENGTH, got '{text}'")
    try:
        n = int(length)
    except ValueError:
        raise CliError(f"--chain length must be an integer, got '{length}'") from None
    if n < 1:
        raise CliError(f"--chain length must be at least 1, got {n}")
    return tip, n


def parse_frames(text: str) -> tuple[int, int]:
    """START-END (or one frame); either may be negative: -10-20, -20--5 (write --frames=-10-20,
    or argparse takes a leading '-' for an option)."""
    match = re.fullmatch(r"\s*(-?\d+)\s*(?:-\s*(-?\d+)\s*)?", text)
    if match is None:
        raise CliError(f"--frames must be START-END, got '{text}'")
    a = int(match.group(1))
    b = int(match.group(2)) if match.group(2) is not None else a
    if b < a:
        raise CliError(f"--frames end {b} is before start {a}")
    return a, b


def check_output(text: str | None, flag: str = "--output", writable: bool = True) -> Path | None:
    """The path `flag` names, resolved, or CliError before any work: empty, a directory, a parent
    that is a file, or (`writable`) a folder this process cannot write in (tried with a temporary
    file). Missing folders are fine: they are made on writing."""
    if text is None:
        return None
    if not text.strip():
        raise CliError(f"{flag} is empty: give the file to write")
    if "\0" in text:
        raise CliError(f"{flag} {text!r} holds a NUL character")
    out = Path(text).expanduser().resolve()
    if out.is_dir():
        raise CliError(f"{flag} {out} is a directory: give the file to write in it")
    folder = out.parent
    while not folder.exists():  # the missing folders are made on writing
        folder = folder.parent
    if not folder.is_dir():
        raise CliError(f"{flag} {out}: {folder} is a file, not a folder")
    if not writable:
        return out
    if out.exists() and not os.access(out, os.W_OK):
        raise CliError(f"{flag} {out} exists and is read-only")
    try:
        tempfile.TemporaryFile(dir=folder).close()
    except OSError as exc:
        raise CliError(f"{flag} {out}: cannot write in {folder} ({exc.strerror or exc})") from None
    return out


def file_keys(path: str | Path) -> set[tuple]:
    """What identifies the file at `path`: its resolved path (links followed) and, when it exists,
    its device and inode (the same file under another name: a hard link, another case on a
    case-insensitive disk). Two paths name one file when their keys meet."""
    keys: set[tuple] = {("path", os.path.realpath(path))}
    try:
        stat = os.stat(path)
    except (OSError, ValueError):
        return keys
    keys.add(("inode", stat.st_dev, stat.st_ino))
    return keys


def same_file(a: str | Path, b: str | Path) -> bool:
    return not file_keys(a).isdisjoint(file_keys(b))


CHAIN_OPTIONS = ("target", "target_bone", "pole", "pole_bone", "pole_angle", "method")


def chain_arguments(args: argparse.Namespace) -> list[dict]:
    """One dict per --chain (tip, length and each chain option; '' or None when not given).

    Each chain option is given once per --chain, or once for all of them. Without
    --chain: one dict with an empty tip (the panel's chains)."""
    tips = [parse_chain(text) for text in args.chain or []] or [("", 0)]
    if getattr(args, "target", None) and not args.chain:
        raise CliError("--target needs --chain TIP:LENGTH")
    chains = [{"tip": tip, "length": length} for tip, length in tips]
    for option in CHAIN_OPTIONS:
        given = getattr(args, option) or []
        if len(given) not in (0, 1, len(chains)):
            flag = "--" + option.replace("_", "-")
            raise CliError(f"{flag} is given {len(given)} times for {len(chains)} --chain: give it once, or once each")
        for i, chain in enumerate(chains):
            value = given[i if len(given) > 1 else 0] if given else None
            chain[option] = value if option == "pole_angle" else value or ""
    return chains


class Checked(NamedTuple):
    """The arguments, checked before the .blend is opened: a bad one costs no work."""

    chains: list[dict]
    frames: tuple[int, int] | None  # None: the scene's frame range
    output: Path | None
    json: Path | None


def check_json(args: argparse.Namespace) -> Path | None:
    """The --json path, checked first so that an error summary has somewhere to go; never the
    --output file (an error summary would take the place of the baked file)."""
    path = check_output(args.json, "--json")
    if path is not None and args.output and same_file(path, os.path.expanduser(args.output)):
        raise CliError(f"--json {path} is the --output file: give each its own file")
    return path


def check_arguments(args: argparse.Namespace, json_path: Path | None) -> Checked:
    """Every argument that can be checked without the file (`json_path`: check_json's); CliError
    naming the first bad one."""
    chains = chain_arguments(args)
    if args.chain and not all(c["target"] for c in chains):
        raise CliError("--chain needs --target (a chain given on the command line takes nothing from the panel)")
    frames = parse_frames(args.frames) if args.frames else None
    if args.reduce < 0.0:
        raise CliError(f"--reduce must be a tolerance >= 0, got {args.reduce:g}")
    if args.step < 1:
        raise CliError(f"--step must be at least 1, got {args.step}")
    if args.max_error is not None and args.max_error < 0.0:
        raise CliError(f"--max-error must be a distance >= 0, got {args.max_error:g}")
    output = check_output(args.output)
    return Checked(chains=chains, frames=frames, output=output, json=json_path)


def overwritten_input(checked: Checked, inputs: dict[str, str]) -> str:
    """Why --output or --json would overwrite one of `inputs` (what it is -> its path: the .blend
    being baked, the libraries it links), whatever name (a link) it is reached by; '' if neither
    would. The sources are never overwritten."""
    for flag, path in (("--json", checked.json), ("--output", checked.output)):
        for what, source in inputs.items():
            if path is not None and source and same_file(path, source):
                return f"{flag} {path} is {what}: write to another file (the sources are never overwritten)"
    return ""


def file_inputs() -> dict[str, str]:
    """The open file's own inputs that a save could overwrite: itself and its linked libraries."""
    import bpy

    inputs = {f"the .blend being baked ({bpy.data.filepath})": bpy.data.filepath}
    for library in bpy.data.libraries:
        path = bpy.path.abspath(library.filepath)
        inputs[f"the library '{library.name}' the .blend links ({path})"] = path
    return inputs


def extension_package():
    """(The Chain IK package module, whether this run registered it).

    The enabled extension is used as it is; otherwise the package this file
    belongs to is loaded by path (as the tests do) and registered."""
    import bpy

    if hasattr(bpy.types, "CHAINIK_OT_bake"):
        for name, module in list(sys.modules.items()):
            if name.rpartition(".")[2] in (PACKAGE_FALLBACK_NAME, "_chain_ik_cli") and hasattr(module, "register"):
                return module, False
    name = PACKAGE_FALLBACK_NAME if PACKAGE_FALLBACK_NAME not in sys.modules else "_chain_ik_cli"
    init = HERE / "__init__.py"
    spec = importlib.util.spec_from_file_location(name, init, submodule_search_locations=[str(HERE)])
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    module.register()
    return module, True


def run(args: argparse.Namespace, checked: Checked, package) -> dict:
    import bpy

    baking = importlib.import_module(f"{package.__name__}.app.bake")
    job_specs = importlib.import_module(f"{package.__name__}.app.spec")
    grouping = importlib.import_module(f"{package.__name__}.app.groups")
    obj = bpy.data.objects.get(args.armature)
    if obj is None:
        raise CliError(f"no object named '{args.armature}' in {bpy.data.filepath or 'the file'}")
    if obj.type != "ARMATURE":
        raise CliError(f"object '{args.armature}' is a {obj.type.lower()}, not an armature")
    context = bpy.context
    scene = context.scene
    if obj.name not in context.view_layer.objects:
        raise CliError(f"armature '{obj.name}' is not in the view layer of scene '{scene.name}'")
    if obj.mode == "EDIT":
        bpy.ops.object.mode_set(mode="OBJECT")
    chains = checked.chains
    start, end = checked.frames or (scene.frame_start, scene.frame_end)
    options = baking.BakeOptions(
        frame_start=start,
        frame_end=end,
        step=args.step,
        interpolation=args.interpolation,
        reduce=args.reduce > 0.0,
        reduce_tolerance=args.reduce if args.reduce > 0.0 else 1e-3,
    )
    try:
        pairs = [
            pair
            for c in chains
            for pair in job_specs.specs_from_arguments(
                obj,
                c["tip"],
                c["length"],
                c["target"],
                c["target_bone"],
                c["method"],
                -1,
                pole=c["pole"],
                pole_bone=c["pole_bone"],
                pole_angle=None if c["pole_angle"] is None else math.radians(c["pole_angle"]),
            )
        ]
        specs = [dataclasses.replace(spec, use_stretch=spec.use_stretch and not args.no_stretch) for _, spec in pairs]
        specs = grouping.effective(obj, specs)  # as solved: a group's chains with its first chain's solver
        with baking.Progress(context) as progress:
            result = baking.bake(context, obj, specs, options, progress.update)
        # The bake's report is measured on playback at every baked frame.
        playback = max(chain.worst_error for chain in result.chains)
    except ValueError as exc:
        raise CliError(str(exc)) from None
    summary = {
        "frames": result.frames,
        "range": f"{start}-{end} step {args.step}",
        "chains": ", ".join(f"{s.label} ({s.method})" for s in specs),
        "seconds": result.seconds,
        "keys": result.keys,
        "keys_before": result.keys_before,
        "solver_error": result.worst_error,
        "playback_error": playback,
        "playback_seconds": result.measure_seconds,
        # app.bake_report.ChainReport, measured on playback, and the solver's own figure.
        "per_chain": [
            {
                **chain.as_dict(),
                "solver_error": result.per_chain_error.get(spec.tip, 0.0),
                "keys": result.per_chain_keys.get(spec.tip, 0),
                "solve_seconds": result.per_chain_seconds.get(spec.tip, 0.0),
            }
            for spec, chain in zip(specs, result.chains, strict=True)
        ],
        "live_off": list(result.live_off),
        "status": "ok",
    }
    if args.max_error is not None and not playback <= args.max_error:
        summary["status"] = "missed"
        return summary  # not saved: a bake that misses its bound must not replace a good file
    out = check_output(args.output)  # again: the folder may have changed during the bake
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        bpy.ops.wm.save_as_mainfile(filepath=str(out), copy=True)
        summary["output"] = str(out)
    return summary


def print_summary(summary: dict, chain_line) -> None:
    """`chain_line(dict)`: app.bake_report.chain_line."""
    print(
        f"Chain IK bake: {summary['frames']} frames ({summary['range']}) of {summary['chains']}"
        f" in {summary['seconds']:.3f} s, {summary['keys']} keys written (of {summary['keys_before']} solved)"
    )
    print(
        f"Chain IK bake: worst tip error on playback {summary['playback_error']:.3g}"
        f" (solver {summary['solver_error']:.3g})"
    )
    for chain in summary["per_chain"]:
        print(f"Chain IK bake: {chain_line(chain)}")
    if summary["live_off"]:
        print(f"Chain IK bake: Live switched off on {', '.join(summary['live_off'])} (it would override the keys)")
    if "output" in summary:
        print(f"Chain IK bake: saved {summary['output']}")


def write_json(path: Path | None, summary: dict) -> str:
    """The summary as one JSON document, for scripts (tools/bake_shots.py reads it); '' or why
    it could not be written (the path was checked before any work; the disk may still fail)."""
    if path is None:
        return ""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(summary, indent=1), encoding="utf-8")
    except OSError as exc:
        return f"cannot write --json {path}: {exc.strerror or exc}"
    return ""


def main(argv: list[str]) -> int:
    try:
        args = parse_args(argv)
    except SystemExit as exc:  # argparse: usage already printed
        return int(exc.code or 0)
    except CliError as exc:
        print(f"cli.py: error: {exc}", file=sys.stderr)
        return 2
    package = None
    registered_here = False
    json_path = None
    try:
        # Every argument and output path before the file is opened or anything baked.
        json_path = check_json(args)
        checked = check_arguments(args, json_path)
        import bpy

        if not INSIDE_BLENDER:
            blend = args.blend or args.blend_file
            if not blend:
                raise CliError("give the .blend to open: python cli.py scene.blend -- ...")
            if not Path(blend).is_file():
                raise CliError(f"no such file: {blend}")
            bpy.ops.wm.open_mainfile(filepath=str(Path(blend).resolve()))
        clash = overwritten_input(checked, file_inputs())
        if clash:
            json_path = None if clash.startswith("--json") else json_path  # no error summary over a source
            raise CliError(clash)
        package, registered_here = extension_package()
        summary = run(args, checked, package)
        unwritten = write_json(json_path, summary)
        print_summary(summary, importlib.import_module(f"{package.__name__}.app.bake_report").chain_line)
        if summary["status"] == "missed":
            print(
                f"cli.py: error: playback misses by {summary['playback_error']:.3g}, more than --max-error"
                f" {args.max_error:g}; the file was not saved",
                file=sys.stderr,
            )
            return 3
        if unwritten:
            print(f"cli.py: error: {unwritten}", file=sys.stderr)
            return 1
        return 0
    except (CliError, RuntimeError) as exc:  # RuntimeError: bpy operators (open/save) report failures so
        print(f"cli.py: error: {exc}", file=sys.stderr)
        write_json(json_path, {"status": "error", "error": str(exc)})
        return 1
    finally:
        if registered_here:
            package.unregister()


def exit_with(status: int) -> None:
    sys.stdout.flush()
    sys.stderr.flush()
    # The 4.x bpy wheel can crash at interpreter exit after add-on classes were
    # registered (see tests/blender/conftest.py): skip finalisation there. Inside
    # Blender, os._exit is also the one way to return a status from --python.
    import bpy

    if INSIDE_BLENDER and not bpy.app.background:
        return  # run from an interactive session: leave Blender open
    if INSIDE_BLENDER or status != 0 or bpy.app.version < (5, 0, 0):
        os._exit(status)
    sys.exit(status)


if __name__ == "__main__":
    exit_with(main(sys.argv))
