"""The method registry: the list of methods, one line each, read by the core, the panel, Live and the CLI.

A method is one folder (solvers/<name>/, its `__init__` declaring `METHOD = Method(...)`,
solvers.model.method) plus one line below. The declaration names its options
(defaults and checks), its default iteration cap and its kernels:

- `batch(chain, targets (m, 3), tolerance, max_iterations, options) -> BatchSolution`: the
  general numpy kernel. It must serve every chain (frames, limits) and every option.
- `one(chain, target (x, y, z) floats, tolerance, max_iterations, options, goals) -> Solution | str`
  (optional): a faster kernel for one target; `goals` is None or the validated
  `solvers.common.goals.Goals` (pole, tip orientation) for that one target. It returns a `str`, the
  reason it cannot serve (for example "joint limits"), instead of a solution; `solve` then runs
  `batch` (inside `solvers.common.goals` when there are goals) and keeps that reason on the result
  (`Solution.reason`). It must agree with `batch` (same iterations, points within 1e-9 of the
  chain length).
- `many(chain, targets (m, 3), tolerance, max_iterations, options) -> BatchSolution | str`
  (optional): a faster kernel for `solve_batch` (and the position solves inside goals), or the
  reason it cannot serve; `batch` then runs and the reason stays on the result
  (`BatchSolution.reason`). It must agree with `batch` as `one` does.
- `sequence(chain, targets (m, 3), tolerances (m,), max_iterations, options, progress,
  keep_points) -> SequenceSolution | str` (optional): the same for `solve_sequence`.
- `tree(skeleton, local (n, 4), effectors, tolerance, max_iterations, options)
  -> SkeletonSolution | str` (optional): several effectors on one skeleton solved together
  (`solvers.skeleton_solve.solve_skeleton`; pins already resolved, at most one effector per bone:
  `skeleton_effectors.merge_shared`). It must rank priority levels, pins first (`skeleton.level`): solve
  them in turn or weigh them (`skeleton.ranked_weights`); `solve_skeleton` then holds any pin
  still off (`common.pins.hold`). A `str` is the reason it cannot solve them (raised as
  ValueError). A method without `tree` still solves several effectors: by the least-squares
  method's tree kernel (`LEAST_SQUARES`), with the reason `NO_TREE_KERNEL` on the result.
  Build the result with `solvers.skeleton.finish`, which measures the errors on the returned
  rotations.
- `tree_many(skeleton, local (n, 4), effectors, positions (m, k, 3), poles (m, k, 3), tolerance,
  max_iterations, options) -> (local (m, n, 4), error (m, k), iterations (m,)) | str` (optional):
  `tree` for m frames at once, each from `local` (with `Method.tree_start_steps`: a start per
  frame, (m, n, 4), `solvers.skeleton_solve.stepped_start`) (`solvers.skeleton_many.solve_skeleton_many`;
  pins resolved, their position rows ignored; one effector per bone; a NaN pole row: no pole). A `str` is the reason it
  declines; the frames are then solved one by one with `tree` and the reason kept on the result.
  It must agree with `tree` frame by frame (same iterations, rotations within 1e-9).

Options arrive complete (defaults filled in) and checked by `Method.options_for`.

`floats`, `blocks` and `float_steps` (solvers.common.make_kernels) make `one`, `many` and
`sequence` from a method's float kernel (its `chain_floats.py`: `solver(tolerance, cap, options)`
and its `declines(options, kernel)` reason) and block step (its `chain_blocks.py`): the entry
names them, nothing dispatches on a method's name. A method without `one` still solves one
target (its `batch` on one row), with the reason `NO_FLOAT_KERNEL` on the result.
"""

from __future__ import annotations

from .common.chain_path import NO_FLOAT_KERNEL
from .common.make_kernels import blocks, float_steps, floats, iterated
from .model.method import Method, Option

# The methods, one line each, in the order the panel and the CLI list them: a new method is its
# folder (solvers/<name>/, declaring METHOD) and one line here.
# isort: off
from .triangulation import METHOD as TRIANGULATION  # noqa: F401 (in METHOD_LIST)
from .fabrik import METHOD as FABRIK  # noqa: F401 (in METHOD_LIST)
from .ccd import METHOD as CCD  # noqa: F401 (in METHOD_LIST)
from .jacobian import METHOD as JACOBIAN  # noqa: F401 (in METHOD_LIST)
# isort: on

METHOD_LIST: tuple[Method, ...] = tuple(value for value in dict(globals()).values() if isinstance(value, Method))
REGISTRY: dict[str, Method] = {m.name: m for m in METHOD_LIST}
# The method whose tree kernel takes least-squares steps: it holds pins and predicts a bake's frames.
(LEAST_SQUARES,) = (m for m in METHOD_LIST if m.least_squares)
NO_TREE_KERNEL = "{name} has no tree kernel: several effectors solved by the {by}"

# Re-exported: a method is declared with these (tests build toy methods from this module).
__all__ = ["METHOD_LIST", "REGISTRY", "LEAST_SQUARES", "NO_FLOAT_KERNEL", "NO_TREE_KERNEL", "get"]
__all__ += ["Method", "Option", "blocks", "float_steps", "floats", "iterated"]


def get(name: object) -> Method:
    """The method called `name`, or ValueError listing the known ones."""
    method = REGISTRY.get(name) if isinstance(name, str) else None
    if method is None:
        raise ValueError(f"unknown method {name!r}; choose one of {', '.join(REGISTRY)}")
    return method
