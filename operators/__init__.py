"""Thin bpy operators: poll, call app/, report."""

from . import bake, bake_fk, chains, compare, constraint_chains, contacts, live_toggle, mirror, solve

CLASSES = (
    *solve.CLASSES,
    *bake.CLASSES,
    *bake_fk.CLASSES,
    *chains.CLASSES,
    *compare.CLASSES,
    *live_toggle.CLASSES,
    *mirror.CLASSES,
    *constraint_chains.CLASSES,
    *contacts.CLASSES,
)

__all__ = [
    "CLASSES",
    "bake",
    "bake_fk",
    "chains",
    "compare",
    "constraint_chains",
    "contacts",
    "live_toggle",
    "mirror",
    "solve",
]
