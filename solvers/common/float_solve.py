"""One target through the plain-float kernels, or the reason they cannot serve it."""

from __future__ import annotations

import math
from collections.abc import Callable

from ..maths.floats import multiply, rotate
from ..model.chain import Chain, guard_radii, reach_terms
from ..model.result import Solution
from . import float_goals as goals
from .float_loop import Solve

# A method's float kernel, as its registry entry names it (see common.make_kernels.floats):
# solver(tolerance, cap, options) -> Solve, its position-only solve for these settings;
# declines(options, kernel) -> why it cannot serve these checked options, or None.
Solver = Callable[[float, int, dict], Solve]
Declines = Callable[[dict, str], "str | None"]


def reason(chain: Chain, options: dict, declines: Declines | None, kernel: str = "float kernel") -> str | None:
    """Why a method's float kernel (or its block kernels in the methods' chain_blocks, `kernel` naming them)
    cannot solve on this chain with these options (None: it can): the chain's case, shared by
    every method, then the method's own `declines`. Options arrive checked
    (`registry.Method.options_for`), as the registry's interface says."""
    if chain.limits is not None:
        return "joint limits: the numpy solver carries the local rotations"
    return None if declines is None else declines(options, kernel)


class Terms:
    """A chain's float terms (from `Chain.scalar_terms` and its frames), and those of its head.
    Kept on the chain (it never changes), so a chain solved again skips the packing. It holds no
    reference to the chain: chain -> terms -> chain would be a cycle, garbage only the cyclic
    collector frees (whose collections then cost every caller solving chains one by one, Live)."""

    __slots__ = (
        "rows", "lengths", "dirs", "fallbacks", "total", "reach", "inner", "_guard", "frames", "rest", "_own_guard",
        "_cache",
    )  # fmt: skip

    def __init__(self, rows, lengths, dirs, fallbacks, total, reach, inner, guard, frames, rest, chain=None) -> None:
        self.rows, self.lengths, self.dirs, self.fallbacks, self.total = rows, lengths, dirs, fallbacks, total
        self.reach, self.inner, self._guard, self.frames, self.rest = reach, inner, guard, frames, rest
        self._own_guard = chain is not None  # computed on first use, as the chain's fold_guard is
        self._cache = {}  # derived goal terms (start frames per pole angle, the head, the tip's link)

    @property
    def guard(self) -> tuple | None:
        """The fold guard radii (only a fold narrower than 180° reads them): the chain's
        (`Chain.fold_guard`, from the same terms), computed on first use."""
        if self._guard is None and self._own_guard:
            self._guard = guard_radii(self.reach, self.inner, self.total)
        return self._guard

    @classmethod
    def of(cls, chain: Chain, goals: bool = False) -> Terms:
        key = "_goal_terms" if goals else "_float_terms"
        terms = chain.__dict__.get(key)
        if terms is None:
            terms = chain.__dict__[key] = cls._of(chain, goals)
        return terms

    @classmethod
    def _of(cls, chain: Chain, goals: bool) -> Terms:
        rows, lengths, dirs, reach, inner, fallbacks = chain.scalar_terms
        frames = rest = None
        if goals:  # the frames and the root's rest frame (base x reference), for the goals only
            frames, base, reference = chain.goal_terms
            rest = multiply(base, reference)
        return cls(rows, lengths, dirs, fallbacks, chain.total_length, reach, inner, None, frames, rest, chain)

    def pole_start(self, c: float, s: float) -> tuple:
        """(the root bone's up at cos c, sin s; the input pose's look-at rows for the pole or None),
        as `goals.up_axis` and `goals.chain_frame`."""
        key = (c, s)
        if key not in self._cache:
            up = goals.up_axis(self.frames[0], c, s)
            self._cache[key] = up, goals.chain_frame(self.rows[0], self.rows[-1], up)
        return self._cache[key]

    @property
    def link(self) -> tuple:
        """The tip bone's direction in its own frame."""
        if "link" not in self._cache:
            w, x, y, z = self.frames[-1]
            self._cache["link"] = rotate((w, -x, -y, -z), self.dirs[-1])
        return self._cache["link"]

    def head(self) -> Terms:
        """The chain without its tip bone (as `goals._head`)."""
        if "head" in self._cache:
            return self._cache["head"]
        lengths = self.lengths[:-1]
        total = math.fsum(lengths)
        reach, inner, guard = reach_terms(lengths, total)
        head = Terms(
            self.rows[:-1],
            lengths,
            self.dirs[:-1],
            self.fallbacks[:-1],
            total,
            tuple(reach),
            tuple(inner),
            guard,
            self.frames[:-1],
            self.rest,
        )
        self._cache["head"] = head
        return head


def solve(chain: Chain, target: tuple, method: str, tolerance: float, plain: Solve, extra=None) -> Solution:
    """`api.solve(chain, target, method=..., ...)` for a chain and options `reason` accepts:
    `plain` the method's float solve for these settings (`solver(tolerance, cap, options)` of the
    float kernel its registry entry names),
    `extra` the validated goals (solvers.common.goals.Goals, one target) or None."""
    t = target
    if extra is None:
        points, rotations, iterations = plain(Terms.of(chain), t)
    else:
        pole, rotation = extra.one()
        points, rotations, iterations = goals.solve(
            Terms.of(chain, True), t, plain, pole, extra.pole_angle, rotation, extra.rotation_weight
        )
    x, y, z = points[-1]
    error = math.sqrt((x - t[0]) ** 2 + (y - t[1]) ** 2 + (z - t[2]) ** 2)
    return Solution.from_rows(points, rotations, iterations, error, error <= tolerance, method)
