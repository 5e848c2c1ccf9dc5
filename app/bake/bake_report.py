"""What a bake reports per chain, measured on the written keys as they play back.

`ChainReport` is plain data (`as_dict()` for JSON): the Bake operator reports it,
cli.py prints and serialises it. Figures come from evaluating the scene at every
baked frame after the keys were written, so drivers, modifiers, locks and float32
key storage are all in them.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field

import numpy as np

from ... import rig, solvers
from ...solvers import quat
from ..solve.result import aim_figures
from .contact_figures import ContactFigures, Slide

# The solvers' default tolerance: this share of the chain's length (world units here).
RELATIVE_TOLERANCE = solvers.DEFAULT_RELATIVE_TOLERANCE


@dataclass
class ChainReport:
    name: str  # the panel chain's name, or the tip bone of a chain given by script arguments
    tip: str
    method: str
    frames: int  # frames baked
    missed: int  # frames where the tip is farther than `tolerance` from the target on playback
    tolerance: float  # world distance
    worst_error: float  # largest world tip-to-target distance on playback
    worst_frame: int
    largest_jump: float  # degrees: largest rotation of a chain bone, relative to its parent, between baked frames
    jump_frame: int  # the frame that jump arrives at
    # Why the bake's fastest kernel did not serve this chain ('' when it did), e.g. "baked frame by
    # frame: bone 'x' has constraints" (bake_solve; BakeResult.reasons).
    path: str = ""
    group: str = ""  # the chains it was solved with (app.spec.groups), '' when alone
    # A pinned chain: its "target" is the point it held on each frame, so `missed` counts the
    # frames where the pin did not hold (its tip farther than `tolerance` from that point).
    pinned: bool = False
    # An aiming chain (its Aim Axis): the largest angle (degrees) left between its tip bone's aim axis
    # and the line to the target on playback, and its frame; its errors are the aim ray's miss
    # (solvers.common.aim_goals). None: the chain reaches.
    worst_angle: float | None = None
    angle_frame: int = 0
    # A chain with contacts (issue 21): app.bake.contact_figures.ContactFigures as a dict, else {}.
    contacts: dict = field(default_factory=dict)

    def as_dict(self) -> dict:
        return asdict(self)

    def line(self) -> str:
        return chain_line(self.as_dict())


class _Track:
    """One chain's running figures over the playback pass."""

    def __init__(self, spec, obj) -> None:
        self.spec = spec
        self.names = rig.chain_bone_names(obj, spec.tip, spec.chain_length, spec.use_tail)
        self.tolerance = spec.tolerance
        self.errors: list[float] = []
        self.previous: list | None = None
        self.jump, self.jump_frame = 0.0, 0
        self.angles: list[float] = []  # an aiming chain's angle left per frame (degrees)

    def sample(self, obj_eval, target_world, frame: int) -> None:
        bones = [obj_eval.pose.bones[n] for n in self.names]
        if not self.tolerance:  # the solver's default, from the chain's length at the first frame
            joints = [b.head for b in bones] + [bones[-1].tail]
            to_world = obj_eval.matrix_world.to_3x3()
            length = sum((to_world @ (b - a)).length for a, b in zip(joints, joints[1:], strict=False))
            self.tolerance = RELATIVE_TOLERANCE * length
        if self.spec.aims:  # the ray's miss is its error; the angle left is kept too
            angle, miss = aim_figures(obj_eval, self.spec, target_world)
            self.errors.append(miss)
            self.angles.append(angle)
        else:
            tip = bones[-1] if self.spec.use_tail else obj_eval.pose.bones[self.spec.tip]
            point = obj_eval.matrix_world @ (tip.tail if self.spec.use_tail else tip.head)
            self.errors.append(float(np.linalg.norm(np.array(point[:]) - target_world)))
        rotations = rig.read.parent_relative_rotations(obj_eval, self.names)
        if self.previous is None:
            self.jump_frame = frame  # nothing turns over the range: no frame outside it is named
        else:
            # Either sign is the same rotation; float64 from the relative rotation (a float32 2 acos |dot|
            # would read 0.04° where nothing turned).
            angle = math.degrees(float(np.max(quat.angle_between(self.previous, rotations))))
            if angle > self.jump:
                self.jump, self.jump_frame = angle, frame
        self.previous = rotations

    def report(self, frames) -> ChainReport:
        errors = np.array(self.errors)
        worst = int(np.argmax(errors))
        return ChainReport(
            name=self.spec.label,
            tip=self.spec.tip,
            method=self.spec.method,
            frames=len(errors),
            missed=int(np.count_nonzero(errors > self.tolerance)),
            tolerance=float(self.tolerance),
            worst_error=float(errors[worst]),
            worst_frame=int(frames[worst]),
            largest_jump=float(self.jump),
            jump_frame=int(self.jump_frame),
            pinned=bool(self.spec.pin),
            **self._aim(frames),
        )

    def _aim(self, frames) -> dict:
        if not self.angles:
            return {}
        worst = int(np.argmax(self.angles))
        return {"worst_angle": float(self.angles[worst]), "angle_frame": int(frames[worst])}


def measure(
    context, obj, specs, frames, into: list, held: dict | None = None, roots: dict | None = None
) -> Iterator[None]:
    """Play the baked `frames` back and append one ChainReport per spec to `into`.

    A generator (one step per frame) so a modal bake can keep the UI alive; run it
    to the end with `for _ in measure(...): pass`. The frame is restored after.
    `held`: a pinned chain's held tip per frame (label -> (frames, 3) world), its goal there.
    `roots`: Move Root's keyed bones -> (frames, 3) their heads before the bake (world); each
    entry is replaced by the largest distance its head plays back from there."""
    scene = context.scene
    frame0, subframe0 = scene.frame_current, scene.frame_subframe
    tracks = [_Track(spec, obj) for spec in specs]
    held = held or {}
    moved: dict[str, float] = {}
    try:
        for k, frame in enumerate(frames):
            scene.frame_set(int(frame))
            depsgraph = context.evaluated_depsgraph_get()
            obj_eval = obj.evaluated_get(depsgraph)
            for track in tracks:
                spec = track.spec
                if spec.pin:
                    target = held[spec.label][k]
                else:
                    target = rig.target_world_location(rig.evaluated(spec.target, depsgraph), spec.target_bone)
                track.sample(obj_eval, np.asarray(target, dtype=float), int(frame))
            for name, before in (roots or {}).items():
                head = rig.root_location.head_world(obj_eval, name)
                moved[name] = max(moved.get(name, 0.0), math.dist(head, before[k]))
            yield
    finally:
        scene.frame_set(frame0, subframe=subframe0)
    into.extend(track.report(frames) for track in tracks)
    if roots is not None:
        roots.clear()
        roots.update(moved)


def chain_line(chain: dict) -> str:
    """One chain's report line, from `ChainReport.as_dict()` (cli.py prints the same)."""
    if chain.get("pinned"):
        missed = (
            f", the pin did not hold on {chain['missed']} (tip farther than {chain['tolerance']:.3g} from its point)"
            if chain["missed"]
            else ", the pin held"
        )
        worst = "worst tip movement"
    elif chain.get("worst_angle") is not None:
        missed = f", {chain['missed']} missed by more than {chain['tolerance']:.3g}" if chain["missed"] else ""
        angle = f"worst aim angle {chain['worst_angle']:.3g}° (frame {chain['angle_frame']}), "
        worst = angle + "worst aim ray miss"
    else:
        missed = f", {chain['missed']} missed by more than {chain['tolerance']:.3g}" if chain["missed"] else ""
        worst = "worst tip error"
    return (
        f"chain '{chain['name']}' ({chain['method']}"
        + (f", group {chain['group']}" if chain.get("group") else "")
        + f"): {chain['frames']} frame(s){missed}, {worst}"
        f" {chain['worst_error']:.3g} (frame {chain['worst_frame']}), largest jump {chain['largest_jump']:.2f}°"
        + (f" (frame {chain['jump_frame']})" if chain["largest_jump"] > 0.0 else "")
        + (f"; {chain['path']}" if chain.get("path") else "")
        + (f"; contacts: {contact_line(chain['contacts'])}" if chain.get("contacts") else "")
    )


def contact_line(figures: dict) -> str:
    """A chain's contact figures (ContactFigures.as_dict) as one line."""
    values = dict(figures)
    for key in ("slide_before", "slide_after"):
        values[key] = Slide(**values[key])
    return ContactFigures(**values).line()


def missed_warning(reports: list[ChainReport]) -> str:
    """The WARNING line when any chain's tip missed (a pin: did not hold) on some frame ('' when none did)."""
    lines = []
    for pinned, what in ((False, "the tip misses its target"), (True, "the pin does not hold")):
        missed = [r for r in reports if r.missed and r.pinned == pinned]
        if missed:
            parts = [
                f"'{r.name}' {r.missed} of {r.frames} (worst {r.worst_error:.3g}, frame {r.worst_frame})"
                for r in missed
            ]
            lines.append(f"{what} by more than the tolerance on frames of " + ", ".join(parts))
    return "; ".join(lines)
