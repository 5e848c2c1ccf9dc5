"""method_names.py, the registry's method names known without numpy, is the registry's list."""

from __future__ import annotations

import ast
import importlib.util
from pathlib import Path

import method_names
from solvers import registry

ROOT = Path(__file__).resolve().parents[2]


def test_the_names_are_the_registrys_in_its_order():
    assert method_names.METHOD_NAMES == tuple(registry.REGISTRY)
    assert method_names.METHOD_NAMES == tuple(m.name for m in registry.METHOD_LIST)


def test_the_module_imports_nothing():
    """Nothing to import, so nothing can pull numpy in (the Dask driver may have none)."""
    tree = ast.parse((ROOT / "method_names.py").read_text())
    assert not [node for node in ast.walk(tree) if isinstance(node, ast.Import | ast.ImportFrom)]


def test_cli_help_lists_them_without_the_registry():
    spec = importlib.util.spec_from_file_location("_cli_for_names", ROOT / "cli.py")
    cli = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(cli)
    assert cli.method_names() == ", ".join(registry.REGISTRY)
