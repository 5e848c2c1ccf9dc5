"""The chain model: joint positions, fixed bone lengths, optional bone frames."""

from __future__ import annotations

import functools
import math

import numpy as np

from . import quat
from .limits import JointLimits

# A bone shorter than this fraction of the whole chain counts as zero-length:
# its direction (and so any rotation of it) is undefined.
MIN_RELATIVE_BONE_LENGTH = 1e-9


def as_point(value: object, what: str) -> np.ndarray:
    """A finite 3-vector, or ValueError naming `what`."""
    try:
        p = np.asarray(value, dtype=float)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{what} must be 3 numbers, got {value!r}") from exc
    if p.shape != (3,):
        raise ValueError(f"{what} must have shape (3,), got {p.shape}")
    if not np.all(np.isfinite(p)):
        raise ValueError(f"{what} is not finite: {p.tolist()}")
    return p


def as_real(value: object, what: str) -> float:
    """A finite float, or ValueError naming `what`."""
    if isinstance(value, bool):
        raise ValueError(f"{what} must be a number, got {value!r}")
    try:
        x = float(value)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{what} must be a number, got {value!r}") from exc
    if not math.isfinite(x):
        raise ValueError(f"{what} must be finite, got {value!r}")
    return x


def _unit_quaternions(value: object, shape: tuple, what: str) -> np.ndarray:
    try:
        q = np.array(value, dtype=float)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{what} must be quaternions (w, x, y, z): {exc}") from exc
    if q.shape != shape or not np.all(np.isfinite(q)):
        raise ValueError(f"{what} must be finite with shape {shape}, got {q.shape}")
    norms = np.linalg.norm(q, axis=-1, keepdims=True)
    if np.any(np.abs(norms - 1.0) > 1e-6):
        raise ValueError(f"{what} quaternions must be unit length")
    return q / norms


def perpendicular(d: tuple) -> tuple:
    """Unit vector perpendicular to unit `d`, as quat.any_perpendicular."""
    k = min(range(3), key=lambda j: abs(d[j]))
    e = [0.0, 0.0, 0.0]
    e[k] = 1.0
    x, y, z = d[1] * e[2] - d[2] * e[1], d[2] * e[0] - d[0] * e[2], d[0] * e[1] - d[1] * e[0]
    r = math.sqrt(x * x + y * y + z * z)
    return (x / r, y / r, z / r)


def link_terms(rows) -> tuple[list[float], list[tuple], float]:
    """(bone lengths, unit bone directions, total length) of joint rows (n+1 triples of floats).

    Plain floats: shared by `Chain` and the solves that skip building one (solvers.single),
    so both see the very same numbers."""
    lengths, dirs = [], []
    for (x0, y0, z0), (x1, y1, z1) in zip(rows, rows[1:], strict=False):
        dx, dy, dz = x1 - x0, y1 - y0, z1 - z0
        length = math.sqrt(dx * dx + dy * dy + dz * dz)
        lengths.append(length)
        dirs.append((dx / length, dy / length, dz / length) if length > 0.0 else (0.0, 0.0, 0.0))
    return lengths, dirs, math.fsum(lengths)


def short_bone(lengths, total: float) -> int | None:
    """Index of the first bone too short to have a direction, or None."""
    for k, length in enumerate(lengths):
        if length <= MIN_RELATIVE_BONE_LENGTH * max(total, 1e-300):
            return k
    return None


def reach_terms(lengths, total: float, guard: bool = True) -> tuple[list[float], list[float], tuple | None]:
    """(reach after each bone, inner hole radius after it, fold guard radii; None unless `guard`:
    only a fold narrower than 180° uses them)."""
    n = len(lengths)
    # Remaining reach after each bone (the paper's b) and, for a chain
    # with a dominant bone, the inner radius of the hole the rest cannot
    # reach from that bone's tail: 2 max(l) - sum(l).
    reach, inner = [0.0] * n, [0.0] * n
    rest, longest = 0.0, 0.0
    for k in range(n - 1, -1, -1):
        reach[k], inner[k] = rest, max(0.0, 2.0 * longest - rest)
        rest += lengths[k]
        longest = max(longest, lengths[k])
    # A fold narrower than 180° keeps the next joint this far out: just
    # past the hole, so the next triangle is not exactly flat (where its
    # angle is a square root of rounding noise).
    if not guard:
        return reach, inner, None
    radii = tuple(r + min(1e-6 * total, 0.5 * (b - r)) if r > 0.0 else 0.0 for r, b in zip(inner, reach, strict=True))
    return reach, inner, radii


def fallback_axis(d: tuple, q: tuple | None) -> tuple:
    """A bone's tie-breaker axis, perpendicular to its unit direction `d`: its frame's X axis
    (Blender's bend axis) for a unit frame quaternion `q`, else a fixed perpendicular."""
    if q is not None:
        w, x, y, z = q
        ax, ay, az = 1.0 - 2.0 * (y * y + z * z), 2.0 * (x * y + w * z), 2.0 * (x * z - w * y)
        along = ax * d[0] + ay * d[1] + az * d[2]
        ax, ay, az = ax - along * d[0], ay - along * d[1], az - along * d[2]
        an = math.sqrt(ax * ax + ay * ay + az * az)
        if an > 1e-6:
            return (ax / an, ay / an, az / an)
    return perpendicular(d)


class Chain:
    """A serial chain of n >= 1 bones given by its n+1 joint positions.

    `points` (n+1, 3): root first, tip last. Bone lengths are fixed from them.
    `limits` (see `make_limits`) restrict each bone's local rotation; they
    need `frames`, and optionally `reference` (each bone's rest orientation in
    its parent's frame, (n, 4); default: the input pose is the rest pose) and
    `base_frame` (the root's parent frame, (4,); default: identity).
    `frames` (optional): each bone's world orientation, as (n, 4) unit
    quaternions (w, x, y, z) or (n, 3, 3) rotation matrices. Solvers carry
    them through (`Solution.frames`), so bone roll/twist survives a solve, and
    a bone's frame X axis is the tie-breaker when a rotation axis is undefined.
    """

    def __init__(
        self,
        points: object,
        frames: object | None = None,
        *,
        limits: JointLimits | None = None,
        reference: object | None = None,
        base_frame: object | None = None,
    ) -> None:
        try:
            pts = np.array(points, dtype=float)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"chain points must be an (n+1, 3) array of numbers: {exc}") from exc
        if pts.ndim != 2 or pts.shape[1] != 3:
            raise ValueError(f"chain points must have shape (n+1, 3), got {pts.shape}")
        if pts.shape[0] < 2:
            raise ValueError(f"a chain needs at least 2 points (1 bone), got {pts.shape[0]}")
        rows = pts.tolist()
        # Plain Python floats from here: chains are short, and the rig builds
        # one per solve, where numpy's per-call cost on tiny arrays dominates.
        for k, row in enumerate(rows):
            if not all(map(math.isfinite, row)):
                raise ValueError(f"chain point {k} is not finite: {row}")
        n = len(rows) - 1
        lengths, dirs, total = link_terms(rows)
        k = short_bone(lengths, total)
        if k is not None:
            raise ValueError(f"bone {k} has zero length (points {k} and {k + 1} coincide)")
        pts.setflags(write=False)
        self.points = pts
        self.lengths = np.array(lengths)
        self.total_length = total
        self.directions = np.array(dirs)
        self.frames = None if frames is None else self._read_frames(frames)
        # Tie-breaker axis per bone, perpendicular to it: its frame X axis
        # (Blender's bend axis) where frames are given, else a fixed one.
        quats = [None] * n if self.frames is None else self.frames.tolist()
        fallbacks = [fallback_axis(d, q) for d, q in zip(dirs, quats, strict=True)]
        self.fallback_axes = np.array(fallbacks)
        self._read_joints(limits, reference, base_frame)
        reach, inner, self.fold_guard = reach_terms(lengths, total)
        self.reach_after = np.array(reach)
        self.inner_after = np.array(inner)
        self.scalar_terms = (
            tuple(map(tuple, rows)),
            tuple(lengths),
            tuple(dirs),
            tuple(reach),
            tuple(inner),
            tuple(fallbacks),
        )

    @property
    def n_bones(self) -> int:
        return self.lengths.shape[0]

    @property
    def root(self) -> np.ndarray:
        return self.points[0]

    def _read_joints(self, limits: JointLimits | None, reference: object | None, base_frame: object | None) -> None:
        """Joint model: each bone's local rotation is L_i = (P_i R_i)^-1 F_i,
        with P_i the parent's frame (`base_frame` for the root), R_i the bone's
        rest orientation in its parent (`reference`; by default the input pose
        is the rest pose) and F_i its frame. Validated now, built on first use
        (most solves never need it)."""
        n = self.n_bones
        self.limits = limits
        if self.frames is None:
            if limits is not None or reference is not None or base_frame is not None:
                raise ValueError("joint limits, a reference pose or a base frame need bone frames")
            return
        if limits is not None and (not isinstance(limits, JointLimits) or limits.n_bones != n):
            raise ValueError(f"limits must be JointLimits for {n} bones (see solvers.make_limits)")
        self._base_arg = None if base_frame is None else _unit_quaternions(base_frame, (4,), "base_frame")
        self._reference_arg = None if reference is None else _unit_quaternions(reference, (n, 4), "reference")

    @functools.cached_property
    def _joints(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        if self.frames is None:
            raise ValueError("the joint model needs bone frames")
        base = np.array([1.0, 0.0, 0.0, 0.0]) if self._base_arg is None else self._base_arg
        parents = np.concatenate((base[None], self.frames[:-1]))
        ref = (
            quat.multiply(quat.conjugate(parents), self.frames) if self._reference_arg is None else self._reference_arg
        )
        local = quat.multiply(quat.conjugate(quat.multiply(parents, ref)), self.frames)
        link = quat.rotate(quat.conjugate(self.frames), self.directions)
        return base, ref, local, link

    @property
    def base_frame(self) -> np.ndarray:
        """The root bone's parent frame (4,)."""
        return self._joints[0]

    @property
    def reference(self) -> np.ndarray:
        """Each bone's rest orientation in its parent's frame (n, 4)."""
        return self._joints[1]

    @property
    def input_locals(self) -> np.ndarray:
        """Each bone's local rotation in the input pose (n, 4)."""
        return self._joints[2]

    @property
    def link_local(self) -> np.ndarray:
        """Each bone's link (head to next head) in its own frame, unit (n, 3)."""
        return self._joints[3]

    def _read_frames(self, frames: object) -> np.ndarray:
        try:
            f = np.asarray(frames, dtype=float)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"frames must be numbers: {exc}") from exc
        n = self.n_bones
        if f.shape == (n, 3, 3):
            if not np.all(np.isfinite(f)):
                raise ValueError("frames contain non-finite values")
            gram = np.einsum("nij,nik->njk", f, f)
            if not np.allclose(gram, np.eye(3), atol=1e-6) or np.any(np.linalg.det(f) < 0):
                raise ValueError("frames must be proper rotation matrices (orthonormal, det +1)")
            return quat.from_matrix(f)
        if f.shape == (n, 4):
            unit = []
            for w, x, y, z in f.tolist():  # plain floats: cheaper than numpy for a few rows
                norm = math.sqrt(w * w + x * x + y * y + z * z)
                if not math.isfinite(norm):
                    raise ValueError("frames contain non-finite values")
                if abs(norm - 1.0) > 1e-6:
                    raise ValueError("frame quaternions must be unit length")
                unit.append((w / norm, x / norm, y / norm, z / norm))
            return np.array(unit)
        raise ValueError(f"frames must have shape ({n}, 4) or ({n}, 3, 3), got {f.shape}")

    def __repr__(self) -> str:
        return f"Chain(n_bones={self.n_bones}, length={self.total_length:g})"
