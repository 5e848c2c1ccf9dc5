"""What a planted bake wrote, kept in the action it wrote into (issue 21: a re-bake after editing
the Contact keys bakes from the capture, not from the last bake's keys).

The record is an ID property of the action (`RECORD`), so it is saved with the file, undone with
the keys, and copied with the action. It holds one entry per F-Curve the bake changed (per slot on
4.4+'s layered actions): the keys it wrote (frame, value) and the keys it removed to write them
(every attribute, as rig.keys.KEY_ATTRIBUTES, the selection too: the capture's keys, put back
exactly); the slot's handle and the bone's rest (to follow a renamed slot or bone). The logic of
what to take back lives in app.bake.contact_record; here, the bpy reads and writes only.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field

import bpy
import numpy as np

from . import keys
from .key_reads import KEY_ATTRIBUTES, filled, read_keys, shared_row

RECORD = "chain_ik_planted_bake"
_HANDLES = ("handle_left", "handle_right")
# Each attribute in the type Blender stores it in, which foreach_get copies in one pass (as int32,
# every enum key is converted on its own: ~5x slower).
NATIVE = tuple(
    (name, width, np.bool_ if name.startswith("select_") else np.uint8 if dtype is np.int32 else dtype)
    for name, width, dtype in KEY_ATTRIBUTES
)
# The attributes recorded besides co and the handles, one value per key, each kept as one row
# where every removed key shares it (a capture's keys mostly all do): rig.keys.write_keys_in's
# `replaced`, the selection too (a record from before it kept none: its keys come back selected).
_SHARED = tuple((name, dtype) for name, width, dtype in NATIVE if width == 1)
_SELECTED = tuple(name for name, _, _ in NATIVE if name.startswith("select_"))
# What keyframe_points.add() gives a key besides its co and handles (rig.keys).
_ADDED = {"interpolation": keys.NEW_KEY_INTERPOLATION, **keys.NEW_KEY}
_NO_REST = np.full(6, np.nan, dtype=np.float32)
_SELECTED_ROW = np.ones((1, 1), dtype=np.bool_)  # an entry loaded from a record that kept no selection
_SEP, _FIELD = "\x1e", "\x1f"  # between curves, between a curve's slot, path and index


@dataclass
class Entry:
    """One F-Curve's part of the record."""

    slot: str  # the slot's identifier (4.4+), '' on 4.2's actions
    path: str
    index: int
    frames: np.ndarray  # (n,) float32 action frames the bake keyed
    values: np.ndarray  # (n,) float32 the values it keyed there
    # attribute -> (m, width) the keys it removed (NATIVE types), or (1, width): a row all share;
    # the handles left out where update() places them (auto and vector handles)
    removed: dict[str, np.ndarray] = field(default_factory=dict)
    # Where the bake made the curve: the channel's value it read (the pose's, unkeyed); else NaN.
    static: float = float("nan")
    # The slot's handle (4.4+: it stays when the slot is renamed), None where not known (4.2, or a
    # record from before it was kept); the bone's rest head and tail (6,), armature space, float32,
    # to find it again once renamed (None where not known).
    handle: int | None = None
    rest: np.ndarray | None = None

    @property
    def removed_frames(self) -> np.ndarray:
        co = self.removed.get("co")
        return np.zeros(0, dtype=np.float32) if co is None else co[:, 0]


def subset(removed: dict[str, np.ndarray], mask: np.ndarray) -> dict[str, np.ndarray]:
    """The removed keys `mask` (m,) picks (a shared row stays shared)."""
    if not removed:
        return {}
    m = len(removed["co"])
    return {name: rows[mask] if len(rows) == m or m == 1 else rows for name, rows in removed.items()}


def _full(rows: np.ndarray, m: int) -> np.ndarray:
    return rows if len(rows) == m else np.repeat(rows, m, axis=0)


def slot_identifier(obj) -> str:
    ad = obj.animation_data
    slot = getattr(ad, "action_slot", None) if ad is not None else None
    return "" if slot is None else slot.identifier


def slot_handle(obj) -> int | None:
    """The handle of the slot animating `obj` (None on 4.2's actions, or with no slot assigned)."""
    ad = obj.animation_data
    slot = getattr(ad, "action_slot", None) if ad is not None else None
    return None if slot is None else int(slot.handle)


def bone_rest(obj, name: str) -> np.ndarray | None:
    """The bone's rest head and tail (6,) float32 in armature space; None without such a bone."""
    bone = obj.data.bones.get(name)
    if bone is None:
        return None
    return np.array((*bone.head_local, *bone.tail_local), dtype=np.float32)


def rests(obj) -> dict[str, bytes]:
    """Every bone's rest head and tail as `bone_rest` gives them, as bytes."""
    return {bone.name: bone_rest(obj, bone.name).tobytes() for bone in obj.data.bones}


def _split(array: np.ndarray, counts: np.ndarray) -> list[np.ndarray]:
    return np.split(array, np.cumsum(counts)[:-1]) if len(counts) else []


def load(action) -> list[Entry]:
    """The action's record (empty without one); every array a copy (the property's buffer dies
    with the file), a row every removed key shares the cached read-only one (key_reads.shared_row)."""
    if action is None or RECORD not in action:
        return []
    group = action[RECORD]
    names = [line.split(_FIELD) for line in str(group["curves"]).split(_SEP)]
    written = np.array(group["written"], dtype=np.int64)
    removed = np.array(group["removed"], dtype=np.int64)
    frames = _split(np.array(group["frames"], dtype=np.float32), written)
    values = _split(np.array(group["values"], dtype=np.float32), written)
    co = _split(np.array(group["co"], dtype=np.float32).reshape(-1, 2), removed)
    static = np.array(group["static"], dtype=float)
    handles = np.array(group["handles"], dtype=bool)
    handle_rows = _split(np.array(group.get("rows_handles", ()), dtype=np.float32).reshape(-1, 4), removed * handles)
    stored = {name: np.array(group[name]) for name in group.keys() if name.startswith(("same_", "rows_"))}
    count = len(names)
    # Per attribute: its value per curve as Python floats (NaN: the curve's rows follow in rows_),
    # its rows and where the next curve's start; a record from before the selection was kept has
    # none of it (its keys come back selected).
    shared = [
        (name, dtype, stored[f"same_{name}"].tolist(), stored.get(f"rows_{name}"), [0])
        for name, dtype in _SHARED
        if f"same_{name}" in stored
    ]
    removed_of, static_of, handles_of = removed.tolist(), static.tolist(), handles.tolist()
    slots = np.array(group.get("slot_handles", [math.nan] * count), dtype=float).tolist()
    rest_of = np.array(group.get("rests", [math.nan] * (6 * count)), dtype=np.float32).reshape(count, 6)
    out = []
    for i, (slot, path, index) in enumerate(names):
        m = removed_of[i]
        taken = {}
        if m:
            taken["co"] = co[i]
            for name, dtype, same_of, rows, at in shared:
                same = same_of[i]
                if math.isfinite(same):
                    taken[name] = shared_row(same, dtype)
                else:
                    taken[name] = rows[at[0] : at[0] + m].astype(dtype).reshape(m, 1)
                    at[0] += m
            if handles_of[i]:
                taken["handle_left"], taken["handle_right"] = handle_rows[i][:, :2], handle_rows[i][:, 2:]
        handle = None if math.isnan(slots[i]) else int(slots[i])
        rest = rest_of[i]
        rest = None if np.isnan(rest[0]) else rest.copy()
        out.append(Entry(slot, path, int(index), frames[i], values[i], taken, static_of[i], handle, rest))
    return out


def store(action, entries: list[Entry]) -> None:
    """Replace the action's record by `entries` (none: the record removed). A few arrays for the
    whole record, the curves' one after another (an ID property per curve and attribute would
    cost more than the bake's keys)."""
    if not entries:
        if RECORD in action:
            del action[RECORD]
        return
    removed = [len(e.removed["co"]) if "co" in e.removed else 0 for e in entries]
    co = [e.removed["co"] for e in entries if "co" in e.removed]
    handles = [m > 0 and "handle_left" in e.removed for e, m in zip(entries, removed, strict=True)]
    group = {
        "curves": _SEP.join(_FIELD.join((e.slot, e.path, str(e.index))) for e in entries),
        "written": np.array([len(e.frames) for e in entries], dtype=np.int32),
        "frames": np.concatenate([e.frames for e in entries]).astype(np.float32),
        "values": np.concatenate([e.values for e in entries]).astype(np.float32),
        "removed": np.array(removed, dtype=np.int32),
        "static": np.array([e.static for e in entries], dtype=float),
        "co": np.concatenate([np.zeros((0, 2), np.float32), *co]).astype(np.float32).ravel(),
        "handles": np.array(handles, dtype=np.int32),
        # (float64: every int32 handle exactly, NaN where not known)
        "slot_handles": np.array([np.nan if e.handle is None else e.handle for e in entries], dtype=float),
        "rests": np.concatenate([_NO_REST if e.rest is None else e.rest for e in entries]).astype(np.float32),
    }
    pairs = [np.hstack([e.removed[n] for n in _HANDLES]) for e, h in zip(entries, handles, strict=True) if h]
    if pairs:
        group["rows_handles"] = np.concatenate(pairs).astype(np.float32).ravel()
    # Each attribute's value per curve where all its removed keys share it (NaN where they do not,
    # or none was removed), else its rows; one pass over the curves (this runs after every bake).
    same = [[np.nan] * len(entries) for _ in _SHARED]
    rows: list[list] = [[] for _ in _SHARED]
    for i, (e, m) in enumerate(zip(entries, removed, strict=True)):
        if not m:
            continue
        for j, (name, _) in enumerate(_SHARED):
            c = e.removed[name] if name in e.removed or name not in _SELECTED else _SELECTED_ROW
            if len(c) == 1 or bool((c == c[0]).all()):
                same[j][i] = float(c[0, 0])
            else:
                rows[j].append(c.ravel().astype(np.float32))
    for j, (name, _) in enumerate(_SHARED):
        group[f"same_{name}"] = np.array(same[j])
        if rows[j]:
            group[f"rows_{name}"] = np.concatenate(rows[j])
    action[RECORD] = group


def keys_of(fc, co: np.ndarray | None = None) -> dict[str, np.ndarray]:
    """Every attribute of every key of `fc` (n, width), the selection too (a snapshot to put back);
    `co`: its keys' co as read, nothing written since (not read again)."""
    return read_keys(fc, np.arange(len(fc.keyframe_points)), co)


def rebuild(fc, keep: np.ndarray, added: dict[str, np.ndarray], current: dict | None = None) -> None:
    """`fc` with its keys `keep` (a mask) and the keys `added` (attribute -> (m, width) or a shared
    (1, width) row; the handles may be left out where update() places them, the selection where
    not known: then set), every attribute as given; then update(). `current`: `keys_of(fc)` as
    read, nothing written since (not read again)."""
    if current is None:
        current = keys_of(fc) if len(fc.keyframe_points) else {}
    kept = subset(current, keep)
    sources = [source for source in (kept, added) if source and len(source["co"])]
    kp = fc.keyframe_points
    kp.clear()
    kp.add(sum(len(source["co"]) for source in sources))
    for name, _, dtype in NATIVE:
        parts = []
        for source in sources:
            m = len(source["co"])
            if name in source:
                parts.append(_full(source[name], m))
            elif name in _HANDLES:  # placed by update(): started on the key
                parts.append(source["co"])
            elif name in _SELECTED:
                parts.append(np.ones((m, 1), dtype=np.bool_))
            else:
                raise ValueError(f"the bake record of {fc.data_path}[{fc.array_index}] lacks '{name}'")
        if not parts:
            continue
        column = np.concatenate(parts).astype(dtype).ravel()
        # As keyframe_points.add() made them (mostly: the selection, a capture's handle types, easing
        # and the like): not written again (a bool costs a call per key).
        added_as = _ADDED.get(name)
        if added_as is not None and column.tobytes() == filled(added_as, dtype, len(column)):
            continue
        kp.foreach_set(name, column)
    fc.update()


def put_back(fc, snapshot: dict[str, np.ndarray]) -> None:
    """`fc` as `keys_of` read it."""
    kp = fc.keyframe_points
    kp.clear()
    if snapshot:
        count = len(snapshot["co"])
        kp.add(count)
        for name, rows in snapshot.items():
            kp.foreach_set(name, _full(rows, count).ravel())
        if "handle_left" not in snapshot:
            for name in _HANDLES:
                kp.foreach_set(name, snapshot["co"].ravel())
    fc.update()


@functools.lru_cache(maxsize=4096)  # (a bake asks for the same few paths, bake after bake)
def bone_of(path: str) -> str | None:
    """The bone a pose bone's data path names (None for another path)."""
    head, end = 'pose.bones["', path.rfind('"].')
    if not path.startswith(head) or end < len(head):
        return None
    return bpy.utils.unescape_identifier(path[len(head) : end])


def renamed(path: str, bone: str) -> str:
    """`path` on the bone `bone` (the same property)."""
    return keys.data_path(bone, path[path.rfind('"].') + 3 :])


def curves_of(obj):
    """The F-Curve collection animating `obj` (rig.keys'), to look curves up by path and index."""
    from .keys import _assigned_collection

    return _assigned_collection(obj)


def channel_value(obj, path: str, index: int) -> float:
    """The property's value on `obj` (the pose's, where no curve sets it)."""
    return float(obj.path_resolve(path)[index])


def set_channel(obj, path: str, index: int, value: float) -> None:
    obj.path_resolve(path)[index] = value


def remove_curve(obj, fc) -> str:
    """Remove `fc` from the action animating `obj`; its group's name ('' without one)."""
    group = fc.group.name if fc.group is not None else ""
    curves_of(obj).remove(fc)
    return group
