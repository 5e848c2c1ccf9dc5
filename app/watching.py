"""The names of the armatures Live watches (see app.live), apart from app.live so that the
`live` property's update (properties.py) adds to it without importing the solve path, which
reads properties.py: no import circle."""

from __future__ import annotations

names: set[str] = set()  # objects that had a live chain when Live last looked


def watch(obj) -> None:
    """A chain of `obj` was switched to Live (the `live` property's update)."""
    names.add(obj.name)
