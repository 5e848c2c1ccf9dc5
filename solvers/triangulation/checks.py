"""Triangulation's option checks and the boundary band, shared by its kernels."""

from __future__ import annotations

import math

from ..model.chain import as_real

BAND = 1e-12


def check_fold_angle(fold_angle: float) -> float:
    """The fold angle in radians; any value in [90°, 180°] keeps reachability."""
    fold = as_real(fold_angle, "fold_angle")
    if not 90.0 <= fold <= 180.0:
        raise ValueError(f"fold_angle must be between 90 and 180 degrees, got {fold_angle!r}")
    return math.radians(fold)


def check_smooth_fold(smooth_fold: float, fold_angle: float) -> float:
    """The smooth-fold amount, 0 (the paper's sharp fold) to 1 (see chain_floats.fold_blend)."""
    smooth = as_real(smooth_fold, "smooth_fold")
    if not 0.0 <= smooth <= 1.0:
        raise ValueError(f"smooth_fold must be between 0 and 1, got {smooth_fold!r}")
    if smooth and fold_angle != 180.0:
        raise ValueError("smooth_fold smooths the paper's 180° fold; it needs fold_angle 180")
    return smooth


def fold_params(fold_angle: float) -> tuple:
    """(cos, sin, degrees) of the fold for the vectorised passes."""
    if fold_angle == 180.0:
        return -1.0, 0.0, 180.0
    fold = check_fold_angle(fold_angle)
    return math.cos(fold), math.sin(fold), fold_angle
