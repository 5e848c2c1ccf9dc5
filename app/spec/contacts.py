"""Detect Contacts and Clear Contacts: key the chains' `contact` from the motion, or remove the keys.

Detection samples every frame of the range once for all chains in scope (`rig.contacts`),
measures each foot's height above the armature's ground by raycast (`rig.ground`), finds the
contacts (`solvers.contacts`) and only then keys them: any refusal or failure before that keys
nothing. The figures reported are read back from the written keys.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ...headless.frame_limit import check_frames
from ...rig import contacts as rig_contacts
from ...rig import keys, leg_checks, protected
from ...rig.ground import GroundProbe, ground_probe
from ...rig.space import HUGE
from ...solvers.contacts import ContactSettings, contact_runs, detect_contacts
from .scope import scoped_items


@dataclass
class ChainContacts:
    name: str
    contacts: int  # runs of planted frames, read back from the keys
    planted: int  # planted frames among those detected
    keys: int  # keys written
    settings: ContactSettings
    refused: str = ""  # why a bake with contacts will refuse the chain ('' when it can plant it)
    # Of `contacts`, those within the range, neither on its first nor its last frame (a contact cut
    # by the range is a piece of one: user14's false "far fewer" warning over a sub-range).
    whole: int | None = None

    @property
    def whole_contacts(self) -> int:
        return self.contacts if self.whole is None else self.whole


@dataclass
class DetectResult:
    first: int
    last: int
    chains: list[ChainContacts]
    ground: str  # the ground's name, '' without one
    seconds: float
    outside: str = ""  # the range's frames beyond the motion's keys, where the pose holds still ('' if none)

    @property
    def frames(self) -> int:
        return self.last - self.first + 1

    @property
    def warnings(self) -> list[str]:
        """`sparse_warnings` of its chains, and one per chain a bake with contacts will refuse."""
        refused = [
            f"chain '{c.name}' has contacts but {c.refused}: a bake with them will refuse it (its contacts are keyed)"
            for c in self.chains
            if c.refused
        ]
        return sparse_warnings(self.chains) + refused + ([self.outside] if self.outside else [])


def sparse_warnings(chains: list[ChainContacts]) -> list[str]:
    """A warning per chain that found no contact, or at most half as many as the chain with the most
    (2 or more): a leg that walks with the other plants about as often (a clip may start or end in
    a step), and a user trial lost half a foot's contacts without a word (a capture over a slope)."""
    most = max(chains, key=lambda c: c.whole_contacts, default=None)
    out = []
    for chain in chains:
        if chain.contacts == 0:
            found = "found no contact"
        elif most.whole_contacts >= 2 and 2 * chain.contacts <= most.whole_contacts:
            # The most's whole contacts alone (not those the range cuts) against all of this one's.
            found = f"found {chain.contacts} contact(s), far fewer than '{most.name}' ({most.contacts})"
        else:
            continue
        out.append(
            f"'{chain.name}' {found}: if its foot does plant, raise Height or Speed (or check the ground"
            " under it); the bake holds only the contacts keyed"
        )
    return out


def _cut_ends(obj, frames: np.ndarray) -> tuple[bool, bool]:
    """Whether the motion goes on before the range's first frame and after its last (a contact
    there is then a piece of one); where that cannot be told, neither end is taken as cut."""
    span = rig_contacts.motion_span(obj)
    if span is None:
        return False, False
    first, last = sorted(keys.action_frames(obj, np.array([frames[0], frames[-1]], dtype=float)).tolist())
    return first > span[0] + keys.FRAME_EPSILON, last < span[1] - keys.FRAME_EPSILON


def detect_frames(first: int, last: int) -> np.ndarray:
    """Scene frames first..last, or ValueError (no frames, beyond Blender's limit)."""
    if last < first:
        raise ValueError(f"no frames: frame end {last} is before frame start {first}")
    check_frames(first, last)
    return np.arange(first, last + 1)


def _check_keyable(obj, items, outcome: str = "nothing was keyed") -> None:
    """Refuse (ValueError) where the contact keys cannot be written: linked or shared data, a
    repeated NLA strip being tweaked, a locked contact F-Curve."""
    refusal = keys.tweak_refusal(obj) or protected.keying_refusal(
        obj, [], {rig_contacts.contact_path(item) for item in items}
    )
    if refusal:
        raise ValueError(f"{refusal}; {outcome}")


def _check_evaluated(context, obj) -> None:
    if not obj.evaluated_get(context.evaluated_depsgraph_get()).is_evaluated:
        raise ValueError(
            f"the armature '{obj.name}' is disabled in viewports or not in the view layer, so Blender does not"
            " evaluate it and its motion would be stale: enable it in viewports (the monitor icon) first"
        )


def _ground_heights(probe: GroundProbe, item, track: rig_contacts.FootTrack, frames, reach: float) -> np.ndarray:
    """(m, 2) ground height under the foot's heel and toe ends, or ValueError where there is none."""
    heights = np.stack([probe.heights_below(end, reach) for end in (track.heel, track.toe)], axis=1)
    missing = np.flatnonzero(np.isnan(heights).any(axis=1))
    if len(missing):
        raise ValueError(
            f"the foot of chain '{item.name}' is not above the ground '{probe.name}' at frame {int(frames[missing[0]])}"
            f" ({len(missing)} frame(s) in all): extend the ground under it, or pick none; nothing was keyed"
        )
    return heights


def detect(
    context,
    obj,
    first: int,
    last: int,
    height: float = 0.0,
    speed: float = 0.0,
    min_duration: float = ContactSettings.min_duration,
    progress: Callable | None = None,
) -> DetectResult:
    """Key `contact` on the chains in scope of armature `obj` over scene frames first..last.
    `height` (world distance) and `speed` (world distance per second), 0: from each leg's length."""
    start_time = time.perf_counter()
    frames = detect_frames(first, last)
    if not obj.chain_ik.chains:
        raise ValueError("no chains: add one per leg in the Chain IK panel (its tip bone is the foot)")
    items = scoped_items(obj.chain_ik)
    lengths = [rig_contacts.leg_length(obj, item) for item in items]  # names a chain without a tip
    for name, value in (("height", height), ("speed", speed)):
        if not 0.0 <= value < HUGE:  # NaN fails too; Blender stores infinity as 3.4e38
            raise ValueError(f"the {name} threshold must be a finite number, 0 or more (0: from the leg), not {value}")
    changes = {"min_duration": min_duration}
    changes.update((name, value) for name, value in (("height", height), ("speed", speed)) if value > 0.0)
    settings = [ContactSettings.for_leg(length, **changes) for length in lengths]
    _check_keyable(obj, items)
    _check_evaluated(context, obj)
    probe = ground_probe(context, obj, frames[0])  # the ground as it is on the range's first frame
    outside = rig_contacts.outside_motion(obj, frames)
    tracks = rig_contacts.sample_feet(context, obj, items, frames, progress)
    fps = context.scene.render.fps / context.scene.render.fps_base
    found = []
    for item, track, length, setting in zip(items, tracks, lengths, settings, strict=True):
        under = None if probe is None else _ground_heights(probe, item, track, frames, length)
        try:
            found.append(detect_contacts(track.heel, track.toe, fps, setting, under))
        except ValueError as exc:
            raise ValueError(f"chain '{item.name}': {exc}; nothing was keyed") from None
    written = [
        rig_contacts.write_contacts(obj, item, frames, planted) for item, planted in zip(items, found, strict=True)
    ]
    cut = _cut_ends(obj, frames)
    chains = []
    for item, count, setting in zip(items, written, settings, strict=True):
        played = rig_contacts.read_contacts(obj, item, frames)  # the figures from the keys as written
        _, refused = leg_checks.planted_leg(obj, item.tip, item.chain_length, item.use_tail, item.use_locks)
        runs = contact_runs(played)
        whole = sum(1 for a, b in runs if (a > 0 or not cut[0]) and (b < len(played) or not cut[1]))  # (b: past)
        chains.append(ChainContacts(item.name, len(runs), int(played.sum()), count, setting, refused, whole))
    scene = context.scene
    scene.frame_set(scene.frame_current, subframe=scene.frame_subframe)  # the contact shown: the keys' here
    return DetectResult(
        int(frames[0]),
        int(frames[-1]),
        chains,
        obj.chain_ik.ground.name if probe else "",
        time.perf_counter() - start_time,
        outside,
    )


def clear(obj, first: int | None = None, last: int | None = None) -> dict[str, int]:
    """Remove the contact keys of the chains in scope (within scene frames first..last when given,
    else all of them); keys removed, by chain name."""
    items = scoped_items(obj.chain_ik)
    span = None
    if first is not None and last is not None:
        detect_frames(first, last)  # the same refusals as detection's
        span = (float(first), float(last))
    _check_keyable(obj, items, "nothing was cleared")
    return {item.name: rig_contacts.clear_contacts(obj, item, span) for item in items}
