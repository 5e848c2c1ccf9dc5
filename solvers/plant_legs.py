"""A planted leg over many frames at once (issue 21 item 2): thigh, shin and foot turned so the foot's
head (the ankle) reaches its goal on every frame while the foot keeps its input world rotation
(numpy + stdlib only).

With the foot's world rotation fixed (its pitch follows the input: heel rise and toe roll stay as
captured), a planted tip fixes the ankle (`plant.head_targets`), and a thigh and shin reach an
ankle in one way up to the swivel about the hip-ankle line: the input's is kept (the knee stays
in the plane of the hip-ankle line and the input knee), so the knee points where the capture
had it. This is the analytic two-bone IK of footskate cleanup (Kovar, Schreiner and Gleicher
2002), per frame, vectorised: every frame is independent of the others (no warm start, no
drift), exact to rounding where the ankle is within reach.

Out of reach (farther from the hip than thigh + shin, or nearer than their difference) the leg
straightens (or folds) toward the goal and `reached` is False for that frame. `softness` (soft
IK, solvers.common.soft: a share of the leg's reach) brings each goal in by Nicholas' formula
first, so the knee never snaps straight: the ankle then lags the goal by a little near full
reach (`goal` gives where it is aimed).

Turns are world (armature-space) deltas: `thigh` turns the thigh about the hip, `shin` is the
shin's whole turn (the thigh's composed with its own, about the new knee); the foot's is the
identity. `basis_after` gives each bone's new local (basis) rotation from them.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import quat
from .common.soft import check_softness, soft_distances
from .contacts import check_points, same_sums

# Keep a straightened or folded leg this share of its length off the exact limit: the knee's
# direction stays defined (sqrt of a rounding-level negative is 0, which is fine; a goal on the
# hip is not).
FOLD_MARGIN = 1e-9


@dataclass(frozen=True)
class LegTurns:
    thigh: np.ndarray  # (F, 4) world delta of the thigh (w, x, y, z)
    shin: np.ndarray  # (F, 4) world delta of the shin (includes the thigh's)
    goal: np.ndarray  # (F, 3) where the ankle is aimed (the goal, softened by `softness`)
    ankle: np.ndarray  # (F, 3) where the turned leg puts the ankle (the aim, where within reach)
    reached: np.ndarray  # (F,) bool: the ankle is within reach of `goal`


def side_by_side(parts) -> np.ndarray:
    """np.stack(parts, axis=1) of arrays alike in shape (F, ...): the same array (copies alone), without
    its wrapper's checks and expanded copies (a few microseconds a call, dozens of calls a bake)."""
    first = parts[0]
    out = np.empty((len(first), len(parts), *np.shape(first)[1:]), dtype=np.result_type(*parts))
    for j, part in enumerate(parts):
        out[:, j] = part
    return out


def _checked(points, frames: int, what: str) -> np.ndarray:
    array = check_points(points, what)
    if len(array) != frames:
        raise ValueError(f"{what} must have {frames} frames, got {len(array)}")
    return array


def swivel(hip, knee, ankle, window: int = 0, forward=None) -> np.ndarray:
    """(F, 3) the side the knee bends to on each frame: the input knee's offset from its hip-ankle
    line, summed over `window` frames either side (unnormalised, so bent frames outweigh nearly
    straight ones, whose offset is capture noise: a straight input leg bent by a plant would
    otherwise swivel its knee from frame to frame), plus `forward` (F, 3) (e.g. the foot's toe
    direction) times 1e-3 of the thigh for a leg straight over the whole window."""
    hip, knee, ankle = (np.asarray(a, dtype=float) for a in (hip, knee, ankle))
    upper = knee - hip
    line = quat.normalize(ankle - hip)
    offset = upper - quat.dots(upper, line)[:, None] * line
    if window > 0:
        kernel = np.ones(2 * window + 1)
        offset = side_by_side([same_sums(offset[:, j], kernel) for j in range(3)])
    if forward is not None:
        offset = offset + 1e-3 * quat.norm(upper)[:, None] * quat.normalize(np.asarray(forward, dtype=float))
    return offset


def leg_turns(hip, knee, ankle, goal, softness: float = 0.0, pole=None) -> LegTurns:
    """World turns of thigh and shin taking the input leg (hip, knee and ankle joints, (F, 3) each,
    one space) to an ankle at `goal` (F, 3), keeping the input's swivel (module docstring), or
    bending the knee toward `pole` (F, 3) directions (`swivel`) where given."""
    hip = check_points(hip, "hip positions")
    frames = len(hip)
    knee, ankle = _checked(knee, frames, "knee positions"), _checked(ankle, frames, "ankle positions")
    goal = _checked(goal, frames, "ankle goals")
    share = check_softness(softness)
    # Thigh and shin (and their lengths) in one array: the same figures for fewer numpy calls.
    ends, starts = np.empty((2, frames, 3)), np.empty((2, frames, 3))  # np.stack's, without its wrapper
    ends[0], ends[1], starts[0], starts[1] = knee, ankle, hip, knee
    bones = ends - starts
    upper, lower = bones
    lengths = quat.norm(bones)
    l1, l2 = lengths
    if (lengths <= 0.0).any():
        raise ValueError("the thigh or the shin has no length (knee on the hip, or ankle on the knee)")
    reach, inner = l1 + l2, np.abs(l1 - l2)
    offset = goal - hip
    distance = length = quat.norm(offset)
    if share:
        soft = soft_distances(distance, reach, share)
        aimed = hip + offset * np.divide(soft, distance, out=np.ones_like(distance), where=distance > 0.0)[:, None]
        distance = soft
    else:
        aimed = goal
    margin = FOLD_MARGIN * reach
    reached = (distance <= reach + margin) & (distance >= inner - margin)
    # Along the hip->goal line; a goal on the hip itself keeps the input's hip->ankle line.
    if (length > 0.0).all():  # quat.normalize(offset), its norm already known
        line = offset / length[:, None]
    else:
        line = quat.normalize(np.where((distance > 0.0)[:, None], offset, ankle - hip))
    d = np.minimum(np.maximum(distance, inner + margin), reach - margin)  # np.clip's figures
    # The swivel: the input knee's offset across the line (the input's own line where the leg
    # is straight along the new one: then the input leg plane's normal decides).
    side = upper if pole is None else _checked(pole, frames, "knee directions")
    across = side - quat.dots(side, line)[:, None] * line
    size = quat.norm(across)
    flat = size <= 1e-9 * reach
    if flat.any():
        normal = quat.cross(upper, lower)
        fallback = np.where((quat.norm(normal) > 1e-12 * reach * reach)[:, None], quat.cross(normal, line), 0.0)
        fallback = np.where((quat.norm(fallback) > 0.0)[:, None], fallback, quat.any_perpendicular(line))
        across = quat.normalize(np.where(flat[:, None], fallback, across))
    else:  # quat.normalize(across), its norm already known (and > 0)
        across = across / size[:, None]
    square = l1 * l1
    along = (square - l2 * l2 + d * d) / (2.0 * d)
    height = np.sqrt(np.maximum(square - along * along, 0.0))
    new_knee = hip + along[:, None] * line + height[:, None] * across
    new_ankle = hip + d[:, None] * line
    thigh = _swing(upper / l1[:, None], (new_knee - hip) / l1[:, None])
    turned = quat.rotate(thigh, lower) / l2[:, None]
    wanted = quat.normalize(new_ankle - new_knee)
    shin = quat.multiply(_swing(turned, wanted), thigh)
    return LegTurns(thigh, quat.normalize(shin), aimed, new_ankle, reached)


def _swing(u: np.ndarray, v: np.ndarray) -> np.ndarray:
    """quat.swing(u, v) about quat.any_perpendicular(u) near a half turn: that axis is found only
    on the frames past 90° (u.v < 0, the only ones quat.swing takes it from; the others' is never
    read), the same turns for fewer numpy calls where no frame turns that far."""
    fallback = np.zeros(u.shape, dtype=u.dtype)
    dot = quat.dots(u, v)
    obtuse = dot < 0.0
    if obtuse.any():
        fallback[obtuse] = quat.any_perpendicular(u[obtuse])
    return quat.swing(u, v, fallback, dot)


def basis_after(basis, world, parent_turn, own_turn) -> np.ndarray:
    """(F, 4) a bone's new local (basis) rotation: `basis` and `world` its input local and
    armature-space rotations, `parent_turn` the world turn its parent took (None: none) and
    `own_turn` the world turn it should take (None: none: it keeps its input world rotation,
    the parent's turn undone). Its world rotation is parent x rest x basis, so the new basis is
    basis world^-1 parent_turn^-1 own_turn world. Several bones at once: (F, n, 4) each (turns
    given for all, the identity where none)."""
    basis, world = np.asarray(basis, dtype=float), np.asarray(world, dtype=float)
    if basis.shape != world.shape or basis.ndim not in (2, 3) or basis.shape[-1] != 4:
        raise ValueError(f"basis and world rotations must be alike (F, 4), got {basis.shape} and {world.shape}")
    if parent_turn is not None:
        turn = quat.conjugate(np.asarray(parent_turn, dtype=float))
    else:  # the identity
        turn = np.zeros_like(world)
        turn[..., 0] = 1.0
    if own_turn is not None:
        turn = quat.multiply(turn, np.asarray(own_turn, dtype=float))
    out = quat.multiply(quat.multiply(basis, quat.conjugate(world)), quat.multiply(turn, world))
    return quat.normalize(out)


def reach_lift(held, offsets, hips, reach: float) -> float:
    """How far above `held` (a planted tip, (3,)) it must be held so that the ankle, at held + offset
    on each frame of the hold (`offsets` (k, 3): the input's ankle minus tip, the foot's pitch),
    stays within `reach` of the hip (`hips` (k, 3)) on every frame: 0 when it does already. The
    hips are not moved (a bake with Move Root lowers them instead); a frame whose hip is
    farther than `reach` sideways cannot be helped by height and is left out."""
    offsets = np.asarray(offsets, dtype=float)
    return float(reach_lifts(np.asarray(held, dtype=float)[None], offsets, hips, [(0, len(offsets))], reach)[0])


def reach_lifts(held, offsets, hips, spans, reach: float) -> np.ndarray:
    """(H,) `reach_lift` of H holds at once: hold h held at `held[h]` over the rows `spans[h]`
    (start, end) of `offsets` and `hips` (F, 3) (each frame's figures its own, as hold by hold)."""
    held = np.asarray(held, dtype=float)
    offsets, hips = np.asarray(offsets, dtype=float), np.asarray(hips, dtype=float)
    out = np.zeros(len(spans))
    if not len(spans):
        return out
    rows = np.concatenate([np.arange(a, b) for a, b in spans])
    counts = [b - a for a, b in spans]
    ankle = np.repeat(held, counts, axis=0) + offsets[rows]  # (k, 3)
    hip = hips[rows]
    side = np.linalg.norm((ankle - hip)[:, :2], axis=1)
    room = reach * reach - side * side
    ok = room > 0.0
    # The ankle's lowest reachable height on each frame: the hip's minus the vertical room (frames
    # out of reach sideways left out).
    above = np.full(len(rows), -np.inf)
    above[ok] = hip[ok, 2] - np.sqrt(room[ok]) - ankle[ok, 2]
    firsts = np.cumsum([0, *counts[:-1]])
    filled = np.array(counts) > 0
    most = np.full(len(spans), -np.inf)
    most[filled] = np.maximum.reduceat(above, firsts[filled])
    for h, value in enumerate(most.tolist()):
        out[h] = max(0.0, value)
    return out


def turn_vectors(q: np.ndarray) -> np.ndarray:
    """(..., 3) the rotations `q` (..., 4) along their shortest arc as axis x angle: what
    slerp_identity scales (each rotation's own figures: a correction shared by many frames is
    converted once, then repeated)."""
    q = np.asarray(q)
    return quat.to_rotation_vector(np.where(q[..., :1] < 0.0, -q, q))


def scaled_turns(vectors: np.ndarray, weight: np.ndarray) -> np.ndarray:
    """(k, ..., 4) the turns `vectors` (k, ..., 3) (turn_vectors) scaled by `weight` (k,)."""
    w = np.asarray(weight, dtype=float).reshape(len(vectors), *([1] * (vectors.ndim - 1)))
    return quat.from_rotation_vector(vectors * w)


def slerp_identity(q: np.ndarray, weight: np.ndarray) -> np.ndarray:
    """(k, ..., 4) the rotations `q` (k, ..., 4) scaled by `weight` (k,) along their shortest arc
    (1: q, 0: none)."""
    return scaled_turns(turn_vectors(q), weight)


def faded(basis, correction, weight, vectors=None) -> np.ndarray:
    """(k, ..., 4) local rotations `basis` (k, ..., 4) with a correction (..., 4) (new basis x input
    basis^-1 of the frame the plant ends or starts on; one per bone for several bones at once)
    applied to the parent's side by `weight` (k,): the ease of a plant in joint space. The joints
    then move at most |correction| x the ease's slope faster than the input's, whatever the leg's
    reach (an ease of the foot's position through IK would turn a nearly straight knee far faster).
    `vectors` (k, ..., 3): the correction's turn_vectors on every frame where already known (then
    `correction` is not read)."""
    basis = np.asarray(basis, dtype=float)
    if vectors is None:
        vectors = turn_vectors(np.broadcast_to(np.asarray(correction, dtype=float), basis.shape))
    return quat.normalize(quat.multiply(scaled_turns(vectors, weight), basis))


def leg_changes(world, basis, new_basis) -> np.ndarray:
    """(F, 3, 4) each bone's armature-space turn once the leg's three local rotations `basis`
    (F, 3, 4) become `new_basis`: `world` (F, 3, 4) their input armature-space rotations (a bone's
    turn is its parent's times world basis^-1 basis' world^-1, the three bones' own parts at once)."""
    own = quat.multiply(quat.multiply(world, quat.conjugate(basis)), quat.multiply(new_basis, quat.conjugate(world)))
    shin = quat.multiply(own[:, 0], own[:, 1])
    return side_by_side([own[:, 0], shin, quat.multiply(shin, own[:, 2])])


def leg_points(hip, knee, ankle, toe, world, basis, new_basis, turns=None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(knee, ankle, toe) (F, 3) once the leg's three local rotations `basis` (F, 3, 4) become
    `new_basis`: `world` (F, 3, 4) their input armature-space rotations (forward kinematics of the
    changes only, `leg_changes`, or those `turns` where given)."""
    if turns is None:
        turns = leg_changes(world, basis, new_basis)
    bones = side_by_side([knee - hip, ankle - knee, toe - ankle])
    moved = quat.rotate(turns, bones)
    new_knee = hip + moved[:, 0]
    new_ankle = new_knee + moved[:, 1]
    return new_knee, new_ankle, new_ankle + moved[:, 2]


def raised(
    hip, knee, ankle, toe, world, basis, new_basis, lift, softness: float = 0.0, turns=None
) -> tuple[np.ndarray, np.ndarray]:
    """((F, 3, 4) local rotations, (F,) the ankle's distance from its goal): the leg posed by
    `new_basis` (F, 3, 4) with its tip moved by `lift` (F, 3), its foot keeping that pose's world
    rotation and its knee that pose's swivel (the least turn from it). `hip`, `knee`, `ankle`, `toe`
    (F, 3) and `world` (F, 3, 4): the input's joints and armature-space rotations, `basis` its local
    ones (one space, as leg_points). Why not a solve from the input (the foot at its input rotation,
    the knee at a swivel of its own): on an ease's frame it would drop what the ease keeps of the
    hold's correction, and the leg would pop where that frame meets its eased neighbours. `turns`:
    the pose's leg_changes where already known."""
    if turns is None:
        turns = leg_changes(world, basis, new_basis)
    new_knee, new_ankle, _ = leg_points(hip, knee, ankle, toe, world, basis, new_basis, turns)
    goal = new_ankle + np.asarray(lift, dtype=float)
    legs = leg_turns(hip, new_knee, new_ankle, goal, softness)
    identity = np.zeros_like(legs.thigh)
    identity[:, 0] = 1.0
    posed = quat.multiply(turns, world)  # the posed leg's armature-space rotations
    parents = side_by_side([identity, legs.thigh, legs.shin])
    owns = side_by_side([legs.thigh, legs.shin, identity])
    return basis_after(new_basis, posed, parents, owns), quat.norm(legs.ankle - goal)
