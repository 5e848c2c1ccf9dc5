"""Without the shared motion capture clips (they live outside the repository), the scripts that
need them stop before any work with one line saying where they looked and how to point elsewhere."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("script", [["bench/bench_contacts.py"], ["tools/contact_keys_dump.py", "dump", "x.npz"]])
def test_missing_clips_exit_with_one_line(tmp_path, script):
    env = {**os.environ, "CHAIN_IK_MOCAP": str(tmp_path / "absent")}
    run = subprocess.run(
        [sys.executable, str(REPO / script[0]), *script[1:]],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        cwd=tmp_path,
    )
    assert run.returncode == 1 and run.stdout == ""
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in run.stderr, run.stderr
    assert str(tmp_path / "absent") in lines[0] and "CHAIN_IK_MOCAP" in lines[0] and "cmu_walk_delfem2.bvh" in lines[0]
