"""A bake's options, its result, the frames it keys and its progress display (app.bake)."""

from __future__ import annotations

import numbers
import sys
import time
from dataclasses import dataclass, field

import bpy
import numpy as np

from ...headless.frame_limit import check_frames
from ...rig import keys, reduce
from . import bake_report


@dataclass
class BakeOptions:
    frame_start: int
    frame_end: int
    step: int = 1
    interpolation: str = "BEZIER"
    reduce: bool = False
    reduce_tolerance: float = 1e-3  # 'TIP': world distance at each chain's tip
    reduce_mode: str = "TIP"  # or 'ANGLE': each joint within reduce_angle
    reduce_angle: float = 0.0017453292519943296  # radians (0.1 degree)
    measure: bool = True  # the per-chain report, played back at every baked frame (a second pass)


@dataclass
class BakeResult:
    frames: int
    seconds: float
    keys: int
    worst_error: float  # largest world-space tip distance of the solutions
    bones: tuple[str, ...]
    locked: tuple[str, ...] = ()
    constrained: tuple[str, ...] = ()
    driven: tuple[str, ...] = ()  # bones whose rotation a driver sets: it overrides the keys
    per_chain_error: dict[str, float] = field(default_factory=dict)  # the solver's figure, by tip
    chains: list[bake_report.ChainReport] = field(default_factory=list)  # measured on playback (options.measure)
    live_off: tuple[str, ...] = ()  # chains whose Live was switched off (it would override the keys)
    measure_seconds: float = 0.0  # the playback pass that measured `chains`
    per_chain_keys: dict[str, int] = field(default_factory=dict)  # by tip: keys written on the chain's bones
    per_chain_seconds: dict[str, float] = field(default_factory=dict)  # by tip: solver time (not scene evaluation)
    # One key per baked frame on every channel written (a planted chain: its keys as written): the
    # keys before any reduction.
    keys_before: int = 0
    reduced: bool = False  # key reduction was asked for (`keys` then counts what it kept)
    # By chain label: why the fastest kernel did not serve it (bake_solve), e.g. "baked frame by
    # frame: bone 'x' has constraints"; chains the fastest kernel served are not listed.
    reasons: dict[str, str] = field(default_factory=dict)
    # Move Root: each keyed root bone -> the largest distance its head played back from where it was (world).
    root_moved: dict[str, float] = field(default_factory=dict)
    taken_back: str = ""  # a re-bake with contacts: what it took back to the motion (app.bake.contact_record)


def bake_frames(options: BakeOptions) -> np.ndarray:
    """The frames to bake, once every option is checked: called first, so a bad option is refused
    before anything is solved or created (no action, slot or animation data)."""
    for name in ("frame_start", "frame_end", "step"):
        value = getattr(options, name)
        if isinstance(value, bool) or not isinstance(value, numbers.Integral):
            raise ValueError(f"{name.replace('_', ' ')} must be a whole number, got {value!r}")
    if options.step < 1:
        raise ValueError(f"step must be at least 1, got {options.step}")
    if options.frame_end < options.frame_start:
        raise ValueError(f"frame end {options.frame_end} is before frame start {options.frame_start}")
    if options.interpolation not in keys.INTERPOLATIONS:
        raise ValueError(f"unknown interpolation '{options.interpolation}'")
    if options.reduce:
        reduce.check_tolerance(options.reduce_mode, reduce_tolerance(options))
    check_frames(options.frame_start, options.frame_end)
    frames = np.arange(options.frame_start, options.frame_end + 1, options.step)
    if frames[-1] != options.frame_end:  # the range's last frame keyed too: past the last step's
        frames = np.append(frames, options.frame_end)  # key the curve would ease toward a later old key
    return frames


def reduce_tolerance(options: BakeOptions) -> float:
    """The tolerance of the reduction mode asked for: a world distance ('TIP') or radians ('ANGLE')."""
    return options.reduce_tolerance if options.reduce_mode == "TIP" else options.reduce_angle


class Progress:
    """Window-manager progress with a window; otherwise a console line every 10%, once the work has
    lasted QUIET_SECONDS (a quick bake prints no progress, only its summary).

    `update(fraction, frame)`: the share of the work done (0..1) and the frame being worked on."""

    STEPS = 10
    QUIET_SECONDS = 1.0

    def __init__(self, context, stream=None) -> None:
        self.stream = stream or sys.stdout
        self.shown = 0
        self.started = time.perf_counter()
        # Background mode has no window to show progress in (the bpy wheel may still report one).
        has_window = not bpy.app.background and getattr(context, "window", None) is not None
        self.wm = context.window_manager if has_window else None
        if self.wm is not None:
            self.wm.progress_begin(0, 1000)

    def update(self, fraction: float, frame: int) -> None:
        step = int(fraction * self.STEPS + 1e-9)
        if step <= self.shown:
            return
        self.shown = step
        if self.wm is not None:
            self.wm.progress_update(int(1000 * fraction))
        elif time.perf_counter() - self.started >= self.QUIET_SECONDS:
            print(f"Chain IK bake: {100 * step // self.STEPS:3d}% (frame {frame})", file=self.stream)
            self.stream.flush()

    def end(self) -> None:
        if self.wm is not None:
            self.wm.progress_end()

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc) -> None:
        self.end()  # the window's progress bar never outlives the work, failed or not
