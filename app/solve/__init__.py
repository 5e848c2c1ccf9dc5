"""The one solve path of Solve, Live, Compare and cli.py: a unit (app.spec.groups: a chain alone, or
chains sharing bones) is read into one skeleton (rig.unit), its goals built once from the chain specs
(app.solve.goals), solved by `solvers.solve_skeleton`, its pose computed by one writer
(rig.tree_write.unit_pose) and written all-or-nothing; one outcome per chain
(app.solve.outcome.ChainOutcome), its figures measured on the solved pose.

The kernels are inside: one effector (a chain alone, not pinned) is solved by the chain kernel in
the core (its plain-float kernel where it serves) and written by turning the frames as read (the
quaternion kernel where every matrix is a similarity); several effectors, a pin, an aim or a
movable root, by the tree kernel and the writer from the solved local rotations. Aims and Move Root
(the lead's setting serving a group) are the same for a chain alone and a group. The outcome's
`reason` says where a faster kernel did not serve."""

from __future__ import annotations

import dataclasses
import math
import time
from dataclasses import dataclass, field

import numpy as np

from ... import rig, solvers
from ...rig import tree_write
from ...rig.unit import UnitRead, as_chain, read_unit, stretch_branch
from ...rig.unit_layout import unit_layout
from ...solvers.common import root_move as movable_root
from ...solvers.common.aim_goals import aim_miss
from ...solvers.common.pins import without_unheld
from ...solvers.metrics import rotation_cost_rows
from ..checks import check_in_view_layer, check_movable_root, check_spec
from ..spec import ChainSpec, groups
from ..spec.groups import group_label, led_by
from . import pins, root_home
from .goals import chain_goals
from .group_solve import group_effectors, group_notes, group_rig, group_tolerance, named_bones
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
    if len(specs) == 1 and not lead.pin:  # one effector: its stretch planned as a chain's
        read = read_alone(obj, obj_eval, space, lead, depsgraph, from_rest)
    else:
        read = _read_group(obj, obj_eval, space, specs, depsgraph, from_rest)
    unit, effectors, names = read.unit, read.effectors, read.unit.names
    skeleton, pose = read.skeleton, read.pose
    top = unit.layout.names[unit.layout.parents.index(-1)] if lead.move_root else None
    home = _root_home(obj, obj_eval, top) if top is not None else None
    if home is not None:  # a movable root starts from where the user put it (app.solve.root_home)
        root = names.index(top)
        pose = movable_root.shifted_pose(skeleton, root, pose, home[1])
        skeleton = movable_root.shifted(skeleton, root, home[1])
    try:
        solution = solvers.solve_skeleton(
            skeleton, unit.local, effectors, pose=pose,
            **lead.solver_arguments(read.tolerance), **lead.root_arguments(),
        )  # fmt: skip
    except ValueError as exc:  # the core names bones by index
        raise ValueError(named_bones(str(exc), names)) from None
    whole = tree_write.unit_pose(obj, unit, solution, lead.influence, lead.use_locks)
    if read.stretched:
        scales, scales_before = rig.stretch.blend(obj.pose.bones, read.stretched, lead.influence)
        whole = dataclasses.replace(whole, scales=scales, scales_before=scales_before)
    root_moved = None
    shift = solution.root_shift if home is None else home[1] + solution.root_shift
    if shift is not None and np.any(shift):  # a movable root moved (or went home): its location
        before = tuple(obj.pose.bones[top].location)
        values = rig.root_location.location_values(obj, obj_eval, top, shift, lead.influence)
        if home is not None and not np.any(solution.root_shift) and lead.influence == 1.0:
            values = home[0]  # home exactly, not through the matrices' rounding
        whole = dataclasses.replace(whole, locations={top: values}, locations_before={top: before})
        root_moved = (top, tuple(rig.root_location.head_world(obj_eval, top)))
        skeleton = movable_root.shifted(skeleton, names.index(top), solution.root_shift)
        root_home.remember(obj, top, before, values)
    if read.held:
        pins.remember(obj, names, skeleton, read.held, whole.values)
    elapsed = (time.perf_counter() - start) * 1e3
    if solution.branch is not None:  # the chain kernel's figures, bit for bit a chain's
        return [_chain_outcome(lead, whole, unit, solution, space, read.target_world, elapsed)]
    return _tree_outcomes(obj, specs, whole, read, skeleton, solution, space, elapsed, root_moved)


@dataclass(frozen=True)
class _Read:
    """A unit read with its goals, ready to solve."""

    unit: UnitRead
    skeleton: object  # stretched where the unit stretches
    pose: tuple | None  # the input pose as read (solve_skeleton's pose=), None where it is not the skeleton's
    effectors: list
    tolerance: float | None
    chain_bones: tuple[tuple[str, ...], ...]
    stretched: dict  # own Y channel per stretching bone
    held: dict = field(default_factory=dict)  # pins' held points (app.solve.pins)
    target_world: object = None  # a chain alone: its target (world)


def read_alone(obj, obj_eval, space, spec: ChainSpec, depsgraph, from_rest: bool, rotations=None) -> _Read:
    """A chain alone: one effector, which the core solves with the chain kernel (bit for bit a
    chain's solve); IK stretch planned straight to the target in float64 (rig.unit.stretch_branch).
    `rotations`: the bake's previous frame's solution the chain is read at (rig.unit.read_unit)."""
    chains = [(spec.tip, spec.chain_length, spec.use_tail)]
    layout = unit_layout(obj, chains)  # built once while the rig stays the same (rig.unit_layout)
    if spec.move_root:  # a chain alone has one top bone: its first
        check_movable_root(obj, layout.names[0], spec.label)
    weights = None
    if spec.use_stretch and not spec.aims:  # an aim's target is no point to stretch to
        pose = obj_eval.pose.bones
        w = [float(pose[n].ik_stretch) for n in layout.names]
        weights = w if any(x > 0.0 for x in w) else None
    unit = as_chain(read_unit(obj, obj_eval, chains, spec.use_limits, from_rest, weights, layout, rotations))
    target_world = rig.space.target_world_point(rig.evaluated(spec.target, depsgraph), spec.target_bone)
    if weights is not None:  # read unstretched, stretched to the target as planned
        unit = stretch_branch(obj_eval, unit, space.to_local_point(target_world), spec.softness)
    bone = layout.effectors[0]
    goals = chain_goals(obj_eval, space, spec, depsgraph, lambda: unit.end_frame(bone), target_world)
    effector = goals.effector(bone)
    if unit.stretched:  # soft IK's stretch already bends the chain as the soft chain bends
        effector = dataclasses.replace(effector, softness=0.0)
    tolerance = spec.local_tolerance(space)
    return _Read(
        unit, unit.skeleton, unit.pose, [effector], tolerance, (unit.names,), unit.scales, target_world=target_world
    )


def _read_group(obj, obj_eval, space, specs: list[ChainSpec], depsgraph, from_rest: bool) -> _Read:
    """Chains the tree kernel solves together (or a pinned chain): the group's checks and stretch."""
    lead = specs[0]
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
    return _Read(unit, skeleton, None, effectors, tolerance, group.chain_bones, stretched, held)


def _root_home(obj, obj_eval, top: str) -> tuple | None:
    """(the root's home location, the move of its head there in armature space) when a solve moved
    the root and nobody moved it since (app.solve.root_home), else None."""
    start = root_home.home(obj, top)
    if start is None:
        return None
    return start, rig.root_location.head_move(obj, obj_eval, top, start)


def _chain_outcome(spec: ChainSpec, write, unit, solution, space, target_world, elapsed: float) -> ChainOutcome:
    """A chain alone solved by the chain kernel: its figures from the chain's own solve."""
    chain, solved, _ = solution.branch
    points, _ = solved.rows()  # floats: no array round trip
    error = space.world_distance(points[-1], target_world)
    cost = solvers.rotation_cost_one(chain, points)
    return ChainOutcome(
        spec, write, unit.names, error, cost, elapsed, solved.iterations, solved.reached,
        chain_reason(solved.reason, unit.terms), unit=unit, solution=solution,
    )  # fmt: skip


def _tree_outcomes(obj, specs, whole, read: _Read, skeleton, solution, space, elapsed, root_moved) -> list:
    """One outcome per chain of a unit the tree kernel (or an aim, or a movable root) solved, its
    figures on the solved pose (`skeleton`: as solved, its root where it moved)."""
    unit, names, effectors = read.unit, read.unit.names, read.effectors
    _, heads_in, ends_in = skeleton.forward(unit.local)
    _, heads, ends = skeleton.forward(solution.local)
    where = {n: i for i, n in enumerate(names)}
    label = group_label(specs) if len(specs) > 1 else ""  # a pinned chain alone is no group
    # The solver's word on pins that cannot hold is said per chain below, by name.
    notes = group_notes(obj, specs, names, without_unheld(solution.reason))
    unheld = ", ".join(f"'{specs[k].label}'" for k in solution.unheld)
    unheld = f"pinned {unheld} could not hold" if unheld else ""
    outcomes, claimed = [], set()
    for k, (spec, goal, chain) in enumerate(zip(specs, effectors, read.chain_bones, strict=True)):
        own = [n for n in chain if n not in claimed]
        claimed.update(own)
        part = rig.PoseWrite(
            {n: whole.values[n] for n in own},
            tuple(n for n in whole.locked if n in own),
            tuple(n for n in whole.constrained if n in own),
            {n: whole.before[n] for n in own},
            {n: whole.scales[n] for n in own if n in whole.scales},
            {n: whole.scales_before[n] for n in own if n in whole.scales_before},
            {n: whole.locations[n] for n in own if n in whole.locations},
            {n: whole.locations_before[n] for n in own if n in whole.locations_before},
        )
        rows = [where[n] for n in chain]
        points = [heads[i].tolist() for i in rows] + [ends[rows[-1]].tolist()]
        first = ends_in[rows[0]] - heads_in[rows[0]]
        cost = rotation_cost_rows((first / np.linalg.norm(first)).tolist(), points)
        pinned = tuple(space.to_world(goal.position).tolist()) if spec.pin else None
        goal_world = pinned if spec.pin else space.to_world(goal.position)
        error = space.world_distance(ends[goal.bone], goal_world)
        angle = None
        if spec.aims:  # the ray's miss (world) and the angle left (solvers.common.aim_goals)
            angle = float(solution.angles[k])
            error = aim_miss(angle, space.world_distance(heads[goal.bone], goal_world))
            angle = math.degrees(angle)
        own = f"the pin could not hold: its tip ends {error:.3g} from its point" if k in solution.unheld else unheld
        reason = "; ".join(filter(None, (own, notes)))
        reached = solution.reached if read.tolerance is None else bool(solution.error[k] <= read.tolerance)
        outcomes.append(
            ChainOutcome(
                spec, part, chain, error, cost, elapsed, solution.iterations, reached, reason, label, pinned,
                unit, solution, angle=angle, root_moved=root_moved if k == 0 else None,
            )
        )  # fmt: skip
    return outcomes


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
    saved_locations: dict[str, tuple[float, float, float]] = {}
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
                for name, xyz in outcome.write.locations_before.items():
                    saved_locations.setdefault(name, xyz)
                apply_write(obj, outcome.write)
                outcomes[i] = outcome
    except Exception:
        rig.apply(obj, saved)
        rig.stretch.apply(obj, saved_scales)
        rig.root_location.apply_locations(obj, saved_locations)
        raise
    return outcomes


def apply_write(obj, write: rig.PoseWrite) -> None:
    """Write a solve's rotations and, for a stretching chain, its Y scales; a moved root's location."""
    rig.apply(obj, write.values)
    rig.stretch.apply(obj, write.scales)
    rig.root_location.apply_locations(obj, write.locations)
