"""One chain's solve, alone or in a group: the one outcome type Solve, Live, Compare, cli.py and
the reports read (app.solve.solve_unit makes it)."""

from __future__ import annotations

from dataclasses import dataclass

from ... import rig, solvers
from ..spec import ChainSpec


@dataclass
class ChainOutcome:
    spec: ChainSpec  # in a group: with the lead's solver settings (app.spec.groups.led_by)
    write: rig.PoseWrite  # in a group: the group's write, each bone given to the first chain that has it
    names: tuple[str, ...]  # the chain's bones, root first
    error: float  # world-space tip error of the solution
    cost: float  # degrees, over the chain's bones
    time_ms: float  # in a group: the whole group's solve
    iterations: int
    reached: bool
    # Why a faster kernel did not serve, and what the solve did not honour ('' when nothing).
    reason: str
    group: str = ""  # the chains it was solved with (app.spec.groups.group_label), '' when alone
    goal_world: tuple[float, float, float] | None = None  # a pin: where it holds the tip (world)
    unit: rig.unit.UnitRead | None = None  # the unit as read (rig.unit.read_unit)
    # The unit's solve (solvers.solve_skeleton); a chain alone: `.branch` holds its Chain and the
    # chain kernel's Solution.
    solution: solvers.SkeletonSolution | None = None
    # An aiming chain (spec.aims): the degrees left between its tip bone's aim axis and the line from
    # its head to the target; `error` is then how far that ray misses the target. None: it reaches.
    angle: float | None = None
    # A movable root that moved: (its bone, its head in world space before the solve); the report
    # measures the move on the written pose (app.solve.result.root_line). None: no root moved.
    root_moved: tuple[str, tuple[float, float, float]] | None = None


def chain_reason(solver_reason: str, terms) -> str:
    """Why a faster kernel did not serve a chain alone ('' when they all did): the solver's
    plain-float kernel (solvers.Solution.reason) and the writer's quaternion kernel (`terms`:
    rig.read.PoseTerms, or why not)."""
    parts = []
    if solver_reason:
        parts.append(f"general solver: {solver_reason}")
    if isinstance(terms, str):
        parts.append(f"general writer: {terms}")
    return "; ".join(parts)
