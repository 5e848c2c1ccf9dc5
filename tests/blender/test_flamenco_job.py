"""farm/flamenco/chain_ik_bake.js with the submitting side in real Blender: the hidden `shots_json`
setting's `eval`, evaluated as Flamenco's add-on does, runs the extension's
headless/flamenco_submission.submission() (the one check every route applies, the libraries each
blend links included, listed by a background run of this Blender), and the job type, run under
Node with stand-ins for Flamenco's API (tests/flamenco/flamenco_standins.js), authors exactly the
arguments tools/bake_shots.py would, or refuses the job with exactly the problems
`bake_shots.py --check` names."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import bpy
import pytest
from builders import save_linked_chain
from conftest import REPO

from headless import flamenco_submission, shot_list  # the repository root is on sys.path (pyproject's pythonpath)

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


def _submit(listed: Path, tmp_path: Path, max_error: float = 0.0) -> dict:
    """As a submission does: the add-on evaluates shots_json in Blender, the Manager compiles the job."""
    settings = _job_type(tmp_path)
    shots_json = _flamenco_eval(settings["shots_json"]["eval"], _Settings(shot_list=str(listed), max_error=max_error))
    return _node({"shot_list": str(listed), "cli_path": "/x/cli.py", "max_error": max_error, "shots_json": shots_json},
                 tmp_path)  # fmt: skip


def _blends(folder: Path) -> None:
    """sh010.blend and sh020.blend: empty scenes (the submission opens them in Blender)."""
    bpy.ops.wm.read_homefile(use_empty=True)
    for name in ("sh010", "sh020"):
        bpy.ops.wm.save_as_mainfile(filepath=str(folder / f"{name}.blend"), copy=True)


def test_job_type_authors_the_shot_lists_cli_arguments(tmp_path, ext):
    _blends(tmp_path)
    listed = tmp_path / "shots.toml"
    listed.write_text(LIST)
    # The cli_path eval finds an installed extension's cli.py; the tests load it by path instead: ''.
    assert _flamenco_eval(_job_type(tmp_path)["cli_path"]["eval"], _Settings()) in ("", str(REPO / "cli.py"))
    for bound in (0.0, 0.5):
        tasks = _submit(listed, tmp_path, bound)["tasks"]
        shots = shot_list.load(listed)
        assert [t["name"] for t in tasks] == [f"bake-{s.name}" for s in shots] == ["bake-sh010", "bake-sh020"]
        for task, shot in zip(tasks, shots, strict=True):
            (command,) = task["commands"]
            assert task["type"] == "blender" and command["name"] == "blender-render"
            params = command["parameters"]
            assert params["blendfile"] == str(shot.blend)
            args = params["args"]
            assert args[:5] == ["--python-exit-code", "1", "--python", "/x/cli.py", "--"]
            tail = [f"--output={shot.output}", f"--json={shot.output.with_suffix('.bake.json')}"]
            assert args[5:] == shot_list.cli_arguments(shot, bound or None) + tail
        bounded = [a for a in tasks[0]["commands"][0]["parameters"]["args"] if a.startswith("--max-error=")]
        assert bounded == ([f"--max-error={bound!r}"] if bound > 0.0 else [])


def _bad_lists(folder: Path) -> dict[str, str]:
    """Lists the old job type accepted (it had rules of its own): each must now be refused."""
    (folder / "link.blend").symlink_to(folder / "sh010.blend")
    return {
        "output is its own blend": LIST.replace('output = "baked/sh010.blend"', 'output = "sh010.blend"'),
        "output is its own blend, by a link": LIST.replace('output = "baked/sh010.blend"', 'output = "link.blend"'),
        "output is another shot's blend": LIST.replace('output = "baked/sh020.blend"', 'output = "sh010.blend"'),
        "an unknown method": LIST.replace('method = "fabrik"', 'method = "fabrick"'),
        "not finite numbers": LIST.replace("reduce = 0.25", "reduce = nan").replace("-90", "inf"),
        "old rules": LIST.replace("step = 2", "step = 0").replace('target = "Goal.R"', 'targte = "Goal.R"'),
    }  # fmt: skip


def test_job_type_refuses_what_the_python_validator_refuses(tmp_path, ext):
    _blends(tmp_path)
    kept = (tmp_path / "sh010.blend").read_bytes()
    for case, text in _bad_lists(tmp_path).items():
        listed = tmp_path / "shots.toml"
        listed.write_text(text)
        with pytest.raises(shot_list.ShotListError) as python:
            shot_list.load(listed)
        authored = _submit(listed, tmp_path)
        assert "tasks" not in authored, case
        assert f"{len(python.value.problems)} problem(s)" in authored["error"], (case, authored)
        for problem in python.value.problems:
            assert problem in authored["error"], (case, problem, authored)
        # The same words as bake_shots.py --check (the log and report files aside: that route's own).
        check = subprocess.run([sys.executable, str(REPO / "tools" / "bake_shots.py"), str(listed), "--check"],
                               capture_output=True, text=True, timeout=60)  # fmt: skip
        assert check.returncode == 2 and all(problem in check.stderr for problem in python.value.problems), case
    assert (tmp_path / "sh010.blend").read_bytes() == kept


def test_job_type_refuses_an_output_that_is_a_library_a_shot_links(tmp_path, ext):
    """Issue 22 §1 on Flamenco: at submission a background Blender lists the libraries each
    shot's blend links (through another library too); an output that is one refuses the job,
    in the words of `bake_shots.py --check`, before any task exists."""
    _blends(tmp_path)
    shot, props, deep = save_linked_chain(tmp_path)
    for library in (props, deep):
        listed = tmp_path / "shots.toml"
        listed.write_text(LIST.replace('output = "baked/sh010.blend"', f'output = "{library}"')
                          .replace('blend = "sh020.blend"', f'blend = "{shot}"'))  # fmt: skip
        shot_list.load(listed)  # clean without Blender: only the libraries refuse it
        expected = f"shot 1 ('sh010'): output {library} is a library shot 2 ('shot')'s blend links: it would be"
        authored = _submit(listed, tmp_path)
        assert "tasks" not in authored and "1 problem(s)" in authored["error"], authored
        assert expected in authored["error"], authored
        check = subprocess.run([sys.executable, str(REPO / "tools" / "bake_shots.py"), str(listed), "--check",
                                "--python", sys.executable], capture_output=True, text=True, timeout=120)  # fmt: skip
        assert check.returncode == 2 and expected in check.stderr, check.stderr
    listed.write_text(LIST.replace('blend = "sh020.blend"', f'blend = "{shot}"'))
    assert len(_submit(listed, tmp_path)["tasks"]) == 2


def test_job_type_refuses_a_list_it_could_not_check(tmp_path, ext):
    """Without Chain IK enabled in the submitting Blender the list cannot be checked: refused, saying why."""
    _blends(tmp_path)
    listed = tmp_path / "shots.toml"
    listed.write_text(LIST)
    hidden = {n: sys.modules.pop(n) for n in list(sys.modules) if n == "chain_ik" or n.endswith(".chain_ik")}
    try:
        authored = _submit(listed, tmp_path)
    finally:
        sys.modules.update(hidden)
    assert "Chain IK is not enabled in this Blender" in authored["error"], authored
    # The old add-on's setting (the TOML's content, unchecked) is refused too.
    raw = json.dumps(_toml(listed))
    authored = _node({"shot_list": str(listed), "cli_path": "c", "shots_json": raw}, tmp_path)
    assert "not checked by Chain IK" in authored["error"], authored


def test_job_type_and_shot_list_share_the_documents_mark(tmp_path):
    load = f"require({json.dumps(str(STANDINS))}).loadJobType({json.dumps(str(JOB))})"
    code = f"process.stdout.write(require('node:vm').runInContext('CHECKED_BY', {load}.context));"
    run = subprocess.run([NODE, "-e", code], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0 and run.stdout == flamenco_submission.CHECKED_BY, run.stderr


def _toml(path: Path) -> dict:
    import tomllib

    return tomllib.loads(path.read_text())
