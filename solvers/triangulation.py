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
from .chain import Chain
from .result import BatchSolution, Solution, batch_result

BAND = 1e-12


def check_fold_angle(fold_angle: float) -> float:
    """The fold angle in radians; any value in [90°, 180°] keeps reachability."""
    fold = float(fold_angle)
    if not math.isfinite(fold) or not 90.0 <= fold <= 180.0:
        raise ValueError(f"fold_angle must be between 90 and 180 degrees, got {fold_angle!r}")
    return math.radians(fold)


def solve_one(chain: Chain, target: np.ndarray, tolerance: float, fold_angle: float = 180.0) -> Solution:
    """Scalar fast path: plain floats, no numpy until the result is packed."""
    fold = check_fold_angle(fold_angle)
    cos_fold, sin_fold = math.cos(fold), math.sin(fold)
    pts, lengths, dirs, reach, fallbacks = chain._scalar
    tx, ty, tz = float(target[0]), float(target[1]), float(target[2])
    band = BAND * chain.total_length
    n = len(lengths)
    px, py, pz = pts[0]
    out = [pts[0]]
    qw, qx, qy, qz = 1.0, 0.0, 0.0, 0.0  # rotation inherited from the parents
    axis = None  # last joint's rotation axis (§3.1.1)
    i = 0
    while i < n:
        a, b = lengths[i], reach[i]
        cx, cy, cz = tx - px, ty - py, tz - pz
        c = math.sqrt(cx * cx + cy * cy + cz * cz)
        if c >= a + b - band:
            # Full triangle formed or out of reach: this bone and all after it
            # point straight at the target (§3.1.2, §3.1.3).
            cx, cy, cz = cx / c, cy / c, cz / c
            for k in range(i, n):
                px, py, pz = px + lengths[k] * cx, py + lengths[k] * cy, pz + lengths[k] * cz
                out.append((px, py, pz))
            break
        # Current direction of bone i: its input direction turned by its parents.
        dx, dy, dz = dirs[i]
        ux, uy, uz = 2.0 * (qy * dz - qz * dy), 2.0 * (qz * dx - qx * dz), 2.0 * (qx * dy - qy * dx)
        ax = dx + qw * ux + qy * uz - qz * uy
        ay = dy + qw * uy + qz * ux - qx * uz
        az = dz + qw * uz + qx * uy - qy * ux
        if c <= band:
            nx, ny, nz = ax, ay, az  # target on this joint: any direction serves
        else:
            cx, cy, cz = cx / c, cy / c, cz / c
            if c <= abs(a - b) + band and a > b:
                nx, ny, nz = cx, cy, cz  # too close and unreachable: point at it
            else:
                if c <= abs(a - b) + band:
                    cos_d, sin_d = cos_fold, sin_fold  # fold (paper: delta_b = 180°)
                else:
                    cos_d = (a * a + c * c - b * b) / (2.0 * a * c)  # eq. 5
                    cos_d = 1.0 if cos_d > 1.0 else (-1.0 if cos_d < -1.0 else cos_d)
                    sin_d = math.sqrt(1.0 - cos_d * cos_d)
                # Unit vector in the bend plane, perpendicular to c, on a's side.
                dot = ax * cx + ay * cy + az * cz
                wx, wy, wz = ax - dot * cx, ay - dot * cy, az - dot * cz
                wn = math.sqrt(wx * wx + wy * wy + wz * wz)
                if wn <= 1e-9:
                    # a parallel to c: the axis is undefined (§3.1.1).
                    if axis is None:
                        fx, fy, fz = fallbacks[i]
                        ux, uy, uz = 2.0 * (qy * fz - qz * fy), 2.0 * (qz * fx - qx * fz), 2.0 * (qx * fy - qy * fx)
                        rx = fx + qw * ux + qy * uz - qz * uy
                        ry = fy + qw * uy + qz * ux - qx * uz
                        rz = fz + qw * uz + qx * uy - qy * ux
                    else:
                        rx, ry, rz = axis
                    # w = r x c, so turning about r moves c toward w.
                    wx, wy, wz = ry * cz - rz * cy, rz * cx - rx * cz, rx * cy - ry * cx
                    wn = math.sqrt(wx * wx + wy * wy + wz * wz)
                    if wn <= 1e-9:  # the remembered axis is along c too
                        fx, fy, fz = fallbacks[i]
                        wx, wy, wz = fy * cz - fz * cy, fz * cx - fx * cz, fx * cy - fy * cx
                        wn = math.sqrt(wx * wx + wy * wy + wz * wz)
                        if wn <= 1e-9:
                            k = 0 if abs(cx) <= min(abs(cy), abs(cz)) else (1 if abs(cy) <= abs(cz) else 2)
                            ex = (1.0 if k == 0 else 0.0, 1.0 if k == 1 else 0.0, 1.0 if k == 2 else 0.0)
                            wx, wy, wz = ex[1] * cz - ex[2] * cy, ex[2] * cx - ex[0] * cz, ex[0] * cy - ex[1] * cx
                            wn = math.sqrt(wx * wx + wy * wy + wz * wz)
                nx, ny, nz = cos_d * cx + sin_d * wx / wn, cos_d * cy + sin_d * wy / wn, cos_d * cz + sin_d * wz / wn
                # w comes from nearly parallel vectors when a is close to c:
                # renormalise so the bone length stays exact.
                nn = math.sqrt(nx * nx + ny * ny + nz * nz)
                nx, ny, nz = nx / nn, ny / nn, nz / nn
        # Children inherit the swing a -> n (eq. 7's axis a x c), composed onto q.
        sx, sy, sz = ay * nz - az * ny, az * nx - ax * nz, ax * ny - ay * nx
        sw = 1.0 + ax * nx + ay * ny + az * nz
        sn = math.sqrt(sx * sx + sy * sy + sz * sz)
        if sn > 1e-12:
            axis = (sx / sn, sy / sn, sz / sn)
        if sw < 1e-12:  # a half turn: about the remembered or fallback axis
            sw = 0.0
            sx, sy, sz = axis if axis is not None else fallbacks[i]
            sn = 1.0
        norm = math.sqrt(sw * sw + sn * sn)
        sw, sx, sy, sz = sw / norm, sx / norm, sy / norm, sz / norm
        qw, qx, qy, qz = (
            sw * qw - sx * qx - sy * qy - sz * qz,
            sw * qx + sx * qw + sy * qz - sz * qy,
            sw * qy - sx * qz + sy * qw + sz * qx,
            sw * qz + sx * qy - sy * qx + sz * qw,
        )
        px, py, pz = px + a * nx, py + a * ny, pz + a * nz
        out.append((px, py, pz))
        i += 1
    ex, ey, ez = px - tx, py - ty, pz - tz
    error = math.sqrt(ex * ex + ey * ey + ez * ez)
    return Solution(
        np.array(out), _swings(out, lengths, dirs, fallbacks), 1, error, error <= tolerance, "triangulation"
    )


def _swings(out: list, lengths: tuple, dirs: tuple, fallbacks: tuple) -> np.ndarray:
    """Minimal-swing rotation of each bone from its input to its solved direction."""
    rots = []
    for i, (dx, dy, dz) in enumerate(dirs):
        (x0, y0, z0), (x1, y1, z1) = out[i], out[i + 1]
        inv = 1.0 / lengths[i]
        vx, vy, vz = (x1 - x0) * inv, (y1 - y0) * inv, (z1 - z0) * inv
        w = 1.0 + dx * vx + dy * vy + dz * vz
        if w < 1e-12:
            rots.append((0.0,) + fallbacks[i])
            continue
        x, y, z = dy * vz - dz * vy, dz * vx - dx * vz, dx * vy - dy * vx
        norm = math.sqrt(w * w + x * x + y * y + z * z)
        rots.append((w / norm, x / norm, y / norm, z / norm))
    return np.array(rots)


def _cross(u: np.ndarray, v: np.ndarray) -> np.ndarray:
    return np.stack((u[1] * v[2] - u[2] * v[1], u[2] * v[0] - u[0] * v[2], u[0] * v[1] - u[1] * v[0]))


def _qrotate(q: np.ndarray, v: np.ndarray) -> np.ndarray:
    t = 2.0 * _cross(q[1:], v)
    return v + q[0] * t + _cross(q[1:], t)


def solve_many(chain: Chain, targets: np.ndarray, tolerance: float, fold_angle: float = 180.0) -> BatchSolution:
    """The same pass vectorised over targets (m, 3): a loop over joints only.

    Vectors are stored component-major, (3, m), so every operation is a
    plain elementwise ufunc over m values (no small-axis reductions)."""
    fold = check_fold_angle(fold_angle)
    cos_fold, sin_fold = math.cos(fold), math.sin(fold)
    m, n = targets.shape[0], chain.n_bones
    band = BAND * chain.total_length
    t = np.ascontiguousarray(targets.T)
    points = np.empty((n + 1, 3, m))
    p = points[0]
    p[:] = chain.root[:, None]
    q = np.zeros((4, m))
    q[0] = 1.0
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
        cos_d = np.clip((a * a + c * c - b * b) / (2.0 * a * np.where(c > 0, c, 1.0)), -1.0, 1.0)
        sin_d = np.sqrt(1.0 - cos_d * cos_d)
        if np.any(close):
            cos_d[close] = cos_fold
            sin_d[close] = sin_fold
        perp = cur - np.einsum("ij,ij->j", cur, chat) * chat
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
        new /= np.sqrt(np.einsum("ij,ij->j", new, new))  # exact bone length (see solve_one)
        direct = straight | (close & (a > b))
        new = np.where(direct, chat, new)
        new = np.where(~straight & (c <= band), cur, new)
        # Children inherit the swing cur -> new (axis cur x new), composed onto q.
        cross = _cross(cur, new)
        cn = np.sqrt(np.einsum("ij,ij->j", cross, cross))
        moved = cn > 1e-12
        axis = np.where(moved, cross / np.where(moved, cn, 1.0), axis)
        has_axis |= moved
        sw = 1.0 + np.einsum("ij,ij->j", cur, new)
        half = sw < 1e-12
        if np.any(half):
            fallback = np.where(has_axis, axis, chain.fallback_axes[i][:, None])
            cross = np.where(half, fallback, cross)
            sw = np.where(half, 0.0, sw)
        s = np.concatenate((sw[None], cross))
        s /= np.sqrt(np.einsum("ij,ij->j", s, s))
        q = np.stack(
            (
                s[0] * q[0] - s[1] * q[1] - s[2] * q[2] - s[3] * q[3],
                s[0] * q[1] + s[1] * q[0] + s[2] * q[3] - s[3] * q[2],
                s[0] * q[2] - s[1] * q[3] + s[2] * q[0] + s[3] * q[1],
                s[0] * q[3] + s[1] * q[2] - s[2] * q[1] + s[3] * q[0],
            )
        )
        p = p + a * new
        points[i + 1] = p
    return batch_result(
        chain, points.transpose(2, 0, 1), targets, np.ones(m, dtype=np.int64), tolerance, "triangulation"
    )
