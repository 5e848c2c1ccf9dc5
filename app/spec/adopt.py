"""Adopt a rig's IK constraints as chains, and write chains back as IK constraints (behind
chain_ik.chains_from_constraints and chain_ik.constraints_from_chains, which report what these
return).

Adopting is idempotent: a constraint already adopted is recognised by its chain (tip and
constraint name) and updated, and the mute (or influence 0) an earlier adoption set on it is
not read back as the rig's own setting: `app.spec.adopt_records` keeps which one it set, with the
constraint, so this holds with the chain removed too (files from before it: see there). A
constraint that could never be solved is not adopted, and one that cannot be switched off for
good (drivers or keys set both its mute and its influence) is not either: the report says which
and why. Nothing is claimed that was not checked on the data after an update.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ...rig import ik_constraints
from .. import checks
from . import ChainSpec, add_chain, adopt_records, groups

# Chain fields set from a ConstraintChain of the same name.
FIELDS = (
    "use_tail",
    "chain_length",
    "target_bone",
    "pole_angle",
    "use_rotation",
    "rotation_weight",
    "influence",
    "use_stretch",
    "use_locks",
    "weight",
)


@dataclass
class Outcome:
    """What adopting or writing back did, as report lines."""

    done: list[str] = field(default_factory=list)  # chain names made / updated / written
    updated: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # "why" lines: not adopted / not written
    infos: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def _fill(item, chain: ik_constraints.ConstraintChain) -> None:
    item.tip, item.constraint, item.target = chain.bone, chain.constraint, chain.target
    for name in FIELDS:
        setattr(item, name, getattr(chain, name))
    item.pole_target, item.pole_subtarget = chain.pole, chain.pole_bone
    item.max_iterations = chain.max_iterations
    item.mute = chain.muted


def _never_solves(obj, chain: ik_constraints.ConstraintChain) -> str:
    """Why Solve would refuse the chain whatever the pose (a target riding on its own bones, say), or ''."""
    spec = ChainSpec(
        tip=chain.bone,
        chain_length=chain.chain_length,
        target=chain.target,
        target_bone=chain.target_bone,
        use_tail=chain.use_tail,
        pole=chain.pole,
        pole_bone=chain.pole_bone,
        use_rotation=chain.use_rotation,
        rotation_weight=chain.rotation_weight,
        name=chain.name,
    )
    try:
        checks.check_spec(obj, spec)
    except ValueError as exc:
        return str(exc)
    return ""


def _switch_off_plan(obj, con) -> tuple[str, str]:
    """How to switch `con` off so that it lasts on playback: ('MUTE' or 'INFLUENCE', a note) or
    ('', why it cannot be). Mute where nothing else sets the mute; else influence 0 where nothing
    sets the influence (Rigify's pole switch drives the mute)."""
    mute_by = ik_constraints.set_by(obj, con, "mute")
    if not mute_by:
        return "MUTE", ""
    influence_by = ik_constraints.set_by(obj, con, "influence")
    if not influence_by:
        return "INFLUENCE", f"{mute_by} sets the mute of '{con.name}', so its influence was set to 0 instead"
    return "", (
        f"{mute_by} sets its mute and {influence_by} its influence, so it cannot be switched off for the chain"
        " (with Mute Constraints off it is adopted and left on)"
    )


def _same_goal(item, chain: ik_constraints.ConstraintChain) -> bool:
    """Chain `item` still reaches for what `chain` (its constraint read now) does."""
    return (item.target, item.target_bone, item.pole_target, item.pole_subtarget, item.chain_length, item.use_tail) == (
        chain.target,
        chain.target_bone,
        chain.pole,
        chain.pole_bone,
        chain.chain_length,
        chain.use_tail,
    )


def _adopted_off(obj, settings, pbone, con, item, chain, out: Outcome) -> str:
    """How an earlier adoption switched `con` off ('MUTE' or 'INFLUENCE'), while that holds; ''."""
    how = adopt_records.holding(obj, settings, pbone.name, con)
    if how or settings.switch_offs_recorded:
        return how
    how = adopt_records.legacy_switch_off(obj, con, item, item is not None and _same_goal(item, chain))
    if how:
        adopt_records.add(settings, pbone.name, con.name, how, item.mute, item.influence)
        what = "muted" if how == "MUTE" else "at influence 0"
        out.infos.append(
            f"chain '{item.name}': '{con.name}' on '{pbone.name}' is {what} and the chain made from it matches it,"
            " so it is taken as switched off by an earlier adoption (this file is from before adoption recorded it):"
            " the chain keeps its own mute and influence"
        )
    return how


def _off_in_the_rig(obj, con, chain) -> str:
    """Why the chain adopted from `con` comes out switched off by the rig's own setting (a mute or
    influence 0 no adoption on record set, and no driver or keys set), with how to switch it on; ''."""
    where = f"'{con.name}' on '{chain.bone}'"
    if chain.muted and not ik_constraints.set_by(obj, con, "mute"):
        return (
            f"chain '{chain.name}': {where} is muted (not by an adoption on record), so the chain is muted too:"
            " untick the chain's Mute to use it"
        )
    if chain.influence == 0.0 and not ik_constraints.set_by(obj, con, "influence"):
        return (
            f"chain '{chain.name}': {where} has influence 0 (not set by an adoption on record), so the chain's is 0"
            " too: raise the chain's Influence to use it"
        )
    return ""


def adopt(context, obj, mute_constraints: bool) -> Outcome:
    """One chain per IK constraint of `obj` (updated where one exists); `mute_constraints`
    switches the adopted constraints off so the chains' result shows."""
    found = ik_constraints.ik_constraints(obj)
    if not found:
        raise ValueError(f"armature '{obj.name}' has no IK constraints")
    settings, out = obj.chain_ik, Outcome()
    adopt_records.prune(obj, settings)
    # (bone, constraint, chain index, how): indices, not items, as the chain list grows below.
    switched: list[tuple[str, str, int, str]] = []
    for pbone, con in found:
        chain = ik_constraints.read(obj, pbone, con)
        if isinstance(chain, str):
            out.skipped.append(chain)
            continue
        where = f"'{con.name}' on '{pbone.name}'"
        index = next(
            (i for i, c in enumerate(settings.chains) if c.tip == chain.bone and c.constraint == chain.constraint),
            None,
        )
        item = settings.chains[index] if index is not None else None
        ours = _adopted_off(obj, settings, pbone, con, item, chain, out)
        if ours:
            # Off because an earlier adoption switched it off: not the rig's setting. An existing
            # chain keeps its own value; a new one takes the constraint's from before.
            mute, influence = adopt_records.own_values(settings, pbone.name, con.name)
            if ours == "MUTE":
                chain.muted = item.mute if item is not None else mute
            else:
                chain.influence = item.influence if item is not None else influence
        reason = _never_solves(obj, chain)
        how = ""
        if not reason and mute_constraints:
            how, reason = _switch_off_plan(obj, con)
        if not how and reason:
            out.skipped.append(f"{where}: {reason}")
            continue
        if index is None:
            index = add_chain(obj)
            item = settings.chains[index]
            item.name = chain.name
            out.done.append(chain.name)
        else:
            out.updated.append(chain.name)
        _fill(item, chain)
        out.warnings += [f"chain '{chain.name}': not supported, {note}" for note in chain.unsupported]
        if not ours:
            note = _off_in_the_rig(obj, con, chain)
            if note:
                out.infos.append(note)
        if how:
            adopt_records.switch_off(settings, pbone.name, con, how)
            switched.append((pbone.name, con.name, index, how))
            if reason:
                out.infos.append(f"chain '{chain.name}': {reason}")
    settings.switch_offs_recorded = True
    if out.done or out.updated:
        settings.active_index = len(settings.chains) - 1
    if switched:
        context.view_layer.update()  # drivers run: what they undo shows now
        for bone, name, index, how in switched:
            con = obj.pose.bones[bone].constraints[name]
            if not adopt_records.is_off(obj, con, how):
                out.warnings.append(
                    f"chain '{settings.chains[index].name}': '{name}' is on again after an update (something sets"
                    f" its {adopt_records.PROPERTY[how]})"
                )
    return out


# What a chain has that an IK constraint cannot carry.
def _write_problem(obj, item) -> str:
    if item.pin:
        return (
            "it is pinned, and an IK constraint cannot hold a tip where the pose has it (without a target Blender"
            " marks it invalid; with one it pulls the tip to the target)"
        )
    target_bone = item.target_bone if item.target is not None and item.target.type == "ARMATURE" else ""
    pole_bone = item.pole_subtarget if item.pole_target is not None and item.pole_target.type == "ARMATURE" else ""
    problem = ik_constraints.goal_problem(obj, item.target, target_bone, item.pole_target, pole_bone)
    if not problem and not item.use_tail and obj.pose.bones[item.tip].parent is None:
        problem = "Use Tail is off on a root bone"
    return problem and f"{problem}, and Blender would mark the constraint invalid"


def _constraint_weights(obj, items) -> list[float]:
    """Each chain's Weight as an IK constraint's position Weight (0.01-1): the chains solved
    together (app.spec.groups) scaled alike so the largest is at most 1, keeping their ratios (a
    tree's targets share by ratio); below 0.01 raised to it."""
    try:
        found = [unit.members for unit in groups.units(obj, items)]
    except ValueError:  # a chain whose bones cannot be found: each alone
        found = [(i,) for i in range(len(items))]
    out = [1.0] * len(items)
    for members in found:
        top = max(items[i].weight for i in members)
        scale = max(top / ik_constraints.CONSTRAINT_WEIGHT_MAX, 1.0)
        for i in members:
            out[i] = max(items[i].weight / scale, ik_constraints.CONSTRAINT_WEIGHT_MIN)
    return out


def write_back(context, obj, items) -> Outcome:
    """Write chain items `items` of `obj` as IK constraints on their tip bones (the one each came
    from, or a new one). Chains an IK constraint cannot express are not written; the outcome says why."""
    if not items:
        raise ValueError("no chain is selected")
    bad = [c.name for c in items if c.tip not in obj.pose.bones]
    if bad:
        raise ValueError(f"no tip bone on {', '.join(bad)}")
    out = Outcome()
    writable = []
    for item in items:
        problem = _write_problem(obj, item)
        if problem:
            out.skipped.append(f"chain '{item.name}': {problem}")
        else:
            writable.append(item)
    written = []
    for item, weight in zip(writable, _constraint_weights(obj, writable), strict=True):
        pbone = obj.pose.bones[item.tip]
        con = pbone.constraints.get(item.constraint) if item.constraint else None
        if con is None or con.type != "IK":
            con = pbone.constraints.new("IK")
            item.constraint = con.name
        ik_constraints.write(pbone, con, item, weight)
        adopt_records.forget(obj.chain_ik, item.tip, con.name)  # the constraint now says what the chain does
        if abs(weight - item.weight) > 1e-6:
            out.infos.append(
                f"chain '{item.name}': Weight {item.weight:g} written as {con.weight:.3g} (an IK constraint's"
                " Weight is 0.01 to 1; the chains it shares bones with are scaled alike, ratios kept)"
            )
        if item.priority:
            out.warnings.append(
                f"chain '{item.name}': priority {item.priority} is not carried (IK constraints have none)"
            )
        for prop in ("mute", "influence"):
            by = ik_constraints.set_by(obj, con, prop)
            if by:
                out.warnings.append(f"chain '{item.name}': {by} sets the {prop} of '{con.name}', not the chain")
        written.append((item, con))
        out.done.append(item.name)
    context.view_layer.update()
    for item, con in written:
        if not con.is_valid:
            out.warnings.append(f"chain '{item.name}': Blender marks the IK constraint '{con.name}' invalid")
    return out
