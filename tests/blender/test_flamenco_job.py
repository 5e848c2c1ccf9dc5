"""farm/flamenco/chain_ik_bake.js against Python: the settings its `eval` strings compute in Blender
(as Flamenco's add-on evaluates them) and the cli.py arguments it authors, which must be the ones
tools/shot_list.py makes for the same shot list. The job type runs under Node with stand-ins for
Flamenco's API (tests/flamenco/flamenco_standins.js)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import bpy
import pytest
from conftest import REPO

sys.path.insert(0, str(REPO / "tools"))
import shot_list  # noqa: E402

JOB = REPO / "farm" / "flamenco" / "chain_ik_bake.js"
STANDINS = REPO / "tests" / "flamenco" / "flamenco_standins.js"
NODE = shutil.which("node")
pytestmark = pytest.mark.skipif(NODE is None, reason="node is missing (tools/test.sh installs it)")

LIST = """
[defaults]
armature = "Rig"
frames = "1-40"

[[shots]]
name = "sh010"
blend = "sh010.blend"
output = "baked/sh010.blend"
reduce = 0.25
[[shots.chains]]
chain = "hand.L:3"
target = "Goal.L"
pole = "Elbow.L"
pole_angle = -90
method = "fabrik"
[[shots.chains]]
chain = "hand.R:3"
target = "Goal.R"
target_bone = "ctrl"

[[shots]]
blend = "sh020.blend"
output = "baked/sh020.blend"
frames = [5, 9]
step = 2
interpolation = "LINEAR"
"""


def _node(settings: dict, tmp_path: Path) -> dict:
    path = tmp_path / "settings.json"
    path.write_text(json.dumps(settings))
    run = subprocess.run([NODE, str(STANDINS), str(JOB), str(path)], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    return json.loads(run.stdout)


def _job_type(tmp_path: Path) -> dict:
    code = f"const {{loadJobType}} = require({json.dumps(str(STANDINS))}); "
    code += f"process.stdout.write(JSON.stringify(loadJobType({json.dumps(str(JOB))}).context.JOB_TYPE));"
    run = subprocess.run([NODE, "-e", code], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    return {s["key"]: s for s in json.loads(run.stdout)["settings"]}


class _Settings:
    def __init__(self, **values) -> None:
        self.__dict__.update(values)


def _flamenco_eval(expression: str, settings: _Settings):
    """As Flamenco's add-on evaluates a setting (job_types_propgroup.eval_setting): eval(expr, {}, locals)."""
    local = {"bpy": bpy, "C": bpy.context, "jobname": "job", "Path": Path, "abspath": lambda p: Path(p).absolute(),
             "last_n_dir_parts": None, "settings": settings}  # fmt: skip
    return eval(expression, {}, local)


def test_job_type_authors_the_shot_lists_cli_arguments(tmp_path, ext):
    (tmp_path / "sh010.blend").write_bytes(b"")
    (tmp_path / "sh020.blend").write_bytes(b"")
    listed = tmp_path / "shots.toml"
    listed.write_text(LIST)
    settings = _job_type(tmp_path)
    # The hidden setting, evaluated in Blender at submission: the list's content as JSON.
    shots_json = _flamenco_eval(settings["shots_json"]["eval"], _Settings(shot_list=str(listed)))
    # The cli_path eval finds an installed extension's cli.py; the tests load it by path instead: ''.
    assert _flamenco_eval(settings["cli_path"]["eval"], _Settings()) in ("", str(REPO / "cli.py"))
    authored = _node({"shot_list": str(listed), "cli_path": "/x/cli.py", "shots_json": shots_json}, tmp_path)
    tasks = authored["tasks"]
    shots = shot_list.load(listed)
    assert [t["name"] for t in tasks] == [f"bake-{s.name}" for s in shots] == ["bake-sh010", "bake-sh020"]
    for task, shot in zip(tasks, shots, strict=True):
        (command,) = task["commands"]
        assert task["type"] == "blender" and command["name"] == "blender-render"
        params = command["parameters"]
        assert params["blendfile"] == str(shot.blend)
        args = params["args"]
        assert args[:5] == ["--python-exit-code", "1", "--python", "/x/cli.py", "--"]
        tail = ["--output", str(shot.output), "--json", str(shot.output.with_suffix(".bake.json"))]
        assert args[5:] == shot_list.cli_arguments(shot) + tail


def test_job_type_refuses_what_the_python_validator_refuses(tmp_path):
    listed = tmp_path / "shots.toml"
    listed.write_text(LIST.replace("step = 2", "step = 0").replace('target = "Goal.R"', 'targte = "Goal.R"'))
    with pytest.raises(shot_list.ShotListError) as python:
        shot_list.load(listed)
    authored = _node({"shot_list": str(listed), "cli_path": "c", "shots_json": json.dumps(_toml(listed))}, tmp_path)
    for problem in ("shot 2: 'step'", "shot 1 ('sh010'), chain 2: unknown key 'targte'",
                    "shot 1 ('sh010'), chain 2: 'target' is required"):  # fmt: skip
        assert problem in str(python.value) and problem in authored["error"], (problem, authored)


def _toml(path: Path) -> dict:
    import tomllib

    return tomllib.loads(path.read_text())
