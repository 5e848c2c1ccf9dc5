"""A bake run in steps, for the Bake operator's modal (UI) form: Esc cancels it.

The steps are `bake.bake_steps`' frames. Until the keys are written (the
'solve' phase) nothing in the file has changed, so cancelling then only restores
the frame; once they are written (the 'measure' phase) the bake completes.
"""

from __future__ import annotations

import time

from .. import bake


class BakeJob:
    def __init__(self, context, obj, specs, options: bake.BakeOptions) -> None:
        self.obj, self.specs = obj, specs
        self.progress = bake.Progress(context)
        self.fraction = 0.0
        self.phase = "solve"
        self.result: bake.BakeResult | None = None
        self._steps = bake.bake_steps(context, obj, specs, options, self._progress, stepwise=True)

    def _progress(self, fraction: float, frame: int) -> None:
        self.fraction = fraction
        self.progress.update(fraction, frame)

    def step(self, seconds: float) -> bool:
        """Work for about `seconds`; True once the bake is done (then `result` is set).
        A ValueError (bad input, a failing frame) propagates with nothing keyed."""
        deadline = time.perf_counter() + seconds
        try:
            while True:  # at least one step, however small the budget
                self.phase = next(self._steps)
                if time.perf_counter() >= deadline:
                    break
        except StopIteration as done:
            self.result = done.value
            return True
        return False

    def cancel(self) -> bool:
        """Stop before any key is written (True), or refuse once they are (False: it completes)."""
        if self.phase != "solve":
            return False
        self._steps.close()  # runs bake_steps' cleanup: frame and Live restored
        return True

    def status(self) -> str:
        if self.phase == "solve":
            return f"Chain IK bake: {100 * self.fraction:.0f}%  (Esc: cancel, nothing is keyed)"
        return "Chain IK bake: keys written, measuring them on playback"

    def end(self) -> None:
        self.progress.end()
