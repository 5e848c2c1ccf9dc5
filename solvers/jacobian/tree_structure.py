"""The tree Jacobian's problem (jacobian.tree): the skeleton's and the effectors' layout as a
`Structure` (built once per layout, kept for later solves: a Live session, a bake) and a solve's
`Tree` (the structure with its goals): forward kinematics, the error rows, the stacked Jacobian,
the mass weighting's inertia and each priority level's state."""

from __future__ import annotations

from dataclasses import fields

import numpy as np

from .. import quat
from ..common import mass
from ..skeleton import Effector, Skeleton, level
from . import tree_plain
from . import tree_steps as steps
from .tree_plain import TO_MATRIX

_STRUCTURES: dict = {}  # (skeleton's topology and limits, effector layout) -> Structure: reused by later solves
_CACHE_SIZE = 32
_NO_ROWS = np.zeros((0, 3))
# r @ _SKEW is -[r]x flattened (row-major): [[0, r2, -r1], [-r2, 0, r0], [r1, -r0, 0]]
_SKEW = np.zeros((3, 9))
_SKEW[2, 1] = _SKEW[0, 5] = _SKEW[1, 6] = 1.0
_SKEW[1, 2] = _SKEW[2, 3] = _SKEW[0, 7] = -1.0


def _matrices(q: np.ndarray) -> np.ndarray:
    return ((q[:, :, None] * q[:, None, :]).reshape(-1, 16) @ TO_MATRIX).reshape(-1, 3, 3)


class Structure:
    """What a solve needs of the skeleton and the effectors' layout (bones, priorities, which have an
    orientation goal): built once, reused by later solves of the same layout (a Live session, a bake)."""

    def __init__(
        self, skeleton: Skeleton, bones: tuple, priority: tuple, turned: tuple, frozen: frozenset = frozenset()
    ) -> None:
        branches = [skeleton.branch(b) for b in bones]
        moved = sorted({b for branch in branches for b in branch})
        index = {b: k for k, b in enumerate(moved)}
        m = len(moved)
        self.moved, self.m = np.array(moved), m
        self.parent = np.array([index.get(skeleton.parents[b], m) for b in moved])  # m: the base frame
        self.root = self.parent == m
        ancestors = np.eye(m)  # row k: k and its ancestors (a head is the sum of their world offsets)
        for k in range(m):
            if not self.root[k]:
                ancestors[k] += ancestors[self.parent[k]]
        # Frames by pointer jumping (each round doubles the stretch of ancestors a bone's product
        # covers): log2 of the depth batched products instead of one per depth level. Index m is
        # the identity above every root; the base frame is folded into the roots' references.
        self.jumps, up = [], np.append(self.parent, m)
        while np.any(up[:m] != m):
            self.jumps.append(up[:m].copy())
            up = up[up]
        self.frame_start = np.empty((m + 1, 3, 3))
        self.frame_start[m] = np.eye(3)
        self.limits = None if skeleton.limits is None else skeleton.limits.subset(moved)
        self.limited = np.flatnonzero(self.limits.active) if self.limits is not None else np.arange(0)
        weight = (
            np.ones((m, 3)) if self.limits is None else np.where(self.limits.lock, 0.0, 1.0 - self.limits.stiffness)
        )
        weight[[index[b] for b in frozen if b in index]] = 0.0  # bones held as they are: no columns
        self.cols = np.flatnonzero(weight.ravel() > 0.0)
        self.col_scale = np.sqrt(weight.ravel()[self.cols])
        # Shortcuts of the common case (every axis free, no stiffness): no column picking or scaling.
        self.every_col = len(self.cols) == 3 * m
        self.unit_cols = bool(np.all(self.col_scale == 1.0))
        self.bones = np.array([index[b] for b in bones])
        # The mass weighting's terms (mass.mass_matrix over the moved bones): parents among them, each
        # bone's link as a vector in its own frame (its tail is head + frame @ link), capsule radii.
        self.mass_parents = tuple(-1 if r else int(p) for r, p in zip(self.root, self.parent, strict=True))
        # The heads and the effectors' ends at once: each end a point below its bone (offset: the
        # bone's link), every point the sum of its ancestors' world offsets.
        count = len(bones)
        self.point_parent = np.concatenate((self.parent, self.bones))
        self.ancestors = np.zeros((m + count, m + count))
        self.ancestors[:m, :m] = ancestors
        self.ancestors[m:, :m] = ancestors[self.bones]
        self.ancestors[m:, m:] = np.eye(count)
        self.mask = np.zeros((len(bones), m))
        for e, branch in enumerate(branches):
            self.mask[e, [index[b] for b in branch]] = 1.0
        self.mask3 = self.mask[:, :, None]
        self.priority = np.array(priority)
        self.turned = np.flatnonzero(turned)
        row_priority = np.concatenate((np.repeat(self.priority, 3), np.repeat(self.priority[self.turned], 3)))
        self.row_levels = [np.flatnonzero(row_priority == p) for p in np.unique(self.priority)]
        self.effector_levels = [np.flatnonzero(self.priority == p) for p in np.unique(self.priority)]
        # The relative weight of each effector within its level (for the row scales): by the weights.
        self.level_of = [int(np.searchsorted(np.unique(self.priority), p)) for p in priority]
        self.effector_bones, self.branches = list(bones), branches
        tree_plain.prepare(self)
        # Whether a solve of this layout may take the plain kernel straight from its effectors
        # (jacobian.tree, without a Tree): every goal is a position on one level, every axis free, no
        # stiffness or limit (tree_plain.applies' terms of the layout; the solve checks its options,
        # weights and poles); `written_out`: that kernel is written out (jacobian.tree_unrolled).
        self.plain = (
            self.every_col
            and self.unit_cols
            and not len(self.turned)
            and len(self.effector_levels) == 1
            and (self.limits is None or not len(self.limited))
        )
        self.written_out = self.plain and self.unrolled is not None
        self.measure(skeleton)

    def measure(self, skeleton: Skeleton) -> None:
        """The terms from the skeleton's measures (rests, offsets, links, lengths, radii): Live reads
        the group afresh at every update, its offsets and links differing in float32's last bits, so
        these are taken again for each new skeleton of the same topology (a few numpy calls, where
        the structure above took longer than the five-effector solve)."""
        moved, m, bones = self.moved, self.m, self.effector_bones
        rests = skeleton.reference[moved].tobytes() + skeleton.base_frame.tobytes()
        if rests != getattr(self, "rests", None):  # (the rests are read from rest matrices: unchanged)
            reference = quat.to_matrix(skeleton.reference[moved])
            reference[self.root] = quat.to_matrix(skeleton.base_frame) @ reference[self.root]
            # R_i M(L_i) is linear in the outer product of L_i: one (16, 9) matrix per bone.
            self.turn = np.matmul(reference[:, None], TO_MATRIX.reshape(1, 16, 3, 3)).reshape(m, 16, 9)
            self.rests = rests
            # jacobian.tree_plain's unknowns are rest_i L_i: the rests as quaternions, the base's in the roots'
            turns = np.array(skeleton.reference[moved], dtype=float)
            turns[self.root] = quat.multiply(skeleton.base_frame[None], turns[self.root])
            self.rest_turns, self.rest_backs = turns, turns * [1.0, -1.0, -1.0, -1.0]
        reach = skeleton.lengths[:, None] * skeleton.links
        self.mass_links = reach[moved]
        self.mass_radii = (
            mass.default_radii(skeleton.lengths[moved]) if skeleton.radii is None else skeleton.radii[moved]
        )
        self.point_offsets = np.concatenate((skeleton.offsets[moved], reach[bones]))[:, :, None]
        tree_plain.measure(self, skeleton.offsets[moved], reach[bones])
        self.span = np.array([float(np.sum(skeleton.lengths[branch])) for branch in self.branches])
        self.mean_span, self.max_span = float(np.mean(self.span)), float(np.max(self.span))
        self.source = skeleton


def _topology_key(skeleton: Skeleton) -> tuple:
    """What a Structure takes from the skeleton besides its measures: parents and limits."""
    limits = skeleton.limits
    if limits is None:
        return tuple(skeleton.parents), None
    return tuple(skeleton.parents), tuple(getattr(limits, f.name).tobytes() for f in fields(limits))


def kept(skeleton: Skeleton, effectors: list[Effector], frozen: frozenset = frozenset()) -> Structure:
    """The Structure of the effectors' layout on `skeleton`: the kept one (measured again for a new
    skeleton of the same topology), or a new one, kept."""
    bones, priority, turned = [], [], []  # (one pass: a solve looks its structure up per call)
    for e in effectors:
        bones.append(e.bone)
        priority.append(level(e))  # pins above every target
        turned.append(e.orientation is not None and e.rotation_weight > 0.0)
    bones, priority, turned = tuple(bones), tuple(priority), tuple(turned)
    key = (_topology_key(skeleton), bones, priority, turned, frozen)
    held = _STRUCTURES.get(key)
    if held is None:
        if len(_STRUCTURES) >= _CACHE_SIZE:
            _STRUCTURES.clear()
        held = _STRUCTURES[key] = Structure(skeleton, bones, priority, turned, frozen)
    elif held.source is not skeleton:
        held.measure(skeleton)
    return held


class Tree:
    """A solve's structure (shared) and goals: targets, wanted orientations, row scales."""

    def __init__(
        self, skeleton: Skeleton, effectors: list[Effector], frozen: frozenset = frozenset(), held=None
    ) -> None:
        """`held`: the layout's Structure (`kept`), when the caller has it already."""
        self.__dict__.update((held or kept(skeleton, effectors, frozen)).__dict__)
        self.targets = np.array([e.position for e in effectors])
        weights = [float(e.weight) for e in effectors]
        if len(self.turned) or len(set(weights)) > 1:
            self.wanted = _matrices(np.array([effectors[k].orientation for k in self.turned]).reshape(-1, 4))
            means = [np.mean([weights[k] for k in level]) for level in self.effector_levels]
            scale = np.sqrt([w / means[level] for w, level in zip(weights, self.level_of, strict=True)])
            rotation = np.array([effectors[k].rotation_weight for k in self.turned]) * self.span[self.turned]
            self.row_scale = np.concatenate((np.repeat(scale, 3), np.repeat(scale[self.turned] * rotation, 3)))
        else:  # equal weights, positions only: every row as it is (relative to its level's mean, 1)
            self.row_scale = None

    def forward(self, local: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(frames (m, 3, 3), heads (m, 3), effector ends (E, 3)) of the moved bones' locals (m, 4)."""
        m = self.m
        frames = self.frame_start.copy()
        frames[:m] = ((local[:, :, None] * local[:, None, :]).reshape(m, 1, 16) @ self.turn).reshape(m, 3, 3)
        for up in self.jumps:
            frames[:m] = frames[up] @ frames[:m]
        points = self.ancestors @ (frames[self.point_parent] @ self.point_offsets)[:, :, 0]
        return frames[:m], points[:m], points[m:]

    def residual(self, frames: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(position errors (E, 3), rotation errors (turned, 3), the scaled error rows (R,))."""
        position = self.targets - ends
        if self.row_scale is None:
            return position, _NO_ROWS, position.ravel()
        if not len(self.turned):
            return position, _NO_ROWS, position.ravel() * self.row_scale
        rotation = steps.log_rotations(self.wanted @ frames[self.bones[self.turned]].transpose(0, 2, 1))
        return position, rotation, np.concatenate((position.ravel(), rotation.ravel())) * self.row_scale

    def jacobian(self, frames: np.ndarray, heads: np.ndarray, ends: np.ndarray) -> np.ndarray:
        """The stacked, row-scaled Jacobian (R, free columns), no joint weights yet."""
        m, count = self.m, len(self.bones)
        arms = (ends[:, None, :] - heads) * self.mask3  # (E, m, 3)
        # u x r = -[r]x u for every axis u (the columns of F_i): one batched product per effector
        skew = (arms.reshape(-1, 3) @ _SKEW).reshape(count, m, 3, 3)  # -[r]x
        position = (skew @ frames).transpose(0, 2, 1, 3).reshape(3 * count, 3 * m)
        if len(self.turned):
            turned = self.mask[self.turned][:, None, :, None] * frames.transpose(1, 0, 2)[None]
            position = np.concatenate((position, turned.reshape(3 * len(self.turned), 3 * m)))
        if not self.every_col:
            position = position[:, self.cols]
        return position if self.row_scale is None else position * self.row_scale[:, None]

    def inertia(self, frames: np.ndarray, heads: np.ndarray) -> np.ndarray:
        """M(q) (free columns, free columns) of the moved bones in their own axes, normalized."""
        tails = heads + (frames @ self.mass_links[:, :, None])[:, :, 0]
        full = mass.mass_matrix(heads, tails, self.mass_parents, self.mass_radii, axes=frames)
        return mass.weighting_inertia(full if self.every_col else full[np.ix_(self.cols, self.cols)])

    def state(self, frames: np.ndarray, ends: np.ndarray, tolerance: float):
        """(the scaled error rows (R,), each level's weighted squared error (0 where met), which levels
        have every goal within the tolerance: distance, and rotation as an arc of the branch)."""
        position, rotation, error = self.residual(frames, ends)
        if len(self.effector_levels) == 1 and not len(self.turned):  # the common case, in fewer steps
            cost, bound = float(error @ error), tolerance * tolerance
            if self.row_scale is None:  # cost: the plain sum of squared distances
                # Every goal met when the sum is within one tolerance; not all when it exceeds one for
                # each goal (the largest is at least the mean); in between, each is looked at.
                done = cost <= bound or (
                    cost <= len(position) * bound and float(np.einsum("ij,ij->i", position, position).max()) <= bound
                )
            else:
                done = float(np.einsum("ij,ij->i", position, position).max()) <= bound
            return error, [0.0 if done else cost], (done,)
        met = np.einsum("ij,ij->i", position, position) <= tolerance * tolerance
        if len(self.turned):
            met[self.turned] &= quat.norm(rotation) * self.span[self.turned] <= tolerance
        done = tuple(bool(met[level].all()) for level in self.effector_levels)
        levels = zip(done, self.row_levels, strict=True)
        costs = [0.0 if ok else float(error[rows] @ error[rows]) for ok, rows in levels]
        return error, costs, done
