"""A re-bake with contacts bakes from the capture, not from the last planted bake's keys (issue 21
item 2: "a re-bake after editing the Contact keys uses the edits").

A planted bake writes its keys into the action it reads, so a second bake would take the first
one's held feet, lowered hips and eases as its motion: a contact deleted since stays planted, and
every re-bake turns the joints faster. So each planted bake leaves a record in the action
(rig.bake_record: per F-Curve it changed, the keys it wrote and the keys it removed to write them),
and the next planted bake of the same legs first takes those curves back (`take_back`) on the
frames where the keys are still exactly what the last bake wrote; a key edited since, or deleted or
moved, is the user's: it stays, and is the motion the bake reads. Then it bakes as usual and
records afresh (`write`). Bake twice equals bake once; detect, bake, edit the contacts, bake
equals a bake of the capture with the edited contacts.

Taken back: the planted legs' rotation curves and the location curves of the bones above them
(the hips Move Root lowers, whether or not Move Root is on now), over the bake's frames only; the
record's other entries stay. A bake that fails or is cancelled puts the curves back as they were.

The record speaks for the last planted bake's keys only while they are that bake's: per key, while
still exactly there (an edit is the user's); per curve, until any bake keys that curve over those
frames (a bake without contacts too, `write`'s `keyed`: its keys were made from the motion as it
then played, and what the planted bake removed under them is gone with them). A slot is found by
its handle, a bone by its name and rest, else by its rest (renamed since), else by its name (its
rest edited); an entry whose bone is found no way cannot be used: dropped, and the report says so.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

from ...rig import bake_record, keys
from ...rig.bake_record import Entry
from ..spec import ChainSpec
from . import contact_targets

_ROTATIONS = ("rotation_quaternion", "rotation_euler", "rotation_axis_angle")


@dataclass
class TakenBack:
    """What `take_back` did: the keys restored, the user's kept, the record's entries left."""

    remainder: list[Entry] = field(default_factory=list)  # the record's entries not taken back
    restored: int = 0  # keys put back as the capture had them (or removed, where it had none)
    kept: int = 0  # keys the last bake wrote that were edited, moved or deleted since: kept as the motion
    curves: int = 0
    # (F-Curve, or (path, index, group) where it was removed, its keys before) to put back on failure
    snapshots: list = field(default_factory=list)
    obj: object = None
    lost: list[str] = field(default_factory=list)  # bones whose entries could not be used (renamed or removed)

    def put_back(self) -> None:
        """The curves as they were before `take_back` (the bake failed or was cancelled)."""
        for fc, snapshot in self.snapshots:
            if isinstance(fc, tuple):  # removed (the bake had made it): made again
                fc = keys.FCurves(self.obj).ensure(*fc)
            bake_record.put_back(fc, snapshot)
        if self.snapshots:
            self.obj.animation_data.action.update_tag()
        self.snapshots = []

    def sentence(self) -> str:
        """The report's line ('' when nothing was taken back, kept or lost)."""
        parts = []
        if self.restored or self.kept:
            kept = f"; kept {self.kept} key(s) edited, moved or deleted since, as the motion" if self.kept else ""
            parts.append(
                f"re-bake: the last planted bake's keys taken back to the motion it read on {self.curves}"
                f" F-Curve(s) ({self.restored} keys) before baking{kept}"
            )
        if self.lost:
            names = ", ".join(f"'{n}'" for n in sorted(set(self.lost)))
            parts.append(
                f"re-bake: the last planted bake's record of bone(s) {names} could not be used (no such bone"
                " now, nor one with its rest: renamed or removed since); their keys are read as the motion"
            )
        return "; ".join(parts)


def _scope(obj, specs: list[ChainSpec]) -> set[str]:
    """The data paths a planted bake of `specs` takes back: its legs' rotations, the location of
    every bone above them."""
    paths = set()
    for spec in specs:
        if not spec.contacts:
            continue
        legs = contact_targets.leg_bones(obj, spec)
        paths |= {keys.data_path(n, prop) for n in legs for prop in _ROTATIONS}
        paths |= {keys.data_path(b.name, "location") for b in obj.pose.bones[legs[0]].parent_recursive}
    return paths


def _split(entry: Entry, low: float, high: float) -> tuple[Entry, Entry]:
    """(the part of `entry` within [low, high], the part outside)."""
    inside = (entry.frames >= low) & (entry.frames <= high)
    rows = entry.removed_frames
    gone = (rows >= low) & (rows <= high)

    def part(written, removed) -> Entry:
        taken = bake_record.subset(entry.removed, removed)
        frames, values = entry.frames[written], entry.values[written]
        return Entry(entry.slot, entry.path, entry.index, frames, values, taken, entry.static, entry.handle, entry.rest)

    return part(inside, gone), part(~inside, ~gone)


def _plan(fc, entry: Entry) -> tuple[np.ndarray, dict, int, int, np.ndarray]:
    """(the curve's keys to keep (mask), the removed keys to add back, keys restored, keys kept,
    the curve's keys' co as read)."""
    count = len(fc.keyframe_points)
    co = np.empty(2 * count, dtype=np.float32)
    fc.keyframe_points.foreach_get("co", co)
    t, v = co[0::2], co[1::2]
    order = np.argsort(t, kind="stable")
    where = np.searchsorted(t[order], entry.frames)
    where = np.minimum(where, max(count - 1, 0))
    at = order[where] if count else np.zeros(len(entry.frames), dtype=int)
    present = (t[at] == entry.frames) if count else np.zeros(len(entry.frames), dtype=bool)
    intact = present & (v[at] == entry.values) if count else present
    keep = np.ones(count, dtype=bool)
    keep[at[intact]] = False
    # A removed key comes back where the bake's key on its frame is intact, or, between the bake's
    # keys, where both neighbours are intact and no key sits on its frame now.
    rows = entry.removed_frames
    back = np.zeros(len(rows), dtype=bool)
    if len(rows) and len(entry.frames):
        sort = np.argsort(entry.frames, kind="stable")
        frames, ok = entry.frames[sort], intact[sort]
        j = np.searchsorted(frames, rows)
        on = (j < len(frames)) & (frames[np.minimum(j, len(frames) - 1)] == rows)
        after = ok[np.minimum(j, len(frames) - 1)] | (j >= len(frames))
        before = ok[np.maximum(j - 1, 0)] | (j == 0)
        free = ~_among(rows, np.sort(t[keep]))
        back = np.where(on, ok[np.minimum(j, len(frames) - 1)], after & before & free)
    added = bake_record.subset(entry.removed, back)
    return keep, added, int(np.count_nonzero(intact)), int(len(entry.frames) - np.count_nonzero(intact)), co


def _among(values: np.ndarray, pool: np.ndarray) -> np.ndarray:
    """np.isin(values, pool) for `pool` sorted, by a binary search (np.isin costs ~0.1 ms a call)."""
    if not len(pool):
        return np.zeros(len(values), dtype=bool)
    return pool[np.minimum(np.searchsorted(pool, values), len(pool) - 1)] == values


def _slot_of(entry: Entry, identifier: str, handle: int | None) -> bool:
    """`entry` is of the slot animating the object (by its handle where both are known: a renamed slot
    keeps it)."""
    if entry.handle is not None and handle is not None:
        return entry.handle == handle
    return entry.slot == identifier


class _Bones:
    """Finds an entry's bone (a bone can be renamed): the bone of that name (its rest edited since,
    maybe: a bone with the old rest elsewhere is a twin, as Rigify's ORG/DEF copies, not it); where
    no bone has the name, the one bone with the recorded rest (renamed since); else none."""

    def __init__(self, obj):
        self.obj = obj
        self.rest_of: dict[str, bytes | None] = {}  # the bones' rests by name, as read
        self.by_rest: dict | None = None  # rest -> bone names, read at the first bone not found by name

    def _rest(self, name: str) -> bytes | None:
        if name not in self.rest_of:
            rest = bake_record.bone_rest(self.obj, name)
            self.rest_of[name] = None if rest is None else rest.tobytes()
        return self.rest_of[name]

    def follow(self, entry: Entry) -> Entry | None:
        """`entry` on its bone's path now, or None: lost."""
        name = bake_record.bone_of(entry.path)
        if name is None:
            return entry
        here = self._rest(name)
        if here is not None or entry.rest is None:  # the bone of that name (its rest edited, maybe): it
            return entry if here is not None else None  # (review14: a twin with its old rest took it)
        if self.by_rest is None:
            self.by_rest = {}
            for bone, rest in bake_record.rests(self.obj).items():
                self.by_rest.setdefault(rest, []).append(bone)
        found = self.by_rest.get(entry.rest.tobytes(), [])
        if len(found) == 1:
            return replace(entry, path=bake_record.renamed(entry.path, found[0]))
        return entry if here is not None else None


def take_back(obj, specs: list[ChainSpec], frames: np.ndarray) -> TakenBack:
    """Take the last planted bake's keys on the legs of `specs` back to what that bake read, over
    `frames` (see the module's text); call before the bake reads the motion. ValueError (nothing
    changed) where such a curve is locked."""
    ad = obj.animation_data
    # (A bake without contacts leaves the record as it is: `write` stores none, so it is not read.)
    if ad is None or ad.action is None or not any(s.contacts for s in specs) or bake_record.RECORD not in ad.action:
        return TakenBack(obj=obj)
    entries = bake_record.load(ad.action)
    out = TakenBack(remainder=entries, obj=obj)
    scope = _scope(obj, specs)
    slot, handle = bake_record.slot_identifier(obj), bake_record.slot_handle(obj)
    bones = _Bones(obj)
    at = keys.action_frames(obj, frames)
    low = np.float32(at.min() - keys.FRAME_EPSILON)
    high = np.float32(at.max() + keys.FRAME_EPSILON)
    plans, remainder = [], []
    curves = bake_record.curves_of(obj)  # (looked up once: keys.assigned_fcurve would per curve)
    for entry in entries:
        if not _slot_of(entry, slot, handle):
            remainder.append(entry)
            continue
        followed = bones.follow(entry)
        if followed is None:  # its bone renamed or removed: the record of it dropped (said in the report)
            out.lost.append(bake_record.bone_of(entry.path))
            continue
        entry = followed
        entry.slot = slot  # (a renamed slot's new identifier; the entries are load()'s own)
        if entry.path not in scope:
            remainder.append(entry)
            continue
        inside, outside = _split(entry, low, high)
        if len(outside.frames) or len(outside.removed_frames):
            remainder.append(outside)
        fc = curves.find(entry.path, index=entry.index) if curves is not None else None
        if fc is None:  # the curve deleted since: the user's
            out.kept += len(inside.frames)
            continue
        keep, added, restored, kept, co = _plan(fc, inside)
        out.kept += kept
        if restored or len(added.get("co", ())):
            if fc.lock:
                raise ValueError(
                    f"the F-Curve {entry.path}[{entry.index}] is locked: the last planted bake's keys on it"
                    " cannot be taken back to the motion for a re-bake; unlock it; nothing was keyed"
                )
            plans.append((fc, keep, added, inside, co))
            out.restored += restored
    try:
        for fc, keep, added, entry, co in plans:
            snapshot = bake_record.keys_of(fc, co)  # (nothing written on `fc` since _plan read its co)
            out.snapshots.append((fc, snapshot))
            bake_record.rebuild(fc, keep, added, snapshot)
            if not len(fc.keyframe_points) and np.isfinite(entry.static):
                # The bake made the curve: gone again, the channel holds the value the bake read.
                group = bake_record.remove_curve(obj, fc)
                bake_record.set_channel(obj, entry.path, entry.index, entry.static)
                out.snapshots[-1] = ((entry.path, entry.index, group), snapshot)
    except BaseException:
        out.put_back()
        raise
    if plans:  # the evaluated pose follows the curves taken back (the bake checks its reading against it)
        ad.action.update_tag()
    out.curves = len(plans)
    out.remainder = remainder
    return out


def _unkeyed(obj, entries: list[Entry], keyed, frames: np.ndarray) -> tuple[list[Entry], bool]:
    """`entries` less their part on the curves `keyed` (path, index) over `frames` (another bake keyed
    them there: the keys are that bake's now); whether any changed."""
    slot, handle = bake_record.slot_identifier(obj), bake_record.slot_handle(obj)
    on = {(c.path, c.index) for c in keyed}
    hit = [(e.path, e.index) in on and _slot_of(e, slot, handle) for e in entries]
    if not any(hit):
        return entries, False
    at = keys.action_frames(obj, frames)
    low = np.float32(at.min() - keys.FRAME_EPSILON)
    high = np.float32(at.max() + keys.FRAME_EPSILON)
    out = []
    for entry, cut in zip(entries, hit, strict=True):
        if cut:
            entry = _split(entry, low, high)[1]
            if not len(entry.frames) and not len(entry.removed_frames):
                continue
        out.append(entry)
    return out, True


def unkeyed(obj, keyed, frames: np.ndarray) -> None:
    """A bake without contacts (Bake, IK -> FK) keyed the curves `keyed` (bake_curves.Curve's path and
    index) over `frames`: the record's entries on them end there (the module's text)."""
    ad = obj.animation_data
    action = ad.action if ad is not None else None
    if not keyed or action is None or bake_record.RECORD not in action:
        return
    left, changed = _unkeyed(obj, bake_record.load(action), keyed, frames)
    if changed:
        bake_record.store(action, left)


def write(
    obj, plants: contact_targets.Plants, frames: np.ndarray, interpolation: str, taken: TakenBack, keyed=()
) -> dict:
    """contact_targets.write, with the record of what it wrote and replaced (the record's other
    entries kept, but on the curves `keyed`: the bake's other chains' curves, keyed over its frames,
    bake_curves.Curve's path and index); keys written per bone."""
    if not plants.chains:
        per_bone = contact_targets.write(obj, plants, frames, interpolation)
        unkeyed(obj, keyed, frames)
        return per_bone
    curves: list[Entry] = []
    per_bone = contact_targets.write(obj, plants, frames, interpolation, curves)
    slot, handle = bake_record.slot_identifier(obj), bake_record.slot_handle(obj)  # (the slot assigned now)
    rests: dict = {}
    for entry in curves:
        bone = bake_record.bone_of(entry.path)
        if bone not in rests:
            rests[bone] = bake_record.bone_rest(obj, bone) if bone is not None else None
        entry.slot, entry.handle, entry.rest = slot, handle, rests[bone]
    remainder = _unkeyed(obj, taken.remainder, keyed, frames)[0] if keyed else taken.remainder
    bake_record.store(obj.animation_data.action, remainder + curves)
    return per_bone
