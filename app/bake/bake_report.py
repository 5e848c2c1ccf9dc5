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
from ...rig.reduce import SCALE_SHARE  # Reduce Keys' Y scale keys stay within this share: levers grow by it
from ...solvers import quat
from ..solve.result import aim_figures
from .contact_figures import ContactFigures, Slide, dropped_note

# The solvers' default tolerance: this share of the chain's length (world units here).
RELATIVE_TOLERANCE = solvers.DEFAULT_RELATIVE_TOLERANCE
# Blender keeps key values and bone matrices in float32, so a keyed pose plays back a few units
# in the last place of its coordinates from the pose solved in float64 (bench/bench_tree.py's
# playback check measured up to 2.4e-6 on the metarig). The stated floor of a frame: this many
# float32 epsilons of its scale (`_Track.sample`). A frame whose solve met the tolerance and whose
# playback exceeds it by no more is beyond it by float32 rounding alone: counted, not warned of.
FLOAT32_ULPS = 16
FLOAT32_EPS = float(np.finfo(np.float32).eps)
# A jump: a frame whose largest turn (a chain bone against its parent) is more than JUMP_RATIO times
# that of either neighbouring frame, and above JUMP_FLOOR. Why: along a smooth path the turn per
# frame changes gradually (Blender's IK on Rigify's arm through and out of full reach: at most 1.2x
# its larger neighbour, 20.8 degrees at its fastest, 7x its median, so a ratio to the chain's own
# median or an absolute angle would flag a legitimate straightening), while a pop (a bend flipping
# plane or sense) is one frame far above both (the same arm: 56-127 degrees after 0 and before 7,
# 8x and more). The floor keeps small turns quiet. A turn sustained over many frames (a spin on
# every frame) is no jump by this measure: the report line's largest jump shows it.
JUMP_RATIO = 3.0
JUMP_FLOOR = 10.0  # degrees


@dataclass(frozen=True)
class Reduction:
    """What Reduce Keys promised (rig.reduce): 'TIP', every chain's end within `tolerance` (world)
    of where the full bake puts it; 'ANGLE', every reduced joint within `tolerance` (radians) of
    its baked rotation. `rotated`, `scaled`: the bones whose rotation, Y scale curves were reduced."""

    mode: str
    tolerance: float
    rotated: frozenset[str]
    scaled: frozenset[str] = frozenset()


@dataclass
class ChainReport:
    name: str  # the panel chain's name, or the tip bone of a chain given by script arguments
    tip: str
    method: str
    frames: int  # frames baked
    missed: int  # frames where the tip is farther than `tolerance` from the target on playback (all of them)
    tolerance: float  # world distance
    worst_error: float  # largest world tip-to-target distance on playback
    worst_frame: int
    largest_jump: float  # degrees: largest rotation of a chain bone, relative to its parent, between baked frames
    jump_frame: int  # the frame that jump arrives at
    # The largest frame turn (degrees) that is a jump (JUMP_RATIO x either neighbouring frame's turn and
    # above JUMP_FLOOR: jump_warning), its frame and that ratio; 0.0 when none is.
    spike: float = 0.0
    spike_frame: int = 0
    spike_ratio: float = 0.0
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
    # Of `missed`, when the chain's solve met `tolerance` on every frame: frames beyond it by float32
    # rounding alone (within `float32_floor`, the largest per-frame floor: FLOAT32_ULPS), and with
    # Reduce Keys frames beyond it from the reduction but within the bound it promised the tip
    # (`reduce_bound`, its largest per frame: the tolerance + Max Tip Error ('TIP') or + Max Joint
    # Error over the lever arms of the reduced joints above the tip ('ANGLE'), + the float32 floor).
    # `real_missed`: the rest, the frames the WARNING names.
    rounding: int = 0
    float32_floor: float = 0.0
    reduced_missed: int = 0
    reduce_bound: float = 0.0
    reduce_mode: str = ""  # '' without Reduce Keys
    reduce_tolerance: float = 0.0  # 'TIP': world distance; 'ANGLE': radians
    real_missed: int = 0

    def as_dict(self) -> dict:
        return asdict(self)

    def line(self) -> str:
        return chain_line(self.as_dict())


class _Track:
    """One chain's running figures over the playback pass."""

    def __init__(self, spec, obj, solved: float | None = None, reduction: Reduction | None = None) -> None:
        self.spec = spec
        self.names = rig.chain_bone_names(obj, spec.tip, spec.chain_length, spec.use_tail)
        self.tolerance = spec.tolerance
        self.solved, self.reduction = solved, reduction  # the solver's worst tip error; Reduce Keys
        self.errors: list[float] = []
        self.floors: list[float] = []  # per frame: the float32 floor
        self.slack: list[float] = []  # per frame: what Reduce Keys may add to the tip's distance
        self.previous: list | None = None
        self.jump, self.jump_frame = 0.0, 0
        self.turns: list[float] = []  # per frame after the first: its largest turn (degrees)
        self.arrivals: list[int] = []  # the frame each turn arrives at
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
        self._bounds(obj_eval, bones[-1] if self.spec.use_tail else obj_eval.pose.bones[self.spec.tip], target_world)
        self.turn(obj_eval, frame)

    def turn(self, obj_eval, frame: int, edge: bool = False) -> None:
        """The chain's largest turn from the previous frame read to `frame`. `edge`: the unbaked
        frame either side of the range, read for the turn across the range's end alone (a pop where
        the baked keys meet the motion left as it was is a jump too)."""
        rotations = rig.read.parent_relative_rotations(obj_eval, self.names)
        if self.previous is None:
            if not edge:
                self.jump_frame = frame  # nothing turns over the range: no frame outside it is named
        else:
            # Either sign is the same rotation; float64 from the relative rotation (a float32 2 acos |dot|
            # would read 0.04° where nothing turned).
            angle = math.degrees(float(np.max(quat.angle_between(self.previous, rotations))))
            self.turns.append(angle)
            self.arrivals.append(frame)
            if angle > self.jump:
                self.jump, self.jump_frame = angle, frame
        self.previous = rotations

    def _bounds(self, obj_eval, tip, target_world) -> None:
        """This frame's float32 floor and Reduce Keys' slack, from the played-back pose: the path
        from the tip point up through its bones' heads to the armature's root bone."""
        to_world = obj_eval.matrix_world
        points = [to_world @ (tip.tail if self.spec.use_tail else tip.head)]
        bones, bone = [], tip if self.spec.use_tail else tip.parent
        while bone is not None:
            bones.append(bone.name)
            points.append(to_world @ bone.head)
            bone = bone.parent
        steps = [(b - a).length for a, b in zip(points, points[1:], strict=False)]
        reach = np.cumsum(steps) if steps else np.zeros(0)  # per bone: path length from its head to the tip
        # Coordinates as large as the object's origin plus the whole path, or the target's.
        path = float(reach[-1]) if steps else 0.0
        scale = max(to_world.translation.length + path, float(np.linalg.norm(target_world)))
        self.floors.append(FLOAT32_ULPS * FLOAT32_EPS * scale)
        r = self.reduction
        if r is None:
            self.slack.append(0.0)
            return
        keyed = [(name in r.rotated) + (name in r.scaled) for name in bones]
        if r.mode == "TIP":  # checked on every chain's end through every reduced bone above it (rig.reduce)
            self.slack.append(r.tolerance if any(keyed) else 0.0)
        else:  # a joint off by an angle moves the tip by at most that angle times its path to it
            self.slack.append(r.tolerance * (1.0 + SCALE_SHARE) * float(np.dot(keyed, reach)) if steps else 0.0)

    def _classify(self, errors: np.ndarray) -> dict:
        """Of the frames beyond the tolerance: those within the float32 floor and those within
        Reduce Keys' bound, when the solve met the tolerance on every frame (else every one is real)."""
        floors, slack = np.array(self.floors), np.array(self.slack)
        beyond = errors > self.tolerance
        met = self.solved is not None and self.solved <= self.tolerance
        rounding = beyond & (errors <= self.tolerance + floors) if met else np.zeros_like(beyond)
        reduced = beyond & ~rounding & (errors <= self.tolerance + slack + floors) if met else np.zeros_like(beyond)
        r = self.reduction
        return {
            "rounding": int(np.count_nonzero(rounding)),
            "float32_floor": float(floors.max(initial=0.0)),
            "reduced_missed": int(np.count_nonzero(reduced)),
            "reduce_bound": float(self.tolerance + (slack + floors).max(initial=0.0)) if r else 0.0,
            "reduce_mode": r.mode if r else "",
            "reduce_tolerance": float(r.tolerance) if r else 0.0,
            "real_missed": int(np.count_nonzero(beyond & ~rounding & ~reduced)),
        }

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
            **self._spike(frames),
            pinned=bool(self.spec.pin),
            **self._aim(frames),
            **self._classify(errors),
        )

    def _spike(self, frames) -> dict:
        """The largest jump among the frames' turns (see JUMP_RATIO), as ChainReport's spike fields."""
        turns = np.array(self.turns)
        if turns.size < 2:  # one turn has no neighbour to be told from
            return {}
        neighbour = np.maximum(np.concatenate(([0.0], turns[:-1])), np.concatenate((turns[1:], [0.0])))
        # Beside frames that hardly turn no turn is a jump: stepped (blocking) keys turn 0, X, 0, ...
        # (review12b: every key change warned). A pop happens while the chain moves.
        jumps = (turns > JUMP_FLOOR) & (turns > JUMP_RATIO * neighbour) & (neighbour > 0.01 * JUMP_FLOOR)
        if not np.any(jumps):
            return {}
        k = int(np.argmax(np.where(jumps, turns, -1.0)))
        ratio = float(turns[k] / neighbour[k]) if neighbour[k] > 0.0 else math.inf
        return {"spike": float(turns[k]), "spike_frame": int(self.arrivals[k]), "spike_ratio": ratio}

    def _aim(self, frames) -> dict:
        if not self.angles:
            return {}
        worst = int(np.argmax(self.angles))
        return {"worst_angle": float(self.angles[worst]), "angle_frame": int(frames[worst])}


def measure(
    context,
    obj,
    specs,
    frames,
    into: list,
    held: dict | None = None,
    roots: dict | None = None,
    solved: dict | None = None,
    reduction: Reduction | None = None,
) -> Iterator[None]:
    """Play the baked `frames` back and append one ChainReport per spec to `into`.

    A generator (one step per frame) so a modal bake can keep the UI alive; run it
    to the end with `for _ in measure(...): pass`. The frame is restored after.
    `held`: a pinned chain's held tip per frame (label -> (frames, 3) world), its goal there.
    `roots`: Move Root's keyed bones -> (frames, 3) their heads before the bake (world); each
    entry is replaced by the largest distance its head plays back from there.
    `solved`: the solver's worst tip error by tip (without it no miss is put down to rounding);
    `reduction`: what Reduce Keys promised, when it ran."""
    scene = context.scene
    frame0, subframe0 = scene.frame_current, scene.frame_subframe
    solved = solved or {}
    tracks = [_Track(spec, obj, solved.get(spec.tip), reduction) for spec in specs]
    held = held or {}
    moved: dict[str, float] = {}
    try:
        # The frame before the first and after the last, unbaked, for the jumps across the range's
        # ends, where the scene plays them (within its frame range).
        before = [int(frames[0]) - 1] if len(frames) and int(frames[0]) > scene.frame_start else []
        after = [int(frames[-1]) + 1] if len(frames) and int(frames[-1]) < scene.frame_end else []
        for frame in before:
            _edge(context, obj, tracks, frame)
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
        for frame in after:
            _edge(context, obj, tracks, frame)
    finally:
        scene.frame_set(frame0, subframe=subframe0)
    into.extend(track.report(frames) for track in tracks)
    if roots is not None:
        roots.clear()
        roots.update(moved)


def _edge(context, obj, tracks: list, frame: int) -> None:
    context.scene.frame_set(frame)
    obj_eval = obj.evaluated_get(context.evaluated_depsgraph_get())
    for track in tracks:
        track.turn(obj_eval, frame, edge=True)


def chain_line(chain: dict) -> str:
    """One chain's report line, from `ChainReport.as_dict()` (cli.py prints the same)."""
    real = chain.get("real_missed", chain["missed"])
    if chain.get("pinned") and chain.get("contacts"):  # planted: held where the bake put its tip, no pin of the user's
        missed = (
            f", the tip played farther than {chain['tolerance']:.3g} from where the bake put it on {real}"
            if real
            else ", the tip played where the bake put it"
        )
        worst = "worst tip error"
    elif chain.get("pinned"):
        missed = (
            f", the pin did not hold on {real} (tip farther than {chain['tolerance']:.3g} from its point)"
            if real
            else ", the pin held"
        )
        worst = "worst tip movement"
    elif chain.get("worst_angle") is not None:
        missed = f", {real} missed by more than {chain['tolerance']:.3g}" if real else ""
        angle = f"worst aim angle {chain['worst_angle']:.3g}° (frame {chain['angle_frame']}), "
        worst = angle + "worst aim ray miss"
    else:
        missed = f", {real} missed by more than {chain['tolerance']:.3g}" if real else ""
        worst = "worst tip error"
    return (
        f"chain '{chain['name']}' ({chain['method']}"
        + (f", group {chain['group']}" if chain.get("group") else "")
        + f"): {chain['frames']} frame(s){missed}{explained(chain)}, {worst}"
        f" {chain['worst_error']:.3g} (frame {chain['worst_frame']}), largest jump {chain['largest_jump']:.2f}°"
        + (f" (frame {chain['jump_frame']})" if chain["largest_jump"] > 0.0 else "")
        + (f"; {chain['path']}" if chain.get("path") else "")
        + (f"; contacts: {contact_line(chain['contacts'])}" if chain.get("contacts") else "")
    )


def explained(chain: dict) -> str:
    """The frames beyond the tolerance that are not misses of the solve (ChainReport.rounding,
    reduced_missed), as the report line's clause ('' when none)."""
    out = ""
    if chain.get("reduced_missed"):
        if chain["reduce_mode"] == "TIP":
            asked = f"the tolerance + Max Tip Error {chain['reduce_tolerance']:.3g}"
        else:
            asked = (
                f"the tolerance + Max Joint Error {math.degrees(chain['reduce_tolerance']):.3g}°"
                " times each reduced joint's reach to the tip"
            )
        out += (
            f", {chain['reduced_missed']} beyond the tolerance {chain['tolerance']:.3g} by key reduction,"
            f" within its bound {chain['reduce_bound']:.3g} ({asked})"
        )
    if chain.get("rounding"):
        out += (
            f", {chain['rounding']} beyond the tolerance {chain['tolerance']:.3g} by float32 rounding alone"
            f" (its solve within; by at most the float32 floor {chain['float32_floor']:.2g})"
        )
    return out


# A root's head that moved less than this (world units) on playback did not move: float32 keys'
# rounding (user14: "moved up to 2.24e-08" where Move Root changed nothing).
ROOT_STILL = 1e-6


def moved_root_line(name: str, moved: float) -> str:
    """The line saying how far Move Root moved bone `name`'s head on playback (the report's, the CLI's)."""
    if moved < ROOT_STILL:
        return f"Move Root did not need to move bone '{name}' (its head within {moved:.2g} of the input's on playback)"
    return f"Move Root keyed the location of bone '{name}': its head moved up to {moved:.3g} on playback"


def contact_line(figures: dict) -> str:
    """A chain's contact figures (ContactFigures.as_dict) as one line."""
    values = dict(figures)
    for key in ("slide_before", "slide_after"):
        values[key] = Slide(**values[key])
    return ContactFigures(**values).line()


def missed_warning(reports: list[ChainReport]) -> str:
    """The WARNING line when any chain's tip missed (a pin: did not hold) on some frame, or a planted
    chain's contact was not held ('' when none did); frames beyond the tolerance by float32 rounding
    alone, or by key reduction within the bound it was asked for (ChainReport.rounding,
    reduced_missed), are not misses: the report line counts them."""
    lines = []
    kinds = (
        (lambda r: not r.pinned, "the tip misses its target"),
        (lambda r: r.pinned and not r.contacts, "the pin does not hold"),
        (lambda r: r.pinned and bool(r.contacts), "the planted tip does not play where the bake put it"),
    )
    for kind, what in kinds:
        missed = [r for r in reports if r.real_missed and kind(r)]
        if missed:
            parts = [
                f"'{r.name}' {r.real_missed} of {r.frames} (worst {r.worst_error:.3g}, frame {r.worst_frame})"
                for r in missed
            ]
            lines.append(f"{what} by more than the tolerance on frames of " + ", ".join(parts))
    for r in reports:  # contacts of the keys a planted bake did not hold (contact_figures.dropped)
        if r.contacts.get("dropped"):
            lines.append(f"chain '{r.name}': {dropped_note(r.contacts['dropped'])}")
    return "; ".join(lines)


def jump_warning(reports: list[ChainReport]) -> str:
    """The WARNING line when a chain's frames hold a jump (ChainReport.spike, JUMP_RATIO), '' when none do."""
    parts = []
    for r in reports:
        if r.spike:
            times = "a still frame" if math.isinf(r.spike_ratio) else f"{r.spike_ratio:.1f}x its neighbours'"
            parts.append(f"'{r.name}' {r.spike:.1f}° at frame {r.spike_frame} ({times})")
        elif r.contacts.get("pop"):  # a planted leg's pop its input has not (contact_figures.pops)
            c = r.contacts
            parts.append(
                f"'{r.name}' {c['pop']:.1f}° at frame {c['pop_frame']} (its input turns {c['pop_input']:.1f}°)"
            )
    if not parts:
        return ""
    return "a bone jumps: turns far more in one frame than in the frames beside it (a pop) on " + ", ".join(parts)
