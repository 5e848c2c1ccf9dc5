"""The planted leg's solve for a bake that honours contacts (app.bake.contact_targets): holds solved
for their targets by the analytic two-bone leg, eases in joint space, the ground clamp after the
solve, and how far a hold must rise for the leg to reach it (without Move Root; with it,
app.bake.contact_hips lowers the hips instead)."""

from __future__ import annotations

import math

import numpy as np

from ...rig import plant_read, pose_frames
from ...solvers import plant, plant_legs, quat

# A held ankle stays within this share of the leg's reach from the hip on every frame of its
# contact: the knee never quite straightens (its angle changes fastest there).
REACH_SHARE = 0.995
# The knee's swivel is the input's summed over this long either side of a frame (plant_legs.swivel).
SWIVEL_SECONDS = 0.1


def _frames(seconds: float, fps: float) -> int:
    return max(1, int(round(seconds * fps)))


def lifts(plan: plant.PlantPlan, leg: plant_read.LegFrames, ankles: np.ndarray) -> np.ndarray:
    """(F,) the clearance above the ground each hold needs (on its first frame) for the leg to reach
    it on all its frames within REACH_SHARE (solvers.plant_legs.reach_lift; `ankles` (F, 3) the
    ankle's offset from the held point per frame); 0 elsewhere. Where the hips do not move (Move
    Root off; with it, contact_hips lowers them first and this is 0 but for feet beyond reach
    sideways), where a capture's foot slid forward during its contact and the leg is nearly
    straight, holding the foot where it landed means holding it above the ground: the figures give
    by how much (`float_largest`). A hold that let the leg straighten instead would miss its point
    and pop the knee."""
    heads = leg.heads[0]
    scale = float(np.cbrt(abs(pose_frames.det3(leg.world[0, :3, :3]))))
    reach = REACH_SHARE * scale * float(np.linalg.norm(heads[1] - heads[0]) + np.linalg.norm(heads[2] - heads[1]))
    hips = leg.to_world(leg.heads[:, 0])
    lifts = np.zeros(len(ankles))
    for hold in plan.holds:
        frames = slice(hold.start, hold.end)
        lifts[hold.start] = plant_legs.reach_lift(hold.point, ankles[frames], hips[frames], reach)
    return lifts


def positional(leg: plant_read.LegFrames, target: np.ndarray, softness: float, fps: float, tilt=None) -> tuple:
    """The leg's local rotations (F, 3, 4) with its tip on world `target` (F, 3), the foot keeping
    its input world rotation (turned by `tilt` (F, 4), world, where given: the ground's slope),
    and the ankle's world distance from its goal per frame."""
    heads = leg.heads
    foot = leg.heel_world - leg.toe_world
    own = None
    if tilt is not None:
        foot = quat.rotate(tilt, foot)
        own = _to_armature(leg, tilt)
    goal = leg.to_local(target + foot)
    pole = plant_legs.swivel(heads[:, 0], heads[:, 1], heads[:, 2], _frames(SWIVEL_SECONDS, fps), leg.toe - heads[:, 2])
    turns = plant_legs.leg_turns(heads[:, 0], heads[:, 1], heads[:, 2], goal, softness, pole)
    basis = np.stack(
        [
            plant_legs.basis_after(leg.basis[:, 0], leg.rotations[:, 0], None, turns.thigh),
            plant_legs.basis_after(leg.basis[:, 1], leg.rotations[:, 1], turns.thigh, turns.shin),
            plant_legs.basis_after(leg.basis[:, 2], leg.rotations[:, 2], turns.shin, own),
        ],
        axis=1,
    )
    scale = np.cbrt(np.abs(pose_frames.det3(leg.world[:, :3, :3])))
    return basis, np.linalg.norm(turns.ankle - goal, axis=1) * scale


def _to_armature(leg: plant_read.LegFrames, turns: np.ndarray) -> np.ndarray:
    """(F, 4) world turns as turns in armature space (the armature's rotation, scale off)."""
    three = leg.world[:, :3, :3] / np.linalg.norm(leg.world[:, :3, :3], axis=-2, keepdims=True)
    rotation = quat.from_matrix(three)
    return quat.multiply(quat.multiply(quat.conjugate(rotation), turns), rotation)


def ground_tilts(plan: plant.PlantPlan, normals: np.ndarray) -> np.ndarray:
    """(F, 4) world turns tilting a held foot with the ground: on each hold's frames the shortest
    turn from world up to the normal under its point (`normals`: one per hold), elsewhere none
    (the eases fade the hold's correction, tilt included)."""
    tilt = np.zeros((len(plan.weight), 4))
    tilt[:, 0] = 1.0
    up = np.array([0.0, 0.0, 1.0])
    for hold, normal in zip(plan.holds, normals, strict=True):
        if np.all(np.isfinite(normal)):
            tilt[hold.start : hold.end] = quat.swing(up, normal, np.array([1.0, 0.0, 0.0]))
    return tilt


CLAMP_SLACK = 1e-7  # world units: a tip this little below its floor is rounding, not a crossing


def _joint_eases(plan: plant.PlantPlan, inputs: np.ndarray, solved: np.ndarray) -> tuple:
    """((F, 3, 4) the leg's local rotations, (F,) the frames they change): `solved` (the tip on its
    target) on hold and clamp frames; after a hold, the input's with the correction of its last
    frame faded out (solvers.plant_legs.faded) over the `plan.blend` frames (issue 21 item 2: then
    the leg plays its input: the swing keeps its height), into the next hold's correction where that
    starts sooner; before it, the ground snap's correction of its first frame faded in over the
    plan's ease-in frames. `inputs`: the input's local rotations (with the hips lowered, the leg
    solved for the input's tip: contact_hips.kept_feet)."""
    out = np.where(plan.changed[:, None, None], solved, inputs)
    changed = plan.changed.copy()
    frames = len(inputs)
    eased = np.zeros(frames, dtype=bool)  # frames an ease-out has set (an ease-in adds to them)
    starts = [h.start for h in plan.holds[1:]] + [frames]
    crossed = False  # the previous ease ran into this hold: it faded into this hold's correction
    for hold, following in zip(plan.holds, starts, strict=True):
        last = hold.end - 1
        # The three bones at once: (3, 4) corrections of the hold's last frame.
        corrections = quat.multiply(solved[last], quat.conjugate(inputs[last]))
        length = plan.blend
        end = hold.end + int(math.ceil(length)) + 1
        ease_in = 0 if crossed else hold.ease_in
        crossed = end > following < frames
        if crossed:  # fade from this hold's correction into the next one's over the gap
            after = np.arange(hold.end, following)
            weight = plant.smooth((after - last) / float(following - last))
            target = quat.multiply(solved[following], quat.conjugate(inputs[following]))
            step = plant_legs.slerp_identity(
                np.broadcast_to(quat.multiply(quat.conjugate(corrections), target), (len(after), 3, 4)), weight
            )
            out[after] = quat.normalize(quat.multiply(quat.multiply(corrections, step), inputs[after]))
        else:
            after = np.arange(hold.end, min(end, frames))
            weight = plant.ease(after - last, length)
            out[after] = plant_legs.faded(inputs[after], corrections, weight)
        eased[after] = changed[after] = True
        if ease_in:
            before = hold.start - np.arange(1, ease_in + 1)
            weight = plant.ease(np.arange(1, ease_in + 1), ease_in)
            base = np.where(eased[before, None, None], out[before], inputs[before])
            correction = quat.multiply(solved[hold.start], quat.conjugate(inputs[hold.start]))
            out[before] = plant_legs.faded(base, correction, weight)
    return out, changed


def solve_leg(
    leg: plant_read.LegFrames, plan: plant.PlantPlan, softness: float, fps: float, tilt=None, ground_at=None
) -> tuple:
    """(the leg's local rotations (F, 3, 4), the ankle's world distance from its goal on hold and
    clamp frames (F,), the frames changed (F,), where the tip then is (F, 3) world): holds solved
    for the planned tip, eases in joint space, and then, on any frame where that leaves the tip
    below the floor (the ground: plan.floor), the tip solved onto it (a clamp after the solve).
    `tilt` (F, 4): the held foot's turn with the ground's slope (ground_tilts), or None.
    `ground_at(points)`: the ground's heights under world points (F, 3), or None (no ground)."""
    solved, errors = positional(leg, plan.target, softness, fps, tilt)
    out, changed = _joint_eases(plan, leg.basis, solved)
    errors = np.where(plan.weight == 1.0, errors, 0.0)
    heads = leg.heads
    points = plant_legs.leg_points(heads[:, 0], heads[:, 1], heads[:, 2], leg.toe, leg.rotations, leg.basis, out)
    toe = leg.to_world(points[2])
    floor = plan.floor
    if ground_at is not None:  # the ground under where the tip is now (plan.floor: under the input's)
        floor = np.maximum(floor, np.where(np.isinf(floor), floor, ground_at(toe)))
    # Holds sit on their floor by construction (rounding aside); eases and swings are clamped.
    low = (toe[:, 2] < floor - CLAMP_SLACK) & (plan.weight < 1.0)
    if np.any(low):
        lifted = toe.copy()
        lifted[:, 2] = np.maximum(toe[:, 2], floor)
        clamped, missed = positional(leg, lifted, softness, fps)
        out[low], errors[low], toe[low] = clamped[low], missed[low], lifted[low]
        changed |= low
    return out, errors, changed, toe
