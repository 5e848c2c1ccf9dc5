"""The figures of a bake that honours contacts (issue 21 item 4), per chain, measured on the written
keys as they play back (app.bake.contact_targets.measure): the contacts, the foot's slide during
them before and after, the tip's lowest height against the ground, the largest joint angular
speed before and after, how far the hips moved, and how high a hold beyond reach was kept."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from ...rig import plant_read
from ...solvers import foot_metrics, plant, quat
from ...solvers.contacts import contact_runs
from .contact_legs import ground_under

if TYPE_CHECKING:
    from .contact_targets import PlantedChain


@dataclass
class Slide:
    mean: float
    median: float
    largest: float


@dataclass
class ContactFigures:
    """One chain's figures (world units; speeds per second): the input's (before) and the
    played-back bake's (after)."""

    contacts: int  # contact runs in the keys that the bake held (`dropped`: those it did not)
    planted_frames: int  # frames the tip was held (on the ground, with one)
    slide_before: Slide  # the planted end's slide per 1/30 s during contacts
    slide_after: Slide
    lowest_before: float | None  # the tip's lowest height above the ground (None: no ground)
    lowest_after: float | None
    angular_before: float  # largest joint angular speed of the chain's bones, radians per second
    angular_after: float
    root_moved: float  # the hip joint's largest move on playback (the hips lowered with Move Root, else 0)
    float_largest: float | None  # the held tip's largest height above the ground during holds (None: no ground)
    unreached: int  # frames where the leg could not reach the planted point
    ground: str = ""
    strayed: float = 0.0  # the held tip's largest distance across from the input's, when beyond STRAY_SHARE (else 0)
    # The largest one-frame turn of a leg joint that pops (`pops`; degrees, 0.0 where none does), its
    # frame, and the input's turn of that joint there.
    pop: float = 0.0
    pop_frame: int = 0
    pop_input: float = 0.0
    # The contacts of the keys the bake did not hold: [first frame, last frame, why] each.
    dropped: list = field(default_factory=list)

    def as_dict(self) -> dict:
        return asdict(self)

    def line(self) -> str:
        """The figures as one line (the bake report, the panel, cli.py)."""
        low = ""
        if self.lowest_after is not None:
            low = f", lowest tip {1000 * self.lowest_before:.1f} -> {1000 * self.lowest_after:.1f} mm above the ground"
        miss = f", {self.unreached} frame(s) beyond reach" if self.unreached else ""
        if self.float_largest is not None and self.float_largest > 1e-4:
            miss += f", held up to {1000 * self.float_largest:.1f} mm above the ground (beyond the leg's reach)"
        if self.strayed:
            miss += f", {stray_note(self.strayed)}"
        if self.pop:
            miss += f", {pop_note(self.pop, self.pop_frame, self.pop_input)}"
        if self.dropped:
            miss += f"; {dropped_note(self.dropped)}"
        return (
            f"{self.contacts} contact(s); slide per 1/30 s mean {1000 * self.slide_before.mean:.2f} -> "
            f"{1000 * self.slide_after.mean:.2f} mm, largest {1000 * self.slide_before.largest:.2f} -> "
            f"{1000 * self.slide_after.largest:.2f} mm{low}; largest joint speed "
            f"{math.degrees(self.angular_before):.0f} -> {math.degrees(self.angular_after):.0f} °/s;"
            f" root moved {1000 * self.root_moved:.1f} mm{miss}"
        )


def _slide(heel, toe, planted, fps) -> Slide:
    s = foot_metrics.foot_slide(heel, toe, planted, fps)
    return Slide(s.mean, s.median, s.largest)


def _lowest(chain: PlantedChain, toe: np.ndarray, frames) -> float | None:
    if chain.probe is None:
        return None
    reach = 2.0 * float(np.max(np.linalg.norm(chain.leg.heads[:, 0] - chain.leg.toe, axis=1)))
    under = ground_under(chain.probe, chain.spec, toe, frames, reach)
    return float(np.min(toe[:, 2] - under))


def figures(
    chain: PlantedChain, played: plant_read.LegFrames, fps: float, frames, hips: bool = False, wide=None
) -> ContactFigures:
    """`wide`: the frames `played` is read on where not `frames`: `frames` with the frame before
    the first and (or) after the last, played unbaked (the scene plays them: `played_edges`)."""
    before, leg = chain.leg, played
    edges = None
    if wide is not None and len(wide) > len(frames):
        edges = played
        first = int(np.searchsorted(wide, frames[0]))
        leg = played.rows(np.arange(first, first + len(frames)))
    return ContactFigures(
        contacts=len(contact_runs(chain.contacts)) - len(chain.dropped),
        planted_frames=int(np.count_nonzero(chain.plan.weight == 1.0)),
        slide_before=_slide(before.heel_world, before.toe_world, chain.contacts, fps),
        slide_after=_slide(leg.heel_world, leg.toe_world, chain.contacts, fps),
        lowest_before=_lowest(chain, before.toe_world, frames),
        lowest_after=_lowest(chain, leg.toe_world, frames),
        angular_before=foot_metrics.largest_angular_speed(before.basis, fps),
        angular_after=foot_metrics.largest_angular_speed(leg.basis, fps),
        root_moved=_hips_moved(before, leg) if hips else 0.0,
        float_largest=_float(chain, leg.toe_world, frames),
        unreached=int(np.count_nonzero(chain.errors > 1e-4 * leg_reach(chain))),
        ground=chain.probe.name if chain.probe is not None else "",
        strayed=_strayed(chain),
        **_pops_across(before, leg, edges, frames, wide),
        dropped=[list(d) for d in chain.dropped],
    )


def _pops_across(before, leg, edges, frames, wide) -> dict:
    """`pops` over the range and across its ends: `edges`, the leg played on `wide` (the frame
    before the first and (or) after the last as well: unbaked, the input there on both sides of
    the comparison), or None (the range alone). A pop left where the range meets the unbaked
    motion is named."""
    if edges is None:
        return pops(before.basis, leg.basis, frames)
    first = int(np.searchsorted(wide, frames[0]))
    own = np.concatenate([edges.basis[:first], before.basis, edges.basis[first + len(frames) :]])
    return pops(own, edges.basis, wide)


def played_edges(scene, frames) -> np.ndarray:
    """`frames` with the frame before the first and after the last where the scene plays them
    (within its frame range): a jump where the baked keys meet the unbaked motion is seen there."""
    before = [int(frames[0]) - 1] if int(frames[0]) > scene.frame_start else []
    after = [int(frames[-1]) + 1] if int(frames[-1]) < scene.frame_end else []
    return np.concatenate([before, np.asarray(frames), after]).astype(np.asarray(frames).dtype)


def dropped(contacts, room, held, frames, settings, blend: float) -> list[tuple[int, int, str]]:
    """(first frame, last frame, why) of each contact run of `contacts` (F,) that no frame of
    `held` (F,) holds: wholly within `blend` frames of a cut end of the range (`room`: the
    contacts left by solvers.plant.room_at_ends), or with its tip never down (solvers.plant.tip_down,
    `settings` its thresholds)."""
    out = []
    room = np.asarray(room, dtype=bool)
    for start, end in plant.dropped_runs(contacts, held):
        if not room[start:end].any():
            why = (
                f"within {int(math.ceil(blend))} frame(s) (Contact Blend) of the range's end, where the unbaked"
                " motion goes on: too short to hold and ease back"
            )
        else:
            why = (
                f"its tip is never down there (never within {1000 * settings.height:.0f} mm of its lowest while"
                f" slower than {settings.speed:.2g} per s: the foot does not come down)"
            )
        out.append((int(frames[start]), int(frames[end - 1]), why))
    return out


def dropped_note(dropped: list) -> str:
    """The contacts a bake did not hold (ContactFigures.dropped), as the figure line and the
    bake's warning say it."""
    parts = [f"frames {first}-{last} ({why})" for first, last, why in dropped]
    return f"{len(dropped)} contact(s) not held: " + "; ".join(parts)


# A pop: a frame on which a leg joint turns more than POP_FLOOR degrees, more than POP_INPUT times its
# input's turn there and more than POP_NEIGHBOURS times its own turn on either frame beside it. Why
# not the report's jump alone (bake_report.JUMP_RATIO, 3x the frames beside it): a pop where a
# contact ends rides on a joint already turning fast (start_walk_stop, legs +20%: the foot 14.5° in
# one frame between 6.0° and 4.9°, 2.4x, while its input turned 4.3°: no warning); a smooth path's
# turn changes by at most 1.2x from frame to frame (bake_report's Rigify arm), and an ease faded
# over several frames turns about as much on the frames beside its fastest one.
POP_FLOOR = 10.0  # degrees, as bake_report.JUMP_FLOOR
POP_INPUT = 3.0
POP_NEIGHBOURS = 2.0


def pops(before: np.ndarray, after: np.ndarray, frames) -> dict:
    """ContactFigures' pop fields of a leg whose local rotations (F, 3, 4) were `before` and are
    `after` on `frames`: its largest one-frame joint turn that is a pop (POP_FLOOR), or {}."""
    if len(after) < 2:
        return {}
    turned = np.degrees(quat.angle_between(after[:-1], after[1:]))  # (F - 1, 3): frame t - 1 to t
    own = np.degrees(quat.angle_between(before[:-1], before[1:]))
    still = np.zeros((1, turned.shape[1]))
    beside = np.maximum(np.concatenate((still, turned[:-1])), np.concatenate((turned[1:], still)))
    popped = (turned > POP_FLOOR) & (turned > POP_INPUT * own) & (turned > POP_NEIGHBOURS * beside)
    if not popped.any():
        return {}
    t, j = np.unravel_index(int(np.argmax(np.where(popped, turned, -1.0))), turned.shape)
    return {"pop": float(turned[t, j]), "pop_frame": int(frames[t + 1]), "pop_input": float(own[t, j])}


def pop_note(degrees: float, frame: int, input_turn: float) -> str:
    """What a pop means: the figure line and the bake's jump warning say it alike."""
    return (
        f"a joint pops {degrees:.1f}° in one frame at frame {frame} (its input turns {input_turn:.1f}°;"
        " far more than the frames beside it)"
    )


# A hold farther than this share of the leg's reach across from where the input has the tip is named:
# on the CMU retargets a hold strays up to 0.13 of it, but a contact that joins standing, pivots and a
# shuffle before a crouch (start_walk_stop's left foot, 2.5 s) 0.18-0.39 (a user trial: the pin
# held, the foot 20 cm from the capture's, and the report said nothing).
STRAY_SHARE = 0.15


def stray_note(strayed: float) -> str:
    """What a hold `strayed` (world units) from the input's tip means: the figure line and the
    operator's warning say it alike."""
    return (
        f"held up to {1000 * strayed:.0f} mm from the input's tip (a contact may join several placements:"
        " check its Contact keys)"
    )


def _strayed(chain: PlantedChain) -> float:
    """The held tip's largest horizontal distance from the input's tip on hold frames, when beyond
    STRAY_SHARE of the leg's reach (else 0)."""
    held = chain.plan.weight == 1.0
    if not held.any():
        return 0.0
    across = (chain.plan.target[held] - chain.leg.toe_world[held])[:, :2]
    far = float(np.max(np.linalg.norm(across, axis=1)))
    return far if far > STRAY_SHARE * leg_reach(chain) else 0.0


def _hips_moved(before: plant_read.LegFrames, after: plant_read.LegFrames) -> float:
    """The largest world move of the leg's hip joint (its thigh's head) on playback: only the bones
    above the leg move it, i.e. the hips a bake lowered."""
    moved = after.to_world(after.heads[:, 0]) - before.to_world(before.heads[:, 0])
    return float(np.max(np.linalg.norm(moved, axis=1))) if len(moved) else 0.0


def _float(chain: PlantedChain, toe: np.ndarray, frames) -> float | None:
    """The tip's largest height above the ground on the frames it is held at its hold's point (None
    without ground): not a heel strike's frames, where the tip still comes down onto it
    (solvers.plant.heel_first; a user trial read 128 mm there as a hold beyond reach)."""
    plan = chain.plan
    at_point = np.zeros(len(plan.weight), dtype=bool)
    for hold in plan.holds:
        rows = slice(hold.start, hold.end)
        at_point[rows] = np.linalg.norm(plan.target[rows] - hold.point, axis=1) <= 1e-9
    held = np.flatnonzero((plan.weight == 1.0) & at_point)
    if chain.probe is None or not len(held):
        return None
    reach = 2.0 * float(np.max(np.linalg.norm(chain.leg.heads[:, 0] - chain.leg.toe, axis=1)))
    under = ground_under(chain.probe, chain.spec, toe[held], frames[held], reach)
    return float(np.max(toe[held, 2] - under))


def leg_reach(chain: PlantedChain) -> float:
    heads = chain.leg.heads[0]
    return float(np.linalg.norm(heads[1] - heads[0]) + np.linalg.norm(heads[2] - heads[1]))
