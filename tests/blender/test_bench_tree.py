"""Smoke test: bench/bench_tree.py --quick runs (in this process) and prints its tables, so it cannot rot."""

from __future__ import annotations

import importlib.util

from conftest import REPO


def test_bench_tree_quick(scene, ext, capsys):
    from chain_ik.solvers import REGISTRY

    spec = importlib.util.spec_from_file_location("bench_tree", REPO / "bench" / "bench_tree.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    bench.main(["--quick"])
    out = capsys.readouterr().out
    for case in bench.CASES:
        assert f"### {case}:" in out
    assert out.count("| Blender legacy IK (update with IK) |") == len(bench.CASES)
    for method in REGISTRY:  # a row per method: figures, or "not available" without a tree kernel
        assert out.count(f"| Chain IK {method} |") == len(bench.CASES)
    assert "refused" not in out
