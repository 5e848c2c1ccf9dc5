"""A chain's goals (target, pole, tip orientation, softness; in a group its weight, priority, pin; or an
aim), read from its spec once, in armature space: the chain kernel's `solvers.solve` keywords and the tree's
`solvers.Effector` are both made from them."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from mathutils import Quaternion

from ... import rig, solvers
from ..spec import ChainSpec


@dataclass(frozen=True)
class Goals:
    spec: ChainSpec
    position: tuple[float, float, float] | None  # None: a pin (held where its pose has it)
    pole: np.ndarray | None = None
    orientation: np.ndarray | None = None  # the last bone's wanted frame (w, x, y, z)

    def effector(self, bone: int) -> solvers.Effector:
        """The tree's effector on `bone` (the chain's end bone in the skeleton). A pin holds above
        every target and every priority (solvers.skeleton.level)."""
        spec = self.spec
        if spec.pin:  # solve_skeleton holds the bone's input end point and frame
            return solvers.Effector(bone, weight=spec.weight, priority=spec.priority, pin=True)
        if spec.aims:  # the tip bone's axis turns onto the target, after the reach (solvers.common.aim_goals)
            return solvers.Effector(bone, self.position, aim_axis=spec.aim_axis, aim_spread=float(spec.aim_spread))
        return solvers.Effector(
            bone,
            self.position,
            pole=self.pole,
            pole_angle=float(spec.pole_angle),
            orientation=self.orientation,
            rotation_weight=float(spec.rotation_weight),
            weight=float(spec.weight),
            priority=int(spec.priority),
            softness=float(spec.softness),
        )


def chain_goals(
    obj_eval,
    space,
    spec: ChainSpec,
    depsgraph,
    last: Callable[[], Quaternion],
    target_world=None,
    pole_world=None,
) -> Goals:
    """The goals of `spec`'s chain on `obj_eval` (evaluated armature; `space`: its rig.ObjectSpace).
    `last()`: the chain's last bone's current frame as the solve reads it (for the tip orientation).
    `target_world`, `pole_world`: their world locations when already known (read before, or a bake
    sampling their curves); else read from the depsgraph."""
    if spec.pin:
        return Goals(spec, None)
    if target_world is None:
        target_world = rig.space.target_world_point(rig.evaluated(spec.target, depsgraph), spec.target_bone)
    position = space.to_local_point(target_world)
    if spec.aims:  # a direction goal: no pole, tip orientation or softness (greyed in the panel)
        return Goals(spec, position)
    pole = orientation = None
    if spec.pole is not None:
        if pole_world is None:
            pole_world = rig.target_world_location(rig.evaluated(spec.pole, depsgraph), spec.pole_bone)
        pole = space.to_local(pole_world)
    if spec.use_rotation and spec.rotation_weight > 0.0:
        world = rig.ik_settings.world_matrix(rig.evaluated(spec.target, depsgraph), spec.target_bone)
        orientation = rig.ik_settings.goal_frame(obj_eval, space.inverse, world, spec.tip, spec.use_tail, last())
    return Goals(spec, position, pole, orientation)
