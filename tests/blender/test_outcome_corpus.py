"""The outcome corpus tool (issue 19, item 6): recording is off without CHAIN_IK_CORPUS; with it,
corpus_sample.py's outcomes are written exactly as this session gets them again; the comparer
passes identical corpora and finds a 1-ulp difference."""

from __future__ import annotations

import importlib.util
import json
import math
import os
import shutil
import subprocess
import sys

import bpy
import corpus_sample
import pytest
from conftest import REPO

SAMPLE = "corpus_sample"


def _compare_corpus():
    spec = importlib.util.spec_from_file_location("compare_corpus", REPO / "tools" / "compare_corpus.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    """corpus_sample.py run by pytest in its own process with recording on: {(test, kind, seq): record}."""
    out = tmp_path_factory.mktemp("corpus")
    env = dict(os.environ, CHAIN_IK_CORPUS=str(out))
    sample = REPO / "tests" / "blender" / f"{SAMPLE}.py"
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(sample)],
        capture_output=True, text=True, timeout=600, env=env, cwd=REPO,
    )  # fmt: skip
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    lines = (out / f"{SAMPLE}.jsonl").read_text().splitlines()
    records = {}
    for line in lines:
        r = json.loads(line)
        records[(r["test"].split("::")[1], r["kind"], r["seq"])] = r
    return out, records


def _pose(obj) -> dict:
    return {b.name: list(b.rotation_quaternion) for b in obj.pose.bones}


def _keys(obj) -> dict:
    from chain_ik.rig.keys import action_fcurves

    return {(fc.data_path, fc.array_index): [list(k.co) for k in fc.keyframe_points] for fc in action_fcurves(
        obj.animation_data.action)}  # fmt: skip


@pytest.mark.skipif(bool(os.environ.get("CHAIN_IK_CORPUS")), reason="this session records the corpus")
def test_recording_is_off_without_the_variable(ext):
    from chain_ik import operators

    assert "outcome_corpus" not in sys.modules
    assert subprocess.run.__module__ == "subprocess"
    for handlers in (bpy.app.handlers.depsgraph_update_post, bpy.app.handlers.frame_change_post):
        assert not any(getattr(h, "__module__", "") == "outcome_corpus" for h in handlers)
    for cls in operators.CLASSES:
        assert not hasattr(cls.execute, "corpus") and "__getattribute__" not in vars(cls)


def test_operator_records_hold_the_exact_pose_reports_and_keys(recorded, scene):
    out, records = recorded
    solve = records[("test_solve", "operator", 0)]
    assert solve["name"] == "chain_ik.solve" and solve["returned"] == ["FINISHED"]
    assert solve["properties"] == {"tip": "b2", "chain_length": 3, "target": "Goal", "method": "fabrik"}
    [[kind, message]] = solve["reports"]
    assert kind == ["INFO"] and message.startswith("chain 'b2': fabrik, tip error") and message.endswith("<t> ms")
    assert records[("test_solve", "end", 0)]["result"] == "passed"
    # The same solve in this session: the recorded channels are its values, bit for bit.
    obj = corpus_sample.solve_case()
    recorded_pose = solve["state"]["armatures"]["Rig"]["pose"]
    assert {n: b["rotation_quaternion"] for n, b in recorded_pose.items()} == _pose(obj)

    bake = records[("test_bake", "operator", 0)]
    # the time shown is the one waited: the playback's measuring in it (said apart)
    assert any(
        "baked 10 frame(s) of 1 chain(s)" in m and m.endswith("(measured in <t> s), <t> s") for _, m in bake["reports"]
    )
    bpy.ops.wm.read_homefile(use_empty=True)
    obj = corpus_sample.bake_case()
    [(name, curves)] = [(n, c) for n, c in bake["state"]["actions"].items() if n == obj.animation_data.action.name]
    keys = {}
    for key, curve in curves.items():
        path, index = key.rsplit("|", 1)[-1].rsplit("[", 1)
        co = curve["co"]
        keys[(path, int(index[:-1]))] = [co[i : i + 2] for i in range(0, len(co), 2)]
    assert keys == _keys(obj) and len(keys) == 12 and all(len(k) == 10 for k in keys.values())

    refused = records[("test_refused", "operator", 0)]
    assert refused["returned"] == ["CANCELLED"] and refused["reports"][0][0] == ["ERROR"]
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["bpy"] == bpy.app.version_string and manifest["records"][SAMPLE] == len(records)


def test_app_live_and_cli_records(recorded):
    _, records = recorded
    app = records[("test_app_solve", "app", 0)]
    (returned,) = app["returned"]  # one outcome per chain of the unit
    assert app["name"] == "app.solve.solve_unit" and returned["__type__"] == "ChainOutcome"
    assert returned["time_ms"] == "<t>" and returned["spec"]["target"] == "bpy.data.objects['Goal']"
    # Live: one record per target move (the update Live runs inside its own handler is not one).
    live = [r for (test, kind, _), r in records.items() if test == "test_live" and kind == "live"]
    assert len(live) == len(corpus_sample.LIVE_MOVES)
    assert len({json.dumps(r["state"]["armatures"]["Rig"]["pose"]) for r in live}) == len(live)
    cli = records[("test_cli", "cli", 0)]
    assert cli["returncode"] == 0 and cli["argv"][0] == "<tmp>/test_cli0/scene.blend"
    assert cli["json"]["status"] == "ok" and cli["json"]["seconds"] == "<t>" and cli["json"]["keys"] > 0
    saved = cli["saved"]["actions"]
    assert len(saved) == 2 and sum(len(curves) for curves in saved.values()) == 3 + 12  # Goal's, the bake's
    assert " <t> s," in cli["stdout"] and "<tmp>/test_cli0/out.blend" in cli["stdout"]


def test_comparer_passes_identical_corpora_and_finds_one_ulp(recorded, tmp_path, capsys):
    out, records = recorded
    compare = _compare_corpus()
    a, b = tmp_path / "a", tmp_path / "b"
    shutil.copytree(out, a)
    shutil.copytree(out, b)
    assert compare.main([str(a), str(b)]) == 0
    assert f"bit-identical: {len(records)}" in capsys.readouterr().out
    # One quaternion component one ulp up, in B's solve record.
    path = b / f"{SAMPLE}.jsonl"
    lines = path.read_text().splitlines()
    index = next(i for i, line in enumerate(lines) if '"kind":"operator"' in line and "::test_solve" in line)
    record = json.loads(lines[index])
    bone = record["state"]["armatures"]["Rig"]["pose"]["b1"]
    before = bone["rotation_quaternion"][1]
    bone["rotation_quaternion"][1] = math.nextafter(before, math.inf)
    lines[index] = json.dumps(record, separators=(",", ":"))
    path.write_text("\n".join(lines) + "\n")
    assert compare.main([str(a), str(b)]) == 1
    report = capsys.readouterr().out
    assert f"bit-identical: {len(records) - 1}" in report and "differing beyond tolerance: 1" in report
    assert "(1 ulp)" in report and "test_solve operator#0" in report and "rotation_quaternion[1]" in report
    assert compare.main([str(a), str(b), "--tolerance", "1e-12"]) == 0
    assert "differing within tolerance 1e-12: 1" in capsys.readouterr().out
    # A record missing from B is a difference at any tolerance.
    path.write_text("\n".join(lines[:index] + lines[index + 1 :]) + "\n")
    assert compare.main([str(a), str(b), "--tolerance", "1"]) == 1
    assert "only in A: 1, only in B: 0" in capsys.readouterr().out


def test_comparer_counts_bits_not_values():
    compare = _compare_corpus()

    def diff(x, y):
        d = compare.Difference()
        compare.compare(x, y, "", d)
        return d

    assert not diff({"v": [math.nan, 1.5]}, {"v": [math.nan, 1.5]}).floats  # the same NaN bits
    zero = diff(0.0, -0.0)
    assert zero.floats == 1 and zero.largest == 0.0 and zero.beyond(0.0) and not zero.beyond(1e-9)
    assert diff(1, 1.0).beyond(1.0)  # an int become a float is a change at any tolerance
    assert diff({"a": 1}, {"a": 1, "b": 2}).structural == [".b: only in B"]
    assert compare.ulp_distance(1.0, math.nextafter(1.0, 2.0)) == 1 and compare.ulp_distance(-0.0, 0.0) == 1


def test_run_dependent_text_is_normalised():
    from outcome_state import is_time_name, normal_text

    text = '00:00.641  blend | Read blend: "/tmp/p-7/a.blend"\nbaked 3 frame(s), 0.12 s; 4.25 ms <X at 0x7f3a>'
    assert normal_text(text, (("/tmp/p-7", "<tmp>"),)) == (
        '<t>  blend | Read blend: "<tmp>/a.blend"\nbaked 3 frame(s), <t> s; <t> ms <X>'
    )
    assert all(map(is_time_name, ("time_ms", "seconds", "solve_seconds", "per_chain_seconds")))
    assert not any(map(is_time_name, ("items", "frames", "keys_before", "iterations")))
