"""The bake's per-frame kernel for a group (chains sharing bones, app.groups): at each frame the
group's tree is read from the evaluated pose (its layout once per bake), solved with all its tips
as effectors from that frame's input pose, as Solve and Blender's IK do, and its channel values
kept continuous with the previous frame's."""

from __future__ import annotations

import dataclasses
import time

import numpy as np

from .. import rig, solvers
from ..rig import keys, modes, sampling, sequence, tree, tree_write
from .group_solve import effector, group_tolerance
from .groups import chain_names, group_label
from .spec import ChainSpec


class GroupFrames:
    """One group's frames: `step(k, ...)` at each evaluated frame writes into the bake's shared
    state (`state`: app.bake_solve._FrameChains), so later chains read this group's solution."""

    def __init__(self, obj, specs: list[ChainSpec], frames: int) -> None:
        self.obj, self.specs = obj, specs
        self.lead = specs[0]
        self.chains = [(s.tip, s.chain_length, s.use_tail) for s in specs]
        self.layout = tree.tree_layout(obj, self.chains)
        self.label = group_label(specs)
        self.chain_names = [chain_names(obj, s) for s in specs]
        # With a pole every frame starts from its input pose, as Blender's IK and a chain's bake do.
        self.from_input = any(s.pole is not None for s in specs)
        # A pinned tip's held point per frame (world), for the playback measure.
        self.held = {s.label: np.empty((frames, 3)) for s in specs if s.pin}
        self.reason = ""

    @property
    def names(self) -> tuple[str, ...]:
        return self.layout.names

    def static_reason(self, obj, animated: set[str]) -> str:
        """Why this group needs each frame evaluated ('' when, the armature and targets being
        sampled without frame_set (rig.sampling), its first frame's reading serves every frame)."""
        why = sequence.unsuitable(obj, self.names, animated)
        if why:
            return why
        if self.from_input or self.lead.influence < 1.0:
            # Those start (or blend) from each frame's input pose: it must not move.
            moving = [n for n in self.names if any(p.startswith(keys.data_path(n, "rotation")) for p in animated)]
            if moving:
                return f"bone '{moving[0]}' has animated rotation and the group a pole or influence below 1"
        if any(s.use_rotation and s.rotation_weight > 0.0 for s in self.specs):
            return "a tip goal orientation (the target's rotation)"
        return ""

    def sample(self, frames: np.ndarray) -> None:
        """Read every frame's target and pole locations from their curves (see static_reason)."""
        self.sampled = [
            (
                None if s.pin else sampling.target_positions(s.target, frames),
                None if s.pole is None else sampling.target_positions(s.pole, frames),
            )
            for s in self.specs
        ]

    sampled: list | None = None
    _read: tuple | None = None

    def step(self, state, k: int, obj_eval, depsgraph, space) -> None:
        obj, lead = self.obj, self.lead
        if self.sampled is None or self._read is None:
            skeleton, local, names = tree.read_tree(obj, obj_eval, self.chains, self.layout)
            if not lead.use_limits and skeleton.limits is not None:
                skeleton = dataclasses.replace(skeleton, limits=None)
            tolerance = group_tolerance(space, lead, skeleton, names, self.chain_names)
            self._read = (skeleton, local, names, tolerance)
        else:  # nothing but the targets moves: the first frame's reading holds
            skeleton, local, names, tolerance = self._read
        if self.sampled is None:
            effectors = [
                effector(obj_eval, space, spec, bone, names[bone], depsgraph)
                for spec, bone in zip(self.specs, self.layout.effectors, strict=True)
            ]
        else:
            effectors = [
                effector(obj_eval, space, spec, bone, names[bone], None, _at(target, k), _at(pole, k))
                for spec, bone, (target, pole) in zip(self.specs, self.layout.effectors, self.sampled, strict=True)
            ]
        # Pins hold where this frame's input pose has them, whatever the solve starts from.
        effectors = solvers.skeleton.resolve_pins(skeleton, local, effectors)
        start_pose = local
        if k and not self.from_input:
            # From the previous frame's solution, as a chain's bake: continuous and fewer iterations.
            start_pose = self._previous
        start = time.perf_counter()
        solution = solvers.solve_skeleton(
            skeleton,
            start_pose,
            effectors,
            method=lead.method,
            tolerance=tolerance,
            max_iterations=lead.max_iterations or None,
            **lead.options,
        )
        seconds = time.perf_counter() - start
        self._previous = solution.local
        if solution.reason and not self.reason:
            self.reason = solution.reason
        if k and self.sampled is not None and lead.influence == 1.0:
            # No locks here (static_reason) and nothing blends: the solved rotations are the keys'
            # (modes.series_values converts them once at the end, with sign continuity).
            for i, name in enumerate(names):
                state.quats[name][k] = solution.local[i]
        else:
            self._write(state, k, names, local, solution.local)
        self._errors(state, k, space, skeleton, solution, effectors, seconds)

    _previous: np.ndarray | None = None

    def _write(self, state, k: int, names, local, solved) -> None:
        """Channel values as Solve writes them (influence, locks, continuity with the last frame)."""
        lead, pose = self.lead, self.obj.pose.bones
        write = tree_write.tree_pose(self.obj, names, local, solved, lead.influence, lead.use_locks, state.state_v)
        for name, vals in write.values.items():
            state.state_v[name] = vals
            q = state.state_q[name] = modes.to_quaternion(pose[name].rotation_mode, vals)
            state.quats[name][k] = q[:]
            state.locks[name] = modes.locks(pose[name]) if lead.use_locks else modes.NO_LOCKS
        if k == 0:
            state.solved.locked.update(write.locked)
            state.solved.constrained.update(write.constrained)
        if lead.use_locks and write.locked:  # the next frame starts from what the keys hold
            self._previous = np.array([state.state_q[n][:] for n in names])

    def _errors(self, state, k: int, space, skeleton, solution, effectors, seconds: float) -> None:
        """Each tip's world error as solved (the report's playback pass measures the keys)."""
        scale = space.uniform_scale()
        if scale is not None:  # the solver's own errors (armature space), scaled
            errors = solution.error * scale
        else:
            ends = skeleton.forward(solution.local)[2]
            errors = [np.linalg.norm(space.to_world(ends[e.bone]) - space.to_world(e.position)) for e in effectors]
        solved = state.solved
        for spec, goal, error in zip(self.specs, effectors, errors, strict=True):
            solved.seconds[spec.tip] += seconds / len(self.specs)
            if spec.pin:
                self.held[spec.label][k] = space.to_world(goal.position)
            solved.worst[spec.tip] = max(solved.worst[spec.tip], float(error))


def _at(rows, k: int):
    return None if rows is None else rows[k]


def first_frame_bones(obj_eval, specs: list[ChainSpec]) -> list[str]:
    """The group's chain bones, each chain read in full once (the rigidity checks and their messages)."""
    names: dict[str, None] = {}
    for spec in specs:
        names.update(dict.fromkeys(rig.read_chain(obj_eval, spec.tip, spec.chain_length, spec.use_tail).names))
    return list(names)
