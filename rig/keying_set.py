"""Auto-keying a solve the way Blender's auto-keying keys a transform.

With "Only Active Keying Set" on (Timeline > Auto Keying) and a keying set active, the chain
bones get the channels that keying set names (a built-in one such as Location & Rotation or
Whole Character generates them for each bone, as Blender does for the bones it transforms; an
absolute one contributes its paths on these bones), with its Visual/Needed options; otherwise
their rotation channels, which the solve wrote.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import bpy

from .keys import data_path, rotation_property

# The keyframe_insert options a keying set may carry.
KEY_OPTIONS = {"INSERTKEY_NEEDED", "INSERTKEY_VISUAL"}


@dataclass
class AutoKeys:
    """What auto-keying keys: (data path, array index or -1, group name) on the armature object."""

    channels: list[tuple[str, int, str]]
    options: set = field(default_factory=set)
    keying_set: str = ""  # the active keying set's name, '' when rotations are keyed

    @property
    def paths(self) -> set[str]:
        return {path for path, _, _ in self.channels}


class _Paths:
    """Collects what a KeyingSetInfo's generate() adds (it calls `ks.paths.add(...)`) without
    touching the scene's keying set."""

    def __init__(self) -> None:
        self.paths = self
        self.added: list[tuple[object, str, int, str]] = []

    def add(self, id_block, path, index=-1, group_method="KEYINGSET", group_name="") -> None:
        self.added.append((id_block, path, index, group_name))


def auto_keys(scene, obj, names) -> AutoKeys:
    """The channels auto-keying keys after a solve of bones `names` (ValueError if the active
    keying set cannot generate them)."""
    ks = scene.keying_sets_all.active
    if not scene.tool_settings.use_keyframe_insert_keyingset or ks is None:
        return AutoKeys([(data_path(n, rotation_property(obj.pose.bones[n])), -1, n) for n in names])
    if ks.is_path_absolute:
        prefixes = tuple(data_path(n, "") for n in names)
        channels = [
            (p.data_path, -1 if p.use_entire_array else p.array_index, p.group)
            for p in ks.paths
            if p.id == obj and p.data_path.startswith(prefixes)
        ]
        options = {o for o, on in (("INSERTKEY_NEEDED", ks.use_insertkey_needed),
                                   ("INSERTKEY_VISUAL", ks.use_insertkey_visual)) if on}  # fmt: skip
        return AutoKeys(channels, options, ks.bl_label)
    info = ks.type_info
    collector = _Paths()
    try:
        for name in names:
            info.generate(bpy.context, collector, obj.pose.bones[name])
    except Exception as exc:  # noqa: BLE001 - another add-on's keying set: say which, do not crash
        raise ValueError(f"the active keying set '{ks.bl_label}' failed on the chain's bones: {exc}") from exc
    channels = [(path, index, group or "") for id_block, path, index, group in collector.added if id_block == obj]
    return AutoKeys(channels, set(info.bl_options) & KEY_OPTIONS, ks.bl_label)


def insert(obj, keys: AutoKeys, frame: float) -> int:
    """Insert the keys; returns how many channels were keyed."""
    keyed = 0
    for path, index, group in keys.channels:
        keyed += bool(obj.keyframe_insert(path, index=index, frame=frame, group=group, options=keys.options))
    return keyed
