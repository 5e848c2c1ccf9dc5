"""Legs over time read from the action's F-Curves, without evaluating the scene at each frame.

`scene.frame_set` is most of a planted bake's time (rig.plant_read): it evaluates every object of
the scene at every frame. Where provably nothing but the armature's own action moves the legs
(`curves_reason` is ''), the bones from the armature's root down to each foot are posed from
their F-Curves (`FCurve.evaluate`: interpolation, easing and modifiers as playback) by the
pose's own forward kinematics, parent x (parent rest^-1 x rest) x basis. Strict, as
rig.sampling is for targets, and checked: the result must match the evaluated pose on the first,
middle and last frames within `MATCH` of the leg's length, else the caller samples frame by frame
and says why.
"""

from __future__ import annotations

import numpy as np

from ..solvers import quat
from ..solvers.plant_legs import side_by_side
from . import sampling
from .keys import action_frames, data_path, plays
from .plant_read import LegFrames, rotation_channels
from .pose_frames import inverse3, matrix_rotations

MATCH = 1e-5  # share of the leg's length


def _path_bones(obj, legs) -> list[str]:
    """Every bone from the armature's root to each leg's foot, parents first."""
    pose = obj.pose.bones
    wanted = {a.name for leg in legs for name in leg for a in (pose[name], *pose[name].parent_recursive)}
    return [b.name for b in pose if b.name in wanted]  # pose bones list parents before children


def curves_reason(obj, legs) -> str:
    """Why the legs cannot be read from the action's curves ('' when they can)."""
    why = sampling.armature_reason(obj)
    if why:
        return why
    why, curves = sampling.active_curves(obj)
    if why:
        return why
    if any(fc.data_path.startswith(sampling.TRANSFORM_PATHS) for fc in curves):
        return "the armature object is animated"
    if not sampling.frame_handlers_quiet():
        return "frame-change handlers"
    if obj.animation_data is not None and obj.animation_data.use_tweak_mode:
        return "NLA tweak mode"
    for name in _path_bones(obj, legs):
        pbone = obj.pose.bones[name]
        if any(c.enabled and c.influence > 0.0 for c in pbone.constraints):
            return f"bone '{name}' has constraints"
        bone = pbone.bone
        if not bone.use_inherit_rotation or bone.inherit_scale != "FULL" or not bone.use_local_location:
            return f"bone '{name}' has non-default inheritance"
    return ""


def _channels(obj, name: str, path: str, width: int, curves: dict, frames: np.ndarray, seen=None, read=None):
    """(F, width) a bone property's values at `frames`: its curves where keyed, else as posed
    (`seen`, `read`: curve_values')."""
    return _stacked(obj, [name], path, width, curves, frames, seen, read)


def _stacked(obj, names, path: str, width: int, curves: dict, frames: np.ndarray, seen=None, read=None) -> np.ndarray:
    """(len(names) * F, width) `_channels` of bones `names`, one after the other, written into one
    table (no per-bone tables joined); `read`: curve_values' (its keys' co by (data path, index))."""
    pose = obj.pose.bones
    m = len(frames)
    out = np.empty((len(names) * m, width))
    for j, name in enumerate(names):
        rows = out[j * m : (j + 1) * m]
        rows[:] = getattr(pose[name], path)[:]
        full = data_path(name, path)
        for index in range(width):
            fc = curves.get((full, index))
            if fc is not None and plays(fc):  # (a curve playback skips leaves the value as posed)
                rows[:, index] = sampling.curve_values(fc, frames, seen, read, (full, index))
    return out


def _rotation(mode: str, values: np.ndarray) -> np.ndarray:
    """(F, 4) unit quaternions of rotation channel values in `mode`."""
    if mode == "QUATERNION":
        return quat.normalize(values)
    if mode == "AXIS_ANGLE":
        return quat.from_axis_angle(quat.normalize(values[:, 1:]), values[:, 0])
    return np.stack(_euler_turns(mode, values), axis=-1)


def _euler_turns(mode: str, values: np.ndarray) -> tuple[np.ndarray, ...]:
    """(w, x, y, z), each (F,): Euler angles `values` (F, 3) in `mode` ('XYZ': X applied first) as
    quaternions, by the figures of `quat.multiply(quat.from_axis_angle(unit, angle), turn)` axis
    after axis from the identity (every product and sum of theirs, in their order, the zeros of the
    unit axes included: the same bits, a NaN's sign aside), on whole columns: no (F, 4) table made
    and taken apart per axis (about a third less time on 3000 rows)."""
    w = x = y = z = None
    for axis in mode:
        i = "XYZ".index(axis)
        half = 0.5 * values[:, i]  # contiguous, as from_axis_angle's (F, 1) column: the same sin and cos
        c, s = np.cos(half), np.sin(half)
        zero = s * 0.0  # sin(half) times a unit axis's zero component (its sign kept)
        # This axis's quaternion (c, s * unit): the unit's 1 gives s itself.
        aw, ax, ay, az = (c, s, zero, zero) if i == 0 else (c, zero, s, zero) if i == 1 else (c, zero, zero, s)
        if w is None:  # the identity (1, 0, 0, 0) as the turn so far
            w, x, y, z = 1.0, 0.0, 0.0, 0.0
        w, x, y, z = _product(aw, ax, ay, az, w, x, y, z)
    return w, x, y, z


def _product(aw, ax, ay, az, bw, bx, by, bz) -> tuple[np.ndarray, ...]:
    """quat.multiply's Hamilton product a * b on components (arrays or floats), each sum left to
    right as it adds them."""
    w = aw * bw
    w -= ax * bx
    w -= ay * by
    w -= az * bz
    x = aw * bx
    x += ax * bw
    x += ay * bz
    x -= az * by
    y = aw * by
    y -= ax * bz
    y += ay * bw
    y += az * bx
    z = aw * bz
    z += ax * by
    z -= ay * bx
    z += az * bw
    return w, x, y, z


def _basis(rotation: np.ndarray, location: np.ndarray, scale: np.ndarray | None) -> np.ndarray:
    """(F, 4, 4) local matrices: `quat.to_matrix(rotation)` times `scale` (F, 3) per column (None:
    all 1, whose products change no bit), `location` the translation; to_matrix's figures written
    into the table entry by entry (no stacked (F, 3, 3) copies)."""
    w, x, y, z = (rotation[:, k] for k in range(4))
    m = np.zeros((len(rotation), 4, 4))
    xx, yy, zz = x * x, y * y, z * z
    xy, xz, yz = x * y, x * z, y * z
    wx, wy, wz = w * x, w * y, w * z
    rows = (
        (1 - 2 * (yy + zz), 2 * (xy - wz), 2 * (xz + wy)),
        (2 * (xy + wz), 1 - 2 * (xx + zz), 2 * (yz - wx)),
        (2 * (xz - wy), 2 * (yz + wx), 1 - 2 * (xx + yy)),
    )
    for i, row in enumerate(rows):
        for j, entry in enumerate(row):
            m[:, i, j] = entry if scale is None else entry * scale[:, j]
    m[:, :3, 3] = location
    m[:, 3, 3] = 1.0
    return m


def _affine_inverse(m: np.ndarray, inverse: np.ndarray) -> np.ndarray:
    """The inverse of one affine 4x4 (a bone's rest), `inverse` its 3x3 part's (pose_frames.inverse3):
    np.linalg.inv goes through OpenBLAS, whose threads, beside Blender's, made each such call cost
    about a millisecond in a bake."""
    out = np.eye(4)
    out[:3, :3] = inverse
    out[:3, 3] = -out[:3, :3] @ m[:3, 3]
    return out


# numpy's matmul of a stack of 4x4s with one 4x4 calls BLAS once per matrix (~0.2 us each): as one
# 2D product (the stack's rows one after the other, or its columns side by side) it is one call, with
# each entry the same dot of four products (the same bits: tests/blender/test_plant_curves.py).
def _each_times(stack: np.ndarray, matrix: np.ndarray) -> np.ndarray:
    """(F, 4, 4) `stack` (F, 4, 4) @ `matrix` (4, 4), or (F, 4) @ a vector (4,), as `stack @ matrix`
    gives it."""
    return (stack.reshape(-1, 4) @ matrix).reshape(stack.shape[:-1] + matrix.shape[1:])


def _times_each(matrix: np.ndarray, stack: np.ndarray) -> np.ndarray:
    """(F, 4, 4) `matrix` (4, 4) @ `stack` (F, 4, 4), as `matrix @ stack` gives it."""
    columns = stack.transpose(1, 0, 2).reshape(4, -1)  # (4, F * 4): each matrix's columns side by side
    return np.ascontiguousarray((matrix @ columns).reshape(4, len(stack), 4).transpose(1, 0, 2))


def sample_legs(
    obj, legs, frames: np.ndarray, read: dict | None = None, located: dict | None = None
) -> list[LegFrames]:
    """Each leg's pose at scene `frames` from the curves (call only where `curves_reason` is '').
    `read` (a dict): the rotation curves' keys' co as read, by (data path, index) (sampling.curve_values);
    `located` (a dict): each bone's location channel as it plays (F, 3) by name, the root's to the feet's
    (root_location.played_locations' figures: the same curves read the same way)."""
    # Whether a curve plays is asked of those read alone (`_stacked`), not of every curve of the action.
    curves = {(fc.data_path, fc.array_index): fc for fc in sampling.active_curves(obj)[1]}
    at = action_frames(obj, frames).astype(float)
    m = len(frames)
    pose = obj.pose.bones
    names = _path_bones(obj, legs)
    values = {}
    seen: dict = {}
    for name in names:
        path, width = rotation_channels(pose[name].rotation_mode)
        values[name] = _channels(obj, name, path, width, curves, at, seen, read)
    # The bones' rotations and local matrices all at once (a bone's own would cost ~30 numpy
    # calls), bones of one rotation mode together; the same arithmetic row by row.
    basis_q: dict[str, np.ndarray] = {}
    for mode in dict.fromkeys(pose[n].rotation_mode for n in names):
        group = [n for n in names if pose[n].rotation_mode == mode]
        turns = _rotation(mode, np.concatenate([values[n] for n in group]))
        basis_q.update((n, turns[j * m : (j + 1) * m]) for j, n in enumerate(group))
    location = _stacked(obj, names, "location", 3, curves, at, seen)
    if located is not None:
        located.update((name, location[j * m : (j + 1) * m]) for j, name in enumerate(names))
    scale = _stacked(obj, names, "scale", 3, curves, at, seen)
    # Bones of one rotation mode (a capture's): their rotations are already in `names` order.
    local_turns = turns if len(group) == len(names) else np.concatenate([basis_q[n] for n in names])
    bases = _basis(local_turns, location, None if (scale == 1.0).all() else scale)
    rests = {name: np.array(pose[name].bone.matrix_local) for name in names}  # a bone's parents are in `names`
    parents = [pose[name].parent.name for name in names if pose[name].parent is not None]
    # The parents' rest 3x3 inverses in one call (each matrix's own figures, as one by one).
    threes = np.array([rests[p][:3, :3] for p in parents]).reshape(-1, 3, 3)
    inverses = dict(zip(parents, inverse3(threes), strict=True))
    posed: dict[str, np.ndarray] = {}
    for j, name in enumerate(names):
        pbone = pose[name]
        basis = bases[j * m : (j + 1) * m]
        rest = rests[name]
        if pbone.parent is None:
            posed[name] = _times_each(rest, basis)
        else:
            parent = pbone.parent.name
            relative = _affine_inverse(rests[parent], inverses[parent]) @ rest  # float64
            posed[name] = _each_times(posed[parent], relative) @ basis
    world = np.tile(np.array(obj.matrix_world), (m, 1, 1))
    stacked = [side_by_side([posed[n] for n in leg]) for leg in legs]  # per leg (F, 3, 4, 4)
    # Every leg's rotations in one call (each matrix's own figures, as leg by leg).
    rotations = matrix_rotations(np.concatenate([matrices[..., :3, :3] for matrices in stacked]))
    out = []
    for j, (leg, matrices) in enumerate(zip(legs, stacked, strict=True)):
        foot = pose[leg[-1]].bone
        toe = _each_times(matrices[:, 2], np.array([0.0, foot.length, 0.0, 1.0]))
        # The legs share the armature's world matrix: its inverse, turn and scale found once (the first
        # leg's, the same figures for every leg).
        shared = () if not out else (out[0].inverse3(), out[0].armature_turn(), out[0].scales())
        out.append(
            LegFrames(
                tuple(leg),
                tuple(pose[n].rotation_mode for n in leg),
                world,
                matrices[..., :3, 3],
                toe[:, :3],
                rotations[j * m : (j + 1) * m],
                side_by_side([basis_q[n] for n in leg]),
                [values[n] for n in leg],
                *shared,
            )
        )
    return out


def mismatch(read: list[LegFrames], evaluated: list[np.ndarray], rows: np.ndarray) -> float:
    """Largest distance, as a share of the leg's length, between the curves' joints and the evaluated
    pose's at `rows` of the frames (`evaluated`: per leg its joints at those frames only,
    plant_read.joints_at)."""
    worst = 0.0
    for ours, truth in zip(read, evaluated, strict=True):
        length = float(np.sum(np.linalg.norm(np.diff(truth[0, :3], axis=0), axis=1))) or 1.0
        joints = np.concatenate((ours.heads[rows], ours.toe[rows, None]), axis=1)
        worst = max(worst, float(np.max(np.linalg.norm(joints - truth, axis=-1))) / length)
    return worst
