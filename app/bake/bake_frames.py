"""The bake's per-frame kernel (`FrameChains`): chains and groups that need Blender each frame,
solved in order at every evaluated frame (a later chain reads the earlier ones' solution), and
the bake's solved state they share (`Solved`). See app.bake.bake_solve for which chains come here."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ... import rig
from ...rig import keys, modes
from ..spec import ChainSpec, groups
from . import bake_group
from .bake_chain import ChainFrames, check_rigid_at, stretch_weights  # noqa: F401 - bake_solve's names


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


class FrameChains:
    """The per-frame kernel for `specs`, in order (a later chain reads the earlier ones' solution):
    `step(k, ...)` at each evaluated frame, then `result()`."""

    def __init__(self, obj, specs: list[ChainSpec], frames: int) -> None:
        self.obj, self.specs, self.count = obj, specs, frames
        units = groups.units(obj, specs) if specs else []
        # One kernel per unit, in the units' order: a group (or a pinned or aiming chain alone), or a chain alone.
        self.kernels = [
            bake_group.GroupFrames(obj, [specs[i] for i in u.members], frames)
            if u.is_group or specs[u.members[0]].pin or specs[u.members[0]].aims or specs[u.members[0]].move_root
            else ChainFrames(obj, specs[u.members[0]])
            for u in units
        ]
        self.groups = [kernel for kernel in self.kernels if isinstance(kernel, bake_group.GroupFrames)]
        self.state_q: dict = {}  # bone -> local rotation (Quaternion) solved at the previous frame
        self.state_v: dict[str, tuple[float, ...]] = {}  # bone -> its channel values (locks' reference)
        self.first: dict[str, tuple[float, ...]] = {}  # bone -> channel values before the bake
        self.quats: dict[str, np.ndarray] = {}  # bone -> (frames, 4) solved local rotations
        self.locks: dict[str, tuple] = {}  # bone -> the locks its keys keep (modes.locks)
        self.solved = Solved({}, {s.tip: 0.0 for s in specs}, seconds={s.tip: 0.0 for s in specs})
        self.solver_reasons: dict[str, str] = {}  # tip -> the solver's own reason (first frame that had one)
        self.notes: dict[str, str] = {}  # tip -> a group's notes, its solver's reason among them

    def step(self, k: int, frame, obj_eval, depsgraph) -> None:
        if not self.specs:
            return
        space = rig.object_space(obj_eval)
        if k == 0:
            self._first(obj_eval, depsgraph, space)
        for kernel in self.kernels:
            kernel.step(self, k, frame, obj_eval, depsgraph, space)

    def solve_sampled(self, frames: np.ndarray, obj_eval, depsgraph) -> None:
        """Every frame of every group at once, the targets read from their curves (`groups_only`)."""
        space = rig.object_space(obj_eval)
        self._first(obj_eval, depsgraph, space)
        for group in self.groups:
            group.solve_sampled(self, frames, obj_eval, space)

    def groups_only(self, obj) -> bool:
        """Whether every chain here is in a group that needs no frame evaluated (see
        bake_group.GroupFrames.static_reason) once the armature and targets are sampled."""
        if sum(len(g.specs) for g in self.groups) != len(self.specs):
            return False
        for group in self.groups:  # one riding on another's bones needs its solution each frame
            if any(group.above.intersection(other.names) for other in self.groups if other is not group):
                return False
        animated = keys.animated_paths(obj)
        return all(not g.static_reason(obj, animated) for g in self.groups)

    def group_roots(self) -> list[str]:
        """The top bones of the groups (what they hang from must not move for sampling)."""
        return [g.names[i] for g in self.groups for i, p in enumerate(g.layout.parents) if p == -1]

    def _first(self, obj_eval, depsgraph, space) -> None:
        scales = self.solved.scales
        stretching = set()  # the chains of stretching groups: their group's read checks them
        weights = {}  # a chain alone: its stretch weights
        for kernel in self.kernels:
            if isinstance(kernel, ChainFrames):
                weights[kernel.spec.tip] = kernel.stretch
            elif kernel.stretched:
                stretching.update(s.tip for s in kernel.specs)
                scales.update((name, np.empty(self.count)) for name in kernel.stretched)
        for spec in self.specs:
            # Full read once: the rigidity checks and their messages (a stretching chain's: its own).
            if spec.tip in stretching:
                names = rig.chain_bone_names(obj_eval, spec.tip, spec.chain_length, spec.use_tail)
            elif weights.get(spec.tip) is None:
                names = rig.read_chain(obj_eval, spec.tip, spec.chain_length, spec.use_tail, spec.use_limits).names
            else:
                goal = rig.target_world_location(rig.evaluated(spec.target, depsgraph), spec.target_bone)
                first, own = rig.stretch.read_stretched(
                    obj_eval,
                    spec.tip,
                    spec.chain_length,
                    spec.use_tail,
                    spec.use_limits,
                    weights[spec.tip],
                    space.to_local(goal),
                )
                names = first.names
                scales.update((name, np.empty(self.count)) for name in own)
            for name in names:
                pbone = obj_eval.pose.bones[name]
                self.state_v[name] = self.first[name] = modes.current_values(pbone)
                self.state_q[name] = modes.current_quaternion(pbone)
                self.quats[name] = np.empty((self.count, 4))

    def result(self) -> Solved:
        """The solved frames as keys: `modes.series_values`, the sequence kernel's conversion too."""
        for name, quats in self.quats.items():
            mode = self.obj.pose.bones[name].rotation_mode
            self.solved.values[name] = modes.series_values(mode, quats, self.first[name], self.locks[name])
        for group in self.groups:
            self.solved.held.update(group.held)
            if group.moved:
                self.solved.locations[group.rig.root] = group.locations
                self.solved.root_heads[group.rig.root] = group.heads_in
            if group.reason:  # already worded ("solver: ...", notes on what a group does not do)
                self.notes.update((s.tip, group.reason) for s in group.specs)
        return self.solved
