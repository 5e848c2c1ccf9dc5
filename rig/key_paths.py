"""Where each baked chain's end plays back, from the channel values of the keys (for key
reduction, rig.reduce): forward kinematics as Blender evaluates bones (inherited scale, shear
and location; `PathFK`), so stretched bones (Y scale keys) and a chain hanging below another
baked chain are measured as they play.

A chain's *path* runs from the topmost baked bone above it (another chain's, whose reduced
keys move it too) down to its end: every bone whose keys can move the end. Bones on it that the
bake does not key keep their current channels; where they (or a keyed bone's other channels)
are animated, the path is not `exact` (its frames would need the scene evaluated), and the
reduction keeps that chain to the per-channel bounds, which hold whatever those bones do.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from mathutils import Matrix

from ..solvers import quat
from .keys import animated_channels, data_path

TRANSFORMS = ("location", "rotation_", "scale")


@dataclass
class ChainPath:
    names: tuple[str, ...]  # the path's bones, top first; the chain's own bones last
    use_tail: bool  # the end is the last bone's tail (else its head: the tip bone, use_tail off)
    arms: np.ndarray  # per bone: the rest distance from its head to the end along the path
    exact: bool  # no bone on it moves by animation the keys do not carry
    world: float  # bound on what the object's scale makes of an armature-space distance
    above: float  # the largest axis scale of the pose of the bone above the path (1 at the root)


def chain_path(obj, names, use_tail: bool, tip: str, keyed: set[str], stretched: set[str], animated: set) -> ChainPath:
    """The path of a chain (bone `names` root first, `use_tail`, `tip`); `keyed`: the bones whose
    rotation the bake keys, `stretched` those whose Y scale it keys; `animated`:
    keys.animated_channels(obj)."""
    bones = obj.data.bones
    above, top = [], 0
    parent = bones[names[0]].parent
    while parent is not None:
        above.append(parent.name)
        if parent.name in keyed or parent.name in stretched:
            top = len(above)
        parent = parent.parent
    path = [*reversed(above[:top]), *names]
    if not use_tail:
        path.append(tip)  # its head is the end
    heads = [np.array(bones[n].head_local[:]) for n in path]
    end = np.array(bones[path[-1]].tail_local[:]) if use_tail else heads[-1]
    steps = np.linalg.norm(np.diff(np.array([*heads, end]), axis=0), axis=1)
    exact = not any(_moved_by_animation(n, keyed, stretched, animated) for n in path)
    # Above the path only a scale changes distances below it (a turn or a move carries them rigidly).
    exact = exact and not any(_scaled_by_animation(n, animated) for n in above[top:])
    world = max(abs(s) for s in obj.matrix_world.to_scale())
    top_parent = obj.pose.bones[path[0]].parent
    above_scale = 1.0 if top_parent is None else max(top_parent.matrix.to_3x3().to_scale())
    return ChainPath(tuple(path), use_tail, np.cumsum(steps[::-1])[::-1], exact, world, above_scale)


def _moved_by_animation(name: str, keyed: set[str], stretched: set[str], animated: set) -> bool:
    """Whether animation the bake does not write moves bone `name` (its transform channels; keys
    the bake replaces do not count)."""
    prefix = data_path(name, "")
    for path, index in animated:
        channel = path[len(prefix) :] if path.startswith(prefix) else ""
        if not channel.startswith(TRANSFORMS):
            continue
        if name in keyed and channel.startswith("rotation_"):
            continue  # replaced by the bake's keys
        if name in stretched and (channel, index) == ("scale", 1):
            continue
        return True
    return False


def _scaled_by_animation(name: str, animated: set) -> bool:
    prefix = data_path(name, "scale")
    return any(path == prefix for path, _ in animated)


def chain_paths(obj, chains, keyed: set[str], stretched: set[str]) -> list[ChainPath]:
    """`chain_path` of each chain (names, use_tail, tip)."""
    animated = animated_channels(obj)
    return [chain_path(obj, names, use_tail, tip, keyed, stretched, animated) for names, use_tail, tip in chains]


class PathFK:
    """The ends of paths per frame, from per-bone rotations (frames, 4) and Y scales (frames,).

    A bone that inherits its parent's whole transform (Inherit Scale Full, Inherit Rotation on,
    Local Location on: pose = parent pose @ rest offset @ channels) is carried in float64 numpy
    across all frames; any other bone through Blender's own `Bone.convert_local_to_pose` frame by
    frame (float32: its rounding, ~1e-7 of the lengths, shows in the ends there)."""

    def __init__(self, obj, frames: int) -> None:
        self.obj, self.frames = obj, frames
        self.static = {}  # bone -> (location, rotation (w, x, y, z), scale) channels it keeps

    def _channels(self, name: str):
        hit = self.static.get(name)
        if hit is None:
            pbone = self.obj.pose.bones[name]
            location = (0.0, 0.0, 0.0) if pbone.bone.use_connect else tuple(pbone.location)  # Blender ignores it
            hit = self.static[name] = (location, tuple(pbone.matrix_basis.to_quaternion()), tuple(pbone.scale))
        return hit

    def _basis(self, name: str, rotations: dict, scales: dict) -> np.ndarray:
        """(frames, 4, 4) channel matrices T(location) R S of bone `name`."""
        location, rotation, scale = self._channels(name)
        quats = rotations.get(name)
        q = np.broadcast_to(rotation, (self.frames, 4)) if quats is None else np.asarray(quats, dtype=float)
        s = np.tile(np.asarray(scale, dtype=float), (self.frames, 1))
        if name in scales:
            s[:, 1] = scales[name]
        basis = np.zeros((self.frames, 4, 4))
        basis[:, :3, :3] = quat.to_matrix(q / np.linalg.norm(q, axis=1)[:, None]) * s[:, None, :]
        basis[:, :3, 3] = location
        basis[:, 3, 3] = 1.0
        return basis

    def ends(self, path: ChainPath, rotations: dict, scales: dict) -> np.ndarray:
        """(frames, 3): the path's end in armature space (the bones above it in their current pose)."""
        bones = self.obj.data.bones
        above = self.obj.pose.bones[path.names[0]].parent
        top = np.eye(4) if above is None else np.array(above.matrix, dtype=float)
        pose = np.broadcast_to(top, (self.frames, 4, 4))
        for name in path.names:
            bone = bones[name]
            basis = self._basis(name, rotations, scales)
            rest = np.array(bone.matrix_local, dtype=float)
            if bone.parent is not None:
                rest = np.linalg.solve(np.array(bone.parent.matrix_local, dtype=float), rest)
            if bone.parent is None or _whole_transform(bone):
                pose = pose @ rest @ basis
            else:
                pose = np.array([_blender_pose(bone, b, p) for b, p in zip(basis, pose, strict=True)])
        tail = np.array([0.0, bones[path.names[-1]].length if path.use_tail else 0.0, 0.0, 1.0])
        return (pose @ tail)[:, :3]


def _whole_transform(bone) -> bool:
    return bone.inherit_scale == "FULL" and bone.use_inherit_rotation and bone.use_local_location


def _blender_pose(bone, basis: np.ndarray, parent: np.ndarray) -> list:
    """Blender's pose matrix of `bone` from its channel matrix `basis` under its parent's pose."""
    m = bone.convert_local_to_pose(
        Matrix(basis.tolist()),
        bone.matrix_local,
        parent_matrix=Matrix(parent.tolist()),
        parent_matrix_local=bone.parent.matrix_local,
    )
    return [list(row) for row in m]
