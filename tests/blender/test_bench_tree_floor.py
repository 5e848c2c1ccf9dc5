"""Smoke test: the tree floor benches (per solve, a bake's parts, kept frames) run on a few poses
in this process and print their rows, so they cannot rot."""

from __future__ import annotations

import importlib.util

import pytest
from conftest import REPO


def _bench(name: str):
    spec = importlib.util.spec_from_file_location(name, REPO / "bench" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_bench_tree_floor_both_methods(scene, ext, capsys):
    _bench("bench_tree_floor").main(["--cases", "two hands", "--poses", "3", "--repeats", "1"])
    out = capsys.readouterr().out
    assert "### two hands: jacobian" in out and "### two hands: fabrik" in out
    # FABRIK's floor split in the same run: the start's look and steps, its own kernel's fixed cost
    assert "its kernel's first look" in out and "capped at 0 iterations" in out


@pytest.mark.parametrize(("name", "method"), [("bench_tree_floor", "ccd"), ("bench_tree", "fabrik;ccd")])
def test_bench_refuses_an_unknown_method(scene, ext, name, method):
    with pytest.raises(SystemExit):  # before measuring anything: a typo must not print an empty table
        _bench(name).main(["--methods", method])


@pytest.mark.parametrize("name", ["bench_tree_floor_bake", "bench_tree_kept"])
def test_bake_floor_benches_run(scene, ext, capsys, name):
    args = ["--cases", "two hands", "--poses", "3", "--repeats", "1", "--frames", "6", "--methods", "fabrik"]
    _bench(name).main(args)
    assert "two hands" in capsys.readouterr().out
