"""CCD (cyclic coordinate descent from the tip), and its declaration `METHOD`.

Modules, one per data layout: `chain_numpy` (the general numpy step; any chain, limits
included), `chain_floats` (one target on plain floats), `chain_blocks` (many targets as
(n+1, 3, m) blocks) and `tree` (several effectors on one skeleton, plain floats), whose step near
the goals is `tree_near`'s (its sweep written out per layout by `tree_near_written`).
"""

from ..common.make_kernels import blocks, float_steps, floats, iterated
from ..model.method import Method
from . import chain_blocks, chain_floats, chain_numpy, tree

METHOD = Method(
    name="ccd",
    label="CCD",
    description="Cyclic coordinate descent from the tip; cheap steps, tip joints lead",
    options=(),
    max_iterations=100,
    batch=iterated("ccd", chain_numpy.make_step),
    one=floats("ccd", chain_floats.solver),
    many=blocks("ccd", lambda chain, options: chain_blocks.make_step(chain), chain_numpy.make_step),
    sequence=float_steps("ccd", chain_floats.solver),
    tree=tree.solve,
    root_pins_first=True,  # Move Root: its sweeps crawl bringing the moved pins back (solvers.model.method)
    tree_max_iterations=200,  # sweeps with Anderson mixing (tree.py): five effectors need up to ~150
)
