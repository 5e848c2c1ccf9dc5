"""FABRIK (Aristidou & Lasenby 2011): forward and backward reaching, and its declaration `METHOD`.

Modules, one per data layout: `chain_numpy` (the general numpy step, line and sphere placement;
any chain, limits included), `chain_floats` (one target on plain floats), `chain_blocks` (many
targets as (n+1, 3, m) blocks), `tree` (several effectors on one skeleton, plain floats) and
`tree_lanes` (that tree at many frames at once).
"""

from ..common.make_kernels import blocks, float_steps, floats, iterated
from ..model.method import Method, Option, choice
from . import chain_blocks, chain_floats, chain_numpy, tree, tree_lanes

PLACEMENT_CHOICES = (
    ("line", "Line", "The paper's passes: each joint on the line toward its new neighbour"),
    (
        "sphere",
        "Sphere",
        "The article's CGA form: each joint where the spheres about both neighbours meet (few iterations;"
        " the joints near the tip move first). Chains with IK limits use Line",
    ),
)

METHOD = Method(
    name="fabrik",
    label="FABRIK",
    description="Forward and backward reaching; fast, natural poses in few iterations",
    options=(
        Option(
            "placement",
            "line",
            "Placement",
            "Where each pass puts a joint",
            choice("placement", PLACEMENT_CHOICES),
            PLACEMENT_CHOICES,
            stored_as="fabrik_placement",
        ),
    ),
    max_iterations=100,
    batch=iterated("fabrik", chain_numpy.make_step),
    one=floats("fabrik", chain_floats.solver, chain_floats.declines),
    many=blocks(
        "fabrik", lambda chain, options: chain_blocks.make_step(chain), chain_numpy.make_step, chain_floats.declines
    ),
    sequence=float_steps("fabrik", chain_floats.solver, chain_floats.declines),
    tree=tree.solve,
    tree_many=tree_lanes.solve_many,
    tree_start_steps=3,
)
