"""The declarations every method is made of: `Option` (one method option) and `Method` (a method:
its options, iteration cap and kernels; see solvers.registry for the kernels' contract), with the
checks options are declared with (`real`, `choice`). Data only: the kernels are functions from
the method folders above."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from .chain import as_real

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
    # Its tree kernel is damped least squares (Newton steps on several goals at once): the one that
    # holds pins after any method (common.pins.hold) and predicts a bake's next frame
    # (solvers.skeleton_sequence), which for this method is its own solve. One method says so.
    least_squares: bool = False
    # A movable root (common.root_move) moves the pins' branches with it: its tree kernel brings
    # them back only slowly (CCD: ~100 sweeps for the legs under moved hips, the hand alone ~25),
    # so the turns start from the pins put back by the least-squares method (common.pins.placed).
    # Off where the kernel puts them back itself faster than that (FABRIK, the Jacobian, triangulation).
    root_pins_first: bool = False
    # Least-squares steps (registry.LEAST_SQUARES's tree kernel) its tree solve starts from, taken
    # by the entry points (solvers.skeleton_solve.stepped_start), 0: from the input pose itself.
    # FABRIK's passes from the input pose turn the joints near the tips far more than the goals ask.
    tree_start_steps: int = 0

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


def real(what: str, low: float, high: float | None = None, strict: bool = False) -> Callable:
    """An option check: a real number >= low (> low when `strict`), <= high when given."""

    def check(value: object) -> float:
        x = as_real(value, what)
        if x < low or (strict and x == low) or (high is not None and x > high):
            span = (f"> {low:g}" if strict else f">= {low:g}") + ("" if high is None else f" and <= {high:g}")
            raise ValueError(f"{what} must be {span}, got {value!r}")
        return x

    return check


def choice(what: str, choices: tuple) -> Callable:
    """An option check: one of the identifiers of `choices` ((identifier, label, description), ...)."""

    names = tuple(c[0] for c in choices)

    def check(value: object) -> str:
        if not isinstance(value, str) or value not in names:
            raise ValueError(f"{what} must be one of {', '.join(map(repr, names))}, got {value!r}")
        return value

    return check
