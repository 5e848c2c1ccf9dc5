"""The planted leg's solve for a bake that honours contacts (app.bake.contact_targets): holds solved
for their targets by the analytic two-bone leg, eases in joint space, the ground clamp after the
solve, and how far a hold must rise for the leg to reach it (without Move Root; with it,
app.bake.contact_hips lowers the hips instead)."""

from __future__ import annotations

import functools
from dataclasses import replace

import numpy as np

from ...rig import plant_read, pose_frames
from ...rig.ground import GroundProbe, same_rays
from ...solvers import plant, plant_legs, quat
from ...solvers.contacts import window_frames
from ..spec import ChainSpec
from . import contact_eases, contact_pitch

# A held ankle stays within this share of the leg's reach from the hip on every frame of its
# contact: the knee never quite straightens (its angle changes fastest there).
REACH_SHARE = 0.995
# The knee's swivel is the input's summed over this long either side of a frame (plant_legs.swivel).
SWIVEL_SECONDS = 0.1


def _frames(seconds: float, fps: float) -> int:
    return max(1, int(round(seconds * fps)))


def held_reach(leg: plant_read.LegFrames, softness: float = 0.0) -> float:
    """The world distance from the hip a held ankle is kept within when the hold is raised (Move Root
    off): REACH_SHARE of the leg, and no farther than where soft IK (`softness`, a share of the reach:
    solvers.common.soft) still puts the ankle on its goal, D (1 - softness): beyond it the soft leg
    falls short of its point on every frame (a user trial: the CMU walk, legs x0.8, softness 0.1,
    missed by up to 22.6 mm on all 241 planted frames)."""
    heads = leg.heads[0]
    scale = float(np.cbrt(abs(pose_frames.det3(leg.world[0, :3, :3]))))
    # (the share first, as the figures always were: the same reach to the bit at softness 0)
    share = min(REACH_SHARE, 1.0 - float(softness))
    return share * scale * float(np.linalg.norm(heads[1] - heads[0]) + np.linalg.norm(heads[2] - heads[1]))


def lifts(plan: plant.PlantPlan, leg: plant_read.LegFrames, ankles: np.ndarray, softness: float = 0.0) -> np.ndarray:
    """(F,) the clearance above the ground each hold needs (on its first frame) for the leg to reach
    it on all its frames within `held_reach` (solvers.plant_legs.reach_lift; `ankles` (F, 3) the
    ankle's offset from the held point per frame); 0 elsewhere. Where the hips do not move (Move
    Root off; with it, contact_hips lowers them first and this is 0 but for feet beyond reach
    sideways), where a capture's foot slid forward during its contact and the leg is nearly
    straight, holding the foot where it landed means holding it above the ground: the figures give
    by how much (`float_largest`). A hold that let the leg straighten instead would miss its point
    and pop the knee."""
    reach = held_reach(leg, softness)
    hips = leg.to_world(leg.heads[:, 0])
    lifts = np.zeros(len(ankles))
    if plan.holds:  # every hold at once (each its own figures)
        points = np.array([hold.point for hold in plan.holds], dtype=float)
        spans = [(hold.start, hold.end) for hold in plan.holds]
        lifts[[hold.start for hold in plan.holds]] = plant_legs.reach_lifts(points, ankles, hips, spans, reach)
    return lifts


def knee_poles(leg: plant_read.LegFrames, fps: float) -> np.ndarray:
    """(F, 3) the side each frame's knee bends to (plant_legs.swivel over SWIVEL_SECONDS)."""
    heads = leg.heads
    return plant_legs.swivel(heads[:, 0], heads[:, 1], heads[:, 2], _frames(SWIVEL_SECONDS, fps), leg.toe - heads[:, 2])


def positional(
    leg: plant_read.LegFrames, target: np.ndarray, softness: float, fps: float, tilt=None, rows=None, pole=None
) -> tuple:
    """The leg's local rotations (F, 3, 4) with its tip on world `target` (F, 3), the foot keeping
    its input world rotation (turned by `tilt` (F, 4), world, where given: the ground's slope),
    and the ankle's world distance from its goal per frame. `rows`: solve those frames only
    (`target` and `tilt` given for them); `pole`: the knees' swivel on every frame (knee_poles)."""
    if pole is None:
        pole = knee_poles(leg, fps)
    foot = leg.heel_world - leg.toe_world  # the whole leg's (cached: several solves read its rows)
    if rows is not None:
        leg, pole, foot = leg.rows(rows), pole[rows], foot[rows]
    heads = leg.heads
    own = None
    if tilt is not None:
        foot = quat.rotate(tilt, foot)
        own = _to_armature(leg, tilt)
    goal = leg.to_local(target + foot)
    turns = plant_legs.leg_turns(heads[:, 0], heads[:, 1], heads[:, 2], goal, softness, pole)
    # The three bones in one call: the thigh's parent and the foot's own turn are the identity
    # (the foot keeps its world rotation, or is tilted by `own`).
    identity = np.zeros_like(turns.thigh)
    identity[:, 0] = 1.0
    parents = plant_legs.side_by_side([identity, turns.thigh, turns.shin])
    owns = plant_legs.side_by_side([turns.thigh, turns.shin, identity if own is None else own])
    basis = plant_legs.basis_after(leg.basis, leg.rotations, parents, owns)
    return basis, quat.norm(turns.ankle - goal) * leg.scales()


def positional_legs(jobs: list[tuple], softness: float, fps: float) -> list[tuple]:
    """`positional` of several legs in one pass (its fixed cost once): `jobs` (leg, target, tilt,
    rows, pole) as positional's arguments (tilt None for all of them, or given for all), each
    leg's (rotations, errors) as positional gives them (each frame is solved on its own)."""
    if any((job[2] is None) != (jobs[0][2] is None) for job in jobs):
        raise ValueError("positional_legs: a tilt for every leg or for none")
    parts, poles = [], []
    for leg, _, _, rows, pole in jobs:
        if pole is None:
            pole = knee_poles(leg, fps)
        if rows is not None and np.array_equal(rows, np.arange(len(leg.world))):
            rows = None  # every frame in order: the leg itself (its rows' copies would be the same figures)
        parts.append(leg if rows is None else leg.rows(rows))
        poles.append(pole if rows is None else pole[rows])
    tilt = None if jobs[0][2] is None else np.concatenate([job[2] for job in jobs])
    target = np.concatenate([job[1] for job in jobs])
    basis, errors = positional(plant_read.joined(parts), target, softness, fps, tilt, pole=np.concatenate(poles))
    ends = np.cumsum([len(part.world) for part in parts])[:-1]
    return list(zip(np.split(basis, ends), np.split(errors, ends), strict=True))


def planted_solves(jobs: list[tuple], fps: float, window: int | None = None) -> list[tuple]:
    """Per job (leg, plan, softness, tilt), the leg's positional solve for its plan's targets,
    (rotations, errors, knee poles), on the frames the plant reads it on (plan.changed, and every
    hold's frames: a hold's first frame may be its input tip; with `window`, the eases' window of
    contact_eases.joint_eases, not the frames it never reads: its eases set them): elsewhere the
    input's rotations and no error. Legs alike in softness and in having a tilt or not solved in one
    pass (positional_legs; each frame's figures the same as one by one, or as solved on every frame)."""
    poles = [knee_poles(leg, fps) for leg, _, _, _ in jobs]
    rows = []
    for leg, plan, _, _ in jobs:
        changed = plan.changed
        if window is not None:
            changed = changed & ~contact_eases.unread_frames(plan, len(leg.basis), window)
        read = changed | (plan.weight == 1.0)
        rows.append(np.flatnonzero(read))
    out: list = [None] * len(jobs)
    kinds: dict[tuple, list[int]] = {}
    for j, (leg, _, softness, tilt) in enumerate(jobs):
        if not len(rows[j]):  # nothing read: the input as it is
            out[j] = (leg.basis.copy(), np.zeros(len(leg.basis)), poles[j])
            continue
        kinds.setdefault((float(softness), tilt is None), []).append(j)
    for (softness, _), members in kinds.items():
        solved = positional_legs(
            [
                (
                    jobs[j][0],
                    jobs[j][1].target[rows[j]],
                    None if jobs[j][3] is None else jobs[j][3][rows[j]],
                    rows[j],
                    poles[j],
                )
                for j in members
            ],
            softness,
            fps,
        )
        for j, (basis, errors) in zip(members, solved, strict=True):
            leg = jobs[j][0]
            full, misses = leg.basis.copy(), np.zeros(len(leg.basis))
            full[rows[j]], misses[rows[j]] = basis, errors
            out[j] = (full, misses, poles[j])
    return out


def _to_armature(leg: plant_read.LegFrames, turns: np.ndarray) -> np.ndarray:
    """(F, 4) world turns as turns in armature space (the armature's rotation, scale off)."""
    rotation = leg.armature_turn()
    return quat.multiply(quat.multiply(quat.conjugate(rotation), turns), rotation)


def ground_tilts(plan: plant.PlantPlan, normals: np.ndarray) -> np.ndarray:
    """(F, 4) world turns tilting a held foot with the ground: on each hold's frames the shortest
    turn from world up to the normal under its point (`normals`: one per hold), elsewhere none
    (the eases fade the hold's correction, tilt included)."""
    tilt = np.zeros((len(plan.weight), 4))
    tilt[:, 0] = 1.0
    normals = np.asarray(normals, dtype=float).reshape(len(plan.holds), 3)
    found = np.flatnonzero(np.all(np.isfinite(normals), axis=1))
    if len(found):  # every hold's turn in one call (each its own figures, as hold by hold)
        shape = (len(found), 3)
        up, side = np.broadcast_to([0.0, 0.0, 1.0], shape), np.broadcast_to([1.0, 0.0, 0.0], shape)
        for h, turn in zip(found.tolist(), quat.swing(up, normals[found], side), strict=True):
            tilt[plan.holds[h].start : plan.holds[h].end] = turn
    return tilt


CLAMP_SLACK = 1e-7  # world units: a tip this little below its floor is rounding, not a crossing


def solve_legs(jobs: list[tuple], fps: float) -> list[tuple]:
    """Per job (leg, plan, softness, tilt, ground_at, largest, first): (the leg's local rotations
    (F, 3, 4), the ankle's world distance from its goal on hold and clamp frames (F,), the frames
    changed (F,), where the tip then is (F, 3) world (held frames: their target)): holds solved for
    the planned tip, eases in joint space, and then, on any frame where that leaves the tip below
    the floor (the ground: plan.floor), the tip solved onto it (a clamp after the solve).
    `tilt` (F, 4): the held foot's turn with the ground's slope (ground_tilts), or None.
    `ground_at(points, rows)`: the ground's heights under world points (R, 3) on frames `rows`, or
    None (no ground); it is asked on the frames not held only (the clamp's).
    `largest`: the input's largest joint speed (rad/s): where given, a push-off that would turn a
    joint faster than about that has the foot's pitch reworked (app.bake.contact_pitch).
    `first`: the leg's planted_solves result, or None to solve it here.
    Legs alike (softness, tilt or not, ground or not, blend, push-off or not) are joined into one
    timeline (their frames one after the other, no ease crossing from one into the next) and solved
    in one pass, for the fixed cost of one leg: each frame's figures its own (a leg alone is a job
    list of one)."""
    firsts = planted_solves([job[:4] for job in jobs if job[6] is None], fps, window_frames(fps))[::-1]
    jobs = [job if job[6] is not None else (*job[:6], firsts.pop()) for job in jobs]
    kinds: dict[tuple, list[int]] = {}
    for j, (_, plan, softness, tilt, _, largest, _) in enumerate(jobs):
        pushed = largest is not None and largest > 0.0
        kinds.setdefault((float(softness), tilt is None, plan.ground is None, plan.blend, pushed), []).append(j)
    out: list = [None] * len(jobs)
    for members in kinds.values():
        for j, result in zip(members, _solve_joined([jobs[j] for j in members], fps), strict=True):
            out[j] = result
    return out


def _joined_plan(plans: list[plant.PlantPlan], starts: list[int]) -> plant.PlantPlan:
    """Several legs' plans as one over their joined frames (each hold moved to its leg's frames)."""
    if len(plans) == 1:
        return plans[0]

    def stack(name):
        return np.concatenate([getattr(p, name) for p in plans])

    holds = [replace(h, start=h.start + s, end=h.end + s) for p, s in zip(plans, starts, strict=True) for h in p.holds]
    ground = None if plans[0].ground is None else stack("ground")
    return plant.PlantPlan(
        target=stack("target"),
        weight=stack("weight"),
        changed=stack("changed"),
        floor=stack("floor"),
        ground=ground,
        holds=holds,
        blend=plans[0].blend,
    )


def _solve_joined(jobs: list[tuple], fps: float) -> list[tuple]:
    legs = [job[0] for job in jobs]
    ends = np.cumsum([len(leg.world) for leg in legs]).tolist()
    starts = [0, *ends[:-1]]
    leg = legs[0] if len(legs) == 1 else plant_read.joined(legs)
    plan = _joined_plan([job[1] for job in jobs], starts)
    softness = jobs[0][2]
    tilt = None if jobs[0][3] is None else np.concatenate([job[3] for job in jobs])
    solved, errors, pole = (np.concatenate([job[6][i] for job in jobs]) for i in range(3))
    largest = [job[5] for job in jobs]
    # The eases move fastest where the input's joints turn slowest (contact_pitch.ease_budget).
    budget = None
    k = window_frames(fps)
    limit = 0.0
    if largest[0] is not None and largest[0] > 0.0:
        budget = functools.cache(
            lambda: np.concatenate(
                [contact_pitch.ease_budget(one.basis, fps, most) for one, most in zip(legs, largest, strict=True)]
            )
        )
        limit = [contact_pitch.TRIGGER * most * k / fps for most in largest]
    out, changed = contact_eases.joint_eases(plan, leg.basis, solved, budget, k, limit, ends)
    if budget is not None and plan.holds:

        def solve_rows(rows, turns):
            return positional(leg, plan.target[rows], softness, fps, turns, rows, pole)[0]

        pitched = contact_pitch.push_off(
            leg, plan, solved, out, changed, solve_rows, fps, largest, tilt, budget, limit, ends
        )
        if pitched is not None:
            solved, out, changed = pitched
    errors = np.where(plan.weight == 1.0, errors, 0.0)
    # Holds sit on their floor by construction (rounding aside); eases and swings are clamped: where
    # the tip now is, found on those frames alone (held frames: their target, as PlantedChain reads them).
    free = plan.weight < 1.0
    toe = plan.target.copy()
    loose = np.flatnonzero(free)
    if len(loose):
        part = leg.rows(loose)
        heads = part.heads
        turns = plant_legs.leg_changes(part.rotations, part.basis, out[loose])  # the clamp's too
        points = plant_legs.leg_points(
            heads[:, 0], heads[:, 1], heads[:, 2], part.toe, part.rotations, part.basis, out[loose], turns
        )
        toe[loose] = part.to_world(points[2])
    floor = plan.floor.copy()
    for start, end, job in zip(starts, ends, jobs, strict=True):
        ground_at = job[4]
        if ground_at is not None and np.any(free[start:end]):  # the ground under where the tip now is,
            rows = np.flatnonzero(free[start:end])  # where it may be clamped (plan.floor: under the input's)
            mine = floor[start:end]
            under = ground_at(toe[start:end][rows], rows)
            mine[rows] = np.maximum(mine[rows], np.where(np.isinf(mine[rows]), mine[rows], under))
    low = (toe[:, 2] < floor - CLAMP_SLACK) & free
    if np.any(low):
        # The tip lifted onto the floor from the pose it has (its foot's rotation and knee's swivel
        # kept: plant_legs.raised), not solved afresh from the input's: an ease's frame keeps what
        # the ease holds of the hold's correction, so no joint pops where a clamp meets the ease
        # (start_walk_stop, legs +20%: the foot turned 14.5° in the one frame after a hold).
        sub = np.flatnonzero(low[loose])  # of the free frames (only those are clamped)
        rows = loose[sub]
        up = np.zeros((len(rows), 3))
        up[:, 2] = floor[rows] - toe[rows, 2]
        lift = np.einsum("fij,fj->fi", part.inverse3()[sub], up)  # a world move in armature space
        h = heads[sub]
        out[rows], misses = plant_legs.raised(
            h[:, 0],
            h[:, 1],
            h[:, 2],
            part.toe[sub],
            part.rotations[sub],
            part.basis[sub],
            out[rows],
            lift,
            softness,
            turns[sub],
        )
        errors[rows] = misses * part.scales()[sub]
        toe[rows, 2] = floor[rows]
        changed |= low
    return [(out[a:b], errors[a:b], changed[a:b], toe[a:b]) for a, b in zip(starts, ends, strict=True)]


def ground_under(
    probe: GroundProbe | None, spec: ChainSpec, points: np.ndarray, frames, reach: float, known=None
) -> np.ndarray | None:
    """(F,) ground heights under world `points`, or None without a ground; ValueError where none.
    `known`: (points (F, 3), their heights (F,)) found before with this `reach` (the planning's, under
    the input tip): a point whose ray starts where that one's did (rig.ground.same_rays) takes its
    height, no ray cast again."""
    if probe is None:
        return None
    if known is None:
        heights = probe.heights_below(points, reach)
    else:
        same = same_rays(points, known[0])
        heights = np.empty(len(points))
        heights[same] = known[1][same]
        if not same.all():
            heights[~same] = probe.heights_below(points[~same], reach)
    missing = np.flatnonzero(np.isnan(heights))
    if len(missing):
        raise ValueError(
            f"the foot of chain '{spec.label}' is not above the ground '{probe.name}' at frame"
            f" {int(frames[missing[0]])} ({len(missing)} frame(s) in all): extend the ground under it, or pick"
            " none; nothing was keyed"
        )
    return heights
