"""Smoke test: bench/bench_live.py --quick runs (in this process) and prints its tables, so it cannot rot."""

from __future__ import annotations

import importlib.util

from conftest import REPO


def test_bench_live_quick(scene, ext, capsys):
    from chain_ik.solvers import REGISTRY

    spec = importlib.util.spec_from_file_location("bench_live", REPO / "bench" / "bench_live.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    bench.main(["--quick"])
    out = capsys.readouterr().out
    for case in bench.CASES:
        assert f"### {case}:" in out
    assert out.count("| Blender IK constraints |") == len(bench.CASES)
    assert out.count("(write floor: no solve) |") == len(bench.CASES)  # what showing a written pose costs
    assert out.count("| of which the armature's copy") == len(bench.CASES)  # its copy alone
    for method in REGISTRY:  # a row per method, each reaching along the path
        rows = [line for line in out.splitlines() if line.startswith(f"| Live, {method} |")]
        assert len(rows) == len(bench.CASES)
        for row in rows:
            assert float(row.strip("|").split("|")[-1]) < 1e-2, row
