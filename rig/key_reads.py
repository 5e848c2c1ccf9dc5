"""What a bake reads of the keys it replaces (rig.keys.write_keys_in's `replaced`, for the planted
bake's record, rig.bake_record), and the key attributes a rebuilt curve keeps: read in the types
Blender stores them in, copied in one pass, and kept as one shared row where every key holds the
same value."""

from __future__ import annotations

import numpy as np

# Keyframe attributes kept when a curve is rebuilt: (name, values per key, numpy dtype).
KEY_ATTRIBUTES = (
    ("co", 2, np.float32),
    ("handle_left", 2, np.float32),
    ("handle_right", 2, np.float32),
    ("interpolation", 1, np.int32),
    ("handle_left_type", 1, np.int32),
    ("handle_right_type", 1, np.int32),
    ("type", 1, np.int32),
    ("easing", 1, np.int32),
    ("back", 1, np.float32),
    ("amplitude", 1, np.float32),
    ("period", 1, np.float32),
    ("select_control_point", 1, np.int32),
    ("select_left_handle", 1, np.int32),
    ("select_right_handle", 1, np.int32),
)

# Handle types FCurve.update() places from the keys alone (VECTOR 1, AUTO 3, AUTO_CLAMPED 4: the
# enum values, the same on 4.2 and 5.0): a replaced key of these types needs no stored handles.
PLACED_HANDLES = (1, 3, 4)
_PLACED = np.isin(np.arange(256), PLACED_HANDLES)  # by enum value (np.isin itself costs ~0.1 ms a call)
HANDLES = ("handle_left", "handle_right")
HANDLE_TYPES = ("handle_left_type", "handle_right_type")
# What `replaced` keeps besides co and the handles: every one-value attribute, the selection too (a
# key put back comes back selected or not as it was: a user's Graph Editor selection stays).
REPLACED = frozenset(name for name, width, _ in KEY_ATTRIBUTES if width == 1)
# The types read_keys reads them in: Blender's own, copied in one pass (the flags as booleans).
REPLACED_TYPES = tuple(
    (name, np.bool_ if name.startswith("select_") else np.uint8 if dtype is np.int32 else dtype)
    for name, width, dtype in KEY_ATTRIBUTES
    if name in REPLACED
)


def keep_replaced(replaced: dict, name: str, column: np.ndarray, rows: np.ndarray) -> None:
    """`replaced[name]` from `column`, every key's `name` as read: handles (m, 2); else (1, 1) where
    every key of the curve shares it, else (m, 1)."""
    if name in HANDLES:
        replaced[name] = column.reshape(-1, 2)[rows]
        return
    first = column[:1]
    if column.tobytes() == first.tobytes() * len(column):  # every key alike (mostly): no numpy call
        replaced[name] = first.reshape(1, 1).copy()
    else:
        replaced[name] = column[rows].reshape(-1, 1)


def _placed(replaced: dict) -> bool:
    return bool(_PLACED[replaced["handle_left_type"]].all() and _PLACED[replaced["handle_right_type"]].all())


def read_handles(kp, count: int, rows: np.ndarray, replaced: dict) -> None:
    """The replaced keys' handles where update() would not place them (their types as kept)."""
    if _placed(replaced):
        return
    for name in HANDLES:
        column = np.empty(2 * count, dtype=np.float32)
        kp.foreach_get(name, column)
        replaced[name] = column.reshape(count, 2)[rows]


def drop_placed_handles(replaced: dict) -> None:
    if _placed(replaced):
        for name in HANDLES:
            replaced.pop(name, None)


def read_keys(fc, rows: np.ndarray, co: np.ndarray | None = None) -> dict[str, np.ndarray]:
    """The attributes of `fc`'s keys `rows` as write_keys_in's `replaced` keeps them (nothing written
    since `co`, its keys' co as read, if given)."""
    kp = fc.keyframe_points
    count = len(kp)
    if not len(rows):
        return {}
    if co is None or len(co) != 2 * count:
        co = np.empty(2 * count, dtype=np.float32)
        kp.foreach_get("co", co)
    out = {"co": co.reshape(count, 2)[rows]}
    for name, dtype in REPLACED_TYPES:
        column = scratch(dtype, count)
        kp.foreach_get(name, column)
        keep_replaced(out, name, column, rows)
    read_handles(kp, count, rows, out)
    return out


def shared_row(value, dtype) -> np.ndarray:
    """A (1, 1) row of `value` (cached, read-only: shared by every curve whose keys all hold it)."""
    key = (value, dtype)
    found = _ROWS.get(key)
    if found is None:
        found = _ROWS[key] = np.full((1, 1), value, dtype=dtype)
        found.flags.writeable = False
    return found


_ROWS: dict = {}


def scratch(dtype, count: int) -> np.ndarray:
    """A scratch array of `count` (cached by type and length: a bake writes curves of a few lengths)."""
    key = (dtype, count)
    found = _BUFFERS.get(key)
    if found is None:
        if len(_BUFFERS) > 64:
            _BUFFERS.clear()
        found = _BUFFERS[key] = np.empty(count, dtype=dtype)
    return found


_BUFFERS: dict = {}


def filled(value, dtype, count: int) -> bytes:
    """The bytes of `count` keys all holding `value` (cached: a bake writes curves of a few lengths)."""
    key = (value, dtype, count)
    found = _FILLED.get(key)
    if found is None:
        if len(_FILLED) > 256:
            _FILLED.clear()
        found = _FILLED[key] = np.full(count, value, dtype=dtype).tobytes()
    return found


_FILLED: dict = {}
