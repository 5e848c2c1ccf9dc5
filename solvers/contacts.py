"""Foot contacts from motion: on which frames a foot is planted (numpy only).

A foot is seen through both of its ends, per frame, in world space: the heel end (the foot
bone's head: the ankle) and the toe end (its tail: the ball of the foot, or the toe tip). A
frame is planted when either end is low and slow: heel rise (the heel lifts, the toe stays)
and toe roll are not sliding, so one still end is enough.

- **Low**: an end's height above the ground (a plane height, or per-frame heights under each
  end from a raycast; no ground: world 0) minus its floor is within `height`. Its floor is the
  lowest height it keeps around that frame (the lowest within `floor_window` seconds), but never
  more than `floor_rise` above its lowest height over all the frames: an ankle rests higher than
  the toe, a retarget's feet may float or sink all along, and captured floors drift by
  centimetres over a walk, while a foot held up in the air stays out.
- **Ground**: over a sloped or stepped ground (heights under the ends that vary) an end is also
  low when it is so by the same rule in the motion's own heights (world z): a motion that walks
  on the ground rests on its surface, while a capture walked on a flat floor and laid over a
  slope rests on its own floor, the ground's heights under its contacts drifting with the slope
  (by more than `floor_rise` over a few metres: the contacts on the side where it floats above
  the ground were lost). A foot at rest 5 cm above a slope it never touched is a contact: the
  capture planted it there, and the bake holds it on the ground's surface (solvers.plant.plan).
  Level ground (or none) is one measure, computed once.
- **Slow**: its speed, measured over `window` seconds (1/30 s; never per frame: at 120 fps
  capture jitter dominates a per-frame figure), is below `speed`.
- **Hysteresis**: a contact starts where an end is low and slow by the enter thresholds
  (`height`, `speed`) and lasts while an end stays within the leave ones (`height_leave`,
  `speed_leave`); gaps shorter than `min_gap` seconds are closed, and contacts shorter than
  `min_duration` seconds dropped.
- **Lift-off**: a contact ends where the foot lifts off (`lift_ends`): once its toe end is down
  in it (low and slow by the enter thresholds), on the first frame where both ends are more
  than `lift` above the lowest each has had since. Push-off raises the ball of the foot several
  cm after the heel, and the leave thresholds would keep the contact on through it, while the
  point it planted is not planted any more. One end rising alone (heel rise, toe roll, a weight
  shift) does not end it; the lowest heights track the toe as it comes down after heel strike,
  so only a rise counts. A foot set down again in the same run restarts it (hysteresis: the toe
  back within `lift` / 2 of its lowest).

Thresholds are world distances and seconds; `ContactSettings.for_leg` gives defaults from the
leg's length (tuned on the four CMU clips of ../shared/data/mocap and their retargets to legs
20% longer and shorter: docs/benchmarks.md). Bad input raises ValueError naming it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields, replace

import numpy as np

SPEED_WINDOW = 1.0 / 30.0  # seconds
# The rise of both ends that ends a contact (ContactSettings.lift), as a share of the leg: on the CMU
# clips a resting ball of the foot wanders by a few mm, and push-off raises it 40-50 mm (1%: the
# retargets' contacts fall to F1 0.81 against the source's; 2%: 0.905; docs/benchmarks.md).
LIFT_SHARE = 0.02


@dataclass(frozen=True)
class ContactSettings:
    """Detection thresholds: distances in world units, speeds in world units per second, times in
    seconds."""

    height: float  # an end this close to its floor may plant
    height_leave: float  # ... and stays planted while this close
    speed: float  # an end slower than this may plant
    speed_leave: float  # ... and stays planted while slower than this
    floor_rise: float  # how far an end's floor may sit above its lowest height over all frames
    lift: float = math.inf  # a contact ends where both ends rise this far above their lowest (inf: never)
    min_duration: float = 0.1  # shorter contacts are dropped
    min_gap: float = 0.05  # shorter gaps between two contacts are closed
    floor_window: float = 1.0  # the floor at a frame: the lowest height within this span around it
    window: float = SPEED_WINDOW  # speeds are displacements over this span

    @classmethod
    def for_leg(cls, leg_length: float, **changes) -> ContactSettings:
        """Defaults scaled to a leg (thigh, shin and foot) of `leg_length` world units, with
        `changes` over them (a leave threshold not given follows its enter one in proportion)."""
        if not (math.isfinite(leg_length) and leg_length > 0.0):
            raise ValueError(f"leg length must be a positive distance, got {leg_length!r}")
        base = cls(
            height=0.03 * leg_length,
            height_leave=0.05 * leg_length,
            speed=0.6 * leg_length,
            speed_leave=1.0 * leg_length,
            floor_rise=0.1 * leg_length,
            lift=LIFT_SHARE * leg_length,
        )
        if "height" in changes and "height_leave" not in changes:
            changes["height_leave"] = changes["height"] * base.height_leave / base.height
        if "speed" in changes and "speed_leave" not in changes:
            changes["speed_leave"] = changes["speed"] * base.speed_leave / base.speed
        return replace(base, **changes).checked()

    def checked(self) -> ContactSettings:
        """Itself, or ValueError naming a threshold that is not a positive finite number or a
        leave threshold below its enter one."""
        for f in fields(self):
            value = getattr(self, f.name)
            allowed_zero = f.name in ("min_duration", "min_gap")
            if f.name == "lift" and value == math.inf:  # no lift-off rule
                continue
            if (
                not (isinstance(value, (int, float)) and math.isfinite(value))
                or value < 0.0
                or (value == 0.0 and not allowed_zero)
            ):
                raise ValueError(f"contact setting {f.name} must be a positive finite number, got {value!r}")
        for enter, leave in (("height", "height_leave"), ("speed", "speed_leave")):
            if getattr(self, leave) < getattr(self, enter):
                raise ValueError(
                    f"contact setting {leave} ({getattr(self, leave):g}) is below {enter} ({getattr(self, enter):g})"
                )
        return self


def checked_settings(settings: object) -> ContactSettings:
    """`settings` checked (ContactSettings.checked), or ValueError if it is not ContactSettings."""
    if not isinstance(settings, ContactSettings):
        raise ValueError(f"settings must be ContactSettings, got {type(settings).__name__}")
    return settings.checked()


def window_frames(fps: float, seconds: float = SPEED_WINDOW) -> int:
    """Frames spanning `seconds` at `fps` (at least 1)."""
    return max(1, int(round(seconds * fps)))


def window_speed(points: np.ndarray, fps: float, window: float = SPEED_WINDOW) -> np.ndarray:
    """(m,) speed of (m, 3) points, each frame's from the displacement over `window` seconds
    centred on it (shortened at the ends of the frames; 0 for a single frame)."""
    points = np.asarray(points, dtype=float)
    m = len(points)
    k = window_frames(fps, window)
    index = np.arange(m)
    ahead = np.minimum(index + k // 2, m - 1)
    behind = np.maximum(index - (k - k // 2), 0)
    span = (ahead - behind) / fps
    distance = np.linalg.norm(points[ahead] - points[behind], axis=-1)
    return np.divide(distance, span, out=np.zeros(m), where=span > 0)


def same_sums(values: np.ndarray, kernel: np.ndarray) -> np.ndarray:
    """np.convolve(values, kernel, mode="same") of the length of `values` however short they are
    (numpy's "same" gives the longer of the two: a clip shorter than the kernel broke the shapes,
    user13's 5-frame bake); the same numbers where `values` is at least as long."""
    values = np.asarray(values)
    if len(values) >= len(kernel):
        return np.convolve(values, kernel, mode="same")
    padded = np.concatenate((values, np.zeros(len(kernel), dtype=values.dtype)))  # zero beyond the end, as "same"
    return np.convolve(padded, kernel, mode="same")[: len(values)]


def contact_runs(planted: np.ndarray) -> list[tuple[int, int]]:
    """(first, last + 1) frame indices of each run of True in `planted`."""
    padded = np.concatenate(([0], np.asarray(planted, dtype=np.int8), [0]))
    edges = padded[1:] - padded[:-1]
    return list(zip((edges == 1).nonzero()[0].tolist(), (edges == -1).nonzero()[0].tolist(), strict=True))


def check_points(points, name: str) -> np.ndarray:
    """(m, 3) float array of finite positions, m >= 1, or ValueError naming `name`."""
    array = np.asarray(points, dtype=float)
    if array.ndim != 2 or array.shape[1] != 3:
        raise ValueError(f"{name} must be an (frames, 3) array of positions, got shape {array.shape}")
    if len(array) == 0:
        raise ValueError(f"{name}: no frames")
    if not np.isfinite(array).all():
        frame = int(np.flatnonzero(~np.all(np.isfinite(array), axis=1))[0])
        raise ValueError(f"{name} is not finite at frame index {frame}")
    return array


def check_fps(fps: float) -> float:
    if not (isinstance(fps, (int, float, np.floating)) and math.isfinite(fps) and fps > 0.0):
        raise ValueError(f"frame rate must be a positive number of frames per second, got {fps!r}")
    return float(fps)


def ground_heights(ground, frames: int, ends: int = 2) -> np.ndarray:
    """(frames, ends) ground height under each end: from None (0), a plane height, (frames,)
    heights or (frames, ends) heights; ValueError when not finite or of another shape."""
    if ground is None:
        return np.zeros((frames, ends))
    array = np.asarray(ground, dtype=float)
    if array.ndim == 0:
        array = np.full((frames, ends), float(array))
    elif array.shape == (frames,):
        array = np.repeat(array[:, None], ends, axis=1)
    elif array.shape != (frames, ends):
        raise ValueError(f"ground must be a height, ({frames},) or ({frames}, {ends}) heights, got shape {array.shape}")
    if not np.all(np.isfinite(array)):
        raise ValueError("ground heights are not finite")
    return array


def _floors(heights: np.ndarray, fps: float, settings: ContactSettings) -> np.ndarray:
    """Each end's floor per frame: the lowest height within the floor window around the frame,
    capped at `floor_rise` above its lowest height over all frames. heights (m, ends)."""
    m = len(heights)
    half = window_frames(fps, settings.floor_window) // 2
    padded = np.pad(heights, ((half, half), (0, 0)), mode="edge")
    local = np.lib.stride_tricks.sliding_window_view(padded, 2 * half + 1, axis=0).min(axis=-1)[:m]
    return np.minimum(local, heights.min(axis=0) + settings.floor_rise)


def _hysteresis(enter: np.ndarray, stay: np.ndarray) -> np.ndarray:
    planted = np.zeros(len(enter), dtype=bool)
    on = False
    for i, (start, hold) in enumerate(zip(enter.tolist(), stay.tolist(), strict=True)):
        on = hold if on else start
        planted[i] = on
    return planted


def lift_ends(planted: np.ndarray, heights: np.ndarray, enter: np.ndarray, lift: float) -> np.ndarray:
    """(m,) bool: `planted` with each contact ended where the foot lifts off: from the first frame
    its toe end is down in it (`enter` (m, 2): each end low and slow by the enter thresholds), on the
    first frame where both ends (`heights` (m, 2), heel first) are more than `lift` above the lowest
    each has had since (one end rising is heel rise or toe roll; both is push-off). It restarts
    where the toe comes back within `lift` / 2 of where it was lowest and an end is down (hysteresis:
    a foot set down again within the same run, not the toe rising past the threshold and back)."""
    out = np.asarray(planted, dtype=bool).copy()
    if not math.isfinite(lift):
        return out
    for start, end in contact_runs(out):
        at = start
        while at < end:
            toe_down = np.flatnonzero(enter[at:end, 1])
            if not len(toe_down):
                break
            first = at + int(toe_down[0])
            since = heights[first:end]
            lowest = np.minimum.accumulate(since, axis=0)
            risen = np.flatnonzero(np.all(since - lowest > lift, axis=1))
            if not len(risen):
                break
            cut = first + int(risen[0])
            floor = lowest[risen[0], 1]
            back = np.flatnonzero((heights[cut:end, 1] - floor <= 0.5 * lift) & enter[cut:end].any(axis=1))
            again = cut + int(back[0]) if len(back) else end
            out[cut:again] = False
            at = again
    return out


def detect_contacts(heel, toe, fps: float, settings: ContactSettings, ground=None) -> np.ndarray:
    """(m,) bool: the frames on which the foot is planted, from its ends' world positions
    `heel` and `toe` ((m, 3) each, z up) at `fps` frames per second. `ground`: None (heights
    above z = 0), a plane height, or per-frame ground heights under the ends ((m,) or (m, 2),
    heel first), e.g. from a raycast."""
    heel, toe = check_points(heel, "heel positions"), check_points(toe, "toe positions")
    if len(heel) != len(toe):
        raise ValueError(f"heel and toe positions must have the same frames, got {len(heel)} and {len(toe)}")
    fps = check_fps(fps)
    settings = checked_settings(settings)
    ends = np.stack((heel, toe), axis=1)  # (m, 2, 3)
    under = ground_heights(ground, len(heel))
    heights = ends[..., 2] - under
    above = heights - _floors(heights, fps, settings)
    if np.ptp(under) > 0.0:  # sloped or stepped: its heights and the motion's own are two measures (Ground)
        world = ends[..., 2]
        above = np.minimum(above, world - _floors(world, fps, settings))
    speed = np.stack([window_speed(ends[:, e], fps, settings.window) for e in range(2)], axis=1)
    enter = ((above <= settings.height) & (speed <= settings.speed)).any(axis=1)
    stay = ((above <= settings.height_leave) & (speed <= settings.speed_leave)).any(axis=1)
    down = (above <= settings.height) & (speed <= settings.speed)
    planted = lift_ends(_hysteresis(enter, stay), heights, down, settings.lift)
    runs = contact_runs(planted)
    gap = settings.min_gap * fps
    for (_, end), (start, _) in zip(runs, runs[1:], strict=False):
        if start - end < gap:
            planted[end:start] = True
    shortest = settings.min_duration * fps
    for start, end in contact_runs(planted):
        if end - start < shortest:
            planted[start:end] = False
    return planted
