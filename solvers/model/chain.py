"""The chain model: joint positions, fixed bone lengths, optional bone frames."""

from __future__ import annotations

import functools
import itertools
import math

import numpy as np

from .. import quat
from ..limits import JointLimits
from ..maths.floats import perpendicular

# A bone shorter than this fraction of the whole chain counts as zero-length:
# its direction (and so any rotation of it) is undefined.
MIN_RELATIVE_BONE_LENGTH = 1e-9


def as_point(value: object, what: str) -> np.ndarray:
    """A finite 3-vector, or ValueError naming `what`."""
    if type(value) is tuple and len(value) == 3 and set(map(type, value)) == {float}:
        if all(map(math.isfinite, value)):  # 3 Python floats (the rig's): no numpy reduction
            return np.array(value)
    try:
        p = np.asarray(value, dtype=float)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{what} must be 3 numbers, got {value!r}") from exc
    if p.shape != (3,):
        raise ValueError(f"{what} must have shape (3,), got {p.shape}")
    # math.isfinite on three floats: np.isfinite costs microseconds on one solve's target.
    x, y, z = p.tolist()
    if not (math.isfinite(x) and math.isfinite(y) and math.isfinite(z)):
        raise ValueError(f"{what} is not finite: {p.tolist()}")
    return p


def as_floats(value: object, what: str) -> tuple[float, float, float]:
    """`as_point` as 3 Python floats (no array: what one solve's float kernel reads)."""
    if type(value) is tuple and len(value) == 3 and set(map(type, value)) == {float}:
        if all(map(math.isfinite, value)):
            return value
    return tuple(as_point(value, what).tolist())


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
    rows = [value] if len(shape) == 1 else value
    if _float_rows(rows, 4) is not None and len(rows) == (1 if len(shape) == 1 else shape[0]):
        # Rows of Python floats (a tree kernel's segments): checked and normalised as floats,
        # the same arithmetic as below without numpy's per-call cost; a bad row takes numpy's
        # path below, which names the problem.
        try:
            q = np.array(_unit_rows(rows))
        except ValueError:
            pass
        else:
            return q[0] if len(shape) == 1 else q
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


def check_radii(radii: object, n: int) -> np.ndarray:
    """`radii` as n positive finite numbers (read-only), or ValueError: each bone's capsule radius
    for the Jacobian's mass weighting (solvers.common.mass)."""
    try:
        r = np.array(radii, dtype=float)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"radii must be {n} positive numbers: {exc}") from exc
    # Plain floats: np.all's wrappers cost more than the check on a chain's few radii.
    if r.shape != (n,) or not all(0.0 < x < math.inf for x in r.tolist()):
        raise ValueError(f"radii must be {n} positive finite numbers, got {radii!r}")
    r.setflags(write=False)
    return r


def link_terms(rows) -> tuple[list[float], list[tuple], float]:
    """(bone lengths, unit bone directions, total length) of joint rows (n+1 triples of floats).

    Plain floats: shared by `Chain` and the solves that skip building one (triangulation.sequence),
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
    limit = MIN_RELATIVE_BONE_LENGTH * max(total, 1e-300)
    if min(lengths) > limit:  # the common case in one C call
        return None
    for k, length in enumerate(lengths):
        if length <= limit:
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
        hole = 2.0 * longest - rest
        reach[k], inner[k] = rest, hole if hole > 0.0 else 0.0  # max(0.0, hole), without the call
        length = lengths[k]
        rest += length
        if length > longest:
            longest = length
    if not guard:
        return reach, inner, None
    return reach, inner, guard_radii(reach, inner, total)


def guard_radii(reach, inner, total: float) -> tuple:
    """The fold guard radii: a fold narrower than 180° keeps the next joint this far out, just
    past the hole, so the next triangle is not exactly flat (where its angle is a square root of
    rounding noise)."""
    return tuple(r + min(1e-6 * total, 0.5 * (b - r)) if r > 0.0 else 0.0 for r, b in zip(inner, reach, strict=True))


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


def _float_rows(value: object, width: int) -> list | None:
    """`value` as given when it is a list or tuple of rows (lists or tuples) of `width` Python
    floats, as the rig passes them; None for anything else, which numpy then reads and checks."""
    if type(value) not in (list, tuple) or not value:
        return None
    # Set-builds over map(): C loops, a fraction of a Python loop's cost on every value.
    if not set(map(type, value)) <= {tuple, list} or set(map(len, value)) != {width}:
        return None
    if set(map(type, itertools.chain.from_iterable(value))) != {float}:
        return None
    return value


class _TieBreakers:
    """Each bone's tie-breaker axis (`fallback_axis`), computed on first use and kept: the
    triangulation pass reads one only in a degenerate step, so most solves compute none."""

    __slots__ = ("_dirs", "_frames", "_axes")

    def __init__(self, dirs: list, frames: list | None) -> None:
        self._dirs, self._frames = dirs, frames
        self._axes: list = [None] * len(dirs)

    def __len__(self) -> int:
        return len(self._dirs)

    def __getitem__(self, i):
        if isinstance(i, slice):
            return tuple(self[k] for k in range(*i.indices(len(self._dirs))))
        axis = self._axes[i]
        if axis is None:
            axis = self._axes[i] = fallback_axis(self._dirs[i], None if self._frames is None else self._frames[i])
        return axis

    def __iter__(self):
        return (self[k] for k in range(len(self._dirs)))


def _unit_rows(rows) -> list:
    """Quaternion rows normalised (plain floats: cheaper than numpy for a few rows), or ValueError."""
    unit = []
    for w, x, y, z in rows:
        norm = math.sqrt(w * w + x * x + y * y + z * z)
        if not math.isfinite(norm):
            raise ValueError("frames contain non-finite values")
        if abs(norm - 1.0) > 1e-6:
            raise ValueError("frame quaternions must be unit length")
        unit.append((w / norm, x / norm, y / norm, z / norm))
    return unit


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
    `radii` (optional, (n,)): each bone's capsule radius, read only by the Jacobian's
    mass weighting (solvers.common.mass; default: a share of the bone's length).
    """

    def __init__(
        self,
        points: object,
        frames: object | None = None,
        *,
        limits: JointLimits | None = None,
        reference: object | None = None,
        base_frame: object | None = None,
        radii: object | None = None,
    ) -> None:
        # Plain Python floats throughout: chains are short, and the rig builds one per solve, where
        # numpy's per-call cost on tiny arrays dominates. The numpy views are built on first use.
        rows = _float_rows(points, 3)
        if rows is None or len(rows) < 2:
            rows = self._read_points(points)
        self._build(rows, frames, False, limits, reference, base_frame, radii)

    @classmethod
    def from_float_rows(
        cls,
        rows: list,
        frames: list | None = None,
        *,
        limits: JointLimits | None = None,
        reference: object | None = None,
        base_frame: object | None = None,
        radii: object | None = None,
    ) -> Chain:
        """`Chain(rows, frames, ...)` for rows its caller built as tuples of Python floats (n+1 of
        3, frames n of 4), as the rig reads them: their types are not checked again; every check
        on their values still runs (finite points, no zero-length bone, unit frames)."""
        chain = cls.__new__(cls)
        if len(rows) < 2:
            rows = cls._read_points(rows)  # raises, naming the problem
        chain._build(rows, frames, True, limits, reference, base_frame, radii)
        return chain

    def _build(self, rows, frames, float_frames: bool, limits, reference, base_frame, radii=None) -> None:
        """The chain's terms from checked rows of floats; `frames` read and checked (`float_frames`:
        n rows of 4 Python floats already)."""
        # One sum first (overflow only sends a finite chain to the row-by-row look).
        if not math.isfinite(sum(itertools.chain.from_iterable(rows))):
            for k, row in enumerate(rows):
                if not all(map(math.isfinite, row)):
                    raise ValueError(f"chain point {k} is not finite: {list(row)}")
        n = len(rows) - 1
        lengths, dirs, total = link_terms(rows)
        k = short_bone(lengths, total)
        if k is not None:
            raise ValueError(f"bone {k} has zero length (its two ends coincide)")
        self._n = n
        self.total_length = total
        self.radii = None if radii is None else check_radii(radii, n)
        if frames is None:
            self._frame_rows = None
        elif float_frames and len(frames) == n:
            self._frame_rows = _unit_rows(frames)
        else:
            self._frame_rows = self._read_frames(frames, n)
        # Tie-breaker axis per bone, perpendicular to it: its frame X axis
        # (Blender's bend axis) where frames are given, else a fixed one.
        fallbacks = _TieBreakers(dirs, self._frame_rows)
        self._read_joints(limits, reference, base_frame)
        reach, inner, _ = reach_terms(lengths, total, guard=False)  # the guard on first use (fold < 180°)
        self.scalar_terms = (
            tuple(map(tuple, rows)),
            tuple(lengths),
            tuple(dirs),
            tuple(reach),
            tuple(inner),
            fallbacks,
        )

    @staticmethod
    def _read_points(points: object) -> list:
        try:
            pts = np.array(points, dtype=float)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"chain points must be an (n+1, 3) array of numbers: {exc}") from exc
        if pts.ndim != 2 or pts.shape[1] != 3:
            raise ValueError(f"chain points must have shape (n+1, 3), got {pts.shape}")
        if pts.shape[0] < 2:
            raise ValueError(f"a chain needs at least 2 points (1 bone), got {pts.shape[0]}")
        return pts.tolist()

    @functools.cached_property
    def points(self) -> np.ndarray:
        """(n+1, 3) joint positions, read-only."""
        pts = np.array(self.scalar_terms[0])
        pts.setflags(write=False)
        return pts

    @functools.cached_property
    def fold_guard(self) -> tuple:
        """The fold guard radii (`guard_radii`), for folds narrower than 180°."""
        _, _, _, reach, inner, _ = self.scalar_terms
        return guard_radii(reach, inner, self.total_length)

    @functools.cached_property
    def lengths(self) -> np.ndarray:
        return np.array(self.scalar_terms[1])

    @functools.cached_property
    def directions(self) -> np.ndarray:
        """Unit bone directions (n, 3)."""
        return np.array(self.scalar_terms[2])

    @functools.cached_property
    def frames(self) -> np.ndarray | None:
        """Unit bone frame quaternions (n, 4), or None."""
        return None if self._frame_rows is None else np.array(self._frame_rows)

    @functools.cached_property
    def fallback_axes(self) -> np.ndarray:
        """Each bone's tie-breaker axis (n, 3)."""
        return np.array(list(self.scalar_terms[5]))

    @functools.cached_property
    def reach_after(self) -> np.ndarray:
        return np.array(self.scalar_terms[3])

    @functools.cached_property
    def inner_after(self) -> np.ndarray:
        return np.array(self.scalar_terms[4])

    @property
    def n_bones(self) -> int:
        return self._n

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
        if self._frame_rows is None:
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

    @functools.cached_property
    def goal_terms(self) -> tuple[tuple, tuple, tuple]:
        """(bone frames, base frame, the root bone's reference) as float tuples: what the float
        kernels' goals read (each method's chain_floats), built once per chain."""
        frames = tuple(map(tuple, self._frame_rows))
        if self._reference_arg is not None:  # as given: the joint model's arrays are not needed
            base = (1.0, 0.0, 0.0, 0.0) if self._base_arg is None else tuple(self._base_arg.tolist())
            return frames, base, tuple(self._reference_arg[0].tolist())
        return frames, tuple(self.base_frame.tolist()), tuple(self.reference[0].tolist())

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

    @staticmethod
    def _read_frames(frames: object, n: int) -> list:
        """Unit frame quaternions as rows of floats (normalised), or ValueError."""
        rows = _float_rows(frames, 4)
        if rows is not None and len(rows) == n:
            return _unit_rows(rows)
        try:
            f = np.asarray(frames, dtype=float)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"frames must be numbers: {exc}") from exc
        if f.shape == (n, 3, 3):
            if not np.all(np.isfinite(f)):
                raise ValueError("frames contain non-finite values")
            gram = np.einsum("nij,nik->njk", f, f)
            if not np.allclose(gram, np.eye(3), atol=1e-6) or np.any(np.linalg.det(f) < 0):
                raise ValueError("frames must be proper rotation matrices (orthonormal, det +1)")
            return quat.from_matrix(f).tolist()
        if f.shape == (n, 4):
            return _unit_rows(f.tolist())
        raise ValueError(f"frames must have shape ({n}, 4) or ({n}, 3, 3), got {f.shape}")

    def __repr__(self) -> str:
        return f"Chain(n_bones={self.n_bones}, length={self.total_length:g})"
