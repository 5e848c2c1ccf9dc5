"""The real install path: build the zip with Blender's extension tool, validate it,
install it with Blender's installer in a throwaway user directory, and use it."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import bpy
import pytest

REPO = Path(__file__).resolve().parents[2]


def blender_ext_tool() -> Path:
    """blender_ext.py shipped inside this bpy wheel (runs with plain Python)."""
    tool = Path(bpy.utils.system_resource("SCRIPTS")) / "addons_core" / "bl_pkg" / "cli" / "blender_ext.py"
    assert tool.exists(), f"no blender_ext.py in this bpy wheel ({tool})"
    return tool


@pytest.fixture(scope="module")
def built_zip(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    tool = blender_ext_tool()
    run = subprocess.run(
        [sys.executable, str(tool), "build", "--source-dir", str(REPO), "--output-dir", str(out)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    zips = list(out.glob("*.zip"))
    assert len(zips) == 1, run.stdout
    check = subprocess.run([sys.executable, str(tool), "validate", str(zips[0])], capture_output=True, text=True)
    assert check.returncode == 0, check.stdout + check.stderr
    return zips[0]


def test_zip_holds_the_extension_only(built_zip):
    names = zipfile.ZipFile(built_zip).namelist()
    assert "blender_manifest.toml" in names and "__init__.py" in names
    wanted = {
        "registration.py",
        "properties.py",
        "rig/write.py",
        "app/solve/__init__.py",
        "operators/solve.py",
        "ui/panels.py",
        "cli.py",
    }
    # cli.py's checks, and the shot list's at Flamenco submission: every module of headless/.
    wanted |= {f"headless/{p.name}" for p in (REPO / "headless").glob("*.py")}
    assert wanted <= set(names)
    assert any(n.startswith("solvers/") for n in names)
    for excluded in ("tests/", "bench/", "tools/", ".ci/", ".git/", "pyproject.toml"):
        assert not any(n.startswith(excluded) for n in names), excluded
    assert not any("__pycache__" in n for n in names)


def test_install_with_blenders_installer(built_zip, tmp_path):
    env = dict(os.environ, BLENDER_USER_RESOURCES=str(tmp_path / "user"))
    run = subprocess.run(
        [sys.executable, str(Path(__file__).parent / "install_script.py"), str(built_zip)],
        capture_output=True,
        text=True,
        timeout=240,
        env=env,
        cwd=tmp_path,
    )
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    assert "OK installed bl_ext.user_default.chain_ik" in run.stdout
    # The installed cli.py runs (README: where it lives and how to run it).
    cli = run.stdout.split("CLI ", 1)[1].split("\n", 1)[0]
    assert cli.endswith("extensions/user_default/chain_ik/cli.py") or cli.endswith("chain_ik\\cli.py"), cli
    usage = subprocess.run([sys.executable, cli, "--help"], capture_output=True, text=True, timeout=120, env=env)
    assert usage.returncode == 0 and "--armature" in usage.stdout, usage.stderr
