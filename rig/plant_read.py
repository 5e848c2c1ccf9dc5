"""Legs over time for a bake that plants feet: every frame's input pose of the leg chains (thigh,
shin, foot) read in one pass, one `frame_set` per frame for all of them, and the planted legs'
local rotations turned into channel values and keys.

Per frame, from the evaluated armature (rig.pose_frames, the one per-frame sampler): its world
matrix, and for each chain's three bones their armature-space rotation (normalised), head, the
foot's tail, and their local rotation (basis) as a quaternion and as the bone's own channel values.
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from dataclasses import dataclass, field

import numpy as np

from ..solvers import quat
from . import euler_series, key_continuity, keys, modes, pose_frames
from .pose_frames import det3, inverse3
from .steps import run_to_end

CHANNELS = {"QUATERNION": ("rotation_quaternion", 4), "AXIS_ANGLE": ("rotation_axis_angle", 4)}


@dataclass
class LegFrames:
    """One leg chain (thigh, shin, foot) over the sampled frames."""

    names: tuple[str, str, str]
    modes: tuple[str, str, str]  # each bone's rotation mode
    world: np.ndarray  # (F, 4, 4) the armature's world matrix
    heads: np.ndarray  # (F, 3, 3) armature space: the heads of thigh, shin, foot
    toe: np.ndarray  # (F, 3) armature space: the foot's tail
    rotations: np.ndarray  # (F, 3, 4) armature-space rotations of the three bones
    basis: np.ndarray  # (F, 3, 4) their local (basis) rotations
    values: list[np.ndarray]  # per bone (F, channels): its rotation channels as played
    _inverse: np.ndarray | None = field(default=None, repr=False)
    _turn: np.ndarray | None = field(default=None, repr=False)
    _scale: np.ndarray | None = field(default=None, repr=False)
    _heel: np.ndarray | None = field(default=None, repr=False)
    _tip: np.ndarray | None = field(default=None, repr=False)

    def to_world(self, points: np.ndarray) -> np.ndarray:
        """(F, 3) armature-space points, one per frame, in world space."""
        return np.einsum("fij,fj->fi", self.world[:, :3, :3], points) + self.world[:, :3, 3]

    def to_local(self, points: np.ndarray) -> np.ndarray:
        """(F, 3) world points, one per frame, in armature space."""
        return np.einsum("fij,fj->fi", self.inverse3(), points - self.world[:, :3, 3])

    def inverse3(self) -> np.ndarray:
        """(F, 3, 3) the inverse of the world matrix's 3x3 part per frame (cached)."""
        if self._inverse is None:
            # Read from the curves the armature stands still: one inverse serves every frame.
            self._inverse = np.broadcast_to(inverse3(self._still(self.world[:, :3, :3])), (len(self.world), 3, 3))
        return self._inverse

    def armature_turn(self) -> np.ndarray:
        """(F, 4) the armature's world rotation per frame, scale off (cached)."""
        if self._turn is None:
            three = self._still(self.world[:, :3, :3])
            self._turn = np.broadcast_to(pose_frames.matrix_rotations(three), (len(self.world), 4))
        return self._turn

    def scales(self) -> np.ndarray:
        """(F,) the armature's world scale per frame (the cube root of its determinant; cached)."""
        if self._scale is None:
            self._scale = np.broadcast_to(np.cbrt(np.abs(det3(self._still(self.world[:, :3, :3])))), len(self.world))
        return self._scale

    def _still(self, per_frame: np.ndarray) -> np.ndarray:
        """`per_frame` (F, ...), or its first row alone where the armature stands still (read from the
        curves): one frame's figures then serve every frame (the same values, computed once)."""
        return per_frame[:1] if np.all(self.world == self.world[:1]) else per_frame

    def rows(self, rows: np.ndarray) -> LegFrames:
        """The leg on frames `rows` only (indices, repeats allowed), its cached figures with it;
        its channel `values` stay the whole leg's (every frame: not sliced, as no caller reads them)."""
        return LegFrames(
            self.names,
            self.modes,
            self.world[rows],
            self.heads[rows],
            self.toe[rows],
            self.rotations[rows],
            self.basis[rows],
            self.values,
            self.inverse3()[rows],
            self.armature_turn()[rows],
            self.scales()[rows],
        )

    def world_rotations(self, bone: int) -> np.ndarray:
        """(F, 4) bone `bone`'s world rotation (the armature's rotation, scale off, times its own)."""
        return quat.normalize(quat.multiply(self.armature_turn(), self.rotations[:, bone]))

    @property
    def heel_world(self) -> np.ndarray:
        """(F, 3) the foot's head (the ankle) in world space (cached: a leg's arrays are never changed)."""
        if self._heel is None:
            self._heel = self.to_world(self.heads[:, 2])
        return self._heel

    @property
    def toe_world(self) -> np.ndarray:
        """(F, 3) the foot's tail in world space (cached)."""
        if self._tip is None:
            self._tip = self.to_world(self.toe)
        return self._tip


def joined(legs: list[LegFrames]) -> LegFrames:
    """Several legs' frames as one LegFrames (F1 + F2 + ... frames), for per-frame arithmetic done
    once for all of them (each frame's figures are its own): names, modes and channel values are
    the first leg's, not the others'."""
    first = legs[0]

    def stack(get):
        return np.concatenate([get(leg) for leg in legs])

    return LegFrames(
        first.names,
        first.modes,
        stack(lambda leg: leg.world),
        stack(lambda leg: leg.heads),
        stack(lambda leg: leg.toe),
        stack(lambda leg: leg.rotations),
        stack(lambda leg: leg.basis),
        first.values,
        stack(lambda leg: leg.inverse3()),
        stack(lambda leg: leg.armature_turn()),
        stack(lambda leg: leg.scales()),
    )


def rotation_channels(mode: str) -> tuple[str, int]:
    """(the pose bone's rotation property in `mode`, its channels)."""
    return CHANNELS.get(mode, ("rotation_euler", 3))


def check_leg(obj, names) -> None:
    """Refuse (ValueError) a leg chain this reading cannot carry: three bones, each the parent
    of the next."""
    pose = obj.pose.bones
    if len(names) != 3:
        raise ValueError(
            f"a chain with contacts must be a leg of three bones (thigh, shin, foot; Chain Length 3, Use Tail on),"
            f" got {len(names)} bone(s) ending at '{names[-1]}'"
        )
    for parent, child in zip(names, names[1:], strict=False):
        if pose[child].parent is None or pose[child].parent.name != parent:
            raise ValueError(f"bone '{child}' must be the child of '{parent}' in a leg chain with contacts")


def sample_legs(
    context, obj, legs: list[tuple[str, str, str]], frames: np.ndarray, progress: Callable | None = None
) -> list[LegFrames]:
    """Each leg's input pose at every frame of `frames` (scene frames); the frame is put back."""
    return run_to_end(legs_in_steps(context, obj, legs, frames, progress))


def legs_in_steps(
    context, obj, legs: list[tuple[str, str, str]], frames: np.ndarray, progress: Callable | None = None
) -> Generator[None, None, list[LegFrames]]:
    """`sample_legs` yielding after every frame (rig.pose_frames; closed, it puts the frame back)."""
    pose = obj.pose.bones
    mode_of = {name: pose[name].rotation_mode for leg in legs for name in leg}
    wanted = tuple(sorted({rotation_channels(mode) for mode in mode_of.values()}))
    frames_read = yield from pose_frames.pose_in_steps(context, obj, frames, progress, True, wanted)
    return legs_of(frames_read, legs, mode_of)


def joints_at(
    context, obj, legs: list[tuple[str, str, str]], frames: np.ndarray, restore: bool = True
) -> list[np.ndarray]:
    """Each leg's joints (F, 4, 3) at scene `frames`, armature space: the heads of thigh, shin and
    foot, and the foot's tail (the frame put back unless not `restore`: pose_frames.pose_in_steps).
    The evaluated positions alone, as `sample_legs` reads them, for a check of where the joints are
    (no rotations, basis or channels)."""
    read = run_to_end(pose_frames.pose_in_steps(context, obj, frames, matrices=False, restore=restore))
    out = []
    for leg in legs:
        rows = [read.order[n] for n in leg]
        out.append(np.concatenate((read.heads[:, rows], read.tails[:, rows[-1], None]), axis=1))
    return out


def legs_of(read: pose_frames.PoseFrames, legs, mode_of: dict[str, str]) -> list[LegFrames]:
    """The legs' LegFrames from a pose read over frames (with its basis and their channels)."""
    out = []
    for leg in legs:
        rows = [read.order[n] for n in leg]
        values = [read.channels[rotation_channels(mode_of[n])[0]][:, read.order[n]] for n in leg]
        out.append(
            LegFrames(
                tuple(leg),
                tuple(mode_of[n] for n in leg),
                read.world,
                read.heads[:, rows],
                read.tails[:, rows[-1]],
                pose_frames.matrix_rotations(read.matrices[:, rows]),
                pose_frames.matrix_rotations(read.basis[:, rows]),
                values,
            )
        )
    return out


def channel_values(
    obj, leg: LegFrames, bone: int, quats: np.ndarray, first: np.ndarray, use_locks: bool = True
) -> np.ndarray:
    """(k, channels) values of local rotations `quats` (k, 4) in bone `bone`'s rotation mode,
    continuous from the input's channel values `first` (the frame before them); its locked channels
    kept where `use_locks` (the chain's Respect Locks)."""
    locks = modes.locks(obj.pose.bones[leg.names[bone]]) if use_locks else modes.NO_LOCKS
    return modes.series_values(leg.modes[bone], quats, tuple(first.tolist()), locks)


def run_rows(runs: list[tuple[int, int]]) -> np.ndarray:
    """The frame indices of `runs` ((first, end) pairs), one run after the other."""
    return np.concatenate([np.arange(first, end) for first, end in runs]) if runs else np.zeros(0, dtype=int)


def channel_runs(
    obj,
    leg: LegFrames,
    quats: np.ndarray,
    runs: list[tuple[int, int]],
    use_locks: bool = True,
    notes: list[str] | None = None,
    kept: np.ndarray | None = None,
) -> list[np.ndarray]:
    """Per bone of `leg`: `channel_values` of its rotations `quats` (F, 3, 4) on each of `runs`
    ((first, end) frame indices), one table of the runs one after the other, each run continuous
    from the input's values on its first frame. Unlocked bones in one Euler order are converted
    together (rig.euler_series: the same figures as mathutils frame by frame, in one pass over
    every run); the others, and any where it does not serve, run by run. `use_locks`: the chain's
    Respect Locks (off: locked channels turn like the others). `notes` (a list) gets why the
    whole-column conversion did not serve an Euler bone it could have (converted frame by frame).
    `kept` (F,) bool: the frames whose input values the caller keys (the frames it did not change):
    each stretch of the others then meets them on both sides (rig.key_continuity), not only the
    run's first frame."""
    rows = run_rows(runs)
    starts = np.cumsum([0] + [end - first for first, end in runs[:-1]])
    out: list[np.ndarray | None] = [None] * len(leg.names)
    together: dict[str, list[int]] = {}
    for bone, (name, mode) in enumerate(zip(leg.names, leg.modes, strict=True)):
        lock = (modes.locks(obj.pose.bones[name]) if use_locks else modes.NO_LOCKS)[0]
        # (series_values' test; an Euler mode ignores a W lock left from a 4D mode: review13b)
        if runs and mode in euler_series.AXES and not any(lock):
            together.setdefault(mode, []).append(bone)
    why = euler_series.reason() if together else ""
    if why:
        if notes is not None:
            notes.append(f"Euler keys converted frame by frame: {why}")
        together = {}
    for mode, bones in together.items():
        firsts = np.concatenate([leg.values[b][[first for first, _ in runs]] for b in bones])
        heads = np.concatenate([starts + j * len(rows) for j in range(len(bones))])
        values = euler_series.series(mode, np.concatenate([quats[rows, b] for b in bones]), firsts, heads)
        if values is not None:  # (None: not settled or not finite, converted run by run below)
            out_of = np.split(values, len(bones))
            for j, b in enumerate(bones):
                out[b] = out_of[j]
        elif notes is not None:
            names = ", ".join(f"'{leg.names[b]}'" for b in bones)
            notes.append(f"the Euler keys of {names} converted frame by frame (a series that does not settle)")
    for b, table in enumerate(out):
        if table is None:
            parts = [
                channel_values(obj, leg, b, quats[first:end, b], leg.values[b][first], use_locks) for first, end in runs
            ]
            out[b] = np.concatenate(parts) if parts else np.zeros((0, leg.values[b].shape[1]))
    if kept is not None and runs:
        out = [_meet_kept(obj, leg, b, quats[:, b], rows, table, kept, use_locks) for b, table in enumerate(out)]
    return out


def _meet_kept(obj, leg: LegFrames, bone: int, quats, rows, table, kept, use_locks: bool) -> np.ndarray:
    """`table` (the bone's values on `rows`) with each stretch of written frames (in `rows`, not
    `kept`) continuous with the input's values on the frames either side (key_continuity.meet_segments)."""
    full = leg.values[bone].copy()
    full[rows] = table
    written = np.zeros(len(full), dtype=bool)
    written[rows] = ~kept[rows]
    locks = modes.locks(obj.pose.bones[leg.names[bone]]) if use_locks else modes.NO_LOCKS
    met = key_continuity.meet_segments(leg.modes[bone], full, quats, written, leg.values[bone], locks)
    return table if met is full else met[rows]


def rotation_path(obj, name: str) -> str:
    return keys.data_path(name, keys.rotation_property(obj.pose.bones[name]))
