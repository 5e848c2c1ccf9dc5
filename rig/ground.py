"""The ground a foot stands on: a mesh object, raycast straight down in world space."""

from __future__ import annotations

import math

import numpy as np
from mathutils import Vector
from mathutils.bvhtree import BVHTree

DOWN = Vector((0.0, 0.0, -1.0))


def ground_refusal(context, ground) -> str:
    """Why `ground` cannot serve as the ground ('' when it can): not a mesh, or not evaluated
    (disabled in viewports or outside the view layer: its mesh and place would be stale)."""
    if ground is None:
        return ""
    if ground.type != "MESH":
        return f"the ground '{ground.name}' is not a mesh (its type is {ground.type}): pick a mesh object, or none"
    if not ground.evaluated_get(context.evaluated_depsgraph_get()).is_evaluated:
        return (
            f"the ground '{ground.name}' is disabled in viewports or not in the view layer, so Blender does not"
            " evaluate it: enable it in viewports (the monitor icon) first"
        )
    return ""


class GroundProbe:
    """The ground's evaluated mesh (modifiers applied) in world space, as it is when made, with
    a BVH tree for rays straight down."""

    def __init__(self, context, ground) -> None:
        refusal = ground_refusal(context, ground)
        if refusal:
            raise ValueError(refusal)
        self.name = ground.name
        evaluated = ground.evaluated_get(context.evaluated_depsgraph_get())
        mesh = evaluated.to_mesh()
        try:
            mesh.calc_loop_triangles()
            count = len(mesh.vertices)
            co = np.empty(3 * count, dtype=np.float64)
            mesh.vertices.foreach_get("co", co)
            triangles = np.empty(3 * len(mesh.loop_triangles), dtype=np.int32)
            mesh.loop_triangles.foreach_get("vertices", triangles)
        finally:
            evaluated.to_mesh_clear()
        if not len(triangles):
            raise ValueError(f"the ground '{ground.name}' has no faces to stand on")
        matrix = np.array(evaluated.matrix_world, dtype=np.float64)
        world = co.reshape(-1, 3) @ matrix[:3, :3].T + matrix[:3, 3]
        self.tree = BVHTree.FromPolygons(world.tolist(), triangles.reshape(-1, 3).tolist())

    def heights_below(self, points: np.ndarray, reach: float) -> np.ndarray:
        """(m,) height of the ground straight below each world point (m, 3): the first surface a
        ray finds going down from `reach` above the point (a point sunk below the surface by less
        than that still finds it); NaN where no face is below."""
        cast, down = self.tree.ray_cast, DOWN
        # The rays' origins as Vector(p) + Vector((0, 0, reach)) holds them: 32-bit floats, summed in
        # 32 bits, passed as lists (ray_cast reads a sequence as it reads a Vector: no Vector made per ray).
        hits = [cast(origin, down)[0] for origin in _lifted(points, reach).tolist()]
        return np.array([math.nan if hit is None else hit[2] for hit in hits], dtype=float).reshape(len(hits))

    def normals_below(self, points: np.ndarray, reach: float) -> np.ndarray:
        """(m, 3) the ground's unit normal straight below each world point (facing up; NaN where no
        face is below), as `heights_below` finds the face."""
        out = np.full((len(points), 3), np.nan)
        cast = self.tree.ray_cast
        for i, origin in enumerate(_lifted(points, reach).tolist()):
            hit, normal = cast(origin, DOWN)[:2]
            if hit is not None:
                out[i] = normal.normalized() if normal.z >= 0.0 else -normal.normalized()
        return out


def _lifted(points: np.ndarray, reach: float) -> np.ndarray:
    """(m, 3) float32: each point `reach` higher, as mathutils' Vector(p) + Vector((0, 0, reach)) makes it."""
    lift = np.array([0.0, 0.0, reach], dtype=np.float32)
    return np.asarray(points, dtype=float).reshape(-1, 3).astype(np.float32) + lift


def same_rays(points: np.ndarray, others: np.ndarray) -> np.ndarray:
    """(m,) bool: the world points (m, 3) whose rays down (any reach) start where those from `others`
    (m, 3) do: the same 32-bit coordinates (`_lifted`), so the same hits (a height found for one
    serves the other)."""
    mine = np.asarray(points, dtype=float).reshape(-1, 3).astype(np.float32)
    theirs = np.asarray(others, dtype=float).reshape(-1, 3).astype(np.float32)
    return np.all(mine.view(np.uint32) == theirs.view(np.uint32), axis=1)


def ground_probe(context, obj, frame: int) -> GroundProbe | None:
    """The armature's Ground (`obj.chain_ik.ground`) as it is on `frame` (a range's first frame,
    where detection and the bake read it), the scene's frame restored; None without a ground."""
    ground = obj.chain_ik.ground
    if ground is None:
        return None
    scene = context.scene
    frame0, subframe0 = scene.frame_current, scene.frame_subframe
    if frame0 == int(frame) and subframe0 == 0.0:  # already there: the evaluated depsgraph is that frame's
        return GroundProbe(context, ground)
    scene.frame_set(int(frame))
    try:
        return GroundProbe(context, ground)
    finally:
        scene.frame_set(frame0, subframe=subframe0)
