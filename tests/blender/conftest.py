"""Blender tier: the extension registered inside the bpy wheel, once per session.

The repository root is the extension package; it is loaded under the fixed
name `chain_ik` (the checkout directory may be named anything), registered once
and unregistered at session end (a class left registered at exit can hang 4.2).
"""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

import pytest

bpy = pytest.importorskip("bpy")

REPO = Path(__file__).resolve().parents[2]
PACKAGE = "chain_ik"
# The helpers beside this file (builders.py, recording.py) import as top-level modules.
sys.path.insert(0, str(Path(__file__).resolve().parent))


def load_extension():
    if PACKAGE in sys.modules:
        return sys.modules[PACKAGE]
    spec = importlib.util.spec_from_file_location(PACKAGE, REPO / "__init__.py", submodule_search_locations=[str(REPO)])
    module = importlib.util.module_from_spec(spec)
    sys.modules[PACKAGE] = module
    spec.loader.exec_module(module)
    return module


def pytest_configure(config):
    """CHAIN_IK_CORPUS=<folder>: record the outcome corpus there (outcome_corpus.py); unset, nothing
    of it is imported or runs."""
    corpus = os.environ.get("CHAIN_IK_CORPUS")
    if corpus:
        import outcome_corpus

        outcome_corpus.activate(config, Path(corpus).resolve(), load_extension)


@pytest.fixture(scope="session")
def ext():
    module = load_extension()
    module.register()
    yield module
    module.unregister()


@pytest.fixture
def scene(ext):
    """An empty scene for each test (read_homefile keeps add-ons; read_factory_settings would not)."""
    bpy.ops.wm.read_homefile(use_empty=True)
    yield bpy.context.scene
    bpy.ops.wm.read_homefile(use_empty=True)


@pytest.fixture(scope="module")
def rigify(ext):
    """Rigify enabled for a module's tests (its metarig operator: builders.metarig)."""
    import addon_utils

    addon_utils.enable("rigify", default_set=True)
    yield
    addon_utils.disable("rigify", default_set=True)


@pytest.fixture(scope="session")
def rigify_file(ext, tmp_path_factory):
    """Rigify's generated human rig, generated once per session (it takes seconds) and saved;
    tests open the file. Rigify itself is enabled only while generating."""
    import addon_utils

    addon_utils.enable("rigify", default_set=True)
    try:
        bpy.ops.wm.read_homefile(use_empty=True)
        bpy.ops.object.armature_human_metarig_add()
        bpy.ops.pose.rigify_generate()
        path = str(tmp_path_factory.mktemp("rigify") / "rig.blend")
        bpy.ops.wm.save_as_mainfile(filepath=path, copy=True)
        bpy.ops.wm.read_homefile(use_empty=True)
    finally:
        addon_utils.disable("rigify", default_set=True)
    return path


# The 4.2 bpy wheel segfaults at interpreter exit once any PropertyGroup class
# with a Python method has been registered, even after a clean unregister
# (reproduced with Rigify's own enable/disable as well). Everything is
# unregistered by then, so on 4.x end the process with pytest's own status
# right after pytest is done, skipping only the interpreter's finalisation.
_exit_status = {"code": None}


def pytest_sessionfinish(session, exitstatus):
    _exit_status["code"] = int(exitstatus)


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config):
    if bpy.app.version < (5, 0, 0) and _exit_status["code"] is not None:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(_exit_status["code"])
