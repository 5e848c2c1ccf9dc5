"""The least-squares kernel held for a sequence's frames (jacobian.tree.Steps): the prediction's
steps and the least-squares method's own solve, the same bits as least_squares_steps and
solve_skeleton, without each call's structure look-up, option checks and result
(docs/benchmarks.md, tree11), and what a sequence's frames work out alike (`Frames`): the first
frame builds the held kernels (or the reason they cannot serve) on it, the others reuse them."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np

from . import registry
from .api import DEFAULT_RELATIVE_TOLERANCE, method_settings
from .common.soft_goals import soften_effectors
from .jacobian import tree as jacobian_tree
from .skeleton import Effector, Skeleton, SkeletonSolution, finish
from .skeleton_effectors import merge_shared
from .skeleton_floats import moved_bones
from .skeleton_solve import least_squares_steps, solve_skeleton

NOT_ALIKE = "the frames' goals may differ in layout (a frame's own call, or tip orientations per frame)"


class Frames:
    """What every frame of one sequence works out alike (the same effector bones, method and
    options on each; skeleton_sequence.solve_skeleton_sequence), worked out once: the bones the
    effectors move and their length (the default tolerance's scale), the method's entry and the tree kernel solving
    for it, whether any effector softens, and per tolerance given the method's own (`kept_tolerance`).
    A frame's own call (skeleton_sequence.solve_skeleton_next) makes one for itself. `alike`: every frame's goals
    share one layout (their bones, pins, orientation goals and weights; positions and poles differ):
    the prediction's kernel is held for them all (`steps`)."""

    __slots__ = ("_length", "entry", "kernel", "lengths", "moved", "own", "owned", "settled", "soft", "steps")

    def __init__(self, skeleton: Skeleton, effectors: list[Effector], method: str, alike: bool = False) -> None:
        self.entry = registry.get(method)
        # (none for the least-squares method, whose frames are its own solve: its checks come first)
        self.moved = [] if self.entry.least_squares else moved_bones(skeleton, [e.bone for e in effectors])
        self.lengths, self._length = skeleton.lengths, None
        self.soft = soften_effectors(skeleton, effectors) is not effectors
        self.kernel = None  # (runs.name, reason) of tree_kernel, when a frame is first kept
        self.settled: dict = {}  # tolerance -> the method's tolerance (method_settings), for `_kept`
        # The prediction's kernel held for every frame (jacobian.tree.Steps), made on the first
        # frame, or why it cannot serve; only where every frame's goals share one layout (`alike`:
        # a sequence's frames without tip orientations, whose effectors differ only in position and pole).
        self.steps: object = None if alike else NOT_ALIKE
        # The least-squares method's own solve held likewise (`_own`), and its settings per tolerance given.
        self.own: object = None if alike else NOT_ALIKE
        self.owned: dict = {}

    @property
    def length(self) -> float:
        """The moved bones' summed length, on first use (only a default tolerance reads it)."""
        if self._length is None:
            self._length = float(np.sum(self.lengths[self.moved]))
        return self._length

    def tolerance(self, tolerance) -> float:
        """The steps' tolerance: `tolerance`, or solve_skeleton's default of the moved bones."""
        return DEFAULT_RELATIVE_TOLERANCE * self.length if tolerance is None else tolerance

    def kept_tolerance(self, settings: dict) -> float:
        """The method's tolerance from `settings` as its solve would take it (method_settings:
        its options checked, the default for the moved bones' length)."""
        given = settings["tolerance"]
        held = given is None or type(given) is float  # (a tolerance of another type: checked every time)
        if held and given in self.settled:
            return self.settled[given]
        options = {k: v for k, v in settings.items() if k not in ("method", "tolerance", "max_iterations")}
        length = self.length if given is None else 0.0
        out = method_settings(self.entry.name, given, settings["max_iterations"], options, length)[1]
        if held:
            self.settled[given] = out
        return out

    def own_settings(self, skeleton: Skeleton, effectors: list[Effector], settings: dict) -> tuple[float, int]:
        """(tolerance, iteration cap) of the least-squares method's tree solve from `settings`, as
        solve_skeleton's fixed root takes them (method_settings; the default tolerance of the moved
        bones' length)."""
        given = settings["tolerance"]
        held = given is None or type(given) is float  # (a tolerance of another type: checked every time)
        if held and given in self.owned:
            return self.owned[given]
        entry, max_iterations = self.entry, settings["max_iterations"]
        if max_iterations is None and entry.tree_max_iterations:
            max_iterations = entry.tree_max_iterations
        length = 0.0
        if given is None:
            length = float(np.sum(skeleton.lengths[moved_bones(skeleton, [e.bone for e in effectors])]))
        options = {k: v for k, v in settings.items() if k not in ("method", "tolerance", "max_iterations")}
        out = method_settings(entry.name, given, max_iterations, options, length)[1:3]
        if held:
            self.owned[given] = out
        return out


def own(
    skeleton: Skeleton, start: np.ndarray, effectors: list[Effector], settings: dict, frames: Frames
) -> SkeletonSolution:
    """The least-squares method's frame: solve_skeleton(skeleton, start, effectors, **settings),
    the same bits. Through its kernel held for the frames (`Frames.own`: jacobian.tree.Steps with
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


def held_own(
    skeleton: Skeleton, effectors: list[Effector], settings: dict, frames: Frames
) -> jacobian_tree.Steps | str:
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


def predict(
    skeleton: Skeleton, start: np.ndarray, goals: list[Effector], near: float, steps: int, frames: Frames
) -> tuple[np.ndarray, np.ndarray | None, tuple | None]:
    """least_squares_steps(skeleton, start, goals, near, steps), the same bits, and the start's
    rows as the kernel gave them (a flat tuple of floats: the locals of every bone when it moves
    them all) or None. Through the frames' held kernel (`Frames.steps`: jacobian.tree.Steps) where
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


def held_steps(skeleton: Skeleton, goals: list[Effector]) -> jacobian_tree.Steps | str:
    """The least-squares method's steps held for a sequence's frames (jacobian.tree.Steps), or why not."""
    entry = registry.LEAST_SQUARES
    if entry.tree is not jacobian_tree.solve:
        return "the least-squares method's tree kernel is not jacobian.tree's"
    unpoled = [e if e.pole is None else replace(e, pole=None) for e in goals]  # (poles left to the method)
    return jacobian_tree.steps(skeleton, unpoled, entry.defaults)
