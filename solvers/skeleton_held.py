"""The least-squares kernel held for a sequence's frames (jacobian.tree.Steps): the prediction's
steps and the least-squares method's own solve, the same bits as least_squares_steps and
solve_skeleton, without each call's structure look-up, option checks and result
(docs/benchmarks.md, tree11). `frames` is skeleton_sequence's `_Frames`: the first frame builds
the held kernels (or the reason they cannot serve) on it, the others reuse them."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np

from . import registry
from .api import method_settings
from .jacobian import tree as jacobian_tree
from .skeleton import Effector, SkeletonSolution, finish
from .skeleton_effectors import merge_shared
from .skeleton_solve import least_squares_steps, solve_skeleton


def own(skeleton, start: np.ndarray, effectors: list[Effector], settings: dict, frames) -> SkeletonSolution:
    """The least-squares method's frame: solve_skeleton(skeleton, start, effectors, **settings),
    the same bits. Through its kernel held for the frames (`_Frames.own`: jacobian.tree.Steps with
    the method's checked options) where the solve is that kernel's alone: no pole this frame, and
    (`held_own`) no pin, no soft goal, no two effectors on one bone, the written-out case."""
    if frames.own is None:  # the first frame: its goals' layout and the settings are every frame's
        frames.own = held_own(skeleton, effectors, settings, frames)
    held = frames.own
    if isinstance(held, str) or any(e.pole is not None for e in effectors):
        return solve_skeleton(skeleton, start, effectors, **settings)
    tolerance, iterations = frames.own_settings(skeleton, effectors, settings)
    current, iterations, squares = held(
        skeleton, start, [c for e in effectors for c in e.position.tolist()], tolerance, iterations
    )
    error = np.array([math.sqrt(square) for square in squares])
    if held.whole:
        local = np.array(current).reshape(-1, 4)
    else:
        local = np.array(start, dtype=float)
        local[held.held.moved] = np.array(current).reshape(-1, 4)
    return finish(skeleton, local, effectors, tolerance, iterations, frames.entry.name, error=error)


def held_own(skeleton, effectors: list[Effector], settings: dict, frames):
    """The least-squares method's kernel held for a sequence's frames (jacobian.tree.Steps with its
    checked options), or why a frame's solve_skeleton is more than that kernel's solve."""
    if isinstance(frames.steps, str):
        return frames.steps
    if frames.soft or any(e.pin for e in effectors) or merge_shared(effectors) is not effectors:
        return "a soft goal, a pin or effectors sharing a bone (solve_skeleton's own handling)"
    entry = frames.entry
    if entry.tree is not jacobian_tree.solve or entry.tree_start_steps:
        return "the least-squares method's tree kernel is not jacobian.tree's alone"
    options = {k: v for k, v in settings.items() if k not in ("method", "tolerance", "max_iterations")}
    checked = method_settings(entry.name, 1.0, 1, options, 0.0)[3]  # (the options' check and defaults)
    unpoled = [e if e.pole is None else replace(e, pole=None) for e in effectors]  # (a frame with a pole: its solve)
    return jacobian_tree.steps(skeleton, unpoled, checked)


def predict(skeleton, start: np.ndarray, goals: list[Effector], near: float, steps: int, frames):
    """least_squares_steps(skeleton, start, goals, near, steps), the same bits, and the start's
    rows as the kernel gave them (a flat tuple of floats: the locals of every bone when it moves
    them all) or None. Through the frames' held kernel (`_Frames.steps`: jacobian.tree.Steps) where
    it serves; otherwise least_squares_steps itself."""
    if frames.steps is None:  # the first frame: its goals' layout is every frame's
        frames.steps = held_steps(skeleton, goals)
    held = frames.steps
    if isinstance(held, str):
        return (*least_squares_steps(skeleton, start, goals, near, steps), None)
    current, iterations, squares = held(skeleton, start, [c for e in goals for c in e.position.tolist()], near, steps)
    error = np.array([math.sqrt(square) for square in squares])  # (as jacobian.tree.solve's)
    if iterations == 0:  # (its error: of `start` itself)
        return start, error, None
    if any(e.pin and error[k] > near for k, e in enumerate(goals)):  # a pin slid: not taken
        return start, None, None
    if held.whole:
        return np.array(current).reshape(-1, 4), error, current
    out = np.array(start, dtype=float)
    out[held.held.moved] = np.array(current).reshape(-1, 4)
    return out, error, None


def held_steps(skeleton, goals: list[Effector]):
    """The least-squares method's steps held for a sequence's frames (jacobian.tree.Steps), or why not."""
    entry = registry.LEAST_SQUARES
    if entry.tree is not jacobian_tree.solve:
        return "the least-squares method's tree kernel is not jacobian.tree's"
    unpoled = [e if e.pole is None else replace(e, pole=None) for e in goals]  # (poles left to the method)
    return jacobian_tree.steps(skeleton, unpoled, entry.defaults)
