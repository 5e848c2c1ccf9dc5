"""jacobian.tree_plain's iteration as straight-line Python on plain floats, written out once per
tree layout (its bones' parents and the effectors' branches) and compiled: on a character's small
trees (two hands: 8 bones, 6 rows) even tree_plain's two dozen numpy calls an iteration cost more
than the arithmetic they do, and CPython's local variables are its fastest storage.

The same step, damping, trust region and stop as jacobian.tree_plain.iterate: the same poses to
rounding, the same iterations (tests/solvers/test_tree_unrolled.py). What differs is how the sums
are laid out (tree_unrolled_writer.Writer writes them):

- the unknowns are the bones' world quaternions C_i = C_parent rest_i L_i (unnormalised between
  steps; the locals are taken back at the end): forward kinematics makes each one's matrix once,
  for its children's heads and its effectors' ends, and keeps no frame;
- J J^T in world axes in closed form, never forming J: joint i's three columns give effectors
  e, f the block sum_i (r_ei . r_fi) I - r_fi r_ei^T, r_ei = end_e - head_i, over the bones on
  both branches; |J^T e|^2 = e^T (J J^T) e;
- (J J^T + lam2 I) x = e by a Cholesky factorisation written out entry by entry;
- the step J^T x joint by joint in world axes, w_i = sum_e r_ei x x_e over the effectors whose
  branch holds the joint; tree_plain's turn C_i (1, d_i/2) of the local quaternion (d_i = F_i^T
  w_i, in the bone's own axes) is, on the world quaternions, G_i C_i with G_i = G_parent (1, w_i/2):
  no frame is needed to turn them;
- a trial's pose lands in the current pose's names (a kept step copies only its unknowns; a
  refused one has the current pose computed again);
- the loop's most used variables take CPython's first 256 local slots (`_hot_first`).

The loop itself (`_TEMPLATE`) is jacobian.tree_plain.iterate's, line for line.
"""

from __future__ import annotations

import collections
import math
import re

import numpy as np

from . import tree_settings
from .tree_unrolled_writer import Writer

# The largest layout written out (moved bones, error rows): on the metarig (bench/bench_tree.py)
# the written-out iteration is faster than tree_plain's numpy calls on all three trees (8 bones
# and 6 rows to 17 and 15); the code grows with rows^3 / 6 (the factorisation), compiled once.
MAX_BONES, MAX_ROWS = 12, 9

_TEMPLATE = """
def kernel(Q, O, T, bound, max_iterations, lam2, max_step):
    if False:  # no code: names the loop's variables first (`_hot_first`)
        ({hot},)
{unpack}
{unknowns_in}
{forward_current}
    cost = {cost}
    done = {largest} <= bound
    lam2_base, lam2_floor = lam2, LM_FLOOR * lam2
    radius, stale, iterations, kept, fresh = max_step, 0, 0, CALM, True
    error_damping = ERROR_DAMPING
    while iterations < max_iterations and not done:
        if fresh:  # J J^T at the current pose (a refused step keeps it)
{normal}
            fresh = False
        damping = max(lam2, error_damping * removable, RIDGE * trace / {rows}, 1e-100)
{solve}
{step}
        if 4.0 * total > radius * radius:  # some joint may turn more than the radius
            biggest = 2.0 * sqrt({largest_turn})
            if biggest > radius:
                scale = radius / biggest
{shorten}
{trial}
        iterations += 1
        # The trial's pose in the current pose's names (a kept step, the common case, copies only
        # its unknowns); a refused one has the current pose's computed again.
{forward_trial}
        trial_done = {largest} <= bound
        trial_cost = 0.0 if trial_done else {cost}
        verdict = (1 if trial_cost < cost * (1.0 - PROGRESS) else 0) if trial_cost < cost else -1
        if verdict >= 0:
{accept}
            cost, done, fresh = trial_cost, trial_done, True
            kept += 1
            if kept > CALM:
                radius = min(2.0 * radius, max_step)
                lam2_floor = LM_FLOOR * lam2_base
                lam2 = max(LM_DOWN * lam2, lam2_floor)
        else:
{forward_again}
            radius *= 0.5
            lam2_floor = LM_FLOOR_REFUSED * lam2_base
            lam2 = LM_UP * max(lam2, lam2_floor)
            kept = 0
        stale = 0 if verdict > 0 else stale + 1
        if verdict <= 0:
            error_damping = 0.0
        if stale >= PATIENCE:
            break
{unknowns_out}
    return ({locals},), iterations, [{squares}]
"""


def applies(tree) -> bool:
    """Whether `tree` (a jacobian.tree_structure.Structure) is small enough to be written out."""
    return tree.m <= MAX_BONES and 3 * len(tree.bones) <= MAX_ROWS


def prepare(tree) -> None:
    """The written-out kernel of `tree`'s layout (a jacobian.tree_structure.Structure; a `Kernel`, compiled on
    its first solve: a structure that never takes the plain case, with limits or frozen bones, never
    compiles one), or None."""
    tree.unrolled = None
    if not applies(tree):
        return
    parents = [-1 if r else int(p) for r, p in zip(tree.root, tree.parent, strict=True)]
    mask = tree.mask > 0.0
    owners = [[e for e in range(len(tree.bones)) if mask[e, i]] for i in range(tree.m)]
    tree.unrolled = Kernel(parents, [int(b) for b in tree.bones], owners)


class Kernel:
    """One layout's written-out iteration: called as the kernel itself, compiled on the first call
    (about 20 ms for two hands; the structure, and so this, is kept for later solves)."""

    def __init__(self, parents: list[int], bones: list[int], owners: list[list[int]]) -> None:
        self.layout = (parents, bones, owners)
        self.kernel = None

    def __call__(self, *args):
        return self.compiled()(*args)

    def compiled(self):
        """The kernel function (compiled now if it was not yet)."""
        if self.kernel is None:
            self.kernel = _compile(_source(*self.layout))
        return self.kernel


def measure(tree, offsets: np.ndarray, ends: np.ndarray) -> None:
    """The measures the kernel takes: each head's offset in its parent's frame (a root's in the
    skeleton's space), each effector's end as a link in its bone's frame, flat; the rests as rows."""
    if tree.unrolled is None:
        return
    tree.unrolled_measures = tuple(np.concatenate((tree.rest_turns.ravel(), offsets.ravel(), ends.ravel())).tolist())


def iterate(tree, start: np.ndarray, tolerance: float, max_iterations: int, lam2: float, max_step: float):
    """jacobian.tree_plain.iterate, written out: (the moved bones' locals (m, 4), the iterations,
    the effectors' squared distances at them)."""
    return run(tree, start, tree.targets.ravel().tolist(), tolerance, max_iterations, lam2, max_step)


def run(
    structure, start: np.ndarray, targets: list[float], tolerance: float, max_iterations: int, lam2: float,
    max_step: float,
):  # fmt: skip
    """`iterate` on a structure (jacobian.tree_structure.Structure) and the targets as floats, flat
    (effector by effector): what jacobian.tree runs straight from the effectors."""
    kernel = structure.unrolled.kernel or structure.unrolled.compiled()
    local, iterations, squares = kernel(
        start.ravel().tolist(), structure.unrolled_measures, targets, tolerance * tolerance, max_iterations, lam2,
        max_step,
    )  # fmt: skip
    return np.array(local).reshape(structure.m, 4), iterations, squares


def _compile(source: str):
    names = {name: getattr(tree_settings, name) for name in dir(tree_settings) if name.isupper()}
    scope = {"sqrt": math.sqrt, **names}
    exec(compile(source, "<jacobian.tree_unrolled>", "exec"), scope)  # noqa: S102 - our own source, from integers
    return scope["kernel"]


def _source(parents: list[int], bones: list[int], owners: list[list[int]]) -> str:
    """The kernel's source for a layout: `parents` of the moved bones (-1: a root; parents first),
    each effector's bone, each bone's effectors (those whose branch holds it)."""
    w = Writer(parents, bones, owners)
    count = len(bones)
    squares = ", ".join(f"S{e}" for e in range(count))
    one = count == 1  # (max() takes two values or more)
    blocks = {
        "unpack": w.unpack(),
        "forward_current": w.forward("C", 1),
        "cost": " + ".join(f"S{e}" for e in range(count)),
        "squares": squares,
        "largest": squares if one else f"max({squares})",
        "normal": w.normal(3),
        "rows": str(3 * count),
        "solve": w.solve(2),
        "step": w.step(2),
        "trial": w.trial(2),
        "largest_turn": w.largest_turn(),
        "shorten": w.shorten(4),
        "forward_trial": w.forward("N", 2),
        "accept": w.accept(3),
        "forward_again": w.forward("C", 3),
        "unknowns_in": w.unknowns_in(1),
        "unknowns_out": w.unknowns_out(1),
        "locals": ", ".join(f"N{i}_{k}" for i in range(len(parents)) for k in range(4)),
    }
    return _TEMPLATE.format(**blocks, hot=_hot_first(_TEMPLATE.format(**blocks, hot="")))


# CPython numbers a function's local variables in the order the compiler meets them and reads
# the first 256 in one instruction; beyond, each access takes an EXTENDED_ARG prefix and misses
# the paired-load fast path (two hands' kernel has about 500 locals: 18% of its instructions were
# prefixes). The loop's most used variables are named first, in an `if False:` block: the compiler
# numbers its names and emits no code for it.
_SLOTS = 256 - 7  # (the kernel's 7 arguments come first)
_NAME = re.compile(r"\b[A-Za-z_][A-Za-z0-9_]*\b")


def _hot_first(source: str) -> str:
    """The locals of `source`'s loop, most used first (up to the slots read without a prefix)."""
    loop = source[source.index("    while ") : source.index("    return ")]
    assigned = set(_NAME.findall(" ".join(re.findall(r"^\s*([A-Za-z_][A-Za-z0-9_, ]*?)\s*[-+*]?=[^=]", source, re.M))))
    uses = collections.Counter(name for name in _NAME.findall(loop) if name in assigned)
    return ", ".join(name for name, _ in uses.most_common(_SLOTS))
