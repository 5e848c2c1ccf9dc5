"""The one solve path of Solve, Live, Compare and cli.py: a unit (app.spec.groups: a chain alone, or
chains sharing bones) is read into one skeleton (rig.unit), its goals built once from the chain specs
(app.solve.goals), solved by `solvers.solve_skeleton`, its pose computed by one writer
(rig.tree_write.unit_pose) and written all-or-nothing; one outcome per chain
(app.solve.outcome.ChainOutcome), its figures measured on the solved pose.

The kernels are inside: one effector (a chain alone, not pinned) is solved by the chain kernel in
the core (its plain-float kernel where it serves) and written by turning the frames as read (the
quaternion kernel where every matrix is a similarity); several effectors, or a pin, by the tree
kernel. The outcome's `reason` says where a faster kernel did not serve."""

from __future__ import annotations

import dataclasses
import time

import numpy as np

from ... import rig, solvers
from ...rig import tree_write
from ...rig.unit import as_chain, read_unit, stretch_branch
from ...solvers.common.pins import without_unheld
from ...solvers.metrics import rotation_cost_rows
from ..checks import check_in_view_layer, check_spec
from ..spec import ChainSpec, groups
from ..spec.groups import group_label, led_by
from . import pins
from .goals import chain_goals
from .group_solve import group_effectors, group_notes, group_rig, group_tolerance
from .outcome import ChainOutcome, chain_reason


def solve_unit(obj, specs: list[ChainSpec], depsgraph, from_rest: bool = False) -> list[ChainOutcome]:
    """Solve one unit of `obj` (the original object; app.spec.groups: `specs` share bones, or one
    chain alone) on the evaluated pose; compute, don't write. One outcome per spec, in order (a
    group's: led by the first). `from_rest`: start from the unit's bones at their rest rotations
    (Compare Solvers) instead of their current ones."""
    start = time.perf_counter()
    specs = led_by(specs)
    lead = specs[0]
    for spec in specs:
        check_spec(obj, spec)
        check_in_view_layer(obj, spec, depsgraph)
    obj_eval = obj.evaluated_get(depsgraph)
    space = rig.object_space(obj_eval)
    if len(specs) == 1 and not lead.pin:
        return [_solve_alone(obj, obj_eval, space, lead, depsgraph, from_rest, start)]
    # Chains the tree kernel solves together (or a pinned chain): the group's checks and stretch.
    group = group_rig(obj, specs, hinges=True)
    chains = [(s.tip, s.chain_length, s.use_tail) for s in specs]
    unit = read_unit(obj, obj_eval, chains, lead.use_limits, from_rest, group.stretch_weights, group.layout)
    skeleton, local, names = unit.skeleton, unit.local, unit.names
    tolerance = group_tolerance(space, lead, skeleton, names, group.chain_bones)
    effectors = group_effectors(obj_eval, space, specs, group.layout.effectors, names, depsgraph)
    held = {}
    if any(spec.pin for spec in specs):  # pins hold where the user's pose put them (app.solve.pins)
        held = pins.held_points(obj, names, skeleton, local, [e.bone for e in effectors if e.pin])
        effectors = [
            dataclasses.replace(e, position=held[e.bone][0], orientation=held[e.bone][1], rotation_weight=1.0)
            if e.pin
            else e
            for e in effectors
        ]
    skeleton, stretched, effectors = group.stretch(obj_eval, skeleton, local, effectors)
    solution = solvers.solve_skeleton(skeleton, local, effectors, **lead.solver_arguments(tolerance))
    whole = tree_write.unit_pose(obj, unit, solution, lead.influence, lead.use_locks)
    if stretched:
        scales, scales_before = rig.stretch.blend(obj.pose.bones, stretched, lead.influence)
        whole = dataclasses.replace(whole, scales=scales, scales_before=scales_before)
    if held:
        pins.remember(obj, names, skeleton, held, whole.values)
    _, heads_in, ends_in = skeleton.forward(local)
    _, heads, ends = skeleton.forward(solution.local)
    where = {n: i for i, n in enumerate(names)}
    label = group_label(specs) if len(specs) > 1 else ""  # a pinned chain alone is no group
    # The solver's word on pins that cannot hold is said per chain below, by name.
    notes = group_notes(obj, specs, names, without_unheld(solution.reason))
    unheld = ", ".join(f"'{specs[k].label}'" for k in solution.unheld)
    unheld = f"pinned {unheld} could not hold" if unheld else ""
    elapsed = (time.perf_counter() - start) * 1e3
    outcomes, claimed = [], set()
    for k, (spec, goal, chain) in enumerate(zip(specs, effectors, group.chain_bones, strict=True)):
        own = [n for n in chain if n not in claimed]
        claimed.update(own)
        part = rig.PoseWrite(
            {n: whole.values[n] for n in own},
            tuple(n for n in whole.locked if n in own),
            tuple(n for n in whole.constrained if n in own),
            {n: whole.before[n] for n in own},
            {n: whole.scales[n] for n in own if n in whole.scales},
            {n: whole.scales_before[n] for n in own if n in whole.scales_before},
        )
        rows = [where[n] for n in chain]
        points = [heads[i].tolist() for i in rows] + [ends[rows[-1]].tolist()]
        first = ends_in[rows[0]] - heads_in[rows[0]]
        cost = rotation_cost_rows((first / np.linalg.norm(first)).tolist(), points)
        pinned = tuple(space.to_world(goal.position).tolist()) if spec.pin else None
        goal_world = pinned if spec.pin else space.to_world(goal.position)
        error = space.world_distance(ends[goal.bone], goal_world)
        own = f"the pin could not hold: its tip ends {error:.3g} from its point" if k in solution.unheld else unheld
        reason = "; ".join(filter(None, (own, notes)))
        outcomes.append(
            ChainOutcome(
                spec, part, chain, error, cost, elapsed, solution.iterations,
                bool(solution.error[k] <= tolerance), reason, label, pinned, unit, solution,
            )
        )  # fmt: skip
    return outcomes


def _solve_alone(obj, obj_eval, space, spec: ChainSpec, depsgraph, from_rest: bool, start: float) -> ChainOutcome:
    """A chain alone: one effector, which the core solves with the chain kernel (bit for bit a
    chain's solve); IK stretch planned straight to the target in float64 (rig.unit.stretch_branch)."""
    chains = [(spec.tip, spec.chain_length, spec.use_tail)]
    layout = rig.tree.tree_layout(obj, chains, hinges=True)
    weights = None
    if spec.use_stretch:
        pose = obj_eval.pose.bones
        w = [float(pose[n].ik_stretch) for n in layout.names]
        weights = w if any(x > 0.0 for x in w) else None
    unit = as_chain(read_unit(obj, obj_eval, chains, spec.use_limits, from_rest, weights, layout))
    target_world = rig.space.target_world_point(rig.evaluated(spec.target, depsgraph), spec.target_bone)
    if weights is not None:  # read unstretched, stretched to the target as planned
        unit = stretch_branch(obj_eval, unit, space.to_local_point(target_world), spec.softness)
    bone = layout.effectors[0]
    goals = chain_goals(obj_eval, space, spec, depsgraph, lambda: unit.end_frame(bone), target_world)
    effector = goals.effector(bone)
    if unit.stretched:  # soft IK's stretch already bends the chain as the soft chain bends
        effector = dataclasses.replace(effector, softness=0.0)
    solution = solvers.solve_skeleton(
        unit.skeleton, unit.local, [effector], pose=unit.pose, **spec.solver_arguments(spec.local_tolerance(space))
    )
    write = tree_write.unit_pose(obj, unit, solution, spec.influence, spec.use_locks)
    if unit.scales:
        values, before = rig.stretch.blend(obj.pose.bones, unit.scales, spec.influence)
        write = dataclasses.replace(write, scales=values, scales_before=before)
    chain, solved, _ = solution.branch
    points, _ = solved.rows()  # floats: no array round trip
    error = space.world_distance(points[-1], target_world)
    cost = solvers.rotation_cost_one(chain, points)
    elapsed = (time.perf_counter() - start) * 1e3
    return ChainOutcome(
        spec, write, unit.names, error, cost, elapsed, solved.iterations, solved.reached,
        chain_reason(solved.reason, unit.terms), unit=unit, solution=solution,
    )  # fmt: skip


def solve_and_write(obj, specs: list[ChainSpec], depsgraph_get) -> list:
    """Solve and write chains; returns one ChainOutcome per spec, in order.

    Chains that share bones are solved together as one group (app.spec.groups); groups and single
    chains go in order of their top bone's depth, so one hanging below another sees its result.
    All-or-nothing: on any error, every bone written so far is restored and the
    ValueError propagates. `depsgraph_get()` returns an up-to-date evaluated
    depsgraph (it is called again after each write when more chains follow).
    """
    outcomes: list = [None] * len(specs)
    saved: dict[str, tuple[float, ...]] = {}
    saved_scales: dict[str, float] = {}
    try:
        for spec in specs:
            check_spec(obj, spec)
        for unit in groups.units(obj, specs):
            solved = solve_unit(obj, [specs[i] for i in unit.members], depsgraph_get())
            for i, outcome in zip(unit.members, solved, strict=True):
                for name, values in outcome.write.before.items():
                    saved.setdefault(name, values)
                for name, y in outcome.write.scales_before.items():
                    saved_scales.setdefault(name, y)
                apply_write(obj, outcome.write)
                outcomes[i] = outcome
    except Exception:
        rig.apply(obj, saved)
        rig.stretch.apply(obj, saved_scales)
        raise
    return outcomes


def apply_write(obj, write: rig.PoseWrite) -> None:
    """Write a solve's rotations and, for a stretching chain, its Y scales."""
    rig.apply(obj, write.values)
    rig.stretch.apply(obj, write.scales)
