"""Triangulation IK (Mueller-Cajar & Mukundan 2007), one pass root to tip.

Modules: `scalar` (the pass on plain floats), `batch` (vectorised over targets),
`limited` (with joint limits, §3.1.3), `sequence` (the plain-float pass carried
through a sequence of targets), `checks` (options, boundary band) and `kernels`
(the entry points the method registry calls).
"""

from .checks import BAND, check_fold_angle, check_smooth_fold

__all__ = ["BAND", "check_fold_angle", "check_smooth_fold"]
