"""The bridge between Blender data and the numpy solvers (the only bpy<->numpy math)."""

from . import ik_settings, keying_set, keys, read, root_location, stretch, tree, unevaluated, unit
from .fk import PoseFK
from .modes import EULER_ORDERS, ROTATION_MODES
from .read import RigChain, chain_bone_names, read_chain
from .space import (
    ObjectSpace,
    armature_to_world,
    check_object_matrix,
    object_space,
    target_world_location,
    world_to_armature,
)
from .unevaluated import evaluated
from .write import (
    PoseWrite,
    apply,
    apply_channels,
    snapshot,
    snapshot_channels,
)

__all__ = [
    "EULER_ORDERS",
    "ROTATION_MODES",
    "RigChain",
    "chain_bone_names",
    "read",
    "read_chain",
    "ObjectSpace",
    "object_space",
    "armature_to_world",
    "check_object_matrix",
    "target_world_location",
    "world_to_armature",
    "PoseWrite",
    "apply",
    "apply_channels",
    "snapshot",
    "snapshot_channels",
    "keys",
    "unevaluated",
    "evaluated",
    "keying_set",
    "ik_settings",
    "stretch",
    "tree",
    "unit",
    "root_location",
    "PoseFK",
]
