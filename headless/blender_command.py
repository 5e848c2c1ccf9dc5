"""The commands that start Blender on a script: a `blender` binary or the `bpy` wheel's Python
(the launcher), checked before anything runs. Every batch route builds its commands here: the
shot bakes (cli.py) and the library scan (library_scan.py)."""

from __future__ import annotations

import os
import shutil

KINDS = ("blender", "python")


def command(launcher: str, kind: str, script: str, blend: str | None, arguments: list[str]) -> list[str]:
    """`script` run by `launcher` with `arguments` (after '--'), on `blend` when given."""
    opened = [blend] if blend else []
    if kind == "blender":
        # --python-exit-code: a Python error in the script fails the run (Blender would exit 0).
        return [launcher, "--background", *opened, "--python-exit-code", "1", "--python", script, "--", *arguments]
    if kind == "python":
        return [launcher, script, *opened, "--", *arguments]
    raise ValueError(f"unknown launcher kind '{kind}' (blender or python)")


def find_launcher(blender: str | None, python: str | None, here: bool = True) -> tuple[str, str]:
    """(kind, executable): the one named (--python, else --blender), else `blender` on the PATH; or
    ValueError saying what is missing. `here`: the shots run on this machine, so the launcher must
    be an executable file here (a launcher that cannot start would fail every shot). Otherwise
    (Dask workers) it is taken as named: the library scan, run where the shots run, tries it."""
    kind, named = ("python", python) if python else ("blender", blender)
    if not here:
        return kind, named or "blender"
    if named is None:
        found = shutil.which("blender")
        if found is None:
            raise ValueError("no `blender` on the PATH: name the program that runs the shots,"
                             " --blender PATH or --python PATH")  # fmt: skip
        return "blender", found
    path = shutil.which(named) if os.sep not in named else named
    if path is None or not os.path.isfile(path):
        raise ValueError(f"--{kind} {named}: no such program")
    if not os.access(path, os.X_OK):
        raise ValueError(f"--{kind} {named}: not executable")
    return kind, os.path.abspath(path)
