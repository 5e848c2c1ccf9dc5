"""The aim goal's settings, declared once (solvers.common.aim solves them; the tree's `Effector`
carries them): which axis of the tip bone aims, and how the turn spreads over the chain."""

from __future__ import annotations

import numpy as np

from .chain import as_real

# In the tip bone's own frame (Blender's bones have Y along the bone; the head bone of Rigify's
# metarig faces forward along +Z).
AIM_AXES = {
    "+X": (1.0, 0.0, 0.0),
    "-X": (-1.0, 0.0, 0.0),
    "+Y": (0.0, 1.0, 0.0),
    "-Y": (0.0, -1.0, 0.0),
    "+Z": (0.0, 0.0, 1.0),
    "-Z": (0.0, 0.0, -1.0),
}
# No aim: the effector reaches its position (the Blender side's enum value for it).
NO_AIM = "NONE"
# 0 puts the whole turn on the tip bone, 1 spreads it evenly; 0.7 gives every bone of a 3-bone
# neck-and-head chain a visible share (22% / 32% / 46%).
DEFAULT_SPREAD = 0.7


def axis_vector(aim_axis: str) -> np.ndarray:
    """The unit axis (3,) in the tip bone's frame, or ValueError naming the bad value."""
    if not isinstance(aim_axis, str) or aim_axis.upper() not in AIM_AXES:
        raise ValueError(f"aim_axis must be one of {', '.join(AIM_AXES)}, got {aim_axis!r}")
    return np.array(AIM_AXES[aim_axis.upper()])


def check_spread(aim_spread: object) -> float:
    """`aim_spread` as a float in 0..1, or ValueError."""
    spread = as_real(aim_spread, "aim_spread")
    if not 0.0 <= spread <= 1.0:
        raise ValueError(f"aim_spread must be within 0..1, got {aim_spread!r}")
    return spread
