"""cli.py's arguments: parsed, and every one checked before the .blend is opened, so that a bad
one costs no work. The shot list uses the same parsers (TIP:LENGTH, START-END) so that it
accepts exactly what cli.py does."""

from __future__ import annotations

import argparse
import math
import os
import re
from pathlib import Path
from typing import NamedTuple

from .aim_axis_names import AIM_AXIS_NAMES
from .frame_limit import check_frames
from .method_names import METHOD_NAMES
from .output_paths import check_output, same_file

INTERPOLATIONS = ("BEZIER", "LINEAR", "CONSTANT")
CHAIN_OPTIONS = (
    "target", "target_bone", "pole", "pole_bone", "pole_angle", "softness", "method", "aim_axis", "aim_spread",
    "move_root", "root_stiffness",
)  # fmt: skip
# None when not given (the panel's); the others ''
NUMBER_OPTIONS = ("pole_angle", "softness", "aim_spread", "move_root", "root_stiffness")


class CliError(Exception):
    """A user error: printed as one line; exit status 2 for an argument refused before the file is
    opened, 1 after (cli.main)."""


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


def share(text: str) -> float:
    """argparse type: soft IK's softness, a share of the chain's reach in [0, 1)."""
    value = finite(text)
    if not 0.0 <= value < 1.0:
        raise argparse.ArgumentTypeError(f"must be a share of the chain's reach within 0..1 (below 1), got {text!r}")
    return value


def spread(text: str) -> float:
    """argparse type: an aim's spread over the chain, within 0..1."""
    value = finite(text)
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"must be within 0..1, got {text!r}")
    return value


def stiffness(text: str) -> float:
    """argparse type: a movable root's stiffness within 0..1."""
    value = finite(text)
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"must be within 0..1 (0 moves the root most, 1 never), got {text!r}")
    return value


def on_off(text: str) -> bool:
    """argparse type: on/off (also true/false, yes/no, 1/0)."""
    word = text.strip().lower()
    if word in ("on", "true", "yes", "1"):
        return True
    if word in ("off", "false", "no", "0"):
        return False
    raise argparse.ArgumentTypeError(f"must be on or off, got {text!r}")


# The usage line shows how the run is started, the '--' included; the options follow in --help.
USAGE_TAIL = "--armature NAME [--chain TIP:LENGTH --target NAME] [options]"
USAGE_STANDALONE = f"python %(prog)s (SCENE.blend | --blend SCENE.blend) [--] {USAGE_TAIL}"
USAGE_INSIDE_BLENDER = f"blender --background SCENE.blend --python %(prog)s -- {USAGE_TAIL}"


def parser(standalone: bool, epilog: str = "") -> argparse.ArgumentParser:
    """`standalone`: run by the bpy wheel's Python, which opens the .blend itself. `epilog`: shown
    after the options by --help as written (cli.py's how-to-run and exit statuses)."""
    p = argparse.ArgumentParser(
        prog="cli.py",
        usage=USAGE_STANDALONE if standalone else USAGE_INSIDE_BLENDER,
        description="Bake Chain IK chains to rotation keys, headless.",
        epilog=epilog or None,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        allow_abbrev=False,
    )
    if standalone:
        p.add_argument("blend_file", nargs="?", help="the .blend to open (or --blend)")
        p.add_argument("--blend", help="the .blend to open")
    p.add_argument("--armature", required=True, help="armature object name")
    # Repeat --chain for several chains; the chain options then come once each (the i-th --target
    # goes with the i-th --chain) or once for all. A name starting with '-': --target=-Goal.
    p.add_argument("--chain", action="append", help="TIP:LENGTH (default: the armature's chains from the panel)")
    p.add_argument("--target", action="append", help="target object name (with --chain)")
    p.add_argument("--target-bone", action="append", help="bone of an armature target")
    p.add_argument("--pole", action="append", help="pole target object name (with --chain)")
    p.add_argument("--pole-bone", action="append", help="bone of an armature pole target")
    p.add_argument("--pole-angle", action="append", type=finite, metavar="DEG", help="pole angle in degrees")
    p.add_argument(
        "--softness",
        action="append",
        type=share,
        metavar="SHARE",
        help="soft IK against the knee pop: a share of the chain's reach, 0 exact (default: the panel's;"
        " without --chain: over every chain's)",
    )
    p.add_argument(
        "--move-root",
        action="append",
        type=on_off,
        metavar="on|off",
        help="the unit's top bone may move to reach (the hips follow the hand; pins hold); per --chain: the"
        " chain leading its group decides (default: the panel's; without --chain: over every chain's)",
    )
    p.add_argument(
        "--root-stiffness",
        action="append",
        type=stiffness,
        metavar="S",
        help="with --move-root: 0 moves the root most, 1 never (default: the panel's, or 0.5)",
    )
    p.add_argument("--method", action="append", help=f"solver: {', '.join(METHOD_NAMES)} (default: the panel's)")
    p.add_argument(
        "--aim-axis",
        action="append",
        choices=AIM_AXIS_NAMES,
        help="aim this axis of the tip bone at the target instead of reaching it (NONE: reach; default: the"
        " panel's; without --chain: over every chain's); write --aim-axis=-Z for a minus sign",
    )
    p.add_argument(
        "--aim-spread",
        action="append",
        type=spread,
        metavar="SPREAD",
        help="an aim's turn over the chain: 0 all on the tip bone, 1 evenly (default: the panel's)",
    )
    p.add_argument(
        "--no-stretch",
        action="store_true",
        help="bones with IK Stretch do not lengthen to reach (default: they do, on chains with Stretch on)",
    )
    p.add_argument("--frames", help="START-END, inclusive (default: the scene's frame range); --frames=-10-20")
    p.add_argument("--step", type=int, default=1, help="key every STEP frames (default 1)")
    p.add_argument("--interpolation", default="BEZIER", choices=INTERPOLATIONS)
    p.add_argument("--reduce", type=finite, default=0.0, metavar="TOL", help="fewer keys: tips within TOL of the bake")
    p.add_argument("--output", help="save the baked file here (.blend)")
    p.add_argument(
        "--final-output",
        metavar="PATH",
        help="where the caller renames --output to (tools/bake_shots.py): checked as --output is, never written",
    )
    p.add_argument(
        "--max-error", type=finite, metavar="E", help="exit with status 3, not saving, when playback misses by more"
    )
    p.add_argument("--json", metavar="PATH", help="also write the summary to this JSON file")
    p.add_argument(
        "--contacts",
        action="store_true",
        help="key the panel chains' foot contacts from the motion (Detect Contacts), then bake honouring them",
    )
    return p


def parse_args(argv: list[str], inside_blender: bool, epilog: str = "") -> argparse.Namespace:
    """`argv`: sys.argv. Under Blender cli.py's arguments follow '--'; with the wheel's Python
    the '--' is optional. `epilog`: the text --help ends with."""
    if "--" in argv:
        i = argv.index("--")
        before, after = argv[:i], argv[i + 1 :]
    else:
        before, after = argv, []
    if inside_blender:
        if "--" not in argv:
            # Blender would read them as its own arguments (or as files to open).
            raise CliError(
                "put cli.py's arguments after '--': blender --background scene.blend --python cli.py -- --armature ..."
            )
        return parser(False, epilog).parse_args(after)
    return parser(True, epilog).parse_args(before[1:] + after)


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
    """START-END (or one frame), within Blender's limit; either may be negative: -10-20, -20--5
    (write --frames=-10-20, or argparse takes a leading '-' for an option)."""
    match = re.fullmatch(r"\s*(-?\d+)\s*(?:-\s*(-?\d+)\s*)?", text)
    if match is None:
        raise CliError(f"--frames must be START-END, got '{text}'")
    a = int(match.group(1))
    b = int(match.group(2)) if match.group(2) is not None else a
    if b < a:
        raise CliError(f"--frames end {b} is before start {a}")
    try:
        check_frames(a, b)
    except ValueError as exc:
        raise CliError(f"--frames {text.strip()}: {exc}") from None
    return a, b


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
            chain[option] = value if option in NUMBER_OPTIONS else value or ""
    return chains


class Checked(NamedTuple):
    """The arguments, checked before the .blend is opened: a bad one costs no work."""

    blend: Path | None  # the .blend to open (the wheel's Python); None: Blender opened it
    chains: list[dict]
    frames: tuple[int, int] | None  # None: the scene's frame range
    output: Path | None
    final_output: Path | None
    json: Path | None

    def writes(self) -> dict[str, Path | None]:
        """Every file the run writes, or that its output becomes (flag -> path)."""
        return {"--json": self.json, "--output": self.output, "--final-output": self.final_output}


def _path(text: str | None, flag: str) -> Path | None:
    try:
        return check_output(text, flag)
    except ValueError as exc:
        raise CliError(str(exc)) from None


def check_json(args: argparse.Namespace) -> Path | None:
    """The --json path, checked first so that an error summary has somewhere to go; never the
    --output file (an error summary would take the place of the baked file)."""
    path = _path(args.json, "--json")
    for flag, other in (("--output", args.output), ("--final-output", args.final_output)):
        if path is not None and other and same_file(path, os.path.expanduser(other)):
            raise CliError(f"--json {path} is the {flag} file: give each its own file")
    return path


def _blend(args: argparse.Namespace) -> Path | None:
    """The .blend the wheel's Python opens: given once, an existing file."""
    if not hasattr(args, "blend"):
        return None  # inside Blender: Blender opened it
    if args.blend and args.blend_file:
        raise CliError(f"the .blend is given twice ({args.blend_file} and --blend {args.blend}): give it once")
    blend = args.blend or args.blend_file
    if not blend:
        raise CliError("give the .blend to open: python cli.py scene.blend -- ...")
    if Path(blend).is_dir():
        raise CliError(f"{blend} is a folder: give the .blend file to open")
    if not Path(blend).is_file():
        raise CliError(f"no such file: {blend}")
    return Path(blend).resolve()


def _names(args: argparse.Namespace, chains: list[dict]) -> None:
    """Names and methods: none given empty where it names something, every method known."""
    if not args.armature:
        raise CliError("--armature is empty: name the armature object")
    if args.chain and not all(c["target"] for c in chains):
        if args.target and "" in args.target:
            raise CliError("--target is empty: name the target object")
        raise CliError("--chain needs --target (a chain given on the command line takes nothing from the panel)")
    for method in args.method or []:
        if method and method not in METHOD_NAMES:
            raise CliError(f"--method: unknown method '{method}' (choose one of {', '.join(METHOD_NAMES)})")


def check_arguments(args: argparse.Namespace, json_path: Path | None) -> Checked:
    """Every argument that can be checked without the file (`json_path`: check_json's); CliError
    naming the first bad one."""
    chains = chain_arguments(args)
    _names(args, chains)
    frames = parse_frames(args.frames) if args.frames else None
    if args.reduce < 0.0:
        raise CliError(f"--reduce must be a tolerance >= 0, got {args.reduce:g}")
    if args.step < 1:
        raise CliError(f"--step must be at least 1, got {args.step}")
    if args.max_error is not None and args.max_error < 0.0:
        raise CliError(f"--max-error must be a distance >= 0, got {args.max_error:g}")
    if args.final_output is not None and args.output is None:
        raise CliError("--final-output needs --output (the file renamed to it)")
    output = _path(args.output, "--output")
    final = _path(args.final_output, "--final-output")
    for flag, path in (("--output", output), ("--final-output", final)):
        if path is not None and path.suffix != ".blend":  # as a shot list's (user14: x.txt was saved)
            raise CliError(f"{flag} {path} does not end in .blend: the baked scene is saved as a .blend file")
    blend = _blend(args)
    return Checked(blend=blend, chains=chains, frames=frames, output=output, final_output=final, json=json_path)
