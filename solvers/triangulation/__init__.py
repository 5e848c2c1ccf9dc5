"""Triangulation IK (Mueller-Cajar & Mukundan 2007), one pass root to tip.

Modules: `chain_floats` (the pass on plain floats; `chain_span` its search for the rest's
extent), `chain_numpy` (vectorised over targets), `chain_limits` (with joint limits, §3.1.3),
`chain_steps` (the plain-float pass carried through a sequence of targets), `checks` (options,
boundary band), `chain` (the chain kernels and the declaration) and `tree` (several effectors:
segment by segment).
"""

from dataclasses import replace

from .chain import CHAIN
from .tree import solve_tree

METHOD = replace(CHAIN, tree=solve_tree, tree_max_iterations=8)
