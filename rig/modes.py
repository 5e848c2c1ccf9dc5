"""A bone's local rotation in each `rotation_mode`: read, convert, honour locks.

Values are plain tuples so a computed pose can be validated (finite) before any
bone is touched. Locked channels keep their current values, the way Blender's
own transform tools treat them: per component with `lock_rotations_4d`,
otherwise through Euler XYZ angles for quaternion and axis-angle modes.
"""

from __future__ import annotations

import math

import numpy as np
from mathutils import Euler, Quaternion

EULER_ORDERS = ("XYZ", "XZY", "YXZ", "YZX", "ZXY", "ZYX")
ROTATION_MODES = ("QUATERNION", "AXIS_ANGLE", *EULER_ORDERS)


def current_values(pbone) -> tuple[float, ...]:
    """The bone's rotation channels in its own mode (4 values, or 3 for Euler)."""
    mode = pbone.rotation_mode
    if mode == "QUATERNION":
        return tuple(pbone.rotation_quaternion)
    if mode == "AXIS_ANGLE":
        return tuple(pbone.rotation_axis_angle)
    return tuple(pbone.rotation_euler)


def current_quaternion(pbone) -> Quaternion:
    """The bone's local (basis) rotation as a unit quaternion, whatever its mode."""
    mode = pbone.rotation_mode  # read once (a Solve reads every bone's per call)
    if mode == "QUATERNION":  # to_quaternion's, on a copy of the channel (the same float32 values)
        q = pbone.rotation_quaternion.copy()
        if q.magnitude > 0:
            q.normalize()
            return q
        return Quaternion()
    return to_quaternion(mode, channel_values(pbone, mode))


def to_quaternion(mode: str, values: tuple[float, ...]) -> Quaternion:
    if mode == "QUATERNION":
        q = Quaternion(values)
        return q.normalized() if q.magnitude > 0 else Quaternion()
    if mode == "AXIS_ANGLE":
        angle, *axis = values
        if math.hypot(*axis) == 0.0:
            return Quaternion()
        return Quaternion(axis, angle)
    return Euler(values, mode).to_quaternion()


def is_locked(pbone) -> bool:
    return any(pbone.lock_rotation) or (pbone.lock_rotations_4d and pbone.lock_rotation_w)


def channel_values(pbone, mode: str) -> tuple[float, ...]:
    """`current_values` for a bone whose `rotation_mode` is already known."""
    if mode == "QUATERNION":
        return pbone.rotation_quaternion[:]
    if mode == "AXIS_ANGLE":
        return pbone.rotation_axis_angle[:]
    return pbone.rotation_euler[:]


def holds(pbone, values: tuple[float, ...]) -> bool:
    """The bone's channels still hold `values` (in its current mode), as written: Blender keeps
    them as 32-bit floats, so equal within their rounding."""
    current = channel_values(pbone, pbone.rotation_mode)
    return len(current) == len(values) and all(
        abs(a - b) <= 1e-6 * max(1.0, abs(b)) for a, b in zip(current, values, strict=True)
    )


# What `locks` gives for a bone with no rotation locks (a chain that turns through them).
NO_LOCKS = ((False, False, False), False, False)


def locks(pbone) -> tuple[tuple[bool, bool, bool], bool, bool]:
    """(lock_rotation, lock_rotations_4d, lock_rotation_w): the bone's rotation locks, read once."""
    four = pbone.lock_rotations_4d
    return pbone.lock_rotation[:], four, four and pbone.lock_rotation_w


def values_for(pbone, q: Quaternion, old: tuple[float, ...] | None = None) -> tuple[float, ...]:
    """Channel values for rotation `q` in the bone's mode, continuous with `old`
    (default: the current values), with locked channels kept at `old`.

    Baking passes the previous frame's values as `old`, which gives quaternion
    sign, Euler and axis-angle continuity across frames."""
    mode = pbone.rotation_mode
    old = channel_values(pbone, mode) if old is None else tuple(old)
    return values_in_mode(mode, q, old, *locks(pbone))


def values_in_mode(
    mode: str, q: Quaternion, old: tuple[float, ...], lock: tuple[bool, bool, bool], four: bool, lock_w: bool
) -> tuple[float, ...]:
    """`values_for` with the bone's mode, `old` values and `locks` given (no bone access)."""
    q = q.normalized()
    if mode in EULER_ORDERS:
        e = q.to_euler(mode, Euler(old, mode))
        if not (lock[0] or lock[1] or lock[2]):
            return e[:]
        return tuple(o if lk else v for v, o, lk in zip(e, old, lock, strict=True))
    if (lock[0] or lock[1] or lock[2]) and not four:
        # 3D locks act on Euler XYZ angles, as in Blender's transform tools.
        cur = to_quaternion(mode, old)
        e_old = cur.to_euler("XYZ")
        e = q.to_euler("XYZ", e_old)
        q = Euler(tuple(o if lk else v for v, o, lk in zip(e, e_old, lock, strict=True)))
        q = q.to_quaternion()
    if mode == "QUATERNION":
        if q.dot(Quaternion(old)) < 0.0:
            q.negate()
        values = q[:]
    else:
        values = axis_angle_values(q, old)
    if four and (lock_w or lock[0] or lock[1] or lock[2]):  # (4D locks are on by default, rarely set)
        locks4 = (lock_w, *lock)
        values = tuple(o if lk else v for v, o, lk in zip(values, old, locks4, strict=True))
    return values


def axis_angle_values(q: Quaternion, old: tuple[float, ...]) -> tuple[float, ...]:
    """(angle, x, y, z) for unit `q`, its axis pointing the way `old`'s does, so
    keyed angles do not jump between +a and -a, and within a full turn of it."""
    axis, angle = q.to_axis_angle()
    if angle < 1e-12:
        # No rotation: keep the current axis (any axis is valid, a changing one is noise).
        return (0.0, *old[1:]) if math.hypot(*old[1:]) > 0 else (0.0, 0.0, 1.0, 0.0)
    if sum(a * b for a, b in zip(axis, old[1:], strict=True)) < 0.0:
        axis, angle = -axis, -angle
    angle += 2.0 * math.pi * round((old[0] - angle) / (2.0 * math.pi))
    return (angle, *axis)


def continuous_series(mode: str, quats, first_old: tuple[float, ...]) -> np.ndarray:
    """(m, channels) channel values of unit quaternions (m, 4) for an unlocked bone, each
    continuous with the one before (the first with `first_old`): what `values_for` gives frame
    after frame, without touching the pose bone."""
    old = tuple(first_old)
    if mode in EULER_ORDERS:
        prev = Euler(old, mode)
        flat: list[float] = []
        # One flat list of floats (a list of tuples costs a third more to turn into an array), each
        # frame's angles added as a tuple (prev[:], made in C: extending by the Euler itself iterates
        # it from Python), the method looked up once.
        add, to_euler = flat.extend, Quaternion.to_euler
        for q in quats:
            prev = to_euler(Quaternion(q), mode, prev)
            add(prev[:])
        return np.array(flat, dtype=float).reshape(len(quats), 3)
    out: list[tuple[float, ...]] = []
    for q in quats:
        old = axis_angle_values(Quaternion(q), old)
        out.append(old)
    return np.array(out, dtype=float).reshape(len(quats), -1)


def series_values(
    mode: str, quats: np.ndarray, first_old: tuple[float, ...], lock_state: tuple = NO_LOCKS
) -> np.ndarray:
    """(m, channels) values of local rotations `quats` (m, 4) in `mode`, each continuous with the
    one before (the first with `first_old`), locked channels (`locks(pbone)`) kept: what
    `values_in_mode` gives frame after frame. The bake's one conversion to keys, whichever way
    the frames were solved; unlocked quaternions at numpy speed (sign flips as a running product)."""
    quats = np.asarray(quats, dtype=float)
    lock, four, lock_w = lock_state
    if lock[0] or lock[1] or lock[2] or lock_w:
        out, old = [], tuple(first_old)
        for q in quats.tolist():
            old = values_in_mode(mode, Quaternion(q), old, lock, four, lock_w)
            out.append(old)
        return np.array(out, dtype=float).reshape(len(quats), -1)
    if mode != "QUATERNION":
        return continuous_series(mode, quats.tolist(), first_old)
    q = quats / np.linalg.norm(quats, axis=-1, keepdims=True)
    before = np.concatenate((np.array(first_old, dtype=float)[None], q[:-1]))
    flips = np.cumprod(np.where(np.einsum("ki,ki->k", q, before) < 0.0, -1.0, 1.0))
    return q * flips[:, None]


def set_values(pbone, values: tuple[float, ...]) -> None:
    mode = pbone.rotation_mode
    if mode == "QUATERNION":
        pbone.rotation_quaternion = values
    elif mode == "AXIS_ANGLE":
        pbone.rotation_axis_angle = values
    else:
        pbone.rotation_euler = values
