"""Thin bpy operators: poll, call rig + solvers, report."""

from . import bake, bake_fk, chains, compare, live, solve

CLASSES = (*solve.CLASSES, *bake.CLASSES, *bake_fk.CLASSES, *chains.CLASSES, *compare.CLASSES)

__all__ = ["CLASSES", "bake", "bake_fk", "chains", "compare", "live", "solve"]
