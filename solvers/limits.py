"""Joint limits, per bone in its own frame, as Blender's IK settings define them.

A bone's local rotation L is its rotation relative to its rest orientation
in the parent's frame (Blender's matrix_basis rotation). It is split as
L = S * T: first a twist T about the bone's own Y axis (angle tau), then a
swing S about an axis in the bone's XZ plane. The swing is parametrised, as
in Blender's IK solver, by its quaternion components (sx, sz) = sin(phi/2) x
the swing axis, so a pure X rotation by alpha has sx = sin(alpha/2).

Limits per bone: locked axes (X, Y = twist, Z; a hinge locks two), per-axis
min/max angles (X and Z swing, Y twist), a cone on the total swing angle, and
stiffness 0..0.99 per axis (iterative solvers move a stiff axis less).
`clamp` maps any local rotation into the allowed set; solvers apply it to
every joint they turn, so no output violates a limit.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields

import numpy as np

from . import quat

AXES = "xyz"
# Slack on the +-180° range ends (32-bit angles from Blender round just past pi).
ANGLE_SLACK = 1e-6
# Largest |(sx, sz)| a clamped swing keeps: 180° - 2.8e-3 rad. Near a half turn the
# twist is read from (w, y) ~ sqrt(1 - r^2), so rounding grows like 1 / (1 - r^2): at
# 1 - 5e-9 a pose recomposed from clamped rotations could read 2e-9 rad outside.
HALF_TURN_RADIUS = 1.0 - 1e-6
# X and Z ranges both around zero clamp to Blender's ellipse; a semi-axis smaller
# than this (in swing components, ~2e-9 rad) clamps as the box instead.
ELLIPSE_MIN = 1e-9


@dataclass(frozen=True)
class JointLimits:
    """Limits of an n-bone chain. Angles in radians; arrays indexed [bone, axis]."""

    lock: np.ndarray  # (n, 3) bool
    use_limit: np.ndarray  # (n, 3) bool
    minimum: np.ndarray  # (n, 3)
    maximum: np.ndarray  # (n, 3)
    cone: np.ndarray  # (n,) largest swing angle; pi = no cone
    stiffness: np.ndarray  # (n, 3) in [0, 0.99]

    @property
    def n_bones(self) -> int:
        return self.lock.shape[0]

    @property
    def active(self) -> np.ndarray:
        """(n,) bones with any restriction on their rotation."""
        return self.lock.any(axis=1) | self.use_limit.any(axis=1) | (self.cone < math.pi)

    def subset(self, bones: list[int]) -> JointLimits:
        """The limits of `bones` only, in that order (a branch of a skeleton)."""
        return JointLimits(*(getattr(self, f.name)[bones] for f in fields(self)))


def make_limits(
    n_bones: int,
    *,
    lock: object = None,
    use_limit: object = None,
    minimum: object = None,
    maximum: object = None,
    cone: object = None,
    stiffness: object = None,
) -> JointLimits:
    """Validated limits; omitted fields mean free. Per-bone values may be
    given for all bones at once as (3,) / scalar, or per bone as (n, 3) / (n,)."""

    def per_axis(value: object, default: float, what: str, dtype=float) -> np.ndarray:
        if value is None:
            return np.full((n_bones, 3), default, dtype=dtype)
        try:
            arr = np.array(np.broadcast_to(np.asarray(value, dtype=dtype), (n_bones, 3)))
        except (TypeError, ValueError) as exc:
            raise ValueError(f"{what} must be (3,) or ({n_bones}, 3) values: {exc}") from exc
        if dtype is float and not np.all(np.isfinite(arr)):
            raise ValueError(f"{what} contains non-finite values")
        return arr

    lock_a = per_axis(lock, False, "lock", bool)
    use_a = per_axis(use_limit, False, "use_limit", bool)
    lo = per_axis(minimum, -math.pi, "minimum")
    hi = per_axis(maximum, math.pi, "maximum")
    stiff = per_axis(stiffness, 0.0, "stiffness")
    try:
        cone_a = np.array(np.broadcast_to(np.asarray(math.pi if cone is None else cone, dtype=float), (n_bones,)))
    except (TypeError, ValueError) as exc:
        raise ValueError(f"cone must be a scalar or ({n_bones},) angles: {exc}") from exc
    if not np.all(np.isfinite(cone_a)) or np.any(cone_a < 0.0):
        raise ValueError("cone angles must be finite and >= 0")
    # Blender stores angles as 32-bit floats: its default +-180° range reads back
    # ~9e-8 rad beyond +-pi, so ends within ANGLE_SLACK of a half turn are taken as one.
    edge = math.pi + ANGLE_SLACK
    bad = use_a & ~((lo >= -edge) & (hi <= edge) & (lo <= hi))
    if np.any(bad):
        i, k = np.argwhere(bad)[0]
        raise ValueError(
            f"bone {i}: {AXES[k].upper()} limit must satisfy -180° <= min <= max <= 180°,"
            f" got [{math.degrees(lo[i, k]):g}°, {math.degrees(hi[i, k]):g}°]"
        )
    lo, hi = np.clip(lo, -math.pi, math.pi), np.clip(hi, -math.pi, math.pi)
    if np.any((stiff < 0.0) | (stiff > 0.99)):
        i, k = np.argwhere((stiff < 0.0) | (stiff > 0.99))[0]
        raise ValueError(f"bone {i}: {AXES[k].upper()} stiffness must be within 0..0.99, got {stiff[i, k]:g}")
    lo = np.where(use_a, np.clip(lo, -math.pi, math.pi), -math.pi)
    hi = np.where(use_a, np.clip(hi, -math.pi, math.pi), math.pi)
    limits = JointLimits(lock_a, use_a, lo, hi, np.minimum(cone_a, math.pi), stiff)
    # The swing region must meet the cone: its point nearest no swing.
    nearest = _nearest_allowed_swing(limits)
    if np.any(np.hypot(nearest[:, 0], nearest[:, 1]) > np.sin(0.5 * limits.cone) + 1e-12):
        raise ValueError("a bone's X/Z limits lie entirely outside its cone limit: no rotation is allowed")
    return limits


def swing_bounds(limits: JointLimits) -> tuple[np.ndarray, np.ndarray]:
    """Bounds (n, 2) on the swing components (sx, sz), locks included."""
    lo = np.sin(0.5 * limits.minimum[:, [0, 2]])
    hi = np.sin(0.5 * limits.maximum[:, [0, 2]])
    locked = limits.lock[:, [0, 2]]
    return np.where(locked, 0.0, lo), np.where(locked, 0.0, hi)


def _nearest_allowed_swing(limits: JointLimits) -> np.ndarray:
    lo, hi = swing_bounds(limits)
    return np.clip(0.0, lo, hi)


def twist_swing(local: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Split local rotations (..., 4) into twist angle tau (...,) about Y and
    swing components sx, sz (...,), with the swing's w >= 0."""
    tau, _, sx, sz = _decompose(local)
    return tau, sx, sz


def _decompose(local: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(tau, sw, sx, sz): the twist angle and the whole swing quaternion."""
    w, x, y, z = np.moveaxis(local, -1, 0)
    norm = np.hypot(w, y)
    ok = norm > 1e-12
    # T = (w, 0, y, 0)/|.|; S = L T^-1 has no y part. With w = y = 0 the swing
    # is a half turn and the twist is undefined: take it as zero.
    tw = np.where(ok, w / np.where(ok, norm, 1.0), 1.0)
    ty = np.where(ok, y / np.where(ok, norm, 1.0), 0.0)
    sx = x * tw + z * ty
    sz = z * tw - x * ty
    sw = w * tw + y * ty
    flip = sw < 0.0  # S and T both negated: the same rotation, swing <= 180°
    sw, sx, sz = np.abs(sw), np.where(flip, -sx, sx), np.where(flip, -sz, sz)
    tw, ty = np.where(flip, -tw, tw), np.where(flip, -ty, ty)
    tau = 2.0 * np.arctan2(ty, tw)
    tau = np.where(tau > math.pi, tau - 2.0 * math.pi, np.where(tau <= -math.pi, tau + 2.0 * math.pi, tau))
    return tau, sw, sx, sz


def from_twist_swing(tau: np.ndarray, sx: np.ndarray, sz: np.ndarray, sw: np.ndarray | None = None) -> np.ndarray:
    """Local rotations S * T from a twist angle and swing components (the
    swing's w from them unless given: near a half turn sqrt(1 - |s|^2) is
    rounding noise, so a kept swing passes its own w)."""
    if sw is None:
        sw = np.sqrt(np.maximum(0.0, 1.0 - sx * sx - sz * sz))
    swing_q = np.stack((sw, sx, np.zeros_like(sx), sz), axis=-1)
    half = 0.5 * tau
    twist_q = np.stack((np.cos(half), np.zeros_like(half), np.sin(half), np.zeros_like(half)), axis=-1)
    return quat.multiply(swing_q, twist_q)


def clamp(limits: JointLimits, bone: int | np.ndarray, local: np.ndarray) -> np.ndarray:
    """The allowed local rotation for `local` (..., 4) of `bone` (an index, or
    an index array broadcasting with local's leading shape)."""
    if np.ndim(bone) == 0 and not limits.active[bone]:
        # A free bone: only the half-turn guard below can apply, and the
        # swing's size needs no split (|(sx, sz)| = |(x, z)|).
        r2 = local[..., 1] * local[..., 1] + local[..., 3] * local[..., 3]
        if np.all(r2 <= (HALF_TURN_RADIUS + 1e-10) ** 2):
            return quat.normalize(local)
    tau0, sw0, sx0, sz0 = _decompose(local)
    tau, sx, sz = tau0, sx0, sz0
    lock = limits.lock[bone]
    use = limits.use_limit[bone]
    # Twist (Y): lock, then its interval.
    tau = np.where(lock[..., 1], 0.0, tau)
    tau = np.where(use[..., 1], np.clip(tau, limits.minimum[bone][..., 1], limits.maximum[bone][..., 1]), tau)
    # Swing (X, Z): per-axis bounds; both limited around zero -> Blender's
    # ellipse (a quarter-ellipse per quadrant), otherwise a box.
    lo_all, hi_all = swing_bounds(limits)
    lo, hi = lo_all[bone], hi_all[bone]
    # (Clearly around zero: a zero or vanishing semi-axis would collapse the
    # ellipse, scaling a swing rounding-noise outside it all the way to zero.)
    around = (lo < -ELLIPSE_MIN) & (hi > ELLIPSE_MIN)
    both = use[..., 0] & use[..., 2] & ~lock[..., 0] & ~lock[..., 2] & np.all(around, axis=-1)
    ex = np.where(sx >= 0.0, hi[..., 0], -lo[..., 0])
    ez = np.where(sz >= 0.0, hi[..., 1], -lo[..., 1])
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        r2 = np.where(sx != 0.0, (sx / ex) ** 2, 0.0) + np.where(sz != 0.0, (sz / ez) ** 2, 0.0)
    # Rounding slack: near a half-turn swing the angle is a square root of
    # these components, so a last-bit excess must not count as outside.
    scale = np.where(both & (r2 > 1.0 + 1e-12), 1.0 / np.sqrt(np.where(r2 > 1.0, r2, 1.0)), 1.0)
    sx, sz = sx * scale, sz * scale
    sx = np.clip(sx, lo[..., 0], hi[..., 0])
    sz = np.clip(sz, lo[..., 1], hi[..., 1])
    # Cone: move toward the allowed swing nearest zero until inside the disk
    # (both sets are convex, so the segment between stays in the box/ellipse).
    # A swing is at most a half turn; at exactly a half turn (w = y = 0) the
    # twist can no longer be told apart, so stay a hair inside it.
    radius = np.minimum(np.sin(0.5 * limits.cone[bone]), HALF_TURN_RADIUS)
    r = np.hypot(sx, sz)
    outside = r > radius + 1e-10
    if np.any(outside):
        p0 = _nearest_allowed_swing(limits)[bone]
        px, pz = p0[..., 0], p0[..., 1]
        dx, dz = sx - px, sz - pz
        # Solve |p0 + t d| = radius for t in [0, 1].
        a = dx * dx + dz * dz
        b = 2.0 * (px * dx + pz * dz)
        c = px * px + pz * pz - radius * radius
        disc = np.sqrt(np.maximum(0.0, b * b - 4.0 * a * c))
        t = np.where(a > 0.0, (-b + disc) / (2.0 * np.where(a > 0.0, a, 1.0)), 0.0)
        t = np.clip(t, 0.0, 1.0)
        sx = np.where(outside, px + t * dx, sx)
        sz = np.where(outside, pz + t * dz, sz)
    # Rebuild only what changed: recomposing a swing near a half turn takes
    # sqrt(1 - |s|^2) of rounding noise and would move an allowed rotation.
    changed = (tau != tau0) | (sx != sx0) | (sz != sz0)
    swing_kept = (sx == sx0) & (sz == sz0)
    rebuilt = from_twist_swing(
        tau, sx, sz, np.where(swing_kept, sw0, np.sqrt(np.maximum(0.0, 1.0 - sx * sx - sz * sz)))
    )
    return quat.normalize(np.where(changed[..., None], rebuilt, local))


def violation(limits: JointLimits, local: np.ndarray) -> np.ndarray:
    """How far (radians, 0 = allowed) each bone's local rotation (..., n, 4) is
    outside its limits: the rotation angle between it and its clamped self."""
    bones = np.arange(limits.n_bones)
    clamped = clamp(limits, bones, local)
    return quat.angle(quat.multiply(clamped, local * np.array([1.0, -1.0, -1.0, -1.0])))
