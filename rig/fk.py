"""A chain read with some bones' local rotations replaced (forward kinematics).

Baking solves frame k from the pose solved at frame k-1. That pose is not in
the evaluated armature at frame k: the bones' own animation (or their static
channels) is there instead. Writing the previous solution to the pose bones and
evaluating again would not help either, since the animation system overwrites
animated channels on every frame change. So the chain's input pose at frame k is
rebuilt here: the evaluated parents at frame k (everything outside the replaced
bones is read as evaluated), then each replaced bone through
`Bone.convert_local_to_pose` with its evaluated location and scale at frame k
and its rotation taken from the previous solution. That is exactly the pose
Blender would evaluate at frame k with the previous solution keyed (constraints
on the replaced bones aside, which the Solve operator already warns about), at
the cost of a few mathutils products per bone and no extra depsgraph update.
"""

from __future__ import annotations

from mathutils import Matrix, Quaternion, Vector

from .read import check_rigid_pose


class PoseFK:
    """Armature-space pose matrices of an evaluated armature with `rotations` (bone -> local basis
    rotation) replacing the evaluated rotations of those bones, and `scales` (bone -> scale
    channels; IK stretch reads a chain unstretched) their scales; their descendants follow."""

    def __init__(self, obj_eval, rotations: dict[str, Quaternion], scales: dict | None = None) -> None:
        self.obj = obj_eval
        self.rotations = rotations
        self.scales = scales or {}
        self._cache: dict[str, Matrix] = {}
        self._moved: dict[str, bool] = {}

    def _is_moved(self, pbone) -> bool:
        # A bone moves when it or an ancestor has a replaced rotation.
        name = pbone.name
        hit = self._moved.get(name)
        if hit is None:
            hit = (
                name in self.rotations
                or name in self.scales
                or (pbone.parent is not None and self._is_moved(pbone.parent))
            )
            self._moved[name] = hit
        return hit

    def matrix(self, name: str) -> Matrix:
        m = self._cache.get(name)
        if m is not None:
            return m
        pbone = self.obj.pose.bones[name]
        if not self._is_moved(pbone):
            m = pbone.matrix.copy()
        else:
            q = self.rotations.get(name)
            scale = self.scales.get(name)
            bone = pbone.bone
            # Blender ignores a connected bone's location channels; so must the rebuilt basis.
            loc = Vector() if bone.use_connect else pbone.location
            if q is None and scale is None:
                basis = pbone.matrix_basis
            else:
                q = pbone.matrix_basis.to_quaternion() if q is None else q
                basis = Matrix.LocRotScale(loc, q, pbone.scale if scale is None else scale)
            if bone.parent is not None:
                m = bone.convert_local_to_pose(
                    basis,
                    bone.matrix_local,
                    parent_matrix=self.matrix(pbone.parent.name),
                    parent_matrix_local=bone.parent.matrix_local,
                )
            else:
                m = bone.convert_local_to_pose(basis, bone.matrix_local)
        self._cache[name] = m
        return m

    def check_rigid(self, names) -> None:
        """The rigidity check of `read.read_chain` on this pose of `names` (IK stretch: on the pose
        with the bones' own stretch divided out, where a stretched parent shears nothing)."""
        for name in names:
            pbone = self.obj.pose.bones[name]
            q = self.rotations.get(name)
            basis = Matrix.LocRotScale(
                pbone.location,
                pbone.matrix_basis.to_quaternion() if q is None else q,
                self.scales.get(name, pbone.scale),
            )
            check_rigid_pose(pbone, self.matrix(name), basis)
