"""What a planted bake wrote, kept in the action it wrote into (issue 21: a re-bake after editing
the Contact keys bakes from the capture, not from the last bake's keys).

The record is an ID property of the action (`RECORD`), so it is saved with the file, undone with
the keys, and copied with the action. It holds one entry per F-Curve the bake changed (per slot on
4.4+'s layered actions): the keys it wrote (frame, value) and the keys it removed to write them
(every attribute, as rig.keys.KEY_ATTRIBUTES: the capture's keys, put back exactly). The logic of
what to take back lives in app.bake.contact_record; here, the bpy reads and writes only.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .keys import KEY_ATTRIBUTES

RECORD = "chain_ik_planted_bake"
# Handle types whose handles FCurve.update() places from the keys alone (AUTO, AUTO_CLAMPED,
# VECTOR): a removed key of these types needs no stored handles.
_PLACED = (1, 3, 4)  # the enum values, the same on 4.2 and 5.0 (FREE 0, VECTOR 1, ALIGNED 2, AUTO 3, AUTO_CLAMPED 4)
_WIDTH = {name: width for name, width, _ in KEY_ATTRIBUTES}
_DTYPE = {name: dtype for name, _, dtype in KEY_ATTRIBUTES}


@dataclass
class Entry:
    """One F-Curve's part of the record."""

    slot: str  # the slot's identifier (4.4+), '' on 4.2's actions
    path: str
    index: int
    frames: np.ndarray  # (n,) float32 action frames the bake keyed
    values: np.ndarray  # (n,) float32 the values it keyed there
    removed: dict[str, np.ndarray] = field(default_factory=dict)  # attribute -> (m, width) the keys it removed
    # Where the bake made the curve: the channel's value it read (the pose's, unkeyed); else NaN.
    static: float = float("nan")

    @property
    def removed_frames(self) -> np.ndarray:
        co = self.removed.get("co")
        return np.zeros(0, dtype=np.float32) if co is None else co[:, 0]


def slot_identifier(obj) -> str:
    ad = obj.animation_data
    slot = getattr(ad, "action_slot", None) if ad is not None else None
    return "" if slot is None else slot.identifier


def load(action) -> list[Entry]:
    """The action's record (empty without one)."""
    if action is None or RECORD not in action:
        return []
    out = []
    for item in action[RECORD].get("curves", ()):
        removed = {}
        count = int(item.get("removed", 0))
        for name, width, dtype in KEY_ATTRIBUTES:
            stored = item.get(name)
            if stored is None:
                continue
            row = np.array(stored, dtype=dtype)  # a copy: the property's buffer dies with the file
            # One row of `width`: every removed key had it (stored once).
            removed[name] = np.tile(row, (count, 1)) if len(row) == width else row.reshape(count, width)
        if "co" not in removed:
            removed = {}
        out.append(
            Entry(
                str(item["slot"]),
                str(item["path"]),
                int(item["index"]),
                np.asarray(item["frames"], dtype=np.float32).copy(),
                np.asarray(item["values"], dtype=np.float32).copy(),
                removed,
                float(item.get("static", float("nan"))),
            )
        )
    return out


def store(action, entries: list[Entry]) -> None:
    """Replace the action's record by `entries` (none: the record removed)."""
    if not entries:
        if RECORD in action:
            del action[RECORD]
        return
    items = []
    for e in entries:
        item = {"slot": e.slot, "path": e.path, "index": e.index, "frames": e.frames, "values": e.values}
        if np.isfinite(e.static):
            item["static"] = e.static
        count = len(e.removed_frames)
        item["removed"] = count
        for name, rows in e.removed.items() if count else ():
            same = bool((rows == rows[0]).all())
            item[name] = np.ascontiguousarray(rows[0] if same else rows.ravel(), dtype=_DTYPE[name])
        items.append(item)
    action[RECORD] = {"curves": items}


def read_rows(fc, rows: np.ndarray, co: np.ndarray | None = None) -> dict[str, np.ndarray]:
    """Every attribute of `fc`'s keys `rows` (m,) as (m, width) arrays; `co`: the curve's keys' co
    as already read (nothing written since), not read again. Handles are left out where every
    row's handles are placed by FCurve.update() (auto and vector handles)."""
    kp = fc.keyframe_points
    count = len(kp)
    out = {}
    if not len(rows):
        return out
    for name, width, dtype in KEY_ATTRIBUTES:
        if name == "co" and co is not None and len(co) == 2 * count:
            column = co
        else:
            column = np.empty(width * count, dtype=dtype)
            kp.foreach_get(name, column)
        out[name] = column.reshape(count, width)[rows].copy()
    placed = np.isin(out["handle_left_type"], _PLACED).all() and np.isin(out["handle_right_type"], _PLACED).all()
    if placed:
        del out["handle_left"], out["handle_right"]
    return out


def keys_of(fc) -> dict[str, np.ndarray]:
    """Every attribute of every key of `fc` (n, width)."""
    return read_rows(fc, np.arange(len(fc.keyframe_points)))


def rebuild(fc, keep: np.ndarray, added: dict[str, np.ndarray]) -> None:
    """`fc` with its keys `keep` (a mask) and the keys `added` (attribute -> (m, width); handles
    may be left out where update() places them), every attribute as given; then update()."""
    current = keys_of(fc) if len(fc.keyframe_points) else {}
    kp = fc.keyframe_points
    kept = {name: rows[keep] for name, rows in current.items()}
    sources = [source for source in (kept, added) if source and len(source["co"])]
    kp.clear()
    kp.add(sum(len(source["co"]) for source in sources))
    for name, _, dtype in KEY_ATTRIBUTES:
        parts = []
        for source in sources:
            if name in source:
                parts.append(source[name])
            elif name in ("handle_left", "handle_right"):  # placed by update(): started on the key
                parts.append(source["co"])
            else:
                raise ValueError(f"the bake record of {fc.data_path}[{fc.array_index}] lacks '{name}'")
        if parts:
            kp.foreach_set(name, np.concatenate(parts).astype(dtype).ravel())
    fc.update()


def put_back(fc, snapshot: dict[str, np.ndarray]) -> None:
    """`fc` as `keys_of` read it."""
    kp = fc.keyframe_points
    kp.clear()
    if snapshot:
        count = len(snapshot["co"])
        kp.add(count)
        for name, rows in snapshot.items():
            kp.foreach_set(name, rows.ravel())
        if "handle_left" not in snapshot:
            kp.foreach_set("handle_left", snapshot["co"].ravel())
            kp.foreach_set("handle_right", snapshot["co"].ravel())
    fc.update()


def channel_value(obj, path: str, index: int) -> float:
    """The property's value on `obj` (the pose's, where no curve sets it)."""
    return float(obj.path_resolve(path)[index])


def set_channel(obj, path: str, index: int, value: float) -> None:
    obj.path_resolve(path)[index] = value


def remove_curve(obj, fc) -> str:
    """Remove `fc` from the action animating `obj`; its group's name ('' without one)."""
    from .keys import _assigned_collection

    group = fc.group.name if fc.group is not None else ""
    _assigned_collection(obj).remove(fc)
    return group
