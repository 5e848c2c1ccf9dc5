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
progress line about every 10% (once the bake has run a second) and a summary
(frames, seconds, keys written, worst tip error on playback, and per chain: frames
that missed, worst error, largest jump, and the libraries the file links); --json
PATH writes it as JSON too. Every argument (headless/cli_arguments.py: numbers,
names, methods, frames within Blender's limit, the .blend given once) and output path is checked before
the file is opened; once it is open, before anything is baked, --output,
--final-output and --json are checked not to be the opened .blend or a library it
links. Exit status: 0 baked, 1 an error once the file is open (one-line message), 2 bad arguments
(a number that is not finite too), 3 playback missed by more than --max-error
(nothing saved). Without --output the file is not saved. Bones with IK Stretch
lengthen to reach (Y scale keys on them) unless --no-stretch. --softness SHARE: soft IK against
the knee pop (a share of each chain's reach; per --chain like --pole-angle, without --chain over
every panel chain's Softness). --aim-axis AXIS (NONE, +X ... -Z; write --aim-axis=-Z) and
--aim-spread SPREAD: aim the tip bone's axis at the target instead of reaching it (the same way).
--move-root on|off, --root-stiffness S: a movable root (the unit's top bone moves to reach, pins
hold; its location keyed where it moved), given as --softness is.
--contacts: Detect Contacts on the panel chains first (their feet's Contact keyed from the
motion, above the armature's Ground), then the bake plants the feet on them; the per-chain
summary gains the contact figures.
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib
import importlib.util
import json
import math
import os
import sys
from pathlib import Path

# Run by Blender's --python, bpy is already imported; run by a plain Python, it is not yet.
INSIDE_BLENDER = "bpy" in sys.modules
HERE = Path(__file__).resolve().parent


def _headless(module: str):
    """headless/`module`.py beside this file. cli.py runs as a plain script (no package, and
    Blender's --python does not put its folder on sys.path), so the `headless` package is loaded
    by path under a private name; its modules import each other relatively."""
    name = "_chain_ik_cli_headless"
    if name not in sys.modules:
        init = HERE / "headless" / "__init__.py"
        spec = importlib.util.spec_from_file_location(name, init, submodule_search_locations=[str(init.parent)])
        package = importlib.util.module_from_spec(spec)
        sys.modules[name] = package
        spec.loader.exec_module(package)
    return importlib.import_module(f"{name}.{module}")


arguments = _headless("cli_arguments")
output_paths = _headless("output_paths")
library_scan = _headless("library_scan")
CliError = arguments.CliError


def extension_package():
    """(The Chain IK package module, whether this run registered it).

    The registered extension is used as it is, whatever its package is called (an installed
    extension loads as `bl_ext.<repository>.<id>`): found by its bake operator's class. Otherwise
    the package this file belongs to is loaded by path (as the tests do) and registered."""
    import bpy

    for cls in bpy.types.Operator.__subclasses__():
        if getattr(cls, "bl_idname", "") == "chain_ik.bake" and cls.is_registered:
            package = cls.__module__.rpartition(".operators.")[0]
            if package in sys.modules:
                return sys.modules[package], False
    name = "_chain_ik_cli"
    init = HERE / "__init__.py"
    spec = importlib.util.spec_from_file_location(name, init, submodule_search_locations=[str(HERE)])
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    module.register()
    return module, True


def run(args: argparse.Namespace, checked, package) -> dict:
    """Bake as `args` and `checked` (cli_arguments.Checked) say; the summary."""
    import bpy

    baking = importlib.import_module(f"{package.__name__}.app.bake")
    job_specs = importlib.import_module(f"{package.__name__}.app.spec")
    grouping = importlib.import_module(f"{package.__name__}.app.spec.groups")
    scope = importlib.import_module(f"{package.__name__}.app.spec.scope")
    obj = bpy.data.objects.get(args.armature)
    if obj is None:
        raise CliError(f"no object named '{args.armature}' in {bpy.data.filepath or 'the file'}")
    if obj.type != "ARMATURE":
        kind = obj.type.lower().replace("_", " ")
        article = "an" if kind[0] in "aeiou" else "a"
        raise CliError(f"object '{args.armature}' is {article} {kind}, not an armature")
    context = bpy.context
    scene = context.scene
    if obj.name not in context.view_layer.objects:
        raise CliError(f"armature '{obj.name}' is not in the view layer of scene '{scene.name}'")
    if obj.mode == "EDIT":
        bpy.ops.object.mode_set(mode="OBJECT")
    chains = checked.chains
    start, end = checked.frames or (scene.frame_start, scene.frame_end)
    detected = {}
    if args.contacts:  # Detect Contacts on the panel chains in scope, then the bake honours them
        if args.chain:
            raise CliError("--contacts keys the panel chains' Contact: leave --chain out")
        found = importlib.import_module(f"{package.__name__}.app.spec.contacts")
        try:
            result = found.detect(context, obj, start, end)
        except ValueError as exc:
            raise CliError(str(exc)) from None
        detected = {c.name: {"contacts": c.contacts, "planted_frames": c.planted} for c in result.chains}
        print("Chain IK contacts: " + ", ".join(f"'{n}' {d['contacts']}" for n, d in detected.items()))
        for warning in result.warnings:
            print(f"Chain IK contacts: warning: {warning}")
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
                softness=c["softness"],
                aim_axis=c["aim_axis"] or None,
                aim_spread=c["aim_spread"],
                move_root=c["move_root"],
                root_stiffness=c["root_stiffness"],
            )
        ]
        specs = [dataclasses.replace(spec, use_stretch=spec.use_stretch and not args.no_stretch) for _, spec in pairs]
        specs = grouping.effective(obj, specs)  # as solved: a group's chains with its first chain's solver
        with baking.Progress(context) as progress:
            result = baking.bake(context, obj, specs, options, progress.update)
        # The bake's report is measured on playback at every baked frame.
        playback = max(chain.worst_error for chain in result.chains)
    except scope.NoChains:  # the operator's message names its arguments; here the flags
        raise CliError(
            f"no chains: armature '{obj.name}' has none in the Chain IK panel; give --chain TIP:LENGTH --target NAME"
        ) from None
    except ValueError as exc:
        raise CliError(str(exc)) from None
    summary = {
        "frames": result.frames,
        "range": f"{start}-{end} step {args.step}",
        "chains": ", ".join(f"{s.label} ({s.method})" for s in specs),
        "seconds": result.seconds,
        "keys": result.keys,
        "keys_before": result.keys_before,
        "reduced": result.reduced,
        "solver_error": result.worst_error,
        "playback_error": playback,
        "playback_seconds": result.measure_seconds,
        # app.bake.bake_report.ChainReport, measured on playback, and the solver's own figure.
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
        "detected": detected,  # --contacts: per chain, the contacts Detect Contacts keyed
        "root_moved": dict(result.root_moved),  # Move Root: keyed root bone -> largest head move on playback
        "taken_back": result.taken_back,  # a re-bake with contacts: what it took back to the motion ('' if none)
        "status": "ok",
    }
    if args.max_error is not None and not playback <= args.max_error:
        summary["status"] = "missed"
        return summary  # not saved: a bake that misses its bound must not replace a good file
    try:
        out = output_paths.check_output(args.output)  # again: the folder may have changed during the bake
    except ValueError as exc:
        raise CliError(str(exc)) from None
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        bpy.ops.wm.save_as_mainfile(filepath=str(out), copy=True)
        summary["output"] = str(out)
    return summary


def print_summary(summary: dict, report) -> None:
    """`report`: the module app.bake.bake_report (its lines)."""
    print(
        f"Chain IK bake: {summary['frames']} frames ({summary['range']}) of {summary['chains']}"
        f" in {summary['seconds']:.3f} s, {summary['keys']} keys written"
        + (f" (reduced from {summary['keys_before']})" if summary["reduced"] else "")
    )
    print(
        f"Chain IK bake: worst tip error on playback {summary['playback_error']:.3g}"
        f" (solver {summary['solver_error']:.3g})"
    )
    for chain in summary["per_chain"]:
        print(f"Chain IK bake: {report.chain_line(chain)}")
    for name, moved in summary.get("root_moved", {}).items():
        print(f"Chain IK bake: {report.moved_root_line(name, moved)}")
    if summary.get("taken_back"):
        print(f"Chain IK bake: {summary['taken_back']}")
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
        args = arguments.parse_args(argv, INSIDE_BLENDER, epilog=(__doc__ or "\n").split("\n", 1)[1].strip())
    except SystemExit as exc:  # argparse: usage already printed
        return int(exc.code or 0)
    except CliError as exc:
        print(f"cli.py: error: {exc}", file=sys.stderr)
        return 2
    package = None
    registered_here = False
    json_path = None
    libraries = None  # what the opened file links, once it is open: reported in the JSON summary
    status = 2  # a bad argument (as argparse's own errors) until every argument is checked
    try:
        # Every argument and output path before the file is opened or anything baked.
        json_path = arguments.check_json(args)
        checked = arguments.check_arguments(args, json_path)
        status = 1  # from here on an error of the file or the bake
        import bpy

        if checked.blend is not None:
            bpy.ops.wm.open_mainfile(filepath=str(checked.blend))
        libraries = library_scan.linked_libraries()
        reads = {f"the .blend being baked ({bpy.data.filepath})": bpy.data.filepath}
        reads.update({f"a library the .blend links ({path})": path for path in libraries})
        clash = output_paths.overwritten(checked.writes(), reads)
        if clash:
            json_path = None if clash.startswith("--json") else json_path  # no error summary over a source
            raise CliError(clash)
        package, registered_here = extension_package()
        summary = {**run(args, checked, package), "libraries": libraries}
        unwritten = write_json(json_path, summary)
        print_summary(summary, importlib.import_module(f"{package.__name__}.app.bake.bake_report"))
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
        opened = {} if libraries is None else {"libraries": libraries}
        write_json(json_path, {"status": "error", "error": str(exc), **opened})
        return status
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
