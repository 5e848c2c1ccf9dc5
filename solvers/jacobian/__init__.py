"""The Jacobian (damped least squares, pseudoinverse, transpose), and its declaration `METHOD`.

Modules, one per data layout: `chain_numpy` (the general numpy step; any chain, limits
included), `chain_floats` (one target on plain floats, DLS), `chain_blocks` (many targets as
(n+1, 3, m) blocks, DLS) and `tree` (several effectors on one skeleton: the stacked Jacobian
with priorities, numpy). Its tree kernel is the least-squares one (`least_squares`): it holds
pins after every method's tree solve and predicts a bake's next frame.
"""

from ..common.make_kernels import blocks, float_steps, floats, iterated
from ..model.method import Method, Option, choice, real
from . import chain_blocks, chain_floats, chain_numpy, tree

ATTRACTOR_CHOICES = (
    ("rest", "Rest Pose", "Toward the rest pose (every joint's rotation channels at zero)"),
    ("input", "Input Pose", "Toward the pose the solve starts from: move as little as the goals allow"),
)
WEIGHTING_CHOICES = (
    (
        "STIFFNESS",
        "Stiffness",
        "Each joint weighted by 1 - its stiffness: a radian of the shoulder counts as one of the wrist",
    ),
    (
        "MASS",
        "Mass",
        "Grassia's mass matrix: the joint motion with the least kinetic energy, each bone a capsule of its"
        " length and radius (its B-Bone size), stiffness on top; the light distal joints move more",
    ),
)
VARIANT_CHOICES = (
    ("dls", "DLS", "Damped least squares: stable near singular poses"),
    ("pseudoinverse", "Pseudoinverse", "Moore-Penrose pseudoinverse: fast, can jump near singular poses"),
    ("transpose", "Transpose", "Jacobian transpose: cheap steps, slow convergence"),
)

METHOD = Method(
    name="jacobian",
    label="Jacobian",
    description="Jacobian (damped least squares, pseudoinverse or transpose); smooth",
    options=(
        Option(
            "variant",
            "dls",
            "Variant",
            "How the Jacobian is inverted",
            choice("variant", VARIANT_CHOICES),
            VARIANT_CHOICES,
            stored_as="jacobian_variant",
        ),
        Option(
            "damping",
            0.05,
            "Damping",
            "Jacobian DLS damping, relative to the chain length",
            real("damping", 0.0),
            active=lambda options: options.get("variant", "dls") == "dls",
            minimum=0.0,
            soft_maximum=1.0,
        ),
        Option(
            "max_step",
            0.5,
            "Max Step",
            "Jacobian: largest rotation per joint per iteration",
            real("max_step", 0.0, strict=True),
            minimum=1e-4,
            maximum=3.14159,
            subtype="ANGLE",
        ),
        Option(
            "nullspace_gain",
            0.0,
            "Pose Pull",
            "Jacobian on several effectors: each iteration turns the joints this fraction of the way toward"
            " the attractor pose, only in the nullspace of the goals (they are unaffected to first order);"
            " 0 is off. One chain alone ignores it",
            real("nullspace_gain", 0.0, 1.0),
            minimum=0.0,
            maximum=1.0,
            subtype="FACTOR",
        ),
        Option(
            "attractor",
            "rest",
            "Pull Toward",
            "Jacobian on several effectors: the pose the Pose Pull attracts to",
            choice("attractor", ATTRACTOR_CHOICES),
            ATTRACTOR_CHOICES,
            active=lambda options: options.get("nullspace_gain", 0.0) > 0.0,
        ),
        Option(
            "joint_weighting",
            "STIFFNESS",
            "Joint Weighting",
            "How the joints share the motion: by stiffness alone, or by the bones' mass (least kinetic energy)",
            choice("joint_weighting", WEIGHTING_CHOICES),
            WEIGHTING_CHOICES,
        ),
    ),
    max_iterations=200,
    batch=iterated("jacobian", chain_numpy.make_step),
    one=floats("jacobian", chain_floats.solver, chain_floats.declines),
    many=blocks(
        "jacobian",
        lambda chain, options: chain_blocks.make_step(chain, options["damping"], options["max_step"]),
        chain_numpy.make_step,
        chain_floats.declines,
    ),
    sequence=float_steps("jacobian", chain_floats.solver, chain_floats.declines),
    tree=tree.solve,
    least_squares=True,
)
