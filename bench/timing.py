"""Timing the routes a benchmark compares on a shared machine (bench_contacts.py, bench_tree.py).

CPU time (time.process_time: every thread of this process, none of the time other processes take
the cores) beside wall time, and each route run several times with the order turning every round,
so a load spike weighs on all routes alike; the caller keeps each route's best run."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


class Clock:
    """CPU and wall seconds since it was made (`spent()`)."""

    def __init__(self) -> None:
        self.cpu, self.wall = time.process_time(), time.perf_counter()

    def spent(self) -> tuple[float, float]:
        """(CPU seconds, wall seconds) since the clock was made."""
        return time.process_time() - self.cpu, time.perf_counter() - self.wall


def cost(cpu: float, wall: float) -> float:
    """A run's cost: its CPU time, or its wall clock's where that is less. CPU time leaves out what
    other processes take from a busy machine; but a route that runs on several cores (Blender's
    depsgraph, on a machine with a core free) spends more CPU time than the wall clock it takes,
    and counting every core's would make it look slower than it is."""
    return min(cpu, wall)


def alternated(routes: dict[str, Callable[[], T]], repeats: int) -> dict[str, list[T]]:
    """Every route's runs: `repeats` rounds, each calling every route once, the order turned by
    one each round (two routes: which goes first swaps)."""
    names = list(routes)
    runs: dict[str, list[T]] = {name: [] for name in names}
    for round_ in range(repeats):
        turn = round_ % len(names) if names else 0
        for name in names[turn:] + names[:turn]:
            runs[name].append(routes[name]())
    return runs
