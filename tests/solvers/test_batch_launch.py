"""tools/bake_shots.py before any shot bakes, without Blender: the launcher and Dask are checked
by --check as by a run (a clean --check means the run starts), and the libraries each blend
links (listed here by the stand-in launcher, launcher_standin.py; by Blender in
tests/blender/test_bake_shots.py) are never an output or a file of the run. A refusal starts no
shot and writes nothing."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from launcher_standin import standin

from headless import library_scan

ROOT = Path(__file__).resolve().parents[2]
TOOL = ROOT / "tools" / "bake_shots.py"


def _list(folder: Path, shots: list[tuple[str, str, str]]) -> Path:
    text = "".join(f'[[shots]]\nname = "{n}"\nblend = "{b}"\noutput = "{o}"\narmature = "Rig"\n' for n, b, o in shots)
    (folder / "shots.toml").write_text(text)
    return folder / "shots.toml"


@pytest.fixture
def show(tmp_path) -> Path:
    for name in ("a", "b", "lib", "props"):
        (tmp_path / f"{name}.blend").write_bytes(f"BLENDER {name}".encode())
    return tmp_path


def _tool(*args, env: dict | None = None, prefix: tuple = ()) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *prefix, str(TOOL), *map(str, args)], capture_output=True, text=True,
                          timeout=120, env=env)  # fmt: skip


def _nothing_ran(show: Path) -> None:
    assert not (show / "RAN").exists() and not (show / "shots.report.json").exists()
    assert not (show / "shots.logs").exists() and not (show / "out").exists()
    for name in ("a", "b", "lib", "props"):
        assert (show / f"{name}.blend").read_bytes() == f"BLENDER {name}".encode()


def _refused_in_check_and_run(show: Path, args: list, message: str, env: dict | None = None) -> None:
    for extra in (["--check"], []):
        run = _tool(show / "shots.toml", *extra, *args, env=env)
        assert run.returncode == 2 and message in run.stderr, (extra, run.stderr)
        assert "Traceback" not in run.stderr and len(run.stderr.strip().splitlines()) <= 3, run.stderr
    _nothing_ran(show)


def _script(path: Path, body: str, mode: int = 0o755) -> Path:
    path.write_text(body)
    path.chmod(mode)
    return path


def test_the_launcher_is_checked_by_check_as_by_a_run(show):
    """Issue 22 §8: no `blender` on the PATH, a --python that does not exist, is not executable,
    or is not a Python with bpy (nor Blender): --check says so, as the run does, and nothing runs."""
    _list(show, [("a", "a.blend", "out/a.blend")])
    _refused_in_check_and_run(show, [], "no `blender` on the PATH", env={"PATH": str(show)})
    missing = "/nonexistent/python"
    _refused_in_check_and_run(show, ["--python", missing], f"--python {missing}: no such program")
    plain = _script(show / "plain-file", "#!/bin/sh\n", 0o644)
    _refused_in_check_and_run(show, ["--blender", plain], f"--blender {plain}: not executable")
    silent = _script(show / "silent", "#!/bin/sh\nexit 0\n")
    _refused_in_check_and_run(show, ["--python", silent], "did not run Blender's Python (no output)")
    nobpy = _script(show / "nobpy", "#!/bin/sh\necho \"ModuleNotFoundError: No module named 'bpy'\" >&2\nexit 1\n")
    said = "(exited with status 1: ModuleNotFoundError: No module named 'bpy'): is it Blender"
    _refused_in_check_and_run(show, ["--python", nobpy], said)
    run = _tool(show / "shots.toml", "--check", "--python", standin(show))
    assert run.returncode == 0 and "1 shot(s), all valid" in run.stdout, run.stderr


BLOCK_DASK = (
    "import runpy, sys; sys.modules['distributed'] = sys.modules['dask'] = None; sys.argv = sys.argv[1:]; "
    "runpy.run_path(sys.argv[0], run_name='__main__')"
)


def test_scheduler_without_dask_is_refused_by_check(show):
    _list(show, [("a", "a.blend", "out/a.blend")])
    for extra in (["--check"], []):
        run = _tool(show / "shots.toml", *extra, "--scheduler", "tcp://127.0.0.1:1", "--python", standin(show),
                    prefix=("-c", BLOCK_DASK))  # fmt: skip
        assert run.returncode == 2 and "--scheduler needs Dask: pip install" in run.stderr, run.stderr
    _nothing_ran(show)


def test_an_unreachable_scheduler_is_one_line_and_the_report_says_not_run(show):
    pytest.importorskip("distributed")
    _list(show, [("a", "a.blend", "out/a.blend"), ("b", "b.blend", "out/b.blend")])
    env = {**os.environ, "DASK_DISTRIBUTED__COMM__TIMEOUTS__CONNECT": "2s"}
    args = ["--scheduler", "tcp://127.0.0.1:1", "--python", standin(show)]
    check = _tool(show / "shots.toml", "--check", *args, env=env)
    expected = "bake_shots.py: error: cannot reach the Dask scheduler at tcp://127.0.0.1:1: Timed out"
    assert check.returncode == 2 and check.stderr.startswith(expected), check.stderr
    assert not (show / "shots.report.json").exists()
    run = _tool(show / "shots.toml", *args, env=env)
    assert run.returncode == 2 and expected in run.stderr and "Traceback" not in run.stderr, run.stderr
    report = json.loads((show / "shots.report.json").read_text())
    assert report["counts"] == {"not run": 2} and [s["name"] for s in report["shots"]] == ["a", "b"]
    assert all(s["attempts"] == 0 and s["error"].startswith("not run: cannot reach") for s in report["shots"])
    assert not (show / "RAN").exists()


def _link(path: Path, target: Path) -> Path:
    path.symlink_to(target)
    return path


LIBRARY_CASES = {  # (shots, what the stand-in lists per blend, the problem)
    "another shot's library": ([("a", "a.blend", "lib.blend"), ("b", "b.blend", "out/b.blend")],
                               {"b.blend": ["lib.blend"]},
                               "shot 1 ('a'): output {d}/lib.blend is a library shot 2 ('b')'s blend links: it would"),
    "its own library": ([("a", "a.blend", "lib.blend")], {"a.blend": ["props.blend", "lib.blend"]},
                        "shot 1 ('a'): output {d}/lib.blend is a library the shot's blend links: it would be"),
    "a link to a library": ([("a", "a.blend", "out/l.blend"), ("b", "b.blend", "out/b.blend")],
                            {"b.blend": ["lib.blend"]}, "output {d}/out/l.blend is a library shot 2 ('b')'s blend"),
    "a library reached by another spelling": ([("a", "a.blend", "lib.blend")], {"a.blend": ["out/../lib.blend"]},
                                              "output {d}/lib.blend is a library the shot's blend links"),
    "the report": ([("a", "a.blend", "out/a.blend")], {"a.blend": ["props.blend"]},
                   "--report {d}/props.blend is a library shot 1 ('a')'s blend links"),
    "a blend Blender cannot open": ([("a", "a.blend", "out/a.blend")], {"a.blend": {"error": "File format is not"}},
                                    "shot 1 ('a'): Blender cannot open blend {d}/a.blend: File format is not"),
}  # fmt: skip


@pytest.mark.parametrize("case", sorted(LIBRARY_CASES))
def test_no_output_is_a_library_any_shot_links(show, case):
    """Issue 22 §1: every output (and the run's own files) against every library of every shot's
    blend, before any shot bakes, in --check and in a run: refused, nothing written."""
    shots, listed, expected = LIBRARY_CASES[case]
    if case == "a link to a library":
        (show / "out").mkdir()
        _link(show / "out" / "l.blend", show / "lib.blend")
    _list(show, shots)
    libraries = {str(show / k): v if isinstance(v, dict) else [str(show / p) for p in v] for k, v in listed.items()}
    extra = ["--report", show / "props.blend"] if case == "the report" else []
    for check in (["--check"], []):
        run = _tool(show / "shots.toml", *check, *extra, "--python", standin(show, libraries))
        assert run.returncode == 2 and expected.format(d=show) in run.stderr, (check, run.stderr)
    assert not (show / "RAN").exists() and not (show / "shots.report.json").exists()
    for name in ("a", "b", "lib", "props"):
        assert (show / f"{name}.blend").read_bytes() == f"BLENDER {name}".encode()


def test_the_scan_survives_a_blender_that_dies_on_one_file(show):
    """A Blender killed while it opens one file: started again (`retries`), then that file's
    error; every other file listed."""
    blends = [str(show / f"{n}.blend") for n in ("a", "b", "lib", "props")]
    answers = {blends[0]: [blends[2]], blends[1]: {"crash": -1}, blends[3]: {"crash": 1}}
    prefix = [str(standin(show, answers)), library_scan.SCRIPT, "--"]
    assert library_scan.scan(prefix, blends, retries=1) == {
        blends[0]: {"libraries": [blends[2]]},
        blends[1]: {"error": "Blender exited with status -9 while opening it"},
        blends[2]: {"libraries": []},
        blends[3]: {"crash": 1},  # the stand-in's answer, given on its second start
    }
    with pytest.raises(library_scan.ScanError, match="cannot start /nonexistent"):
        library_scan.scan(["/nonexistent", "--"], blends)
