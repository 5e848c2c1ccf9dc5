"""The solver registry's method names, for code that must not import numpy.

`solvers.registry.REGISTRY` is the one list of methods, but importing it needs numpy. The shot
list's check (shot_list.py) runs on a Python that may have none (tools/bake_shots.py driving a
Dask cluster needs only the standard library), and it, like cli.py's argument check
(cli_arguments.py, before the .blend is opened), must still refuse an unknown method before
any work. tests/solvers/test_method_names.py proves this tuple is the registry's names,
in its order.
"""

METHOD_NAMES: tuple[str, ...] = ("triangulation", "fabrik", "ccd", "jacobian")
