"""Auto-keying a Solve: what it keys, refused before anything is posed."""

from __future__ import annotations

from ... import rig
from ...rig import protected
from ..spec import ChainSpec


def check_keying(scene, obj, specs: list[ChainSpec]) -> rig.keying_set.AutoKeys:
    """With auto-keying on: what it keys (the active keying set's channels when Blender's "Only
    Active Keying Set" is on), which must be allowed before anything is posed (ValueError)."""
    names = list(dict.fromkeys(n for s in specs for n in rig.chain_bone_names(obj, s.tip, s.chain_length, s.use_tail)))
    keys = rig.keying_set.auto_keys(scene, obj, names)
    refusal = protected.keying_refusal(obj, names, keys.paths)
    if refusal:
        raise ValueError(f"auto-keying: {refusal}")
    return keys
