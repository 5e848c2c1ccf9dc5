"""Smoke test: bench/bench_full_body.py --quick (issue 20 items 1-5 in one run) runs in this process
and prints its one table, a row per item's figure beside its goal, so it cannot rot. The figures of
a quick run mean little; item 1's case and the aim are solved in full even so, and must be met."""

from __future__ import annotations

import importlib.util

from conftest import REPO


def test_bench_full_body_quick(scene, ext, capsys):
    from chain_ik.solvers import REGISTRY

    spec = importlib.util.spec_from_file_location("bench_full_body", REPO / "bench" / "bench_full_body.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    bench.main(["--quick"])
    out = capsys.readouterr().out
    table = out[out.index("Issue 20, items 1-5, one run") :]
    rows = [line for line in table.splitlines() if line.rstrip().endswith(("| met |", "| **not met** |"))]
    items = [row.split(" | ")[0][2:] for row in rows]
    n = len(REGISTRY)
    assert items == ["1 Move Root"] * n + ["2 Soft IK"] * n + ["3 Mass"] * 2 + ["4 Aim"] * 2 + [
        "5 Trees",
        "5 Live",
        "5 Costs",
        "5 Costs",
    ]
    for row in rows:
        if row.startswith(("| 1 Move Root", "| 4 Aim")):
            assert row.endswith("| met |"), row
    for title in ("Item 1", "Item 2", "Item 3", "Item 4", "Item 5: trees", "Item 5: Live", "Item 5: Move Root"):
        assert f"## {title}" in table
    assert "refused" not in table
    assert "| pins' worst drift | root moved (mean) |" in table  # a mean over the targets, as its header says
