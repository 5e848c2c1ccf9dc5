"""bench_tree.py's case as the benches that split its figures read it (bench_tree_floor.py,
bench_tree_floor_bake.py, bench_tree_kept.py): the same options, the rig read once, bench_tree's
draws from the same seed (its poses first, then its smooth motion: the same targets and motion as
bench_tree.py), and the per-pose timing they share (each pose's fastest of interleaved passes)."""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_tree as bt  # noqa: E402


def add_case_arguments(parser: argparse.ArgumentParser, poses: int = 100, repeats: int = 5, cases=None) -> None:
    """--poses, --repeats, --angle, --seed and --cases (default: `cases`, else every case)."""
    parser.add_argument("--poses", type=int, default=poses, help="random poses (bench_tree's; any motion follows them)")
    parser.add_argument("--repeats", type=int, default=repeats)
    parser.add_argument("--angle", type=float, default=0.6, help="largest random rotation per axis (radians)")
    parser.add_argument("--seed", type=int, default=10)
    parser.add_argument("--cases", nargs="*", default=list(cases or bt.CASES), choices=list(bt.CASES))


@dataclass
class TreeCase:
    """One case's rig read from the metarig's rest pose, its random poses and the generator after them."""

    solvers: object
    obj: object
    skeleton: object
    local0: np.ndarray
    names: list[str]
    bones: list[int]
    poses: np.ndarray
    rng: np.random.Generator

    def targets(self) -> np.ndarray:
        """The tips' positions in each random pose (every target jointly reachable)."""
        return bt.fk_targets(self.skeleton, self.poses, self.bones)

    def at_start(self) -> np.ndarray:
        """Per pose, the tips where the input pose has them (every target met before any step)."""
        return np.repeat(self.skeleton.forward(self.local0)[2][self.bones][None], len(self.poses), axis=0)

    def effectors(self, row) -> list:
        """The solve's effectors for one row of targets."""
        Effector = self.solvers.skeleton.Effector
        return [Effector(b, position=p) for b, p in zip(self.bones, row, strict=True)]

    def motion(self, frames: int, angle: float) -> np.ndarray:
        """bench_tree's smooth motion (drawn after the poses, as bench_tree draws it)."""
        return bt.smooth_motion(self.skeleton, self.local0, self.bones, self.rng, frames, angle, self.solvers.quat)


def read_case(ext, chains, args) -> TreeCase:
    """The case of `chains` on a fresh metarig, with args.poses poses drawn from args.seed."""
    rng = np.random.default_rng(args.seed)
    obj = bt.metarig()
    layout = ext.rig.tree.tree_layout(obj, chains)
    skeleton, local0, names = ext.rig.tree.read_tree(obj, bt.evaluated(obj), chains, layout)
    bones = list(layout.effectors)
    poses = np.array([bt.random_locals(local0, rng, args.angle, ext.solvers.quat) for _ in range(args.poses)])
    return TreeCase(ext.solvers, obj, skeleton, local0, names, bones, poses, rng)


def timed(call: Callable, rows, prepare: Callable | None = None) -> np.ndarray:
    """Seconds of `call` per row (wall clock); `prepare(row)`, if given, runs untimed first and
    its result is what `call` gets."""
    out = []
    for row in rows:
        arg = prepare(row) if prepare is not None else row
        start = time.perf_counter()
        call(arg)
        out.append(time.perf_counter() - start)
    return np.array(out)


def keep_fastest(best: dict, key, seconds: np.ndarray) -> None:
    """Each pose's fastest pass so far under `key` (load spikes from other jobs drop out)."""
    best[key] = np.minimum(best.get(key, np.inf), seconds)


def blender_passes(case: TreeCase, chains, empties, targets: np.ndarray, best: dict) -> None:
    """One pass of Blender's update with the IK constraints ("blender") and muted ("floor") over
    `targets`, kept in `best`; the net is blender - floor."""
    for key in ("blender", "floor"):
        bt.mute(case.obj, chains, key == "floor")
        keep_fastest(best, key, bt.blender_pass(case.obj, empties, targets, case.names[0], chains)[0])
