"""Triangulation IK (Mueller-Cajar & Mukundan 2007): one pass, root to tip.

At joint i with bone length a, remaining straight reach b and target distance
c, the law of cosines (eq. 5) gives the angle delta between the bone and the
joint->target vector that closes the triangle (a, b, c); the bone turns in the
plane of itself and that vector (eq. 6-7). Special cases of §3.1:
  c >= a + b      the bone points at the target (and so do all after it);
  c <= |a - b|    b > a: fold, delta = 180° (or the paper's proposed 90°);
                  a > b: unreachable, the bone points at the target;
  a parallel to c the axis is undefined: reuse the last joint's axis, else
                  the bone's own frame X axis (§3.1.1).
Children follow their parent's rotation (the paper's relative storage), kept
as one accumulated quaternion so a solve stays O(n).

The boundaries c == a + b and c == |a - b| are compared with a band of
BAND x chain length: rounding there must not switch branch. Without it the
last bone (b = 0, so |a - b| = a) of a chain that reached exactly would see
c = a - 1ulp and fold back, landing the tip a whole bone from the target.
"""

from __future__ import annotations

import math

import numpy as np

from . import quat
from .chain import Chain, as_real
from .quat import AXIS_EPS
from .result import BatchSolution, Solution, batch_result

BAND = 1e-12


def check_fold_angle(fold_angle: float) -> float:
    """The fold angle in radians; any value in [90°, 180°] keeps reachability."""
    fold = as_real(fold_angle, "fold_angle")
    if not 90.0 <= fold <= 180.0:
        raise ValueError(f"fold_angle must be between 90 and 180 degrees, got {fold_angle!r}")
    return math.radians(fold)


def solve_one(chain: Chain, target: np.ndarray, tolerance: float, fold_angle: float = 180.0) -> Solution:
    """Scalar fast path: plain floats, no numpy until the result is packed.

    The accumulated quaternion q after joint i is bone i's output rotation:
    inherited from the parents, then the minimal swing onto its new direction.
    """
    cos_fold = -1.0 if fold_angle == 180.0 else math.cos(check_fold_angle(fold_angle))
    pts, lengths, dirs, reach, inner, fallbacks = chain._scalar
    tx, ty, tz = float(target[0]), float(target[1]), float(target[2])
    band = BAND * chain.total_length
    px, py, pz = pts[0]
    out = [pts[0]]
    rots = []
    qw, qx, qy, qz = 1.0, 0.0, 0.0, 0.0  # rotation inherited from the parents
    axis = None  # last joint's rotation axis (§3.1.1)
    straight = False
    for i, a in enumerate(lengths):
        b = reach[i]
        # Current direction of bone i: its input direction turned by its parents.
        dx, dy, dz = dirs[i]
        ux, uy, uz = 2.0 * (qy * dz - qz * dy), 2.0 * (qz * dx - qx * dz), 2.0 * (qx * dy - qy * dx)
        ax = dx + qw * ux + qy * uz - qz * uy
        ay = dy + qw * uy + qz * ux - qx * uz
        az = dz + qw * uz + qx * uy - qy * ux
        if not straight:
            cx, cy, cz = tx - px, ty - py, tz - pz
            c = math.sqrt(cx * cx + cy * cy + cz * cz)
            # Full triangle formed, or out of reach: this bone and all after it
            # point straight at the target (§3.1.2, §3.1.3).
            straight = c >= a + b - band
            if c > band:
                cx, cy, cz = cx / c, cy / c, cz / c
        if straight:
            nx, ny, nz = cx, cy, cz
        elif c <= band:
            nx, ny, nz = ax, ay, az  # target on this joint: any direction serves
        elif c <= abs(a - b) + band and a > b:
            nx, ny, nz = cx, cy, cz  # too close and unreachable: point at it
        else:
            if c <= abs(a - b) + band:
                # Fold (paper: delta_b = 180°). A smaller fold angle must still
                # leave the next joint outside the rest's unreachable hole.
                cos_d = cos_fold
                if fold_angle != 180.0:
                    r = inner[i]
                    cos_d = min(cos_d, max(-1.0, (a * a + c * c - r * r) / (2.0 * a * c)))
                sin_d = math.sqrt(max(0.0, 1.0 - cos_d * cos_d))
            else:
                cos_d = (a * a + c * c - b * b) / (2.0 * a * c)  # eq. 5
                cos_d = 1.0 if cos_d > 1.0 else (-1.0 if cos_d < -1.0 else cos_d)
                sin_d = math.sqrt(1.0 - cos_d * cos_d)
            # Unit vector in the bend plane, perpendicular to c, on a's side.
            dot = ax * cx + ay * cy + az * cz
            wx, wy, wz = ax - dot * cx, ay - dot * cy, az - dot * cz
            # Project twice: with a nearly (anti)parallel to c the first pass
            # leaves rounding noise along c that is large next to |w|.
            dot = wx * cx + wy * cy + wz * cz
            wx, wy, wz = wx - dot * cx, wy - dot * cy, wz - dot * cz
            wn = math.sqrt(wx * wx + wy * wy + wz * wz)
            if wn <= 1e-9:
                wx, wy, wz = _undefined_plane(axis, fallbacks[i], (qw, qx, qy, qz), (cx, cy, cz))
                wn = 1.0
            nx, ny, nz = cos_d * cx + sin_d * wx / wn, cos_d * cy + sin_d * wy / wn, cos_d * cz + sin_d * wz / wn
            # w comes from nearly parallel vectors when a is close to c:
            # renormalise so the bone length stays exact.
            nn = math.sqrt(nx * nx + ny * ny + nz * nz)
            nx, ny, nz = nx / nn, ny / nn, nz / nn
        # Children inherit the swing a -> n (eq. 7's axis a x c), composed onto q.
        sx, sy, sz = ay * nz - az * ny, az * nx - ax * nz, ax * ny - ay * nx
        dot = ax * nx + ay * ny + az * nz
        sn = math.sqrt(sx * sx + sy * sy + sz * sz)
        if sn > AXIS_EPS:
            axis = (sx / sn, sy / sn, sz / sn)
        if dot >= 0.0:  # (1 + a.n, a x n) is accurate here
            sw = 1.0 + dot
            norm = math.sqrt(sw * sw + sn * sn)
            sw, sx, sy, sz = sw / norm, sx / norm, sy / norm, sz / norm
        else:
            fb = _rotate((qw, qx, qy, qz), fallbacks[i])
            sw, sx, sy, sz = _obtuse_swing((ax, ay, az), (nx, ny, nz), (sx, sy, sz), sn, dot, fb)
        qw, qx, qy, qz = (
            sw * qw - sx * qx - sy * qy - sz * qz,
            sw * qx + sx * qw + sy * qz - sz * qy,
            sw * qy - sx * qz + sy * qw + sz * qx,
            sw * qz + sx * qy - sy * qx + sz * qw,
        )
        rots.append((qw, qx, qy, qz))
        px, py, pz = px + a * nx, py + a * ny, pz + a * nz
        out.append((px, py, pz))
    ex, ey, ez = px - tx, py - ty, pz - tz
    error = math.sqrt(ex * ex + ey * ey + ez * ez)
    return Solution(np.array(out), np.array(rots), 1, error, error <= tolerance, "triangulation")


def _rotate(q: tuple, v: tuple) -> tuple:
    qw, qx, qy, qz = q
    vx, vy, vz = v
    ux, uy, uz = 2.0 * (qy * vz - qz * vy), 2.0 * (qz * vx - qx * vz), 2.0 * (qx * vy - qy * vx)
    return (vx + qw * ux + qy * uz - qz * uy, vy + qw * uy + qz * ux - qx * uz, vz + qw * uz + qx * uy - qy * ux)


def _obtuse_swing(a: tuple, n: tuple, cross: tuple, sn: float, dot: float, fallback: tuple) -> tuple:
    """Swing quaternion a -> n past 90°, exact to rounding (see quat.swing)."""
    ax, ay, az = a
    if sn > AXIS_EPS:
        # 1 + a.n cancels here: the angle from atan2, the axis kept normal to a.
        rx, ry, rz = cross[0] / sn, cross[1] / sn, cross[2] / sn
        along = rx * ax + ry * ay + rz * az
        rx, ry, rz = rx - along * ax, ry - along * ay, rz - along * az
        half = 0.5 * math.atan2(sn, dot)
        s = math.sin(half) / math.sqrt(rx * rx + ry * ry + rz * rz)
        return math.cos(half), s * rx, s * ry, s * rz
    # Nearly a half turn: a x n is noise. Turn half way round the bone's own
    # X axis (fallback), then the small swing from -a onto n.
    nx, ny, nz = n
    hw, hx, hy, hz = 1.0 - dot, az * ny - ay * nz, ax * nz - az * nx, ay * nx - ax * ny
    norm = math.sqrt(hw * hw + hx * hx + hy * hy + hz * hz)
    hw, hx, hy, hz = hw / norm, hx / norm, hy / norm, hz / norm
    fx, fy, fz = fallback
    return (
        -hx * fx - hy * fy - hz * fz,
        hw * fx + hy * fz - hz * fy,
        hw * fy - hx * fz + hz * fx,
        hw * fz + hx * fy - hy * fx,
    )


def _undefined_plane(axis: tuple | None, fallback: tuple, q: tuple, c: tuple) -> tuple:
    """§3.1.1: bone and target vector are parallel, so a x c is undefined.
    Turn about the last joint's axis, else the bone's own (inherited) frame X
    axis; returns the unit bend direction r x c, perpendicular to c."""
    cx, cy, cz = c
    candidates = ([axis] if axis is not None else []) + [_rotate(q, fallback), fallback]
    for rx, ry, rz in candidates:
        wx, wy, wz = ry * cz - rz * cy, rz * cx - rx * cz, rx * cy - ry * cx
        wn = math.sqrt(wx * wx + wy * wy + wz * wz)
        if wn > 1e-9:
            return wx / wn, wy / wn, wz / wn
    (px, py, pz) = quat.any_perpendicular(np.array(c)).tolist()
    return px, py, pz


def _cross(u: np.ndarray, v: np.ndarray) -> np.ndarray:
    return np.stack((u[1] * v[2] - u[2] * v[1], u[2] * v[0] - u[0] * v[2], u[0] * v[1] - u[1] * v[0]))


def _qrotate(q: np.ndarray, v: np.ndarray) -> np.ndarray:
    t = 2.0 * _cross(q[1:], v)
    return v + q[0] * t + _cross(q[1:], t)


def solve_many(chain: Chain, targets: np.ndarray, tolerance: float, fold_angle: float = 180.0) -> BatchSolution:
    """The same pass vectorised over targets (m, 3): a loop over joints only.

    Vectors are stored component-major, (3, m), so every operation is a
    plain elementwise ufunc over m values (no small-axis reductions)."""
    cos_fold = -1.0 if fold_angle == 180.0 else math.cos(check_fold_angle(fold_angle))
    m, n = targets.shape[0], chain.n_bones
    band = BAND * chain.total_length
    t = np.ascontiguousarray(targets.T)
    points = np.empty((n + 1, 3, m))
    p = points[0]
    p[:] = chain.root[:, None]
    q = np.zeros((4, m))
    q[0] = 1.0
    rots = np.empty((n, 4, m))
    axis = np.zeros((3, m))
    has_axis = np.zeros(m, dtype=bool)
    for i in range(n):
        a, b = chain.lengths[i], chain.reach_after[i]
        cvec = t - p
        c = np.sqrt(np.einsum("ij,ij->j", cvec, cvec))
        chat = cvec / np.where(c > band, c, 1.0)
        cur = _qrotate(q, np.broadcast_to(chain.directions[i][:, None], (3, m)))
        straight = c >= a + b - band
        close = ~straight & (c <= abs(a - b) + band)
        safe_c = np.where(c > 0, c, 1.0)
        cos_d = np.clip((a * a + c * c - b * b) / (2.0 * a * safe_c), -1.0, 1.0)
        if np.any(close):
            fold_cos = np.full(m, cos_fold)
            if fold_angle != 180.0:  # stay out of the rest's unreachable hole
                r = chain.inner_after[i]
                fold_cos = np.minimum(fold_cos, np.maximum(-1.0, (a * a + c * c - r * r) / (2.0 * a * safe_c)))
            cos_d = np.where(close, fold_cos, cos_d)
        sin_d = np.sqrt(np.maximum(0.0, 1.0 - cos_d * cos_d))
        perp = cur - np.einsum("ij,ij->j", cur, chat) * chat
        perp -= np.einsum("ij,ij->j", perp, chat) * chat  # twice: see solve_one
        pn = np.sqrt(np.einsum("ij,ij->j", perp, perp))
        undefined = pn <= 1e-9
        if np.any(undefined):
            # §3.1.1: the last joint's axis, else the bone's (turned) frame X.
            k = np.flatnonzero(undefined)
            ck = chat[:, k]
            fb = _qrotate(q[:, k], np.broadcast_to(chain.fallback_axes[i][:, None], (3, k.size)))
            r = np.where(has_axis[k], axis[:, k], fb)
            w = _cross(r, ck)
            wn = np.sqrt(np.einsum("ij,ij->j", w, w))
            bad = wn <= 1e-9
            if np.any(bad):
                w[:, bad] = _cross(np.broadcast_to(chain.fallback_axes[i][:, None], (3, int(bad.sum()))), ck[:, bad])
                wn = np.sqrt(np.einsum("ij,ij->j", w, w))
                bad = wn <= 1e-9
                if np.any(bad):
                    w[:, bad] = quat.any_perpendicular(ck[:, bad].T).T
                    wn[bad] = 1.0
            perp[:, k] = w
            pn[k] = wn
        new = cos_d * chat + sin_d * (perp / np.where(pn > 0, pn, 1.0))
        nn = np.sqrt(np.einsum("ij,ij->j", new, new))
        new /= np.where(nn > 0.0, nn, 1.0)  # exact bone length (see solve_one)
        direct = straight | (close & (a > b))
        new = np.where(direct, chat, new)
        new = np.where(~straight & (c <= band), cur, new)
        # Children inherit the swing cur -> new (axis cur x new), composed onto q.
        cross = _cross(cur, new)
        cn = np.sqrt(np.einsum("ij,ij->j", cross, cross))
        moved = cn > AXIS_EPS
        axis = np.where(moved, cross / np.where(moved, cn, 1.0), axis)
        has_axis |= moved
        dot = np.einsum("ij,ij->j", cur, new)
        s = np.concatenate(((1.0 + dot)[None], cross))
        obtuse = dot < 0.0
        if np.any(obtuse):  # 1 + cur.new cancels: see quat.swing
            k = np.flatnonzero(obtuse)
            fb = _qrotate(q[:, k], np.broadcast_to(chain.fallback_axes[i][:, None], (3, k.size)))
            s[:, k] = quat.swing(cur[:, k].T, new[:, k].T, fb.T).T
        s /= np.sqrt(np.einsum("ij,ij->j", s, s))
        q = np.stack(
            (
                s[0] * q[0] - s[1] * q[1] - s[2] * q[2] - s[3] * q[3],
                s[0] * q[1] + s[1] * q[0] + s[2] * q[3] - s[3] * q[2],
                s[0] * q[2] - s[1] * q[3] + s[2] * q[0] + s[3] * q[1],
                s[0] * q[3] + s[1] * q[2] - s[2] * q[1] + s[3] * q[0],
            )
        )
        rots[i] = q
        p = p + a * new
        points[i + 1] = p
    return batch_result(
        chain,
        points.transpose(2, 0, 1),
        targets,
        np.ones(m, dtype=np.int64),
        tolerance,
        "triangulation",
        rots.transpose(2, 0, 1),
    )
