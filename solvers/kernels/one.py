"""One target through the plain-float kernels, or the reason they cannot serve it."""

from __future__ import annotations

import math

import numpy as np

from .. import fabrik as numpy_fabrik
from .. import jacobian as numpy_jacobian
from ..chain import Chain
from ..result import Solution
from . import ccd, fabrik, jacobian
from .loop import run, swing_rotations


def reason(chain: Chain, method: str, options: dict) -> str | None:
    """Why the float kernel cannot solve on this chain with these options (None: it can).
    Options are validated first: bad ones raise ValueError as the numpy solvers do."""
    if method == "fabrik":
        numpy_fabrik.check_placement(options["placement"])
    elif method == "jacobian":
        numpy_jacobian.check_options(options["variant"], options["damping"], options["max_step"])
    if chain.limits is not None:
        return "joint limits: the numpy solver carries the local rotations"
    if method == "fabrik" and options["placement"] != "line":
        return "FABRIK sphere placement has no float kernel"
    if method == "jacobian":
        if options["variant"] == "pseudoinverse":
            return "the Jacobian pseudoinverse has no float kernel"
        if options["variant"] == "dls" and not options["damping"] > 0.0:
            return "undamped least squares has no float kernel"
    if method not in ("fabrik", "ccd", "jacobian"):
        return f"{method} has no float kernel here"
    return None


def solve(chain: Chain, target: np.ndarray, method: str, tolerance: float, cap: int, options: dict) -> Solution:
    """`api.solve(chain, target, method=..., ...)` for a chain and options `reason` accepts."""
    rows, lengths, dirs, _, _, fallbacks = chain._scalar
    t = tuple(target.tolist())
    if method == "fabrik":
        step = fabrik.make_step(rows[0], lengths, dirs, t)
    elif method == "ccd":
        step = ccd.make_step(lengths, fallbacks, t)
    else:
        lam2 = (options["damping"] * chain.total_length) ** 2
        step = jacobian.make_step(lengths, t, options["variant"], lam2, options["max_step"])
    points, iterations = run(rows, lengths, dirs, chain.total_length, t, tolerance, cap, step)
    rotations = swing_rotations(points, dirs, fallbacks)
    x, y, z = points[-1]
    error = math.sqrt((x - t[0]) ** 2 + (y - t[1]) ** 2 + (z - t[2]) ** 2)
    return Solution(np.array(points), np.array(rotations), iterations, error, error <= tolerance, method)
