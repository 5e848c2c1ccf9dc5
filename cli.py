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
largest jump); --json PATH writes it as JSON too. Exit status: 0 baked, 1 an
error (one-line message), 2 bad arguments, 3 playback missed by more than
--max-error (nothing saved). Without --output the file is not saved. Bones with IK
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

# Run by Blender's --python, bpy is already imported; run by a plain Python, it is not yet.
INSIDE_BLENDER = "bpy" in sys.modules
HERE = Path(__file__).resolve().parent
PACKAGE_FALLBACK_NAME = "chain_ik"


class CliError(Exception):
    """A user error: printed as one line, exit status 1."""


def method_names() -> str:
    """The solver registry's method names, for the help (it needs numpy: without it, a pointer)."""
    try:
        if str(HERE.parent) not in sys.path:
            sys.path.append(str(HERE.parent))
        registry = importlib.import_module(f"{HERE.name}.solvers.registry")
    except ImportError:
        return "a name from the panel's Solver list"
    return ", ".join(registry.REGISTRY)


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
    p.add_argument("--pole-angle", action="append", type=float, metavar="DEG", help="pole angle in degrees")
    p.add_argument("--method", action="append", help=f"solver: {method_names()} (default: the panel's)")
    p.add_argument(
        "--no-stretch",
        action="store_true",
        help="bones with IK Stretch do not lengthen to reach (default: they do, on chains with Stretch on)",
    )
    p.add_argument("--frames", help="START-END, inclusive (default: the scene's frame range); --frames=-10-20")
    p.add_argument("--step", type=int, default=1, help="key every STEP frames (default 1)")
    p.add_argument("--interpolation", default="BEZIER", choices=("BEZIER", "LINEAR", "CONSTANT"))
    p.add_argument("--reduce", type=float, default=0.0, metavar="TOL", help="fewer keys: tips within TOL of the bake")
    p.add_argument("--output", help="save the baked file here (.blend)")
    p.add_argument(
        "--max-error", type=float, metavar="E", help="exit with status 3, not saving, when playback misses by more"
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


def check_output(text: str | None) -> Path | None:
    """The --output path, resolved, or CliError before any work: empty, a directory, a parent
    that is a file, or a folder this process cannot write in (tried with a temporary file)."""
    if text is None:
        return None
    if not text.strip():
        raise CliError("--output is empty: give the .blend file to save")
    out = Path(text).expanduser().resolve()
    if out.is_dir():
        raise CliError(f"--output {out} is a directory: give the .blend file to save in it")
    folder = out.parent
    while not folder.exists():  # the missing folders are made on saving
        folder = folder.parent
    if not folder.is_dir():
        raise CliError(f"--output {out}: {folder} is a file, not a folder")
    if out.exists() and not os.access(out, os.W_OK):
        raise CliError(f"--output {out} exists and is read-only")
    try:
        tempfile.TemporaryFile(dir=folder).close()
    except OSError as exc:
        raise CliError(f"--output {out}: cannot write in {folder} ({exc.strerror or exc})") from None
    return out


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


def run(args: argparse.Namespace, package) -> dict:
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
    chains = chain_arguments(args)
    if args.chain and not all(c["target"] for c in chains):
        raise CliError("--chain needs --target (a chain given on the command line takes nothing from the panel)")
    start, end = parse_frames(args.frames) if args.frames else (scene.frame_start, scene.frame_end)
    if args.reduce < 0.0:
        raise CliError(f"--reduce must be a tolerance >= 0, got {args.reduce:g}")
    if args.step < 1:
        raise CliError(f"--step must be at least 1, got {args.step}")
    if args.max_error is not None and not args.max_error >= 0.0:
        raise CliError(f"--max-error must be a distance >= 0, got {args.max_error:g}")
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
    out = check_output(args.output)
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


def write_json(path: str | None, summary: dict) -> None:
    """The summary as one JSON document, for scripts (tools/bake_shots.py reads it)."""
    if not path:
        return
    Path(path).write_text(json.dumps(summary, indent=1), encoding="utf-8")


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
    try:
        check_output(args.output)  # before the file is opened or anything baked
        import bpy

        if not INSIDE_BLENDER:
            blend = args.blend or args.blend_file
            if not blend:
                raise CliError("give the .blend to open: python cli.py scene.blend -- ...")
            if not Path(blend).is_file():
                raise CliError(f"no such file: {blend}")
            bpy.ops.wm.open_mainfile(filepath=str(Path(blend).resolve()))
        package, registered_here = extension_package()
        summary = run(args, package)
        write_json(args.json, summary)
        print_summary(summary, importlib.import_module(f"{package.__name__}.app.bake_report").chain_line)
        if summary["status"] == "missed":
            print(
                f"cli.py: error: playback misses by {summary['playback_error']:.3g}, more than --max-error"
                f" {args.max_error:g}; the file was not saved",
                file=sys.stderr,
            )
            return 3
        return 0
    except (CliError, RuntimeError) as exc:  # RuntimeError: bpy operators (open/save) report failures so
        print(f"cli.py: error: {exc}", file=sys.stderr)
        write_json(args.json, {"status": "error", "error": str(exc)})
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
