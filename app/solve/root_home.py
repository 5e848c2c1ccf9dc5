"""Where a movable root starts: the location the user gave it, not the last solve's.

Move Root moves the unit's top bone only as far as a target beyond reach needs, and leaves it where
it is while every target is within reach. Solve and Live start from the current pose, which after a
solve is that solve's result: without a memory, the hips that stepped forward for a far target would
stay forward when the target came back. So each solve that moved a root remembers the location it
found there before its first move (the *home*) and the location it wrote; the next solve of that root
starts from home while the bone still holds what was written (nobody moved it since: an undo, a key,
the user's grab all change it), and from its current location otherwise (then that is home).
"""

from __future__ import annotations

# (armature, top bone) -> (home location, location written by the last solve)
_HOMES: dict[tuple[str, str], tuple[tuple[float, ...], tuple[float, ...]]] = {}
_CAPACITY = 64


def home(obj, bone: str) -> tuple[float, ...] | None:
    """The location the root should start from when it is not where it stands now (None: start here)."""
    key = (obj.name_full, bone)
    kept = _HOMES.get(key)
    if kept is None:
        return None
    start, written = kept
    if tuple(obj.pose.bones[bone].location) != written:  # moved since: where it stands is home now
        del _HOMES[key]
        return None
    return start if start != written else None


def remember(obj, bone: str, before: tuple[float, ...], written: tuple[float, ...]) -> None:
    """After a solve wrote `written` on the root that stood at `before` (or started from home)."""
    key = (obj.name_full, bone)
    start = _HOMES.get(key, (before, None))[0] if key in _HOMES else before
    if start == written:
        _HOMES.pop(key, None)  # back home: nothing to remember
        return
    if len(_HOMES) >= _CAPACITY:
        _HOMES.clear()
    _HOMES[key] = (start, written)
