"""Thin bpy operators: poll, call rig + solvers, report."""

from . import chains, compare, live, solve

CLASSES = (*solve.CLASSES, *chains.CLASSES, *compare.CLASSES)

__all__ = ["CLASSES", "chains", "compare", "live", "solve"]
