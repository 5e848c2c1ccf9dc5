"""bench/bench_buss.py cannot rot: its trees are what Buss's demo builds, and a few steps run."""

import importlib.util
from pathlib import Path

import numpy as np

import solvers

_path = Path(__file__).resolve().parents[2] / "bench" / "bench_buss.py"
_spec = importlib.util.spec_from_file_location("_bench_buss", _path)
bench = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bench)


def test_trees_match_buss_demo():
    for shape, dof, effectors in (("Y", 7, 2), ("double Y", 25, 4)):
        bones, ends = bench.y_shape() if shape == "Y" else bench.double_y_shape()
        skeleton = bench.skeleton_of(bones)
        local = np.tile([1.0, 0.0, 0.0, 0.0], (skeleton.n_bones, 1))
        frames, heads, tips = skeleton.forward(local)
        np.testing.assert_allclose(heads, [b[1] for b in bones], atol=1e-12)
        np.testing.assert_allclose(tips, [b[2] for b in bones], atol=1e-12)
        assert int(np.sum(~skeleton.limits.lock)) == dof and len(ends) == effectors


def test_a_few_steps_run_and_the_baseline_tracks():
    total, _ = bench.run("Y", lambda s, q, e, g: bench.dls_baseline(s, q, e, g, 0.6), 5, 10)
    assert np.isfinite(total)
    for _, step in bench.methods():
        total, _ = bench.run("Y", step, 2, 3)
        assert np.isfinite(total)
    assert solvers.REGISTRY["triangulation"].tree is not None
