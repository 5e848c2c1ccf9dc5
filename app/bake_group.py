"""The bake's per-frame kernel for a group (chains sharing bones, app.groups): at each frame the
group's tree is read from the evaluated pose (its layout once per bake), solved with all its tips
as effectors from that frame's input pose, as Solve and Blender's IK do, and its channel values
kept continuous with the previous frame's."""

from __future__ import annotations

import dataclasses
import time

import numpy as np

from .. import rig, solvers
from ..rig import modes, tree, tree_write
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

    def step(self, state, k: int, obj_eval, depsgraph, space) -> None:
        obj, lead = self.obj, self.lead
        skeleton, local, names = tree.read_tree(obj, obj_eval, self.chains, self.layout)
        if not lead.use_limits and skeleton.limits is not None:
            skeleton = dataclasses.replace(skeleton, limits=None)
        effectors = [
            effector(obj_eval, space, spec, bone, names[bone], depsgraph)
            for spec, bone in zip(self.specs, self.layout.effectors, strict=True)
        ]
        tolerance = group_tolerance(space, lead, skeleton, names, self.chain_names)
        if k and not self.from_input:
            # From the previous frame's solution, as a chain's bake: continuous and fewer iterations.
            local = np.array([state.state_q[n][:] for n in names])
        start = time.perf_counter()
        solution = solvers.solve_skeleton(
            skeleton,
            local,
            effectors,
            method=lead.method,
            tolerance=tolerance,
            max_iterations=lead.max_iterations or None,
            **lead.options,
        )
        seconds = time.perf_counter() - start
        if solution.reason and not self.reason:
            self.reason = solution.reason
        write = tree_write.tree_pose(
            obj, names, local, solution.local, lead.influence, lead.use_locks, previous=state.state_v
        )
        pose = obj.pose.bones
        for name, vals in write.values.items():
            state.state_v[name] = vals
            q = state.state_q[name] = modes.to_quaternion(pose[name].rotation_mode, vals)
            state.quats[name][k] = q[:]
            state.locks[name] = modes.locks(pose[name]) if lead.use_locks else modes.NO_LOCKS
        if k == 0:
            state.solved.locked.update(write.locked)
            state.solved.constrained.update(write.constrained)
        _, _, ends_in = skeleton.forward(local)
        _, _, ends = skeleton.forward(solution.local)
        for spec, goal in zip(self.specs, effectors, strict=True):
            state.solved.seconds[spec.tip] += seconds / len(self.specs)
            if spec.pin:
                held = space.to_world(ends_in[goal.bone])
                self.held[spec.label][k] = held
            else:
                held = space.to_world(goal.position)
            error = float(np.linalg.norm(space.to_world(ends[goal.bone]) - held))
            state.solved.worst[spec.tip] = max(state.solved.worst[spec.tip], error)


def first_frame_bones(obj_eval, specs: list[ChainSpec]) -> list[str]:
    """The group's chain bones, each chain read in full once (the rigidity checks and their messages)."""
    names: dict[str, None] = {}
    for spec in specs:
        names.update(dict.fromkeys(rig.read_chain(obj_eval, spec.tip, spec.chain_length, spec.use_tail).names))
    return list(names)
