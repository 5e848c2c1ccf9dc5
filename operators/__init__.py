"""Thin bpy operators: poll, call rig + solvers, report."""

from . import bake, chains, compare, live, solve

CLASSES = (*solve.CLASSES, *bake.CLASSES, *chains.CLASSES, *compare.CLASSES)

__all__ = ["CLASSES", "bake", "chains", "compare", "live", "solve"]
