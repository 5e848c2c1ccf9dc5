"""The bake's units and the solved state they share (`FrameUnits`, `Solved`): every unit
(app.spec.groups: chains sharing bones, or a chain alone) is an `app.bake.bake_unit.UnitFrames`,
solved frame by frame at every evaluated frame in order (a later unit reads the earlier ones'
solution) or carried through all frames at once. See app.bake.bake_solve for which way each goes."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ... import rig
from ...rig import key_continuity, modes, sequence
from ..spec import ChainSpec, groups
from .bake_unit import UnitFrames


@dataclass
class Solved:
    values: dict[str, np.ndarray]  # bone -> (frames, channels) in its rotation mode
    worst: dict[str, float]  # chain tip -> worst world tip error as solved
    locked: set[str] = field(default_factory=set)
    constrained: set[str] = field(default_factory=set)
    seconds: dict[str, float] = field(default_factory=dict)  # chain tip -> solver time
    scales: dict[str, np.ndarray] = field(default_factory=dict)  # IK stretch: bone -> Y scale per frame
    reasons: dict[str, str] = field(default_factory=dict)  # chain label -> why a faster kernel did not serve
    held: dict[str, np.ndarray] = field(default_factory=dict)  # pinned chain label -> (frames, 3) held tip, world
    # Move Root: the moved root bone -> (frames, 3) its location channel (only where it moved on some frame).
    locations: dict[str, np.ndarray] = field(default_factory=dict)
    root_heads: dict[str, np.ndarray] = field(default_factory=dict)  # ... its head per frame before the bake, world
    posed: bool = False  # a unit solved frame by frame wrote the pose: the frame must be set again after


class FrameUnits:
    """Every unit of `specs` (in solving order) and their shared state: `step(k, ...)` at each
    evaluated frame for the units solved frame by frame, the carried ones through their own
    calls (bake_solve), then `result()`."""

    def __init__(
        self, obj, specs: list[ChainSpec], frames: int, units: list | None = None, chains: list | None = None
    ) -> None:
        """`units` (groups.units(obj, specs)) and `chains` (each spec's bones, root first): when
        the caller has them already (app.bake.bake_solve.ChainsRead)."""
        self.obj, self.specs, self.count = obj, specs, frames
        units = groups.units(obj, specs) if units is None else units
        self.units = [UnitFrames(obj, specs, u.members, frames, chains) for u in units]
        self.per_frame: list[UnitFrames] = []  # the units solved at every evaluated frame (bake_solve)
        self.state_q: dict = {}  # bone -> local rotation (Quaternion) solved at the previous frame
        self.state_v: dict[str, tuple[float, ...]] = {}  # bone -> its channel values (locks' reference)
        self.first: dict[str, tuple[float, ...]] = {}  # bone -> channel values before the bake
        self.quats: dict[str, np.ndarray] = {}  # bone -> (frames, 4) solved local rotations
        self.locks: dict[str, tuple] = {}  # bone -> the locks its keys keep (modes.locks)
        self.solved = Solved({}, {s.tip: 0.0 for s in specs}, seconds={s.tip: 0.0 for s in specs})

    def first_frame(self, obj_eval) -> None:
        """Every unit's bones as they are at the first frame (evaluated): the values the keys
        continue from; a stretching unit's Y scale rows."""
        scales = self.solved.scales
        for unit in self.units:
            scales.update((name, np.empty(self.count)) for name in unit.stretched)
            for name in unit.names:
                pbone = obj_eval.pose.bones[name]
                self.state_v[name] = self.first[name] = modes.current_values(pbone)
                self.state_q[name] = modes.current_quaternion(pbone)
                self.quats[name] = np.empty((self.count, 4))

    def step(self, k: int, frame, obj_eval, depsgraph) -> None:
        """Frame `k`, evaluated: every unit solved frame by frame, in order."""
        if not self.per_frame:
            return
        space = rig.object_space(obj_eval)
        for unit in self.per_frame:
            unit.step(self, k, frame, obj_eval, depsgraph, space)

    def result(self, last: float | None = None) -> Solved:
        """The solved frames as keys: one conversion for every unit (`rig.sequence.channel_values`),
        continuous from the first frame's pose and meeting the bone's kept key after (action) frame
        `last`, the range's last, where there is one (rig.key_continuity: an axis-angle range would
        otherwise play through a near-zero axis into it)."""
        kept = {} if last is None else key_continuity.kept_after(self.obj, list(self.quats), last)
        for name, quats in self.quats.items():
            mode = self.obj.pose.bones[name].rotation_mode
            values = sequence.channel_values(mode, quats, self.first[name], self.locks[name])
            after = kept.get(name)
            if after is not None:  # (the pose's own values on the first frame stand for the key before)
                before = np.array(self.first[name])
                values = key_continuity.meet(mode, values, quats, before, after, self.locks[name])
            if not np.all(np.isfinite(values)):
                raise ValueError(f"the solved rotation of bone '{name}' is not finite; nothing was keyed")
            self.solved.values[name] = values
        for unit in self.units:
            self.solved.held.update(unit.held)
            if unit.moved:  # Move Root moved the unit's root on some frame
                self.solved.locations[unit.rig.root] = unit.locations
                self.solved.root_heads[unit.rig.root] = unit.heads_in
        return self.solved
