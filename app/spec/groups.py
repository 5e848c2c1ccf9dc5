"""Which chains are solved together: chains that share a bone form one group (transitively),
solved as one tree (`app.solve.solve_unit`); a chain sharing none is solved alone (a unit of one).

Blender's legacy IK merges only constraints whose chains end on the same root bone; here any
shared bone joins chains, so two chains never pull one bone in turn. Units (groups, or single
chains) keep the chain list's order, except that one hanging below another's bones is solved
after it.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from ... import rig
from . import ChainSpec


@dataclass(frozen=True)
class Unit:
    """Chains solved as one: indices into the specs given, in list order; the first leads (its
    solver, options, tolerance, iterations, limits, locks and influence serve the whole group)."""

    members: tuple[int, ...]
    bones: tuple[str, ...]  # the union of the members' bones

    @property
    def is_group(self) -> bool:
        return len(self.members) > 1


def chain_names(obj, spec: ChainSpec) -> tuple[str, ...]:
    return rig.chain_bone_names(obj, spec.tip, spec.chain_length, spec.use_tail)


def units(obj, specs: list[ChainSpec], chains: list | None = None) -> list[Unit]:
    """The specs' chains joined into groups where they share bones, in solving order (panel chain
    items serve too: only tip, chain_length and use_tail are read). `chains`: each spec's bones
    (chain_names) when the caller has read them already."""
    names = [chain_names(obj, s) for s in specs] if chains is None else chains
    owner = list(range(len(specs)))  # union-find over chain indices

    def find(i: int) -> int:
        while owner[i] != i:
            owner[i] = owner[owner[i]]
            i = owner[i]
        return i

    first: dict[str, int] = {}
    for i, chain in enumerate(names):
        for name in chain:
            j = first.setdefault(name, i)
            if j != i:
                a, b = find(i), find(j)
                owner[max(a, b)] = min(a, b)
    members: dict[int, list[int]] = {}
    for i in range(len(specs)):
        members.setdefault(find(i), []).append(i)
    pose = obj.pose.bones
    found = [Unit(tuple(group), tuple(dict.fromkeys(n for i in group for n in names[i]))) for group in members.values()]
    above = {}
    for unit in found:  # the bones a unit hangs from (a connected set of bones has one top bone)
        # Each chain is a walk up the parents, root first: the top is one of the members' roots,
        # the one with the fewest bones above it (its depth).
        above[unit] = min((_ancestors(pose[names[i][0]]) for i in unit.members), key=len)
    # List order, except that a unit hanging below another's bones comes after it.
    ordered: list[Unit] = []
    remaining = list(found)
    while remaining:
        unit = next(
            (u for u in remaining if not any(o is not u and above[u].intersection(o.bones) for o in remaining)),
            remaining[0],
        )
        ordered.append(unit)
        remaining.remove(unit)
    return ordered


def _ancestors(pose_bone) -> set[str]:
    out = set()
    while pose_bone.parent is not None:
        pose_bone = pose_bone.parent
        out.add(pose_bone.name)
    return out


def labels(obj, specs: list[ChainSpec], known: list[Unit] | None = None) -> list[str]:
    """Per spec: the label of the group it is solved in, '' when alone. `known`: units(obj, specs)
    when the caller has them."""
    out = [""] * len(specs)
    for unit in units(obj, specs) if known is None else known:
        if unit.is_group:
            label = group_label([specs[i] for i in unit.members])
            for i in unit.members:
                out[i] = label
    return out


def group_label(specs: list[ChainSpec]) -> str:
    """How reports and the panel name a group: its chains' labels joined."""
    return " + ".join(s.label for s in specs)


_seen: dict[str, tuple[tuple, list]] = {}  # armature (name_full) -> (its chains' bones and mutes, their units)


def panel_units(obj) -> list[tuple[int, ...]]:
    """The units (app.spec.groups.units) of `obj`'s unmuted panel chains, as chain indices; a chain whose
    bones cannot be found stands alone (its own solve reports why). Cached until a chain's bones
    or mute change, or `forget` (Live's handler runs this on every update; the panel on every draw)."""
    chains = obj.chain_ik.chains
    key = tuple((c.tip, c.chain_length, c.use_tail, c.mute) for c in chains)
    seen = _seen.get(obj.name_full)
    if seen is not None and seen[0] == key:
        return seen[1]
    valid, alone = [], []
    for i, c in enumerate(chains):
        if c.mute:
            continue
        try:
            chain_names(obj, c)
        except ValueError:
            alone.append((i,))
            continue
        valid.append(i)
    found = [tuple(valid[k] for k in unit.members) for unit in units(obj, [chains[i] for i in valid])] + alone
    _seen[obj.name_full] = (key, found)
    return found


def forget() -> None:
    """Bones may have been re-parented or renamed (edit mode, undo, a new file, a frame's changes)."""
    _seen.clear()


def membership(obj) -> dict[int, tuple[int, tuple[int, ...]]]:
    """Panel chain index -> (its group's number from 1, the group's chain indices, lead first), for
    chains in a group of two or more (the panel's list and settings show it)."""
    found = [members for members in panel_units(obj) if len(members) > 1]
    return {i: (number, members) for number, members in enumerate(found, 1) for i in members}


def effective(obj, specs: list[ChainSpec], known: list[Unit] | None = None) -> list[ChainSpec]:
    """The specs as they are solved: in each group, `led_by` its first chain. `known`: units(obj,
    specs) when the caller has them (led_by changes no chain's bones: they serve the result too)."""
    out = list(specs)
    for unit in units(obj, specs) if known is None else known:
        for i, spec in zip(unit.members, led_by([specs[i] for i in unit.members]), strict=True):
            out[i] = spec
    return out


def led_by(specs: list[ChainSpec]) -> list[ChainSpec]:
    """A group's specs with its lead's (the first's) solver settings on every member (method,
    options, tolerance, iterations, limits, locks, influence): what solves them, so reports name
    that method and measure "reached" against the tolerance that held."""
    lead = specs[0]
    shared = {
        "method": lead.method,
        "options": lead.options,
        "tolerance": lead.tolerance,
        "max_iterations": lead.max_iterations,
        "use_limits": lead.use_limits,
        "use_locks": lead.use_locks,
        "influence": lead.influence,
    }
    return [lead] + [dataclasses.replace(s, **shared) for s in specs[1:]]


def left_out(obj, items) -> list[tuple[str, str]]:
    """(chain, other chain) for panel chains `items` that share bones with an unmuted panel chain
    not among them (Act On: Selected, or one chain by index): those are solved without it."""
    chains = obj.chain_ik.chains
    chosen = {i for i, c in enumerate(chains) if any(c == item for item in items)}
    out = []
    for members in panel_units(obj):
        outside = [i for i in members if i not in chosen]
        if outside and len(outside) < len(members):
            out += [(chains[i].name, chains[outside[0]].name) for i in members if i in chosen]
    return out
