"""The method registry: every solver method declared once, read by the core, the panel, Live and the CLI.

A method is one module plus one `Method` entry in `METHOD_LIST` below. The entry names its
options (defaults and checks), its default iteration cap and its kernels:

- `batch(chain, targets (m, 3), tolerance, max_iterations, options) -> BatchSolution`: the
  general numpy kernel. It must serve every chain (frames, limits) and every option.
- `one(chain, target (x, y, z) floats, tolerance, max_iterations, options, goals) -> Solution | str`
  (optional): a faster kernel for one target; `goals` is None or the validated
  `solvers.goals.Goals` (pole, tip orientation) for that one target. It returns a `str`, the
  reason it cannot serve (for example "joint limits"), instead of a solution; `solve` then runs
  `batch` (inside `solvers.goals` when there are goals) and keeps that reason on the result
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
  (`solvers.skeleton.solve_skeleton`; pins already resolved, at most one effector per bone:
  `skeleton.merge_shared`). It must rank priority levels, pins first (`skeleton.level`): solve
  them in turn or weigh them (`skeleton.ranked_weights`); `solve_skeleton` then holds any pin
  still off (`tree.pins.hold`). A `str` is the reason it cannot solve them (raised as
  ValueError: there is no other tree path). Build the result with `solvers.skeleton.finish`,
  which measures the errors on the returned rotations.
- `tree_many(skeleton, local (n, 4), effectors, positions (m, k, 3), poles (m, k, 3), tolerance,
  max_iterations, options) -> (local (m, n, 4), error (m, k), iterations (m,)) | str` (optional):
  `tree` for m frames at once, each from `local` (`solvers.skeleton_many.solve_skeleton_many`;
  pins resolved, their position rows ignored; one effector per bone; a NaN pole row: no pole). A `str` is the reason it
  declines; the frames are then solved one by one with `tree` and the reason kept on the result.
  It must agree with `tree` frame by frame (same iterations, rotations within 1e-9).

Options arrive complete (defaults filled in) and checked by `Method.options_for`.

`floats`, `blocks` and `float_steps` below make `one`, `many` and `sequence` from a method's
float kernel (solvers.kernels: `solver(tolerance, cap, options)` and its `declines(options,
kernel)` reason) and block step (solvers.soa): the entry names them, nothing dispatches on a
method's name. A method without `one` still solves one target (its `batch` on one row), with
the reason `NO_FLOAT_KERNEL` on the result.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from . import ccd, constrained, fabrik, iterate, jacobian
from .chain import Chain, as_real
from .kernels import ccd as ccd_floats
from .kernels import fabrik as fabrik_floats
from .kernels import jacobian as jacobian_floats
from .kernels import one as float_one
from .kernels import sequence as float_sequence
from .result import BatchSolution, SequenceSolution, batch_result
from .soa import ccd as soa_ccd
from .soa import fabrik as soa_fabrik
from .soa import jacobian as soa_jacobian
from .soa import many as block_many
from .tree import ccd as tree_ccd
from .tree import fabrik as tree_fabrik
from .tree import fabrik_many as tree_fabrik_many
from .tree import jacobian as tree_jacobian
from .triangulation import check_fold_angle, check_smooth_fold, kernels
from .triangulation import tree as triangulation_tree

NO_FLOAT_KERNEL = "{name} has no float kernel"  # Solution.reason of a method without `one`
_CHECKED: dict = {}  # (id of the Method, given options with their types) -> (Method, checked complete options)


@dataclass(frozen=True)
class Option:
    """One method option. `check(value) -> value` raises ValueError naming the problem.
    `choices` ((identifier, label, description), ...) for enumerations; `active(options)`
    says whether the option has an effect with the other options as given (the panel
    greys it out, and `properties.method_options` in the Blender layer passes its default
    instead; the core itself refuses a contradictory combination, see `Method.check`).

    The rest says how the panel shows it: the Blender layer builds the chain item's property
    from this declaration alone (properties.py; its type follows the default's: bool, int,
    float, or an enumeration with `choices`), with `label` as its name and `description` as
    its tooltip. `panel_default` is the panel's default where it differs from the core's
    `default`, and then `why` must say why (it defaults to `default`). Saved files keep a value
    under `property_name`, and an enumeration's as the index of its choice: add choices at the
    end, rename neither."""

    name: str
    default: object
    label: str
    description: str
    check: Callable[[object], object]
    choices: tuple = ()
    active: Callable[[dict], bool] = field(default=lambda options: True)
    minimum: float | None = None  # the panel's limits (None: Blender's); within what `check` accepts
    maximum: float | None = None
    soft_maximum: float | None = None  # where dragging stops (typing may go on to `maximum`)
    subtype: str = ""  # Blender's property subtype: "FACTOR" (a slider), "ANGLE" (radians shown in degrees)
    unit: str = ""  # Blender's property unit ("LENGTH": scene units)
    stored_as: str = ""  # the chain item's property, where not `name` (named before the registry: files keep it)
    panel_default: object = None
    why: str = ""

    def __post_init__(self) -> None:
        if self.panel_default is None:
            object.__setattr__(self, "panel_default", self.default)
        elif self.panel_default != self.default and not self.why:
            raise ValueError(f"option {self.name}: the panel's default differs from the core's; say why")

    @property
    def property_name(self) -> str:
        """The Blender chain item's property holding this option."""
        return self.stored_as or self.name


@dataclass(frozen=True)
class Method:
    name: str
    label: str
    description: str
    options: tuple[Option, ...]
    max_iterations: int  # default iteration cap (1: one pass, no iterations to cap)
    batch: Callable
    one: Callable | None = None
    many: Callable | None = None
    sequence: Callable | None = None
    tree: Callable | None = None
    tree_many: Callable | None = None
    tree_max_iterations: int = 0  # default cap of `tree` when it differs from max_iterations (0: the same)
    check: Callable[[dict], None] = field(default=lambda options: None)  # checks across options

    @property
    def iterative(self) -> bool:
        return self.max_iterations > 1

    def __post_init__(self) -> None:
        object.__setattr__(self, "_defaults", {o.name: o.default for o in self.options})  # built once

    @property
    def defaults(self) -> dict:
        return dict(self._defaults)  # a copy: callers fill it in

    def options_for(self, given: dict) -> dict:
        """Every option, checked: `given` over the defaults (themselves checked when declared)."""
        if not given:
            return self.defaults
        # The same options come again and again (a chain's settings, solve after solve): what
        # checked fine once is served from a small memo (types in the key: 1, 1.0 and True differ).
        try:
            key = tuple((name, type(value), value) for name, value in given.items())
            known = _CHECKED.get((id(self), key))
        except TypeError:  # an unhashable value: check it every time
            key = known = None
        if known is not None:
            return dict(known[1])
        merged = self._check_options(given)
        if key is not None and len(_CHECKED) < 256:
            _CHECKED[(id(self), key)] = (self, dict(merged))  # self kept: its id is not reused
        return merged

    def _check_options(self, given: dict) -> dict:
        names = {o.name: o for o in self.options}
        unknown = set(given) - set(names)
        if unknown:
            accepted = ", ".join(names) or "none"
            raise ValueError(f"unknown option(s) for {self.name}: {', '.join(sorted(unknown))} (accepted: {accepted})")
        merged = self.defaults
        for name, value in given.items():
            merged[name] = names[name].check(value)
        self.check(merged)
        return merged


def iterated(name: str, make_step: Callable) -> Callable:
    """The batch kernel of a method iterated by `iterate.run` with `make_step(chain, **options)`."""

    def batch(chain: Chain, targets, tolerance: float, max_iterations: int, options: dict) -> BatchSolution:
        step = make_step(chain, **options)
        points, iterations, local = iterate.run(chain, targets, tolerance, max_iterations, step)
        rotations = None if local is None else constrained.rotations(chain, constrained.forward(chain, local)[0])
        return batch_result(chain, points, targets, iterations, tolerance, name, rotations)

    return batch


def floats(name: str, solver: float_one.Solver, declines: float_one.Declines | None = None) -> Callable:
    """The `one` kernel of method `name` on plain floats (solvers.kernels), or the reason it declines:
    `solver(tolerance, cap, options)` makes its position-only float solve
    `(terms, target) -> (points, rotations, iterations)` (terms: solvers.kernels.one.Terms; goals
    wrap it, solvers.kernels.goals); `declines(options, kernel)` says why it cannot serve these
    checked options, or None (the chain's own cases, joint limits, are every method's:
    `kernels.one.reason`)."""

    def one(chain: Chain, target, tolerance: float, max_iterations: int, options: dict, goals):
        why = float_one.reason(chain, options, declines)
        if why is not None:
            return why
        return float_one.solve(chain, target, name, tolerance, solver(tolerance, max_iterations, options), goals)

    return one


def blocks(
    name: str, block_step: Callable, general_step: Callable, declines: float_one.Declines | None = None
) -> Callable:
    """The `many` kernel of method `name` on (n+1, 3, m) blocks (solvers.soa), or the reason it
    declines: `block_step(chain, options)` makes its block step, `general_step(chain, **options)`
    the numpy step that redoes a target whose block step is undefined; `declines` as in `floats`
    (the block kernels mirror the float kernels, so a method passes the same)."""

    def many(chain: Chain, targets, tolerance: float, max_iterations: int, options: dict):
        why = block_many.reason(chain, options, declines)
        if why is not None:
            return why

        def make_steps():
            return block_step(chain, options), general_step(chain, **options)

        return block_many.solve(chain, targets, name, tolerance, max_iterations, make_steps)

    return many


def float_steps(name: str, solver: float_one.Solver, declines: float_one.Declines | None = None) -> Callable:
    """The `sequence` kernel of method `name` on plain floats (solvers.kernels.sequence), or the
    reason it declines: the float kernel `solver` (as in `floats`) carried from step to step."""

    def sequence(chain: Chain, targets, tols, max_iterations: int, options: dict, progress, keep_points: bool):
        why = float_one.reason(chain, options, declines)
        if why is not None:
            return why
        points, frames, iterations = float_sequence.solve_steps(
            chain, targets, tols, solver, max_iterations, options, progress
        )
        error = np.linalg.norm(points[:, -1] - targets, axis=1)
        return SequenceSolution(points, points[:, -1].copy(), frames, error, iterations, error <= tols, name)

    return sequence


def _real(what: str, low: float, high: float | None = None, strict: bool = False) -> Callable:
    def check(value: object) -> float:
        x = as_real(value, what)
        if x < low or (strict and x == low) or (high is not None and x > high):
            span = (f"> {low:g}" if strict else f">= {low:g}") + ("" if high is None else f" and <= {high:g}")
            raise ValueError(f"{what} must be {span}, got {value!r}")
        return x

    return check


def _choice(what: str, choices: tuple) -> Callable:
    names = tuple(c[0] for c in choices)

    def check(value: object) -> str:
        if not isinstance(value, str) or value not in names:
            raise ValueError(f"{what} must be one of {', '.join(map(repr, names))}, got {value!r}")
        return value

    return check


def _fold_angle(value: object) -> float:
    check_fold_angle(value)
    return float(value)


def _check_triangulation(options: dict) -> None:
    check_smooth_fold(options["smooth_fold"], options["fold_angle"])


PLACEMENT_CHOICES = (
    ("line", "Line", "The paper's passes: each joint on the line toward its new neighbour"),
    (
        "sphere",
        "Sphere",
        "The article's CGA form: each joint where the spheres about both neighbours meet (few iterations;"
        " the joints near the tip move first). Chains with IK limits use Line",
    ),
)
ATTRACTOR_CHOICES = (
    ("rest", "Rest Pose", "Toward the rest pose (every joint's rotation channels at zero)"),
    ("input", "Input Pose", "Toward the pose the solve starts from: move as little as the goals allow"),
)
VARIANT_CHOICES = (
    ("dls", "DLS", "Damped least squares: stable near singular poses"),
    ("pseudoinverse", "Pseudoinverse", "Moore-Penrose pseudoinverse: fast, can jump near singular poses"),
    ("transpose", "Transpose", "Jacobian transpose: cheap steps, slow convergence"),
)

TRIANGULATION = Method(
    name="triangulation",
    label="Triangulation",
    description="One pass from the root with the law of cosines; upper joints lead",
    options=(
        Option(
            "fold_angle",
            180.0,
            "Fold Angle",
            "Triangulation: largest bend between a bone and its parent, degrees",
            _fold_angle,
            minimum=90.0,
            maximum=180.0,
        ),
        Option(
            "smooth_fold",
            0.0,
            "Smooth Fold",
            "Triangulation with a 180° fold: 0 folds sharply as in the paper (a joint can pop when the target"
            " crosses the fold distance); 1 keeps every joint's speed bounded, for animation and bakes",
            _real("smooth_fold", 0.0, 1.0),
            active=lambda options: options.get("fold_angle", 180.0) == 180.0,
            minimum=0.0,
            maximum=1.0,
            subtype="FACTOR",
            panel_default=1.0,
            why="a chain in Blender is animated (Live, Bake): a joint must not pop where the target crosses"
            " the fold distance; the core's default is the paper's method",
        ),
    ),
    max_iterations=1,
    batch=kernels.batch,
    one=floats("triangulation", kernels.float_solver),
    sequence=kernels.sequence,
    tree=triangulation_tree.solve_tree,
    tree_max_iterations=8,
    check=_check_triangulation,
)

FABRIK = Method(
    name="fabrik",
    label="FABRIK",
    description="Forward and backward reaching; fast, natural poses in few iterations",
    options=(
        Option(
            "placement",
            "line",
            "Placement",
            "Where each pass puts a joint",
            _choice("placement", PLACEMENT_CHOICES),
            PLACEMENT_CHOICES,
            stored_as="fabrik_placement",
        ),
    ),
    max_iterations=100,
    batch=iterated("fabrik", fabrik.make_step),
    one=floats("fabrik", fabrik_floats.solver, fabrik_floats.declines),
    many=blocks(
        "fabrik", lambda chain, options: soa_fabrik.make_step(chain), fabrik.make_step, fabrik_floats.declines
    ),
    sequence=float_steps("fabrik", fabrik_floats.solver, fabrik_floats.declines),
    tree=tree_fabrik.solve,
    tree_many=tree_fabrik_many.solve_many,
)

CCD = Method(
    name="ccd",
    label="CCD",
    description="Cyclic coordinate descent from the tip; cheap steps, tip joints lead",
    options=(),
    max_iterations=100,
    batch=iterated("ccd", ccd.make_step),
    one=floats("ccd", ccd_floats.solver),
    many=blocks("ccd", lambda chain, options: soa_ccd.make_step(chain), ccd.make_step),
    sequence=float_steps("ccd", ccd_floats.solver),
    tree=tree_ccd.solve,
)

JACOBIAN = Method(
    name="jacobian",
    label="Jacobian",
    description="Jacobian (damped least squares, pseudoinverse or transpose); smooth",
    options=(
        Option(
            "variant",
            "dls",
            "Variant",
            "How the Jacobian is inverted",
            _choice("variant", VARIANT_CHOICES),
            VARIANT_CHOICES,
            stored_as="jacobian_variant",
        ),
        Option(
            "damping",
            0.05,
            "Damping",
            "Jacobian DLS damping, relative to the chain length",
            _real("damping", 0.0),
            active=lambda options: options.get("variant", "dls") == "dls",
            minimum=0.0,
            soft_maximum=1.0,
        ),
        Option(
            "max_step",
            0.5,
            "Max Step",
            "Jacobian: largest rotation per joint per iteration",
            _real("max_step", 0.0, strict=True),
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
            _real("nullspace_gain", 0.0, 1.0),
            minimum=0.0,
            maximum=1.0,
            subtype="FACTOR",
        ),
        Option(
            "attractor",
            "rest",
            "Pull Toward",
            "Jacobian on several effectors: the pose the Pose Pull attracts to",
            _choice("attractor", ATTRACTOR_CHOICES),
            ATTRACTOR_CHOICES,
            active=lambda options: options.get("nullspace_gain", 0.0) > 0.0,
        ),
    ),
    max_iterations=200,
    batch=iterated("jacobian", jacobian.make_step),
    one=floats("jacobian", jacobian_floats.solver, jacobian_floats.declines),
    many=blocks(
        "jacobian",
        lambda chain, options: soa_jacobian.make_step(chain, options["damping"], options["max_step"]),
        jacobian.make_step,
        jacobian_floats.declines,
    ),
    sequence=float_steps("jacobian", jacobian_floats.solver, jacobian_floats.declines),
    tree=tree_jacobian.solve,
)

METHOD_LIST: tuple[Method, ...] = (TRIANGULATION, FABRIK, CCD, JACOBIAN)
REGISTRY: dict[str, Method] = {m.name: m for m in METHOD_LIST}


def get(name: object) -> Method:
    """The method called `name`, or ValueError listing the known ones."""
    method = REGISTRY.get(name) if isinstance(name, str) else None
    if method is None:
        raise ValueError(f"unknown method {name!r}; choose one of {', '.join(REGISTRY)}")
    return method
