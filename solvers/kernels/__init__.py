"""Plain-float kernels for one target: the same steps as the numpy solvers, without numpy.

On chains of a few bones numpy's per-call overhead is almost all of a solve's
time (a one-target (1, n+1, 3) array costs microseconds per ufunc). These
kernels do the very same arithmetic on Python floats, bone by bone, and are
tested against the numpy code: same iterations, same points to rounding.

Points and vectors are (x, y, z) tuples, quaternions (w, x, y, z) tuples.

Each method's module gives its float kernel as its registry entry names it (solvers.registry:
`floats`, `float_steps`): `solver(tolerance, cap, options)` and, where some options have no
float kernel, `declines(options, kernel)`; `one` and `sequence` run what the entry names.
"""

from . import one, sequence  # noqa: F401
