"""The hips lowered for planted feet beyond reach (issue 21 item 2: "the unit's movable root
(move_root) lowers or shifts the hips by the least amount"), for app.bake.contact_targets.

Switch: the first chain with contacts has Move Root on. The hips: the nearest bone all the
planted legs hang from whose head is free (not connected to its parent), e.g. the CMU rig's hips.
Per frame, the least downward offset of the hips (world) that brings every held ankle within
REACH_SHARE of its leg's reach (less the chain's soft-IK zone, where soft IK would pull the
ankle short of its goal); then a one-sided envelope (each frame's need eased out over
EASE_SECONDS (at least `contact_blend` frames) either side, the largest taken), so the hips go down before the leg
straightens and come back up after, without a new pop. A held ankle the hips cannot bring within
reach by going down (farther sideways than the reach) keeps today's hold lift.

The offset moves the legs' input (every joint of a leg translates with the hips), the legs are
then solved as before; the hips' location channel is keyed on the frames it changed (and the
frame either side, at its input value), through rig.root_location's channel frame."""

from __future__ import annotations

import numpy as np

from ...rig import plant_read, pose_frames
from ...solvers import plant, plant_legs, quat
from ..spec import ChainSpec
from .contact_legs import REACH_SHARE

# The hips go down where a held ankle would be farther than this share of its leg's length from
# the hip: short of a straight knee, whose angle changes fastest as the hip moves.
HIPS_SHARE = 0.97
# The hips' lowering eases in and out over at least this long (and at least the contact blend):
# a quicker one turns the knee faster than the capture does.
EASE_SECONDS = 0.3


def hips_bone(obj, specs: list[ChainSpec], legs: list[tuple[str, str, str]]) -> str | None:
    """The hips bone to lower (None: the first chain with contacts has Move Root off), or
    ValueError naming why the planted legs have none."""
    if not specs or not specs[0].move_root:
        return None
    bones = obj.data.bones
    shared = None
    for names in legs:
        above = [b.name for b in bones[names[0]].parent_recursive]
        shared = above if shared is None else [n for n in shared if n in above]
    for name in shared or []:
        if not bones[name].use_connect:
            return name
    raise ValueError(
        f"Move Root on '{specs[0].label}': its planted legs hang from no common bone whose head can move"
        " (a parent of every thigh, not connected to its own parent); turn Move Root off; nothing was keyed"
    )


def least_drops(ankles: np.ndarray, hips: np.ndarray, held: np.ndarray, reach: float) -> np.ndarray:
    """(F,) how far (world, down) the hip must go on each frame so that the ankle (F, 3) is within
    `reach` of it (F, 3) on the `held` (F,) frames; 0 elsewhere and where it is already, and the
    best a vertical move can do (the hip level with the ankle) where the ankle is farther than
    `reach` sideways."""
    side = np.linalg.norm((ankles - hips)[:, :2], axis=1)
    room = np.sqrt(np.maximum(reach * reach - side * side, 0.0))
    drop = hips[:, 2] - ankles[:, 2] - room
    return np.where(held, np.maximum(drop, 0.0), 0.0)


# Shifts of the envelope's table taken at once (bounds its memory on long clips and long eases).
ENVELOPE_ROWS = 64


def envelope(need: np.ndarray, blend: float) -> np.ndarray:
    """(F,) at least `need` (F,) on every frame, each frame's need eased (plant.ease) to nothing
    over `blend` frames either side: the largest of those bumps (a one-sided envelope)."""
    span = max(1, int(np.ceil(blend)))
    frames = len(need)
    weights = plant.ease(np.arange(1, span + 1), span + 1)  # each k's own weight, all at once
    stop = np.flatnonzero(weights <= 0.0)
    count = max(0, min(int(stop[0]) if len(stop) else span, frames - 1))  # the weights before the first <= 0
    # Every shift's bump in a table (need padded with -inf where a shift runs off the frames; the
    # weights are > 0), the largest per frame: a maximum is exact, so the values shift by shift.
    padded = np.concatenate([np.full(count, -np.inf), need, np.full(count, -np.inf)])
    shifts = np.lib.stride_tricks.sliding_window_view(padded, frames)  # row j: need[t + j - count]
    scale = np.concatenate([[1.0], weights[:count]])[np.abs(np.arange(-count, count + 1))][:, None]
    out = need.copy()
    for first in range(0, len(shifts), ENVELOPE_ROWS):
        rows = slice(first, first + ENVELOPE_ROWS)
        np.maximum(out, (scale[rows] * shifts[rows]).max(axis=0), out=out)
    return out


def reach_of(leg: plant_read.LegFrames, softness: float) -> float:
    """The world distance a held ankle is kept within from its hip: REACH_SHARE of the leg, and
    inside the soft-IK zone (solvers.common.soft) where the chain has softness."""
    heads = leg.heads[0]
    scale = float(np.cbrt(abs(pose_frames.det3(leg.world[0, :3, :3]))))
    length = scale * float(np.linalg.norm(heads[1] - heads[0]) + np.linalg.norm(heads[2] - heads[1]))
    return min(HIPS_SHARE, REACH_SHARE, 1.0 - float(softness)) * length


def offsets(legs, plans, ankles, softness, blend: float, fps: float, cut=(False, False)) -> np.ndarray:
    """(F, 3) the hips' world offset per frame (down only) for every leg's held ankle (`ankles`:
    per leg (F, 3) world, where its plan holds it). `cut` (start, end): the range's ends met by
    unbaked motion (contact_eases.cut_ends): the offset eases to none there (at_ends)."""
    need = np.zeros(len(plans[0].weight))
    for leg, plan, ankle, soft in zip(legs, plans, ankles, softness, strict=True):
        hips = leg.to_world(leg.heads[:, 0])
        need = np.maximum(need, least_drops(ankle, hips, plan.weight == 1.0, reach_of(leg, soft)))
    out = np.zeros((len(need), 3))
    out[:, 2] = -envelope(need, max(blend, EASE_SECONDS * fps))
    if any(cut):
        out[:, 2] *= at_ends(len(need), blend, *cut)
    return out


def at_ends(frames: int, blend: float, start: bool, end: bool) -> np.ndarray:
    """(F,) the share of the hips' offset kept near cut ends of the range: 0 on the unbaked frame
    beside it, eased (smoothstep) to 1 over `blend` frames (rounded up) inside. No hold lies there
    (solvers.plant.room_at_ends), so every held frame keeps all its drop; the envelope's slower
    ease (EASE_SECONDS) is cut short there rather than popping against the unbaked frame (a user
    trial: the hips dropped 35 mm in one frame at a range's first frame, rose 98 mm after its last)."""
    room = int(np.ceil(blend))
    index = np.arange(frames, dtype=float)
    share = np.ones(frames)
    if start:
        share = np.minimum(share, plant.smooth((index + 1.0) / (room + 1.0)))
    if end:
        share = np.minimum(share, plant.smooth((frames - index) / (room + 1.0)))
    return share


def shifted(leg: plant_read.LegFrames, offset: np.ndarray) -> plant_read.LegFrames:
    """The leg's input with its hips moved by `offset` (F, 3) world: every joint translated."""
    local = np.einsum("fij,fj->fi", leg.inverse3(), offset)
    return plant_read.LegFrames(
        leg.names,
        leg.modes,
        leg.world,
        leg.heads + local[:, None, :],
        leg.toe + local,
        leg.rotations,
        leg.basis,
        leg.values,
        leg.inverse3(),
        leg.armature_turn(),
        leg.scales(),
    )


def kept_feet(legs: list[plant_read.LegFrames], moved: list[plant_read.LegFrames], solve) -> list[tuple]:
    """Per leg, (the leg as its input would be with the hips lowered and its foot kept where the
    input has it (world): the input the plant then eases to and from, (F,) the frames that differ
    from the input). `moved`: the legs shifted with the hips (`shifted`); `solve(jobs)`: the
    planted legs' positional solve (contact_legs.positional_legs, no soft IK) of jobs (leg, targets
    (R, 3), None, rows, None), giving each leg's (R, 3, 4) local rotations first. Without it a
    lowered hip would drop the swinging foot with it. The legs whose hips moved are done in one
    pass over all their frames (each frame's figures its own, as leg by leg)."""
    changed = [np.any(m.heads[:, 0] != leg.heads[:, 0], axis=1) for leg, m in zip(legs, moved, strict=True)]
    out = [(m, c) for m, c in zip(moved, changed, strict=True)]
    touched = [j for j, c in enumerate(changed) if np.any(c)]
    if not touched:
        return out
    # the others keep their input (each frame is solved on its own)
    rows = [np.flatnonzero(changed[j]) for j in touched]
    solved = solve([(moved[j], legs[j].toe_world[r], None, r, None) for j, r in zip(touched, rows, strict=True)])
    bases = []
    for j, r, (new, _) in zip(touched, rows, solved, strict=True):
        basis = moved[j].basis.copy()
        basis[r] = new
        bases.append(basis)
    both = plant_read.joined([moved[j] for j in touched])
    basis = np.concatenate(bases)
    heads = both.heads
    turns = plant_legs.leg_changes(both.rotations, both.basis, basis)
    knee, ankle, toe = plant_legs.leg_points(
        heads[:, 0], heads[:, 1], heads[:, 2], both.toe, both.rotations, both.basis, basis, turns
    )
    # each bone's armature-space rotation: its turn (its parent's times its own) times its input's
    rotations = quat.normalize(quat.multiply(turns, both.rotations))
    joints = plant_legs.side_by_side([heads[:, 0], knee, ankle])
    start = 0
    for j in touched:
        m = moved[j]
        end = start + len(m.world)
        kept = plant_read.LegFrames(
            m.names,
            m.modes,
            m.world,
            joints[start:end],
            toe[start:end],
            rotations[start:end],
            basis[start:end],
            m.values,
            m.inverse3(),
            m.armature_turn(),
            m.scales(),
        )
        out[j] = (kept, changed[j])
        start = end
    return out
