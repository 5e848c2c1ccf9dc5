"""A group's parts: chains that share bones (app.spec.groups) as one tree, every tip an effector of
one `solvers.solve_skeleton` call (app.solve.solve_unit solves it; the bake's group kernel reads
and stretches it here too).

The group's first chain leads: its solver, options, tolerance, iteration cap, limits, locks and
influence serve the whole tree. Each chain adds its own goals: target (or a pin), pole, tip
orientation, weight and priority. Poles work inside groups (Blender's IK switches them off in trees).
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass

from ... import rig, solvers
from ...rig import tree
from ...rig.unit_layout import unit_layout
from ..checks import check_group, check_movable_root, check_no_stretch_scale
from ..spec import ChainSpec
from ..spec.groups import chain_names
from .goals import chain_goals


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


def group_rig(obj, specs: list[ChainSpec], hinges: bool = False, chains: tuple | None = None) -> GroupRig:
    """The group's tree layout and chains, after the checks only a group needs (targets riding on
    its bones, a bone left stretched). `hinges`: see rig.tree.tree_layout. `chains`: each spec's
    bones (groups.chain_names) when the caller has them already."""
    layout = unit_layout(obj, [(s.tip, s.chain_length, s.use_tail) for s in specs], hinges)
    check_group(obj, specs, layout.names)
    if specs[0].move_root:  # the lead's setting serves the group: its one top bone moves
        tops = [layout.names[i] for i, p in enumerate(layout.parents) if p == -1]
        if len(tops) != 1:
            raise ValueError(
                f"Move Root on '{specs[0].label}': the chains solved with it hang from several top bones"
                f" ({', '.join(tops)}); lengthen them to one shared bone, or turn Move Root off"
            )
        check_movable_root(obj, tops[0], specs[0].label)
    chains = tuple(chain_names(obj, s) for s in specs) if chains is None else tuple(chains)
    # A bone stretches where a chain holding it has Stretch on (as that chain alone would).
    stretching = {n for s, chain in zip(specs, chains, strict=True) if s.use_stretch and not s.aims for n in chain}
    pose = obj.pose.bones
    w = tuple(float(pose[n].ik_stretch) if n in stretching else 0.0 for n in layout.names)
    check_no_stretch_scale(obj, [n for n, wi in zip(layout.names, w, strict=True) if wi == 0.0])
    if not any(wi > 0.0 for wi in w):
        return GroupRig(tuple(specs), layout, chains)
    inherit = tuple(rig.stretch.tree_inherit(obj, layout.names, layout.parents))
    return GroupRig(tuple(specs), layout, chains, w, inherit)


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
    """The core's words with its bone indices ('bone 3', the tree's order) given the bones' names.
    A zero-length link inside a chain is a bone whose child starts at its head (as Rigify's MCH-ROT
    bones): the bone itself has length, so the message names the child and what to do."""

    def zero(a: str, b: str) -> str:
        return (
            f"bone '{b}' starts at the head of its parent '{a}', so '{a}' adds no length to the chain (its turn"
            f" only turns '{b}' about that point) and the solver cannot place it: start the chain at '{b}'"
            " (a shorter Chain Length)"
        )

    def in_chain(m: re.Match) -> str:  # a chain's own message: its bones in order, the next its child
        k = int(m.group(1))
        if k + 1 >= len(names):
            return m.group(0).replace(f"bone {k}", f"bone '{names[k]}'")
        return zero(names[k], names[k + 1])

    # A tree's segment names the child (solvers.triangulation.tree: the bones' order is no chain's).
    text = re.sub(r"\bbone (\d+) has zero length \(bone (\d+) starts at its head\)",
                  lambda m: zero(names[int(m.group(1))], names[int(m.group(2))]), text)  # fmt: skip
    text = re.sub(r"\bbone (\d+) has zero length \(its two ends coincide\)", in_chain, text)
    return re.sub(r"\bbone (\d+)\b", lambda m: f"bone '{names[int(m.group(1))]}'", text)
