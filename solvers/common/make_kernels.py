"""Kernels made from a method's parts: the registry entry names these, nothing dispatches on a name.

- `iterated(name, make_step)`: the general numpy `batch` kernel of an iterative method
  (`iterate.run` with its numpy step).
- `floats(name, solver, declines)`: its `one` kernel on plain floats (common.float_solve).
- `blocks(name, block_step, general_step, declines)`: its `many` kernel on (n+1, 3, m) blocks
  (common.block_solve).
- `float_steps(name, solver, declines)`: its `sequence` kernel, the float kernel carried from
  step to step (common.float_steps).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ..model.chain import Chain
from ..model.result import BatchSolution, SequenceSolution, batch_result
from . import block_solve as block_many
from . import constrained, iterate
from . import float_solve as float_one
from . import float_steps as float_sequence


def iterated(name: str, make_step: Callable) -> Callable:
    """The batch kernel of a method iterated by `iterate.run` with `make_step(chain, **options)`."""

    def batch(chain: Chain, targets, tolerance: float, max_iterations: int, options: dict) -> BatchSolution:
        step = make_step(chain, **options)
        points, iterations, local = iterate.run(chain, targets, tolerance, max_iterations, step)
        rotations = None if local is None else constrained.rotations(chain, constrained.forward(chain, local)[0])
        return batch_result(chain, points, targets, iterations, tolerance, name, rotations)

    return batch


def floats(name: str, solver: float_one.Solver, declines: float_one.Declines | None = None) -> Callable:
    """The `one` kernel of method `name` on plain floats (each method's chain_floats), or the reason it declines:
    `solver(tolerance, cap, options)` makes its position-only float solve
    `(terms, target) -> (points, rotations, iterations)` (terms: common.float_solve.Terms; goals
    wrap it, common.float_goals); `declines(options, kernel)` says why it cannot serve these
    checked options, or None (the chain's own cases, joint limits, are every method's:
    `float_solve.reason`)."""

    def one(chain: Chain, target, tolerance: float, max_iterations: int, options: dict, goals):
        why = float_one.reason(chain, options, declines)
        if why is not None:
            return why
        return float_one.solve(chain, target, name, tolerance, solver(tolerance, max_iterations, options), goals)

    return one


def blocks(
    name: str, block_step: Callable, general_step: Callable, declines: float_one.Declines | None = None
) -> Callable:
    """The `many` kernel of method `name` on (n+1, 3, m) blocks (its `chain_blocks.py`), or the reason it
    declines: `block_step(chain, options)` makes its block step, `general_step(chain, **options)`
    the numpy step that redoes a target whose block step is undefined; `declines` as in `floats`
    (the block kernels mirror the float kernels, so a method passes the same)."""

    def many(chain: Chain, targets, tolerance: float, max_iterations: int, options: dict):
        why = block_many.reason(chain, options, declines)
        if why is not None:
            return why

        def make_steps():
            return block_step(chain, options), general_step(chain, **options)

        return block_many.solve(chain, targets, name, tolerance, max_iterations, make_steps)

    return many


def float_steps(name: str, solver: float_one.Solver, declines: float_one.Declines | None = None) -> Callable:
    """The `sequence` kernel of method `name` on plain floats (common.float_steps), or the
    reason it declines: the float kernel `solver` (as in `floats`) carried from step to step."""

    def sequence(chain: Chain, targets, tols, max_iterations: int, options: dict, progress, keep_points: bool):
        why = float_one.reason(chain, options, declines)
        if why is not None:
            return why
        points, frames, iterations = float_sequence.solve_steps(
            chain, targets, tols, solver, max_iterations, options, progress
        )
        error = np.linalg.norm(points[:, -1] - targets, axis=1)
        return SequenceSolution(points, points[:, -1].copy(), frames, error, iterations, error <= tols, name)

    return sequence
