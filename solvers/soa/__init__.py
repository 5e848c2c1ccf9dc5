"""Structure-of-arrays batch kernels: `solve_batch` across many targets, numpy only.

The general batch code (`iterate.run` with each method's step) stores a batch as (m, n+1, 3)
and pays for small-axis reductions, fancy-index masks and temporaries every iteration. These
kernels keep every joint as a (3, w) block (x, y and z rows of w targets), so each term of the
plain-float kernels (solvers.kernels) is one elementwise ufunc over all targets, written into
preallocated arrays. They do the float kernels' arithmetic term by term (same order, same
rounding) and are tested against the general numpy code: same iterations, points within 1e-9
of the chain length. Converged targets are frozen by copying them out and compacting the
working set now and then, not by masks every iteration.
"""

from . import many  # noqa: F401
