"""tools/bake_shots.py: many shots, one Blender process each (the bpy wheel's Python), locally and on Dask.

Shots are small (8 frames, a 3-bone arm) so the tier stays fast on a shared 2-core machine.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import bpy
import pytest
from builders import add_empty, save_linked_chain, straight_chain
from conftest import REPO

from headless import shot_list  # the repository root is on sys.path (pyproject's pythonpath)

TOOL = REPO / "tools" / "bake_shots.py"
SHOTS = 6
FRAMES = 8


def _save_shot(path: Path, phase: float, radius: float = 1.0) -> None:
    bpy.ops.wm.read_homefile(use_empty=True)
    straight_chain(3)
    bpy.ops.object.mode_set(mode="OBJECT")
    goal = add_empty("Goal")
    for f in range(1, FRAMES + 1):
        a = 2.0 * math.pi * f / FRAMES + phase
        goal.location = (radius * math.cos(a), radius * math.sin(a), 2.0)
        goal.keyframe_insert("location", frame=f)
    bpy.context.scene.frame_start, bpy.context.scene.frame_end = 1, FRAMES
    bpy.ops.wm.save_as_mainfile(filepath=str(path))


def _write_list(path: Path, shots: list[dict], defaults: dict | None = None) -> Path:
    def value(v):
        return json.dumps(v)  # TOML basic strings and numbers read as JSON writes them

    lines = []
    if defaults:
        lines.append("[defaults]")
        lines += [f"{k} = {value(v)}" for k, v in defaults.items()]
    for shot in shots:
        lines.append("[[shots]]")
        lines += [f"{k} = {value(v)}" for k, v in shot.items() if k != "chains"]
        for chain in shot.get("chains", []):
            lines.append("[[shots.chains]]")
            lines += [f"{k} = {value(v)}" for k, v in chain.items()]
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.fixture(scope="module")
def shots_dir(ext, tmp_path_factory):
    """6 small shots (a target circling in reach, each from its own phase) and one corrupt file."""
    root = tmp_path_factory.mktemp("shots")
    for i in range(SHOTS):
        _save_shot(root / f"sh{i}.blend", phase=0.7 * i)
    (root / "corrupt.blend").write_bytes(b"BLENDER-v300 this is not a blend file" * 10)
    bpy.ops.wm.read_homefile(use_empty=True)
    return root


def _shot_entries(out: str, failing: bool = True) -> list[dict]:
    """SHOTS good shots and (`failing`) one that fails in Blender: its armature is not in the file."""
    methods = ["triangulation", "fabrik", "ccd"]
    entries = [
        {"name": f"sh{i}", "blend": f"sh{i}.blend", "output": f"{out}/sh{i}.blend",
         "chains": [{"chain": "b2:3", "target": "Goal", "method": methods[i % 3]}]}
        for i in range(SHOTS)
    ]  # fmt: skip
    if failing:
        entries.insert(3, {"name": "noarm", "blend": "sh0.blend", "output": f"{out}/noarm.blend", "armature": "Nope"})
    return entries


def _bake_shots(shot_file: Path, *args, timeout=300) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(TOOL), str(shot_file), "--python", sys.executable, *map(str, args)],
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def _keys(blend: Path) -> dict[tuple[str, int], list[tuple[float, float]]]:
    """Every rotation key of the baked rig: (data path, index) -> [(frame, value)]."""
    bpy.ops.wm.open_mainfile(filepath=str(blend))
    action = bpy.data.objects["Rig"].animation_data.action
    from chain_ik.rig import keys

    curves = keys.action_fcurves(action)
    return {(fc.data_path, fc.array_index): [tuple(k.co) for k in fc.keyframe_points] for fc in curves}


@pytest.fixture(scope="module")
def one_by_one(shots_dir):
    """Each good shot baked by its own cli.py run, as a user would one at a time."""
    listed = shot_list.load(_write_list(shots_dir / "single.toml", _shot_entries("single", False), {"armature": "Rig"}))
    for shot in listed:
        cmd = [sys.executable, str(REPO / "cli.py"), str(shot.blend), "--", *shot_list.cli_arguments(shot)]
        run = subprocess.run([*cmd, "--output", str(shot.output)], capture_output=True, text=True, timeout=120)
        assert run.returncode == 0, run.stderr
    keys = {shot.name: _keys(shot.output) for shot in listed}
    bpy.ops.wm.read_homefile(use_empty=True)
    return keys


def _check_batch(shots_dir: Path, out: str, run: subprocess.CompletedProcess, one_by_one: dict) -> dict:
    assert run.returncode == 1, run.stderr  # the shot without its armature failed
    report = json.loads((shots_dir / f"{out}.report.json").read_text())
    by_name = {entry["name"]: entry for entry in report["shots"]}
    assert report["counts"] == {"ok": SHOTS, "failed": 1}
    bad = by_name["noarm"]
    assert bad["status"] == "failed" and bad["output"] is None and Path(bad["log"]).is_file()
    assert bad["attempts"] == 1  # a reported error is not retried
    assert "no object named 'Nope'" in bad["error"], bad["error"]
    assert "noarm: failed" in run.stderr and f"{SHOTS + 1}/{SHOTS + 1} shots" in run.stderr
    assert not (shots_dir / out / "noarm.blend").exists()
    for i in range(SHOTS):
        entry = by_name[f"sh{i}"]
        assert entry["status"] == "ok", entry
        assert entry["keys"] == 3 * 4 * FRAMES  # 3 bones, quaternion
        assert entry["worst_error"] < 1e-4 and entry["seconds"] > 0.0
        assert Path(entry["log"]).is_file()
        assert entry["attempts"] == 1, entry  # the field docs/shot_list.md shows, on every route
        assert _keys(Path(entry["output"])) == one_by_one[f"sh{i}"], f"sh{i} differs from its one-by-one bake"
    assert not [p.name for p in (shots_dir / out).iterdir() if p.name.startswith(".")], "temporary files left"
    bpy.ops.wm.read_homefile(use_empty=True)
    return report


def test_local_jobs_match_one_by_one_cli_runs(shots_dir, one_by_one):
    shot_file = _write_list(shots_dir / "local.toml", _shot_entries("local"), {"armature": "Rig"})
    run = _bake_shots(shot_file, "--jobs", 2)
    report = _check_batch(shots_dir, "local", run, one_by_one)
    assert report["route"] == "local, 2 job(s)"


@contextlib.contextmanager
def _farm(folder: Path, workers: int = 2):
    """A Dask scheduler and `workers` single-threaded workers, each its own process started by
    the `dask` command in `folder`, without this repository on its path (as on a farm node: the
    shot runner and the library scan must travel with the tasks). Yields the scheduler address."""
    from dask.distributed import Client

    dask = str(Path(sys.executable).parent / "dask")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    spec = folder / "scheduler.json"
    started = [subprocess.Popen([dask, "scheduler", "--host", "127.0.0.1", "--port", "0", "--no-dashboard",
                                 "--scheduler-file", str(spec)], cwd=folder, env=env,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)]  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while not spec.exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        started.append(subprocess.Popen([dask, "worker", "--scheduler-file", str(spec), "--nthreads", "1",
                                         "--nworkers", str(workers), "--no-dashboard"], cwd=folder, env=env,
                                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))  # fmt: skip
        with Client(scheduler_file=str(spec)) as client:
            client.wait_for_workers(workers, timeout=120)
            found = client.run(
                lambda: [__import__("importlib.util").util.find_spec(n) is None for n in ("headless", "shot_runner")]
            )
            assert all(all(missing) for missing in found.values()), found  # the workers cannot import them
            yield client.scheduler.address
    finally:
        for process in reversed(started):
            process.terminate()
            process.wait(timeout=60)


def test_dask_cluster_matches_one_by_one_cli_runs(shots_dir, one_by_one, tmp_path):
    pytest.importorskip("dask.distributed")
    shot_file = _write_list(shots_dir / "dask.toml", _shot_entries("dask"), {"armature": "Rig"})
    flaky = _flaky_python(tmp_path)
    entries = [{"name": "sh0", "blend": "sh0.blend", "output": "dask_retry/sh0.blend",
                "chains": [{"chain": "b2:3", "target": "Goal"}]}]  # fmt: skip
    retry_file = _write_list(shots_dir / "dask_retry.toml", entries, {"armature": "Rig"})
    with _farm(tmp_path) as address:
        check = _bake_shots(shot_file, "--scheduler", address, "--check")
        run = _bake_shots(shot_file, "--scheduler", address)
        retried = subprocess.run([sys.executable, str(TOOL), str(retry_file), "--python", str(flaky),
                                  "--scheduler", address],
                                 capture_output=True, text=True, timeout=300)  # fmt: skip
    # --check on Dask lists the libraries on the workers (trying their launcher) and stops.
    assert check.returncode == 0 and "7 shot(s), all valid" in check.stdout, check.stderr
    report = _check_batch(shots_dir, "dask", run, one_by_one)
    assert report["route"].startswith("dask tcp://")
    # A Blender killed on its first start is tried again inside the shot's Dask task, and counted.
    assert retried.returncode == 0, retried.stderr
    entry = json.loads((shots_dir / "dask_retry.report.json").read_text())["shots"][0]
    assert entry["status"] == "ok" and entry["attempts"] == 2, entry


def test_interrupted_run_leaves_no_partial_outputs(shots_dir):
    shot_file = _write_list(shots_dir / "stop.toml", _shot_entries("stop", False), {"armature": "Rig"})
    logs = shots_dir / "stop.logs"
    process = subprocess.Popen(
        [sys.executable, str(TOOL), str(shot_file), "--python", sys.executable, "--jobs", "2"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 60
    while not (logs.is_dir() and len(list(logs.glob("*.log"))) >= 2) and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.5)  # inside Blender: starting, baking or saving
    process.send_signal(signal.SIGTERM)
    _, stderr = process.communicate(timeout=60)
    assert process.returncode == 130, stderr
    assert "interrupted" in stderr
    report = json.loads((shots_dir / "stop.report.json").read_text())
    statuses = {entry["name"]: entry["status"] for entry in report["shots"]}
    assert "interrupted" in statuses.values(), statuses
    out = shots_dir / "stop"
    left = sorted(p.name for p in out.iterdir()) if out.is_dir() else []
    assert not [name for name in left if name.startswith(".")], left
    # Whatever is at an output path is a finished, checked bake.
    assert left == sorted(f"{name}.blend" for name, status in statuses.items() if status == "ok")
    assert not subprocess.run(["pgrep", "-f", str(shots_dir / "sh")], capture_output=True).stdout, (
        "Blender left running"
    )


def test_max_error_marks_a_shot_missed_without_writing_it(shots_dir):
    _save_shot(shots_dir / "far.blend", 0.0, radius=6.0)  # out of reach: the tip misses by ~3
    bpy.ops.wm.read_homefile(use_empty=True)
    entries = [{"name": "far", "blend": "far.blend", "output": "bound/far.blend", "max_error": 0.01,
                "chains": [{"chain": "b2:3", "target": "Goal"}]}]  # fmt: skip
    run = _bake_shots(_write_list(shots_dir / "bound.toml", entries, {"armature": "Rig"}))
    assert run.returncode == 1, run.stderr
    entry = json.loads((shots_dir / "bound.report.json").read_text())["shots"][0]
    assert entry["status"] == "missed" and entry["worst_error"] > 1.0, entry
    assert "playback misses by" in entry["error"]
    assert not (shots_dir / "bound").exists() or not list((shots_dir / "bound").iterdir())


def test_a_bad_shot_list_names_every_problem_before_any_work(shots_dir):
    entries = [
        {"name": "a", "blend": "sh0.blend", "output": "v/a.blend", "frames": "9-2"},
        {"name": "b", "blend": "missing.blend", "output": "v/b.blend", "step": 0, "speed": 2},
        {"name": "a", "blend": "sh1.blend", "output": "v/a.blend",
         "chains": [{"chain": "b2", "target": "Goal", "method": "nope"}, {"chain": "b2:3"}]},
        {"blend": "sh2.blend", "armature": "Rig"},
    ]  # fmt: skip
    shot_file = _write_list(shots_dir / "bad.toml", entries, {"armature": "Rig"})
    run = _bake_shots(shot_file, "--jobs", 2)
    assert run.returncode == 2
    expected = [
        "shot 1 ('a'): frames end 2 is before start 9",
        "shot 2 ('b'): unknown key 'speed'",
        "shot 2 ('b'): blend file not found",
        "shot 2 ('b'): 'step' must be at least 1, got 0",
        "shot 3 ('a'), chain 1: chain must be TIP:LENGTH, got 'b2'",
        "shot 3 ('a'), chain 1: unknown method 'nope'",
        "shot 3 ('a'), chain 2: 'target' is required",
        "shot 4: 'output' is required",
        "shot 3 ('a'): output {d}/v/a.blend is also shot 1 ('a')'s output",  # named though shot 3 has other problems
        "shot 3 ('a'): the name is already used by shot 1",  # so is its name
    ]
    lines = run.stderr.splitlines()
    for text in expected:
        text = text.format(d=shots_dir)
        assert sum(text in line for line in lines) == 1, (text, run.stderr)
    assert "10 problem(s)" in run.stderr
    assert not (shots_dir / "bad.logs").exists() and not (shots_dir / "v").exists()
    good = _write_list(shots_dir / "good.toml", _shot_entries("never"), {"armature": "Rig"})
    check = _bake_shots(good, "--check")
    assert check.returncode == 0 and "7 shot(s), all valid" in check.stdout
    # No --blender or --python, and no `blender` on the PATH: said before anything runs, by --check too.
    for extra in ([], ["--check"]):
        run = subprocess.run([sys.executable, str(TOOL), str(good), *extra], capture_output=True, text=True,
                             env={"PATH": "/bin"})  # fmt: skip
        assert run.returncode == 2 and "--blender PATH or --python PATH" in run.stderr
    typed = [{"name": "t", "blend": "sh0.blend", "output": "t.blend", "step": True, "reduce": "0.1", "frames": 1.5},
             {"name": "../up", "blend": "sh1.blend", "output": "u.blend"}]  # fmt: skip
    run = _bake_shots(_write_list(shots_dir / "typed.toml", typed, {"armature": "Rig"}), "--check")
    for text in ("'step' must be an integer, got True", "'reduce' must be a number, got '0.1'", "'frames' must be",
                 "shot 2 ('../up'): 'name' names the shot's log file: no slashes"):  # fmt: skip
        assert text in run.stderr, run.stderr
    dup = [
        {"name": "x", "blend": "sh0.blend", "output": "o.blend"},
        {"name": "x", "blend": "sh1.blend", "output": "o.blend"},
        {"name": "x", "blend": "sh1.blend", "output": "p.blend", "step": 0},  # named with its other problem
    ]
    run = _bake_shots(_write_list(shots_dir / "dup.toml", dup, {"armature": "Rig"}), "--check")
    assert run.returncode == 2 and "shot 2 ('x'): the name is already used by shot 1" in run.stderr
    assert "shot 3 ('x'): the name is already used by shot 1" in run.stderr
    assert "'step' must be at least 1" in run.stderr
    assert "output " + str(shots_dir / "o.blend") + " is also shot 1 ('x')'s output" in run.stderr


def _flaky_python(folder: Path) -> Path:
    """A Python (the bpy wheel's) killed by a signal the first time it starts a bake (cli.py)."""
    marker = folder / "crashed-once"
    flaky = folder / "flaky-python"
    flaky.write_text(
        f'#!/bin/sh\ncase "$1" in *cli.py) if [ ! -e "{marker}" ]; then touch "{marker}"; kill -9 $$; fi;; esac\n'
        f'exec "{sys.executable}" "$@"\n'
    )
    flaky.chmod(0o755)
    return flaky


def test_a_crashed_blender_is_retried_and_a_hung_one_timed_out(shots_dir, tmp_path):
    """A Blender that dies without reporting (here: killed on its first bake) gets --retries more
    attempts; one that hangs past --timeout is killed. Reported errors are not retried."""
    flaky = _flaky_python(tmp_path)
    hung = tmp_path / "hung-python"  # lists the libraries, then hangs in the bake
    hung.write_text(f'#!/bin/sh\ncase "$1" in *cli.py) exec sleep 60;; esac\nexec "{sys.executable}" "$@"\n')
    hung.chmod(0o755)
    entries = [{"name": "sh0", "blend": "sh0.blend", "output": "retry/sh0.blend",
                "chains": [{"chain": "b2:3", "target": "Goal"}]}]  # fmt: skip
    shot_file = _write_list(shots_dir / "retry.toml", entries, {"armature": "Rig"})
    run = subprocess.run([sys.executable, str(TOOL), str(shot_file), "--python", str(flaky)],
                         capture_output=True, text=True, timeout=120)  # fmt: skip
    assert run.returncode == 0, run.stderr
    entry = json.loads((shots_dir / "retry.report.json").read_text())["shots"][0]
    assert entry["status"] == "ok" and entry["attempts"] == 2, entry
    started = time.monotonic()
    run = subprocess.run([sys.executable, str(TOOL), str(shot_file), "--python", str(hung), "--timeout", "1",
                          "--retries", "1"], capture_output=True, text=True, timeout=120)  # fmt: skip
    assert run.returncode == 1 and time.monotonic() - started < 30
    entry = json.loads((shots_dir / "retry.report.json").read_text())["shots"][0]
    assert entry["status"] == "failed" and entry["attempts"] == 2 and "longer than 1.0 s" in entry["error"], entry
    assert (shots_dir / "retry" / "sh0.blend").is_file()  # the earlier good bake is left as it was
    assert not [p for p in (shots_dir / "retry").iterdir() if p.name.startswith(".")]


def test_no_output_overwrites_an_input_and_nothing_runs(shots_dir, tmp_path):
    """Issue 22: a shot's output that is another shot's blend (or its own, by a link) is refused
    before any Blender starts, in --check and in a run; every source keeps its bytes."""
    import hashlib

    def digests() -> dict[str, str]:
        return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(shots_dir.glob("sh*.blend"))}

    before = digests()
    (shots_dir / "loss").mkdir(exist_ok=True)
    link = shots_dir / "loss" / "own.blend"
    if not link.is_symlink():
        link.symlink_to(shots_dir / "sh2.blend")
    entries = [
        {"name": "a", "blend": "sh0.blend", "output": "sh1.blend", "chains": [{"chain": "b2:3", "target": "Goal"}]},
        {"name": "b", "blend": "sh1.blend", "output": "loss/b.blend", "chains": [{"chain": "b2:3", "target": "Goal"}]},
        {"name": "c", "blend": "sh2.blend", "output": "loss/own.blend"},
        {"name": "d", "blend": "sh3.blend", "output": "loss/b.blend"},
    ]
    shot_file = _write_list(shots_dir / "loss.toml", entries, {"armature": "Rig"})
    expected = [
        f"shot 1 ('a'): output {shots_dir}/sh1.blend is shot 2 ('b')'s blend: it would be overwritten",
        f"shot 3 ('c'): output {shots_dir}/loss/own.blend is the shot's own blend file: it would be overwritten",
        f"shot 4 ('d'): output {shots_dir}/loss/b.blend is also shot 2 ('b')'s output",
    ]
    for extra in (["--check"], ["--jobs", "2"]):
        run = _bake_shots(shot_file, *extra)
        assert run.returncode == 2, run.stderr
        for text in expected:
            assert text in run.stderr, (text, run.stderr)
    assert not (shots_dir / "loss.logs").exists() and not (shots_dir / "loss.report.json").exists()
    assert sorted(p.name for p in (shots_dir / "loss").iterdir()) == ["own.blend"]
    assert digests() == before


def test_no_output_overwrites_a_library_any_shot_links(shots_dir, tmp_path):
    """Issue 22 §1: a library a shot's blend links (directly, or through another library), or
    the run's report over one, is refused before any shot bakes, in --check and in a run, on
    the shot's own output and on another shot's; every file keeps its bytes."""
    import hashlib

    shot, props, deep = save_linked_chain(tmp_path)
    files = [shot, props, deep, *sorted(shots_dir.glob("sh*.blend"))]

    def digests() -> list[str]:
        return [hashlib.sha256(p.read_bytes()).hexdigest() for p in files]

    before = digests()
    linked = {"name": "linked", "blend": str(shot), "output": str(tmp_path / "out" / "linked.blend"),
              "chains": [{"chain": "b2:3", "target": "Goal"}]}  # fmt: skip
    cases = [
        ([{**linked, "output": str(props)}], [], f"output {props} is a library the shot's blend links"),
        ([{**linked, "output": str(deep)}], [], f"output {deep} is a library the shot's blend links"),
        ([{"name": "other", "blend": "sh1.blend", "output": str(props)}, linked], [],
         f"shot 1 ('other'): output {props} is a library shot 2 ('linked')'s blend links: it would be overwritten"),
        ([linked], ["--report", deep], f"--report {deep} is a library shot 1 ('linked')'s blend links"),
    ]  # fmt: skip
    for entries, extra, expected in cases:
        shot_file = _write_list(shots_dir / "libs.toml", entries, {"armature": "Rig"})
        for check in (["--check"], []):
            run = _bake_shots(shot_file, *check, *extra)
            assert run.returncode == 2 and expected in run.stderr and "Traceback" not in run.stderr, run.stderr
        assert not (shots_dir / "libs.logs").exists() and not (shots_dir / "libs.report.json").exists()
        assert not (tmp_path / "out").exists() and digests() == before
    # The shot that links them bakes as any other.
    run = _bake_shots(_write_list(shots_dir / "libs.toml", [linked], {"armature": "Rig"}))
    assert run.returncode == 0 and (tmp_path / "out" / "linked.blend").is_file(), run.stderr
    assert digests() == before


def test_a_blend_blender_cannot_open_is_refused_before_any_shot(shots_dir):
    entries = [{"name": "ok", "blend": "sh0.blend", "output": "unread/ok.blend"},
               {"name": "corrupt", "blend": "corrupt.blend", "output": "unread/corrupt.blend"}]  # fmt: skip
    shot_file = _write_list(shots_dir / "unread.toml", entries, {"armature": "Rig"})
    for check in (["--check"], []):
        run = _bake_shots(shot_file, *check)
        assert run.returncode == 2, run.stderr
        assert f"shot 2 ('corrupt'): Blender cannot open blend {shots_dir}/corrupt.blend" in run.stderr, run.stderr
    assert not (shots_dir / "unread").exists() and not (shots_dir / "unread.logs").exists()


def test_the_runner_never_renames_over_a_file_the_run_reads(shots_dir, tmp_path):
    """The last guard, for a file that became an input after the check: a shot whose output is a
    file the run reads is baked but not saved there; the file and the output folder are as they were."""
    sys.path.insert(0, str(REPO / "tools"))
    import shot_runner

    from headless import blender_command

    source = tmp_path / "read.blend"
    source.write_bytes(b"a file the run reads")
    (shot,) = shot_list.load(_write_list(shots_dir / "guard.toml", [
        {"name": "g", "blend": "sh0.blend", "output": "guard/g.blend", "chains": [{"chain": "b2:3", "target": "Goal"}]}
    ], {"armature": "Rig"}))  # fmt: skip
    task = {"name": "g", "output": str(source), "log": str(tmp_path / "g.log"), "timeout": None,
            "inputs": [str(shot.blend), str(source)],
            "command": blender_command.command(sys.executable, "python", str(REPO / "cli.py"), str(shot.blend),
                                               shot_list.cli_arguments(shot))}  # fmt: skip
    entry = shot_runner.run_with_retries(task, 0)
    assert entry["status"] == "failed", entry
    assert entry["error"] == f"not saved: the output {source} is a file the run reads ({source})"
    assert source.read_bytes() == b"a file the run reads"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["g.json", "g.log", "read.blend"]
