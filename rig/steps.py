"""Work written as generators (a modal bake steps them between Esc checks; a script runs them through)."""

from __future__ import annotations

from collections.abc import Generator
from typing import TypeVar

T = TypeVar("T")


def run_to_end(steps: Generator[object, None, T]) -> T:
    """Run `steps` to its end; what it returns."""
    while True:
        try:
            next(steps)
        except StopIteration as done:
            return done.value
