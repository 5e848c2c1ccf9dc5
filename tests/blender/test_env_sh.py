"""tools/env.sh: a cached venv made before a dev package was added (CI's, an older checkout's) gets
the missing packages installed, once, instead of being used as it is or rebuilt from scratch."""

from __future__ import annotations

import subprocess

from conftest import REPO

FAKE_PYTHON = """#!/bin/sh
# Stands in for a venv's python: `import bpy` works, pip calls are recorded.
if [ "$1" = "-m" ] && [ "$2" = "pip" ]; then echo "$@" >> "{log}"; exit 0; fi
exit 0
"""


def _venv_for(cache) -> str:
    run = subprocess.run(
        ["bash", "-c", f"source '{REPO / 'tools' / 'env.sh'}'; venv_for 9.9.9"],
        capture_output=True,
        text=True,
        timeout=60,
        env={"PATH": "/usr/bin:/bin", "HOME": str(cache), "CHAIN_IK_CACHE": str(cache)},
    )
    assert run.returncode == 0, run.stderr
    return run.stdout.strip()


def test_an_old_cached_venv_gets_the_missing_dev_packages(tmp_path):
    venv = tmp_path / "venv-bpy-9.9.9"
    (venv / "bin").mkdir(parents=True)
    log = tmp_path / "pip.log"
    python = venv / "bin" / "python"
    python.write_text(FAKE_PYTHON.format(log=log))
    python.chmod(0o755)
    (venv / ".complete").touch()  # built by an env.sh without dask: no .dev-packages
    assert _venv_for(tmp_path) == str(python)
    calls = log.read_text().splitlines()
    assert len(calls) == 1 and "install" in calls[0] and "dask[distributed]" in calls[0].split()
    assert "dask[distributed]" in (venv / ".dev-packages").read_text()
    _venv_for(tmp_path)  # up to date now: pip is not run again
    assert len(log.read_text().splitlines()) == 1
