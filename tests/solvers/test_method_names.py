"""headless/method_names.py, the registry's method names known without numpy, is the registry's list."""

from __future__ import annotations

import ast
import importlib.util
from pathlib import Path

from headless import method_names
from solvers import registry

ROOT = Path(__file__).resolve().parents[2]


def test_the_names_are_the_registrys_in_its_order():
    assert method_names.METHOD_NAMES == tuple(registry.REGISTRY)
    assert method_names.METHOD_NAMES == tuple(m.name for m in registry.METHOD_LIST)


def test_the_module_imports_nothing():
    """Nothing to import, so nothing can pull numpy in (the Dask driver may have none)."""
    tree = ast.parse((ROOT / "headless" / "method_names.py").read_text())
    assert not [node for node in ast.walk(tree) if isinstance(node, ast.Import | ast.ImportFrom)]


def test_cli_help_lists_them_and_refuses_another_before_any_work():
    """cli.py (loaded by path, as Blender runs it) lists the names and refuses any other method
    in its argument check, which runs before the .blend is opened (no bpy needed)."""
    spec = importlib.util.spec_from_file_location("_cli_for_names", ROOT / "cli.py")
    cli = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(cli)
    assert ", ".join(registry.REGISTRY) in " ".join(cli.arguments.parser(True).format_help().split())
    args = cli.arguments.parse_args(["cli.py", "missing.blend", "--armature", "Rig", "--method", "fabrk"], False)
    try:
        cli.arguments.check_arguments(args, None)
    except cli.CliError as exc:
        assert str(exc) == "--method: unknown method 'fabrk' (choose one of triangulation, fabrik, ccd, jacobian)"
    else:
        raise AssertionError("an unknown method passed cli.py's argument check")
