"""Poles on a tree: each effector's pole spins its own branch segment, the bones from just
below its sub-base (or the root) down to its bone, about that segment's top head, as Blender's
pole turns a whole chain about its root (solvers.common.goals.pole_spin: the segment's top bone's up
axis toward the pole, the top-to-tip line kept on the target). Only the top bone's local
rotation changes (clamped into its limits), so the segment moves rigidly and nothing outside
it but what hangs from it."""

from __future__ import annotations

import numpy as np

from .. import limits as joint_limits
from .. import quat
from ..model.chain import Chain
from ..skeleton_floats import end_point, forward, rows
from . import goals


def apply_poles(skeleton, local: np.ndarray, effectors, plan) -> np.ndarray:
    """`local` with every pole of `effectors` applied (tops ascending: an upper segment first)."""
    if not plan.segments:
        return local
    local = np.array(local)
    base = skeleton.base_frame
    for k, top in sorted(plan.segments.items(), key=lambda item: item[1]):
        effector = effectors[k]
        frames, heads = forward(skeleton, rows(local))
        tip = end_point(skeleton, frames, heads, effector.bone)
        if np.linalg.norm(np.subtract(tip, heads[top])) <= 0.0:
            continue  # the segment folds onto its top head: no line to spin about
        p = skeleton.parents[top]
        parent = base if p == -1 else np.array(frames[p])
        top_frame = np.array(frames[top])
        segment = Chain([heads[top], tip], top_frame[None], reference=skeleton.reference[top][None], base_frame=parent)
        turn = goals.pole_spin(
            segment,
            np.array([tip], dtype=float),
            top_frame[None],
            effector.position[None],
            effector.pole[None],
            effector.pole_angle,
        )[0]
        rest = quat.multiply(parent, skeleton.reference[top])
        spun = quat.multiply(quat.conjugate(rest), quat.multiply(turn, top_frame))
        if skeleton.limits is not None:
            spun = joint_limits.clamp(skeleton.limits, top, spun)
        local[top] = quat.normalize(spun)
    return local
