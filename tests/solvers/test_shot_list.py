"""headless/shot_list.py, the one check of a shot list, and tools/bake_shots.py's refusals:
standard library only (no bpy, no Blender run). A refused list starts nothing: the tool is given
a stand-in launcher (launcher_standin.py) that would leave a mark if a shot ran, and the mark is
never made."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from launcher_standin import standin

from headless import flamenco_submission, shot_list

ROOT = Path(__file__).resolve().parents[2]
TOOL = ROOT / "tools" / "bake_shots.py"


def _toml(value) -> str:
    if isinstance(value, float):
        return {float("inf"): "inf", float("-inf"): "-inf"}.get(value, "nan" if value != value else repr(value))
    if isinstance(value, list):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    return json.dumps(value)


def write_list(path: Path, shots: list[dict], defaults: dict | None = None) -> Path:
    lines = ["[defaults]", *(f"{k} = {_toml(v)}" for k, v in (defaults or {"armature": "Rig"}).items())]
    for shot in shots:
        lines.append("[[shots]]")
        lines += [f"{k} = {_toml(v)}" for k, v in shot.items() if k != "chains"]
        for chain in shot.get("chains", []):
            lines.append("[[shots.chains]]")
            lines += [f"{k} = {_toml(v)}" for k, v in chain.items()]
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.fixture
def show(tmp_path) -> Path:
    """Two shot files (their bytes are what data loss would change) and a folder for outputs."""
    for name in ("sh010", "sh020"):
        (tmp_path / f"{name}.blend").write_bytes(b"BLENDER-v500 " + name.encode())
    (tmp_path / "baked").mkdir()
    return tmp_path


def _problems(path: Path) -> str:
    with pytest.raises(shot_list.ShotListError) as error:
        shot_list.load(path)
    return str(error.value)


def chain(method: str) -> dict:
    return {"chain": "hand:2", "target": "Goal", "method": method}


def _bake_shots(*args, cwd: Path, libraries: dict | None = None) -> subprocess.CompletedProcess:
    """bake_shots.py with a stand-in launcher that leaves a mark if a shot runs; `libraries`: what
    it lists for each blend (launcher_standin.py)."""
    return subprocess.run([sys.executable, str(TOOL), *map(str, args), "--python", str(standin(cwd, libraries))],
                          capture_output=True, text=True, timeout=60, cwd=cwd)  # fmt: skip


def _link(path: Path, target: Path) -> Path:
    path.symlink_to(target)
    return path


def _linked_output(d: Path) -> str:
    _link(d / "baked" / "l.blend", d / "sh020.blend")
    return "baked/l.blend"


def _linked_folder(d: Path) -> str:
    _link(d / "alias", d)
    return "alias/sh010.blend"


def _hard_link(d: Path) -> str:
    os.link(d / "sh020.blend", d / "baked" / "h.blend")
    return "baked/h.blend"


def _link_to_the_list(d: Path) -> str:
    _link(d / "baked" / "t.blend", d / "shots.toml")
    return "baked/t.blend"


def _linked_out_folder(d: Path) -> str:
    _link(d / "out", d / "baked")
    return "out/o.blend"


OWN = "shot 1 ('a'): output {d}/%s is the shot's own blend file: it would be overwritten"
# Each case: (shot 1's output, shot 2's output: text, or a function making it in the show folder; the problem).
CLASHES = {
    "another shot's blend": ("sh020.blend", "baked/b.blend", "shot 1 ('a'): output {d}/sh020.blend is shot 2"
                             " ('b')'s blend"),
    "its own blend": ("sh010.blend", "baked/b.blend", OWN % "sh010.blend"),
    "its own blend, by another spelling": ("baked/../sh010.blend", "baked/b.blend", OWN % "sh010.blend"),
    "its own blend, absolute": (lambda d: str(d / "sh010.blend"), "baked/b.blend", OWN % "sh010.blend"),
    "a link to another shot's blend": (_linked_output, "baked/b.blend", "{d}/baked/l.blend is shot 2 ('b')'s blend"),
    "in a linked folder, its own blend": (_linked_folder, "baked/b.blend", OWN % "alias/sh010.blend"),
    "a hard link to another shot's blend": (_hard_link, "baked/b.blend", "{d}/baked/h.blend is shot 2 ('b')'s blend"),
    "a link to the shot list": (_link_to_the_list, "baked/b.blend", "{d}/baked/t.blend is the shot list itself"),
    "one output for two shots": ("baked/o.blend", "baked/o.blend", "shot 2 ('b'): output {d}/baked/o.blend is also"
                                 " shot 1 ('a')'s output"),
    "one output, by another spelling": ("baked/o.blend", "./baked/../baked/o.blend", "is also shot 1 ('a')'s output"),
    "one output, through a linked folder": ("baked/o.blend", _linked_out_folder, "is also shot 1 ('a')'s output"),
}  # fmt: skip


@pytest.mark.parametrize("case", sorted(CLASHES))
def test_an_output_never_overwrites_an_input_or_another_output(show, case):
    first, second, expected = CLASHES[case]
    first, second = (out(show) if callable(out) else out for out in (first, second))
    listed = write_list(show / "shots.toml", [
        {"name": "a", "blend": "sh010.blend", "output": first},
        {"name": "b", "blend": "sh020.blend", "output": second},
    ])  # fmt: skip
    assert expected.format(d=show) in _problems(listed)
    # The tool refuses it before anything runs, in --check and in a run alike, leaving every file as it was.
    for extra in (["--check"], []):
        run = _bake_shots(listed, *extra, cwd=show)
        assert run.returncode == 2 and expected.format(d=show) in run.stderr, run.stderr
    assert not (show / "RAN").exists() and not (show / "shots.logs").exists()
    assert not (show / "shots.report.json").exists()
    for name in ("sh010", "sh020"):
        assert (show / f"{name}.blend").read_bytes() == b"BLENDER-v500 " + name.encode()


def test_a_clash_is_named_even_when_the_shot_has_other_problems(show):
    listed = write_list(show / "shots.toml", [
        {"name": "a", "blend": "sh010.blend", "output": "sh020.blend", "step": 0},
        {"name": "b", "blend": "sh020.blend", "output": "baked/b.blend"},
    ])  # fmt: skip
    text = _problems(listed)
    assert "shot 1 ('a'): 'step' must be at least 1" in text and "is shot 2 ('b')'s blend" in text


def test_shots_may_share_a_blend_and_write_beside_it(show):
    listed = write_list(show / "shots.toml", [
        {"name": "a", "blend": "sh010.blend", "output": "sh010_baked.blend", "frames": "1-10"},
        {"name": "b", "blend": "sh010.blend", "output": "baked/sh010_b.blend", "frames": "11-20"},
    ])  # fmt: skip
    shots = shot_list.load(listed)
    assert [s.output for s in shots] == [show / "sh010_baked.blend", show / "baked" / "sh010_b.blend"]


def test_the_runs_own_files_are_checked_too(show):
    """bake_shots.py's report and logs: never an input or an output, never a folder in the way."""
    listed = write_list(show / "shots.toml", [{"name": "a", "blend": "sh010.blend", "output": "baked/a.blend"}])
    cases = [
        (["--report", "sh010.blend"], "--report {d}/sh010.blend is shot 1 ('a')'s blend: it would be overwritten"),
        (["--report", "baked/a.blend"], "--report {d}/baked/a.blend is also shot 1 ('a')'s output"),
        (["--report", "shots.toml"], "--report {d}/shots.toml is the shot list itself"),
        (["--report", "baked"], "--report {d}/baked is a directory"),
        (["--logs", "sh010.blend"], "--logs {d}/sh010.blend: {d}/sh010.blend is a file, not a folder"),
    ]
    for args, expected in cases:
        run = _bake_shots(listed, "--check", *args, cwd=show)
        assert run.returncode == 2 and expected.format(d=show) in run.stderr, (args, run.stderr)
    (show / "a.log").symlink_to(show / "sh010.blend")  # a log named like the shot, linked to its source
    run = _bake_shots(listed, "--check", "--logs", ".", cwd=show)
    assert run.returncode == 2 and f"shot 1 ('a'): log {show}/a.log is the shot's own blend file" in run.stderr
    assert not (show / "RAN").exists()
    assert (show / "sh010.blend").read_bytes() == b"BLENDER-v500 sh010"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--max-error", "nan"], "argument --max-error: must be a finite number, got 'nan'"),
        (["--max-error", "inf"], "argument --max-error: must be a finite number, got 'inf'"),
        (["--max-error", "-1"], "--max-error must be a distance >= 0"),
        (["--timeout", "nan"], "argument --timeout: must be a finite number, got 'nan'"),
        (["--timeout", "0"], "--timeout must be a number of seconds > 0"),
        (["--jobs", "0"], "--jobs must be at least 1"),
        (["--retries", "-1"], "--retries at least 0"),
    ],
)
def test_bad_run_arguments_are_refused_before_anything_runs(show, args, message):
    listed = write_list(show / "shots.toml", [{"name": "a", "blend": "sh010.blend", "output": "baked/a.blend"}])
    for extra in (["--check"], []):
        run = _bake_shots(listed, *extra, *args, cwd=show)
        assert run.returncode == 2 and message in run.stderr and "Traceback" not in run.stderr, run.stderr
    assert not (show / "RAN").exists() and not (show / "shots.report.json").exists()


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (b'[[shots]]\nname = "caf\xe9"\n', "not UTF-8 text (a TOML file is UTF-8): byte 0xe9 on line 2"),
        (b"# \xff\xfe a comment in another encoding\n[[shots]]\n", "byte 0xff on line 1"),
        (b'[[shots]]\nblend = "sh010.blend"\noutput = "o.blend"\narmature = "R\xc3"\n', "byte 0xc3 on line 4"),
    ],
)
def test_bytes_that_are_not_utf8_are_a_clear_error(show, text, expected):
    listed = show / "shots.toml"
    listed.write_bytes(text)
    assert expected in _problems(listed)
    run = _bake_shots(listed, cwd=show)
    assert run.returncode == 2 and expected in run.stderr and "Traceback" not in run.stderr, run.stderr


def test_a_byte_order_mark_is_read_as_utf8(show):
    listed = show / "shots.toml"
    listed.write_bytes(b'\xef\xbb\xbf[[shots]]\nname = "\xc3\xa9"\nblend = "sh010.blend"\noutput = "o.blend"\n'
                       b'armature = "Rig"\n')  # fmt: skip
    assert [s.name for s in shot_list.load(listed)] == ["\u00e9"]


def test_a_file_that_cannot_be_read_is_a_clear_error(show):
    assert "cannot read the file" in _problems(show / "missing.toml")
    assert "cannot read the file" in _problems(show / "baked")
    (show / "bad.toml").write_text("[[shots]\n")
    assert "not valid TOML" in _problems(show / "bad.toml")


NUMBERS = [("reduce", None), ("max_error", None), ("pole_angle", "chain 1"), ("softness", "chain 1")]


NOT_FINITE = [float("nan"), float("inf"), float("-inf"), 10**400]  # the last: an integer no float holds


@pytest.mark.parametrize("value", NOT_FINITE, ids=["nan", "inf", "-inf", "huge"])
@pytest.mark.parametrize(("key", "chain"), NUMBERS, ids=[k for k, _ in NUMBERS])
def test_numbers_that_are_not_finite_are_refused_naming_field_and_shot(show, key, chain, value):
    shot = {"name": "sh", "blend": "sh010.blend", "output": "baked/a.blend",
            "chains": [{"chain": "hand:2", "target": "Goal"}]}  # fmt: skip
    (shot["chains"][0] if chain else shot)[key] = value
    listed = write_list(show / "shots.toml", [{"name": "ok", "blend": "sh020.blend", "output": "o.blend"}, shot])
    where = "shot 2 ('sh')" + (f", {chain}" if chain else "")
    expected = f"{where}: '{key}' must be a finite number, got {value!r}"
    assert expected in _problems(listed)
    run = _bake_shots(listed, "--check", cwd=show)
    assert run.returncode == 2 and expected in run.stderr and "1 problem(s)" in run.stderr, run.stderr


def test_numbers_in_defaults_are_checked_for_every_shot(show):
    listed = write_list(show / "shots.toml", [{"name": "a", "blend": "sh010.blend", "output": "a.blend"},
                                              {"name": "b", "blend": "sh020.blend", "output": "b.blend"}],
                        {"armature": "Rig", "reduce": float("nan")})  # fmt: skip
    text = _problems(listed)
    assert "shot 1 ('a'): 'reduce' must be a finite number" in text
    assert "shot 2 ('b'): 'reduce' must be a finite number" in text


def test_a_nul_character_is_refused(show):
    listed = write_list(show / "shots.toml", [{"name": "a", "blend": "sh010.blend", "output": "o.blend",
                                               "armature": "Ri\u0000g"}])  # fmt: skip
    assert "shot 1 ('a'): 'armature' holds a NUL character" in _problems(listed)


BLOCK_NUMPY = (
    "import runpy, sys; sys.modules['numpy'] = None; sys.argv = sys.argv[1:]; "
    "runpy.run_path(sys.argv[0], run_name='__main__')"
)


def test_an_unknown_method_is_refused_on_a_python_without_numpy(show):
    """The Dask driver's Python may have no numpy: --check still knows every method name."""
    probe = subprocess.run([sys.executable, "-c", "import sys; sys.modules['numpy'] = None; import numpy"],
                           capture_output=True, text=True)  # fmt: skip
    assert probe.returncode != 0 and "ModuleNotFoundError" in probe.stderr  # numpy really cannot import there
    bad = write_list(show / "shots.toml", [{"name": "a", "blend": "sh010.blend", "output": "o.blend",
                                            "chains": [chain("fabrk")]}])  # fmt: skip
    run = subprocess.run([sys.executable, "-c", BLOCK_NUMPY, str(TOOL), str(bad), "--check"],
                         capture_output=True, text=True, timeout=60)  # fmt: skip
    assert run.returncode == 2, run.stderr
    assert "shot 1 ('a'), chain 1: unknown method 'fabrk' (choose one of triangulation, fabrik, ccd, jacobian)" in (
        run.stderr
    )
    good = write_list(show / "good.toml", [{"name": "a", "blend": "sh010.blend", "output": "o.blend",
                                            "chains": [chain("fabrik")]}])  # fmt: skip
    run = subprocess.run([sys.executable, "-c", BLOCK_NUMPY, str(TOOL), str(good), "--check",
                          "--python", str(standin(show))], capture_output=True, text=True, timeout=60)  # fmt: skip
    assert run.returncode == 0 and "1 shot(s), all valid" in run.stdout, run.stderr


def test_cli_arguments_take_the_shots_bound_over_the_runs(show):
    listed = write_list(show / "shots.toml", [{"name": "a", "blend": "sh010.blend", "output": "a.blend"},
                                              {"name": "b", "blend": "sh020.blend", "output": "b.blend",
                                               "max_error": 0.5}])  # fmt: skip
    a, b = shot_list.load(listed)
    assert "--max-error" not in shot_list.cli_arguments(a)
    assert shot_list.cli_arguments(a, 0.25)[-1] == "--max-error=0.25"
    assert shot_list.cli_arguments(b, 0.25)[-1] == "--max-error=0.5"


def _submission(path: Path, max_error: float = 0.0, libraries: dict | None = None) -> dict:
    launcher = ("python", str(standin(path.parent, libraries)))
    return json.loads(flamenco_submission.submission(path, max_error, launcher=launcher))


def test_submission_holds_the_checked_shots_or_the_problems(show):
    """What the Flamenco job type receives: the same load(), the sidecar JSON included in the clash check."""
    listed = write_list(show / "shots.toml", [{"name": "a", "blend": "sh010.blend", "output": "baked/a.blend"}])
    doc = _submission(listed, 0.01)
    assert doc["checked_by"] == flamenco_submission.CHECKED_BY and "problems" not in doc
    (shot,) = doc["shots"]
    (checked,) = shot_list.load(listed)
    assert shot == {"name": "a", "blend": str(show / "sh010.blend"), "output": str(show / "baked" / "a.blend"),
                    "arguments": [*shot_list.cli_arguments(checked, 0.01), f"--output={show}/baked/a.blend",
                                  f"--json={show}/baked/a.bake.json"]}  # fmt: skip
    assert not [a for a in _submission(listed, 0.0)["shots"][0]["arguments"] if a.startswith("--max-error")]
    bad = write_list(show / "bad.toml", [{"name": "a", "blend": "sh010.blend", "output": "sh010.blend",
                                          "chains": [chain("nope")]}])  # fmt: skip
    doc = _submission(bad, float("nan"))
    assert "shots" not in doc and doc["problems"] == [
        "shot 1 ('a'), chain 1: unknown method 'nope' (choose one of triangulation, fabrik, ccd, jacobian)",
        f"shot 1 ('a'): output {show}/sh010.blend is the shot's own blend file: it would be overwritten",
        "Max Error must be a finite number >= 0, got nan",
    ]
    (show / "baked" / "a.bake.json").symlink_to(show / "sh020.blend")
    two = write_list(show / "two.toml", [{"name": "a", "blend": "sh010.blend", "output": "baked/a.blend"},
                                         {"name": "b", "blend": "sh020.blend", "output": "baked/b.blend"}])  # fmt: skip
    assert _submission(two)["problems"] == [
        f"shot 1 ('a'): summary {show}/baked/a.bake.json is shot 2 ('b')'s blend: it would be overwritten"
    ]


DASHED = {"armature": "-Rig", "chain": "-hand:2", "target": "-Goal", "target_bone": "--ctrl", "pole": "-Knee",
          "pole_bone": "-p", "method": "fabrik", "pole_angle": -90.0}  # fmt: skip


def test_values_starting_with_a_dash_reach_cli_py_as_given(show):
    """Issue 22 §6: every option is passed as --option=VALUE, so an object named "-Goal" (a legal
    Blender name) is read as a value, not an option; cli.py's own parser reads them back."""
    from headless import cli_arguments

    chains = [{k: DASHED[k] for k in DASHED if k != "armature"}, {"chain": "-arm:1", "target": "-"}]
    listed = write_list(show / "shots.toml", [{"name": "a", "blend": "sh010.blend", "output": "o.blend",
                                               "frames": [-20, -5], "chains": chains}],
                        {"armature": DASHED["armature"]})  # fmt: skip
    (shot,) = shot_list.load(listed)
    args = cli_arguments.parser(True).parse_args([str(shot.blend), *shot_list.cli_arguments(shot, 0.5)])
    assert args.armature == "-Rig" and args.chain == ["-hand:2", "-arm:1"] and args.target == ["-Goal", "-"]
    assert args.target_bone == ["--ctrl", ""] and args.pole == ["-Knee", ""] and args.pole_bone == ["-p", ""]
    assert args.method == ["fabrik", ""] and args.pole_angle == [-90.0, 0.0] and args.frames == "-20--5"
    assert args.max_error == 0.5
    checked = cli_arguments.check_arguments(args, None)
    assert [(c["tip"], c["target"]) for c in checked.chains] == [("-hand", "-Goal"), ("-arm", "-")]
    assert checked.frames == (-20, -5)


@pytest.mark.parametrize(("key", "chained"), [("armature", False), ("name", False), ("blend", False),
                                               ("output", False), ("interpolation", False), ("chain", True),
                                               ("target", True), ("method", True)])  # fmt: skip
def test_an_empty_name_is_refused_where_it_names_something(show, key, chained):
    """An empty target (or chain, armature, method...) would fail every run ("--chain needs
    --target"): the check refuses it. target_bone, pole and pole_bone may be "" (not set)."""
    shot = {
        "name": "a",
        "blend": "sh010.blend",
        "output": "o.blend",
        "chains": [{"chain": "hand:2", "target": "Goal", "target_bone": "", "pole": "", "pole_bone": ""}],
    }
    (shot["chains"][0] if chained else shot)[key] = ""
    listed = write_list(show / "shots.toml", [shot])
    where = "shot 1" + ("" if key == "name" else " ('a')") + (", chain 1" if chained else "")
    assert f"{where}: '{key}' is empty" in _problems(listed)
    run = _bake_shots(listed, "--check", cwd=show)
    assert run.returncode == 2 and f"'{key}' is empty" in run.stderr and not (show / "RAN").exists()


@pytest.mark.parametrize("frames", ["1-1048575", "-1048575-0", [1, 99999999], 1048575])
def test_frames_beyond_blenders_limit_are_refused_by_the_check(show, frames):
    listed = write_list(show / "shots.toml", [{"name": "a", "blend": "sh010.blend", "output": "o.blend",
                                               "frames": frames}])  # fmt: skip
    assert "beyond Blender's limit (±1,048,574)" in _problems(listed)
    edge = write_list(show / "edge.toml", [{"name": "a", "blend": "sh010.blend", "output": "o.blend",
                                            "frames": "-1048574-1048574"}])  # fmt: skip
    assert shot_list.load(edge)[0].frames == (-1048574, 1048574)


@pytest.mark.parametrize("value", [-0.1, 1, 1.5])
def test_softness_outside_its_range_is_refused(show, value):
    shot = {"name": "sh", "blend": "sh010.blend", "output": "baked/a.blend",
            "chains": [{"chain": "hand:2", "target": "Goal", "softness": value}]}  # fmt: skip
    listed = write_list(show / "shots.toml", [shot])
    expected = f"shot 1 ('sh'), chain 1: 'softness' must be a share of the reach within 0..1 (below 1), got {value!r}"
    assert expected in _problems(listed)


def test_softness_reaches_cli_py_per_chain(show):
    """A chain's softness goes to cli.py as --softness, once per chain (0 where a chain has none)."""
    from headless import cli_arguments

    chains = [{"chain": "shin.L:2", "target": "Foot.L", "softness": 0.05}, {"chain": "shin.R:2", "target": "Foot.R"}]
    listed = write_list(show / "shots.toml", [{"name": "a", "blend": "sh010.blend", "output": "o.blend",
                                               "armature": "Rig", "chains": chains}])  # fmt: skip
    (shot,) = shot_list.load(listed)
    args = cli_arguments.parser(True).parse_args([str(shot.blend), *shot_list.cli_arguments(shot)])
    assert args.softness == [0.05, 0.0]
    checked = cli_arguments.check_arguments(args, None)
    assert [c["softness"] for c in checked.chains] == [0.05, 0.0]
    bare = cli_arguments.parser(True).parse_args([str(shot.blend), "--armature=Rig"])
    assert cli_arguments.check_arguments(bare, None).chains[0]["softness"] is None  # the panel's
    for bad in ("-0.1", "1", "nan"):
        with pytest.raises(SystemExit):
            cli_arguments.parser(True).parse_args([str(shot.blend), "--armature=Rig", f"--softness={bad}"])


@pytest.mark.parametrize(("entry", "expected"), [
    ({"aim_axis": "+W"}, "chain 1: unknown aim_axis '+W' (choose one of NONE, +X, -X, +Y, -Y, +Z, -Z)"),
    ({"aim_spread": 1.5}, "chain 1: 'aim_spread' must be within 0..1, got 1.5"),
    ({"aim_axis": 3}, "chain 1: 'aim_axis'"),
])  # fmt: skip
def test_bad_aim_keys_are_refused(show, entry, expected):
    shot = {"name": "sh", "blend": "sh010.blend", "output": "baked/a.blend",
            "chains": [{"chain": "head:3", "target": "Look", **entry}]}  # fmt: skip
    assert expected in _problems(write_list(show / "shots.toml", [shot]))


def test_aim_keys_reach_cli_py_per_chain(show):
    """aim_axis and aim_spread go to cli.py once per chain (NONE and the default where a chain has none)."""
    from headless import cli_arguments

    chains = [{"chain": "head:3", "target": "Look", "aim_axis": "-Z", "aim_spread": 0.2},
              {"chain": "hand:2", "target": "Goal"}]  # fmt: skip
    listed = write_list(show / "shots.toml", [{"name": "a", "blend": "sh010.blend", "output": "o.blend",
                                               "armature": "Rig", "chains": chains}])  # fmt: skip
    (shot,) = shot_list.load(listed)
    args = cli_arguments.parser(True).parse_args([str(shot.blend), *shot_list.cli_arguments(shot)])
    assert args.aim_axis == ["-Z", "NONE"] and args.aim_spread == [0.2, 0.7]
    checked = cli_arguments.check_arguments(args, None)
    assert [(c["aim_axis"], c["aim_spread"]) for c in checked.chains] == [("-Z", 0.2), ("NONE", 0.7)]
    plain = cli_arguments.parser(True).parse_args([str(shot.blend), "--armature=Rig"])
    bare = cli_arguments.check_arguments(plain, None)
    assert bare.chains[0]["aim_axis"] == "" and bare.chains[0]["aim_spread"] is None  # the panel's


def test_contacts_reach_cli_py_and_must_be_true_or_false(show):
    """`contacts = true`: cli.py detects the feet's contacts, then bakes honouring them (--contacts)."""
    from headless import cli_arguments

    shots = [
        {"name": "a", "blend": "sh010.blend", "output": "a.blend", "armature": "Rig", "contacts": True},
        {"name": "b", "blend": "sh020.blend", "output": "b.blend", "armature": "Rig"},
    ]
    a, b = shot_list.load(write_list(show / "shots.toml", shots))
    assert a.contacts and not b.contacts
    assert "--contacts" in shot_list.cli_arguments(a) and "--contacts" not in shot_list.cli_arguments(b)
    assert cli_arguments.parser(True).parse_args([str(a.blend), *shot_list.cli_arguments(a)]).contacts
    bad = write_list(show / "bad.toml", [{**shots[0], "contacts": 1}])
    assert "shot 1 ('a'): 'contacts' must be true or false, got 1" in _problems(bad)
    both = write_list(show / "both.toml", [{**shots[0], "chains": [{"chain": "shin.L:2", "target": "Foot.L"}]}])
    assert "shot 1 ('a'): 'contacts' keys the armature's panel chains' Contact: leave 'chains' out" in _problems(both)


def test_move_root_reaches_cli_py_per_chain(show):
    """A chain's move_root and root_stiffness go to cli.py once per chain (off / 0.5 where a chain has
    none); a stiffness outside 0..1 or a move_root that is not true/false is refused, naming it."""
    from headless import cli_arguments

    chains = [{"chain": "hand.L:8", "target": "Goal", "move_root": True, "root_stiffness": 0.25},
              {"chain": "foot.L:4", "target": "Foot"}]  # fmt: skip
    listed = write_list(show / "shots.toml", [{"name": "a", "blend": "sh010.blend", "output": "o.blend",
                                               "armature": "Rig", "chains": chains}])  # fmt: skip
    (shot,) = shot_list.load(listed)
    args = cli_arguments.parser(True).parse_args([str(shot.blend), *shot_list.cli_arguments(shot)])
    assert args.move_root == [True, False] and args.root_stiffness == [0.25, 0.5]
    checked = cli_arguments.check_arguments(args, None)
    assert [(c["move_root"], c["root_stiffness"]) for c in checked.chains] == [(True, 0.25), (False, 0.5)]
    bare = cli_arguments.parser(True).parse_args([str(shot.blend), "--armature=Rig"])
    assert cli_arguments.check_arguments(bare, None).chains[0]["move_root"] is None  # the panel's
    for bad in ("--root-stiffness=-0.1", "--root-stiffness=1.5", "--root-stiffness=nan", "--move-root=maybe"):
        with pytest.raises(SystemExit):
            cli_arguments.parser(True).parse_args([str(shot.blend), "--armature=Rig", bad])
    for key, value, message in (("root_stiffness", 1.5, "'root_stiffness' must be within 0..1"),
                                ("move_root", 1, "'move_root' must be true or false")):  # fmt: skip
        shot = {"name": "sh", "blend": "sh010.blend", "output": "baked/a.blend",
                "chains": [{"chain": "hand:2", "target": "Goal", key: value}]}  # fmt: skip
        assert message in _problems(write_list(show / "bad.toml", [shot]))
