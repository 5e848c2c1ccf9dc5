"""Solving a group: chains that share bones (app.spec.groups) as one tree, every tip an effector of
one `solvers.solve_skeleton` call, written as one pose.

The group's first chain leads: its solver, options, tolerance, iteration cap, limits, locks and
influence serve the whole tree. Each chain adds its own goals: target (or a pin), pole, tip
orientation, weight and priority. Poles work inside groups (Blender's IK switches them off in trees).
"""

from __future__ import annotations

import dataclasses
import math
import re
import time
from dataclasses import dataclass

import numpy as np

from ... import rig, solvers
from ...rig import tree, tree_write
from ...solvers.common import root_move as movable_root
from ...solvers.common.aim_goals import aim_miss
from ...solvers.common.pins import without_unheld
from ...solvers.metrics import rotation_cost_rows
from ..checks import check_group, check_in_view_layer, check_movable_root, check_no_stretch_scale, check_spec
from ..spec import ChainSpec
from ..spec.groups import chain_names, group_label, led_by
from . import pins, root_home
from .goals import chain_goals
from .outcome import ChainOutcome


def solve_group(obj, specs: list[ChainSpec], depsgraph) -> list[ChainOutcome]:
    """Solve the chains `specs` of `obj` (the original object) together on the evaluated pose;
    compute, don't write. One outcome per spec, in order."""
    start = time.perf_counter()
    specs = led_by(specs)
    lead = specs[0]
    for spec in specs:
        check_spec(obj, spec)
        check_in_view_layer(obj, spec, depsgraph)
    obj_eval = obj.evaluated_get(depsgraph)
    space = rig.object_space(obj_eval)
    group = group_rig(obj, specs)
    skeleton, local, names, tolerance = group.read(obj, obj_eval, space)
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
    home = _root_home(obj, obj_eval, group, names, skeleton) if lead.move_root else None
    if home is not None:  # a movable root starts from where the user put it (app.solve.root_home)
        skeleton = movable_root.shifted(skeleton, names.index(group.root), home[1])
    try:
        solution = solve_tree(lead, skeleton, local, effectors, tolerance)
    except ValueError as exc:  # the core names bones by index
        raise ValueError(named_bones(str(exc), names)) from None
    whole = tree_write.tree_pose(obj, names, local, solution.local, lead.influence, lead.use_locks)
    if stretched:
        scales, scales_before = rig.stretch.blend(obj.pose.bones, stretched, lead.influence)
        whole = dataclasses.replace(whole, scales=scales, scales_before=scales_before)
    root_moved = None
    shift = solution.root_shift if home is None else home[1] + solution.root_shift
    if shift is not None and np.any(shift):  # a movable root moved (or went home): its location
        top = group.root
        before = tuple(obj.pose.bones[top].location)
        values = rig.root_location.location_values(obj, obj_eval, top, shift, lead.influence)
        if home is not None and not np.any(solution.root_shift) and lead.influence == 1.0:
            values = home[0]  # home exactly, not through the matrices' rounding
        whole = dataclasses.replace(whole, locations={top: values}, locations_before={top: before})
        root_moved = (top, tuple(rig.root_location.head_world(obj_eval, top)))
        skeleton = movable_root.shifted(skeleton, names.index(top), solution.root_shift)
        root_home.remember(obj, top, before, values)
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
        outcomes.append(
            ChainOutcome(
                spec, part, chain, error, cost, elapsed, solution.iterations,
                bool(solution.error[k] <= tolerance), reason, label, pinned, angle=angle,
                root_moved=root_moved if k == 0 else None,
            )
        )  # fmt: skip
    return outcomes


@dataclass(frozen=True)
class GroupRig:
    """A group's structure in the armature, read and checked once (a bake: once per bake)."""

    specs: tuple[ChainSpec, ...]  # led by the first (groups.led_by)
    layout: tree.TreeLayout
    chain_bones: tuple[tuple[str, ...], ...]  # per chain, its bones root first
    # IK stretch: per tree bone its ik_stretch where a chain with Stretch on holds it, else 0
    # (None: nothing stretches), and whether it inherits its tree parent's Y scale.
    stretch_weights: tuple[float, ...] | None = None
    inherit: tuple[bool, ...] = ()

    def read(self, obj, obj_eval, space, fk=None) -> tuple:
        """(skeleton, input local rotations, bone names, tolerance in armature space) of the
        evaluated pose (`fk`: see rig.tree.read_tree), read unstretched when the group stretches
        (rig.stretch); the lead's Use Bone IK Limits applies."""
        chains = [(s.tip, s.chain_length, s.use_tail) for s in self.specs]
        if self.stretch_weights is not None:
            fk = rig.stretch.unstretched(obj_eval, self.layout.names, self.stretch_weights, fk)
        skeleton, local, names = tree.read_tree(obj, obj_eval, chains, self.layout, fk)
        lead = self.specs[0]
        if not lead.use_limits and skeleton.limits is not None:
            skeleton = dataclasses.replace(skeleton, limits=None)
        return skeleton, local, names, group_tolerance(space, lead, skeleton, names, self.chain_bones)

    @property
    def root(self) -> str:
        """The group's one top bone (Move Root moves it)."""
        return self.layout.names[self.layout.parents.index(-1)]

    def stretch(self, obj_eval, skeleton, local, effectors) -> tuple:
        """(the skeleton stretched toward the effectors, own Y channel per stretching bone, the
        effectors to solve toward) as a chain alone stretches (rig.stretch.stretch_tree); the
        skeleton itself, {} and the effectors without stretch."""
        if self.stretch_weights is None:
            return skeleton, {}, effectors
        names, w = self.layout.names, self.stretch_weights
        reach = [e for e in effectors if not e.aim_axis]  # an aim's target is no point to stretch to
        skeleton, own, solved = rig.stretch.stretch_tree(obj_eval, names, skeleton, local, reach, w, self.inherit)
        solved = iter(solved)
        return skeleton, own, [e if e.aim_axis else next(solved) for e in effectors]


def group_rig(obj, specs: list[ChainSpec]) -> GroupRig:
    """The group's tree layout and chains, after the checks only a group needs (targets riding on
    its bones, a bone left stretched)."""
    layout = tree.tree_layout(obj, [(s.tip, s.chain_length, s.use_tail) for s in specs])
    check_group(obj, specs, layout.names)
    if specs[0].move_root:  # the lead's setting serves the group: its one top bone moves
        tops = [layout.names[i] for i, p in enumerate(layout.parents) if p == -1]
        if len(tops) != 1:
            raise ValueError(
                f"Move Root on '{specs[0].label}': the chains solved with it hang from several top bones"
                f" ({', '.join(tops)}); lengthen them to one shared bone, or turn Move Root off"
            )
        check_movable_root(obj, tops[0], specs[0].label)
    chains = tuple(chain_names(obj, s) for s in specs)
    # A bone stretches where a chain holding it has Stretch on (as that chain alone would).
    stretching = {n for s, chain in zip(specs, chains, strict=True) if s.use_stretch and not s.aims for n in chain}
    pose = obj.pose.bones
    w = tuple(float(pose[n].ik_stretch) if n in stretching else 0.0 for n in layout.names)
    check_no_stretch_scale(obj, [n for n, wi in zip(layout.names, w, strict=True) if wi == 0.0])
    if not any(wi > 0.0 for wi in w):
        return GroupRig(tuple(specs), layout, chains)
    inherit = tuple(rig.stretch.tree_inherit(obj, layout.names, layout.parents))
    return GroupRig(tuple(specs), layout, chains, w, inherit)


def _root_home(obj, obj_eval, group: GroupRig, names, skeleton) -> tuple | None:
    """(the root's home location, the move of its head there in armature space) when a solve moved
    the root and nobody moved it since (app.solve.root_home), else None."""
    top = group.root
    start = root_home.home(obj, top)
    if start is None:
        return None
    return start, rig.root_location.head_move(obj, obj_eval, top, start)


def solve_tree(lead: ChainSpec, skeleton, local, effectors, tolerance: float) -> solvers.SkeletonSolution:
    """`solvers.solve_skeleton` with the lead chain's solver settings."""
    return solvers.solve_skeleton(
        skeleton, local, effectors, **lead.solver_arguments(tolerance), **lead.root_arguments()
    )


def group_tolerance(space, lead: ChainSpec, skeleton, names, chains) -> float:
    """The group's reach tolerance (armature space): the lead's, or (0 in its settings) the
    solver's default share of the shortest chain's length, so each tip meets what its own chain
    alone would be held to (and what reports measure it against)."""
    if lead.tolerance > 0.0:
        return lead.local_tolerance(space)
    where = {n: i for i, n in enumerate(names)}
    shortest = min(sum(float(skeleton.lengths[where[n]]) for n in chain) for chain in chains)
    return solvers.DEFAULT_RELATIVE_TOLERANCE * shortest


def group_effectors(obj_eval, space, specs: list[ChainSpec], bones, names, depsgraph, goals=None) -> list:
    """The solver's effectors of a group's chains (`bones`: each chain's end bone in the tree).
    `goals`: per chain (target, pole) world locations when already known (a bake sampling their
    curves), else they are read from the depsgraph."""
    goals = goals or [(None, None)] * len(specs)
    pose = obj_eval.pose.bones
    out = []
    for spec, bone, (target, pole) in zip(specs, bones, goals, strict=True):
        last = pose[names[bone]]
        made = chain_goals(
            obj_eval, space, spec, depsgraph, lambda b=last: b.matrix.to_quaternion().normalized(), target, pole
        )
        out.append(made.effector(bone))
    return out


def group_notes(obj, specs: list[ChainSpec], names, solver_reason: str) -> str:
    """What the group's solve did not honour, and the solver's own reason: shown with the result."""
    notes = []
    if solver_reason:
        notes.append(f"solver: {named_bones(solver_reason, names)}")
    return "; ".join(notes)


def named_bones(text: str, names) -> str:
    """The core's words with its bone indices ('bone 3', the tree's order) given the bones' names."""
    return re.sub(r"\bbone (\d+)\b", lambda m: f"bone '{names[int(m.group(1))]}'", text)
