"""Bake Chain IK headless.

Inside Blender (the .blend is opened by Blender itself):
    blender --background scene.blend --python cli.py -- --armature Rig --chain hand.L:3 --target Goal \\
        --method triangulation --frames 1-250 [--step 1] [--output baked.blend] [--pole Knee --pole-angle -90]
With the `bpy` wheel's Python (the script opens the .blend):
    python cli.py scene.blend -- --armature Rig --chain hand.L:3 --target Goal --frames 1-250 --output baked.blend
    python cli.py --blend scene.blend -- ...

Without --chain, the armature's chains from the Chain IK panel are baked. The
extension is used as installed when it is enabled; otherwise the package this
file belongs to is loaded by path and registered for the run. Prints a progress
line about every 10% and a summary (frames, seconds, keys written, worst tip
error on playback); exits non-zero with a message on any error. Without
--output the file is not saved.
"""

from __future__ import annotations

import argparse
import importlib.util
import math
import os
import re
import sys
import tempfile
import time
from pathlib import Path

# Run by Blender's --python, bpy is already imported; run by a plain Python, it is not yet.
INSIDE_BLENDER = "bpy" in sys.modules
HERE = Path(__file__).resolve().parent
PACKAGE_FALLBACK_NAME = "chain_ik"


class CliError(Exception):
    """A user error: printed as one line, exit status 1."""


def parser(standalone: bool) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="cli.py", description="Bake Chain IK chains to rotation keys, headless.", allow_abbrev=False
    )
    if standalone:
        p.add_argument("blend_file", nargs="?", help="the .blend to open (or --blend)")
        p.add_argument("--blend", help="the .blend to open")
    p.add_argument("--armature", required=True, help="armature object name")
    p.add_argument("--chain", help="TIP:LENGTH (default: the armature's chains from the panel)")
    p.add_argument("--target", help="target object name (with --chain)")
    p.add_argument("--target-bone", default="", help="bone of an armature target")
    p.add_argument("--pole", default="", help="pole target object name (with --chain)")
    p.add_argument("--pole-bone", default="", help="bone of an armature pole target")
    p.add_argument("--pole-angle", type=float, default=None, metavar="DEG", help="pole angle in degrees")
    p.add_argument("--method", default="", help="solver: triangulation, fabrik, ccd, jacobian (default: the panel's)")
    p.add_argument("--frames", help="START-END, inclusive (default: the scene's frame range); --frames=-10-20")
    p.add_argument("--step", type=int, default=1, help="key every STEP frames (default 1)")
    p.add_argument("--interpolation", default="BEZIER", choices=("BEZIER", "LINEAR", "CONSTANT"))
    p.add_argument("--reduce", type=float, default=0.0, metavar="TOL", help="drop keys reproduced within TOL")
    p.add_argument("--output", help="save the baked file here (.blend)")
    return p


def split_argv(argv: list[str]) -> tuple[list[str], list[str]]:
    """(arguments before '--', arguments after it)."""
    if "--" in argv:
        i = argv.index("--")
        return argv[:i], argv[i + 1 :]
    return [], argv


def parse_args(argv: list[str]) -> argparse.Namespace:
    before, after = split_argv(argv)
    if INSIDE_BLENDER:
        return parser(False).parse_args(after)
    return parser(True).parse_args(before[1:] + after)


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

    bake_run = importlib.import_module(f"{package.__name__}.operators.bake_run")
    ops_run = importlib.import_module(f"{package.__name__}.operators.run")
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
    tip, length = parse_chain(args.chain) if args.chain else ("", 0)
    if args.target and not args.chain:
        raise CliError("--target needs --chain TIP:LENGTH")
    if args.chain and not args.target and obj.chain_ik.active is None:
        raise CliError("--chain needs --target (the armature has no panel chain to take it from)")
    start, end = parse_frames(args.frames) if args.frames else (scene.frame_start, scene.frame_end)
    if args.reduce < 0.0:
        raise CliError(f"--reduce must be a tolerance >= 0, got {args.reduce:g}")
    if args.step < 1:
        raise CliError(f"--step must be at least 1, got {args.step}")
    options = bake_run.BakeOptions(
        frame_start=start,
        frame_end=end,
        step=args.step,
        interpolation=args.interpolation,
        reduce=args.reduce > 0.0,
        reduce_tolerance=args.reduce if args.reduce > 0.0 else 1e-3,
    )
    try:
        angle = None if args.pole_angle is None else math.radians(args.pole_angle)
        pairs = ops_run.specs_from_arguments(
            obj,
            tip,
            length,
            args.target or "",
            args.target_bone,
            args.method,
            -1,
            pole=args.pole,
            pole_bone=args.pole_bone,
            pole_angle=angle,
        )
        specs = [spec for _, spec in pairs]
        frames = bake_run.bake_frames(options)
        progress = bake_run.Progress(context)
        result = bake_run.bake(context, obj, specs, options, progress.update)
        started = time.perf_counter()
        playback = bake_run.playback_error(context, obj, specs, frames)
        playback_seconds = time.perf_counter() - started
    except ValueError as exc:
        raise CliError(str(exc)) from None
    summary = {
        "frames": result.frames,
        "range": f"{start}-{end} step {args.step}",
        "chains": ", ".join(f"{s.tip} ({s.method})" for s in specs),
        "seconds": result.seconds,
        "keys": result.keys,
        "solver_error": result.worst_error,
        "playback_error": playback,
        "playback_seconds": playback_seconds,
    }
    out = check_output(args.output)
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        bpy.ops.wm.save_as_mainfile(filepath=str(out), copy=True)
        summary["output"] = str(out)
    return summary


def print_summary(summary: dict) -> None:
    print(
        f"Chain IK bake: {summary['frames']} frames ({summary['range']}) of {summary['chains']}"
        f" in {summary['seconds']:.3f} s, {summary['keys']} keys written"
    )
    print(
        f"Chain IK bake: worst tip error on playback {summary['playback_error']:.3g}"
        f" (solver {summary['solver_error']:.3g})"
    )
    if "output" in summary:
        print(f"Chain IK bake: saved {summary['output']}")


def main(argv: list[str]) -> int:
    try:
        args = parse_args(argv)
    except SystemExit as exc:  # argparse: usage already printed
        return int(exc.code or 0)
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
        print_summary(run(args, package))
        return 0
    except CliError as exc:
        print(f"cli.py: error: {exc}", file=sys.stderr)
        return 1
    except RuntimeError as exc:  # bpy operators (open/save) report failures this way
        print(f"cli.py: error: {exc}", file=sys.stderr)
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
