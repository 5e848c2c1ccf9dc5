"""The extension's import direction (DEVELOPERS.md): ui/operators -> app -> properties -> rig ->
solvers, and no import circles. Read from the source with `ast` (no bpy). The direction holds for
every import, those inside functions too; circles are looked for among the imports that run when a
module is imported, and inside solvers/ among all its imports (a function-local import there is no
way around a circle: solvers/ has none).

Inside solvers/ the layers go (docs/design.md, "The solver core"): maths -> model -> common ->
the method folders -> registry -> the entry points and tools, each importing only its own layer
and those below it; a method folder imports no other method's; no solvers module imports another
module's private (_underscore) name."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("solvers", "rig", "app", "operators", "ui", "headless")
TOP_MODULES = ("__init__", "registration", "properties", "cli")


def _module_files() -> dict[str, Path]:
    """Dotted name (relative to the extension root) -> file, for the extension's own modules."""
    files = {name: ROOT / f"{name}.py" for name in TOP_MODULES}
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            parts = path.relative_to(ROOT).with_suffix("").parts
            if parts[-1] == "__init__":
                parts = parts[:-1]
            files[".".join(parts)] = path
    return files


FILES = _module_files()


def _resolve(module: str, node: ast.ImportFrom) -> str:
    """The extension-relative name a relative ImportFrom's `from` part names ('' for the root)."""
    if module == "__init__":
        package = []
    elif FILES[module].name == "__init__.py":
        package = module.split(".")
    else:
        package = module.split(".")[:-1]
    base = package[: len(package) - (node.level - 1)]
    return ".".join([*base, *(node.module.split(".") if node.module else [])])


def _import_time_nodes(tree: ast.Module) -> set[int]:
    """ids of the ImportFrom nodes that run on import: not in a function, not under TYPE_CHECKING."""
    found, stack = set(), list(tree.body)
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            continue
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            stack.extend(node.orelse)
            continue
        if isinstance(node, ast.ImportFrom):
            found.add(id(node))
        stack.extend(ast.iter_child_nodes(node))
    return found


def _imports(module: str, import_time_only: bool = False) -> set[str]:
    """The extension modules `module` imports (a name taken from a package: the submodule when
    there is one, else the package); `import_time_only`: those imported when it is loaded."""
    found = set()
    tree = ast.parse(FILES[module].read_text())
    loaded = _import_time_nodes(tree)
    for node in ast.walk(tree):
        if not isinstance(node, ast.ImportFrom) or node.level == 0:
            continue  # absolute imports are other packages' (numpy, bpy, mathutils, the stdlib)
        if import_time_only and id(node) not in loaded:
            continue
        source = _resolve(module, node)
        for alias in node.names:
            sub = f"{source}.{alias.name}" if source else alias.name
            if sub in FILES:
                found.add(sub)
            elif source in FILES:
                found.add(source)
            else:
                raise AssertionError(f"{module}: import of unknown module {source!r} ({alias.name})")
    return found


GRAPH = {module: _imports(module) for module in FILES}
LOAD_GRAPH = {module: _imports(module, import_time_only=True) for module in FILES}


def _layer(module: str) -> str:
    return module.split(".")[0]


# What each layer must never import (the layers above it).
FORBIDDEN = {
    "solvers": {"rig", "app", "operators", "ui", "properties", "registration", "cli", "__init__"},
    "rig": {"app", "operators", "ui", "properties", "registration", "cli", "__init__"},
    "app": {"operators", "ui", "registration", "cli", "__init__"},
    "properties": {"app", "operators", "ui", "registration", "cli", "__init__"},
    "operators": {"ui", "registration", "cli", "__init__"},
    "ui": {"operators", "registration", "cli", "__init__"},
    # Standard library only, runs without the extension (cli.py, tools/bake_shots.py, Dask workers).
    "headless": {"solvers", "rig", "app", "operators", "ui", "properties", "registration", "cli", "__init__"},
}


def test_the_graph_sees_the_layers():
    """The parser finds the imports it should (else the checks below would pass on nothing)."""
    assert "rig" in GRAPH["app.solve"] and "solvers" in GRAPH["app.solve"]
    assert "app.solve" in GRAPH["operators.compare"]
    assert "solvers" in GRAPH["rig.read"]
    assert "properties" in LOAD_GRAPH["app.spec"] and "solvers" in LOAD_GRAPH["properties"]
    assert "solvers.registry" in LOAD_GRAPH["solvers.api"] and "solvers.fabrik" in LOAD_GRAPH["solvers.registry"]
    assert "solvers.fabrik.tree" in LOAD_GRAPH["solvers.fabrik"]
    assert "solvers.skeleton_floats" in GRAPH["solvers.fabrik.tree"]


@pytest.mark.parametrize("layer", sorted(FORBIDDEN))
def test_imports_point_down(layer):
    wrong = [
        f"{module} imports {target}"
        for module, targets in sorted(GRAPH.items())
        if _layer(module) == layer
        for target in sorted(targets)
        if _layer(target) in FORBIDDEN[layer]
    ]
    assert not wrong, wrong


def test_solvers_import_neither_bpy_nor_mathutils():
    for module, path in FILES.items():
        if _layer(module) != "solvers":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            assert not any(n.split(".")[0] in ("bpy", "mathutils", "bpy_extras") for n in names), module


def test_no_import_circles():
    """Depth-first search for a back edge among the imports that run on loading a module."""
    state: dict[str, int] = {}  # 1: on the stack, 2: done
    stack: list[str] = []
    circles = []

    def visit(module: str) -> None:
        state[module] = 1
        stack.append(module)
        for target in sorted(LOAD_GRAPH[module]):
            if state.get(target) == 1:
                circles.append(" -> ".join([*stack[stack.index(target) :], target]))
            elif target not in state:
                visit(target)
        stack.pop()
        state[module] = 2

    for module in sorted(GRAPH):
        if module not in state:
            visit(module)
    assert not circles, circles


def _solvers_layer(module: str) -> int:
    """The layer of a solvers module (see the module doc): a folder other than maths, model and
    common is a method's, so a new method needs no entry here."""
    parts = module.split(".")
    if len(parts) > 2 or (len(parts) == 2 and FILES[module].name == "__init__.py"):
        return SOLVERS_FOLDERS.get(parts[1], METHODS_LAYER)
    return SOLVERS_MODULES[module]


SOLVERS_ORDER = ("maths", "model", "common", "methods", "registry", "entry")
METHODS_LAYER = SOLVERS_ORDER.index("methods")
SOLVERS_FOLDERS = {"maths": 0, "model": 1, "common": 2}
# Modules at the top of solvers/: quat, limits, skeleton (with skeleton_floats and skeleton_effectors
# beside it) and stretch keep the paths the Blender side imports them by; their layers are maths,
# model, model and common.
SOLVERS_MODULES = {
    "solvers.quat": 0,
    "solvers.limits": 1,
    "solvers.skeleton": 1,
    "solvers.skeleton_floats": 1,
    "solvers.skeleton_effectors": 1,
    "solvers.stretch": 2,
    "solvers.skeleton_stretch": 2,
    "solvers.registry": 4,
    **{
        f"solvers.{name}": 5
        for name in (
            "api",
            "chain_sequence",
            "skeleton_solve",
            "skeleton_many",
            "skeleton_held",
            "skeleton_sequence",
            "contacts",
            "foot_metrics",
            "keyfit",
            "metrics",
            "plant",
            "plant_legs",
            "plant_pitch",
        )
    },
    "solvers": 5,
}
SOLVERS = sorted(m for m in FILES if _layer(m) == "solvers")


def test_every_solvers_module_has_a_layer():
    top = [m for m in SOLVERS if len(m.split(".")) <= 2 and FILES[m].name != "__init__.py"]
    unknown = [m for m in top if m not in SOLVERS_MODULES]
    assert not unknown, f"give these a layer in SOLVERS_MODULES: {unknown}"


def test_solvers_layers_point_down():
    """Every import (those inside functions too) goes to the same layer or one below it."""
    wrong = [
        f"{module} ({SOLVERS_ORDER[_solvers_layer(module)]}) imports {target} ({SOLVERS_ORDER[_solvers_layer(target)]})"
        for module in SOLVERS
        for target in sorted(GRAPH[module])
        if _solvers_layer(target) > _solvers_layer(module)
    ]
    assert not wrong, wrong


def test_methods_import_no_other_method():
    def method_of(module: str) -> str | None:
        parts = module.split(".")
        return parts[1] if len(parts) > 1 and _solvers_layer(module) == METHODS_LAYER else None

    wrong = [
        f"{module} imports {target}"
        for module in SOLVERS
        if method_of(module)
        for target in sorted(GRAPH[module])
        if method_of(target) not in (None, method_of(module))
    ]
    assert not wrong, wrong


def test_solvers_import_inside_no_function():
    """No function-local import of the extension's own modules in solvers/ (the workaround for a
    circle, which solvers/ has not)."""
    wrong = []
    for module in SOLVERS:
        tree = ast.parse(FILES[module].read_text())
        loaded = _import_time_nodes(tree)
        wrong += [
            f"{module}:{node.lineno}"
            for node in ast.walk(tree)
            if isinstance(node, ast.ImportFrom) and node.level > 0 and id(node) not in loaded
        ]
    assert not wrong, wrong


def test_solvers_import_no_private_names():
    wrong = [
        f"{module}:{node.lineno} imports {alias.name}"
        for module in SOLVERS
        for node in ast.walk(ast.parse(FILES[module].read_text()))
        if isinstance(node, ast.ImportFrom) and node.level > 0
        for alias in node.names
        if alias.name.startswith("_")
    ]
    assert not wrong, wrong


def test_no_import_circles_in_solvers_at_all():
    """Among every import of solvers/ (function-local ones too): no circle."""
    state: dict[str, int] = {}
    circles = []

    def visit(module: str, stack: list[str]) -> None:
        state[module] = 1
        stack.append(module)
        for target in sorted(GRAPH[module]):
            if _layer(target) != "solvers":
                continue
            if state.get(target) == 1:
                circles.append(" -> ".join([*stack[stack.index(target) :], target]))
            elif target not in state:
                visit(target, stack)
        stack.pop()
        state[module] = 2

    for module in SOLVERS:
        if module not in state:
            visit(module, [])
    assert not circles, circles
