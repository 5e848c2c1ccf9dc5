"""The damped least squares step (solvers.jacobian, unlimited chains, variant "dls") on
float tuples. J J^T is a 3x3 sum over the joints (as in the numpy step), solved here
by Cramer's rule."""

from __future__ import annotations

from math import cos, sin, sqrt


def make_step(lengths: tuple, target: tuple, lam2: float, max_step: float):
    """One damped least squares step toward `target`, as `jacobian.make_step(chain, "dls", ...)`;
    `lam2` > 0 (the damped J J^T is then invertible)."""
    n = len(lengths)
    tx, ty, tz = target

    def step(points: list) -> list:
        ex, ey, ez = points[n]
        bx, by, bz = tx - ex, ty - ey, tz - ez
        arms = []
        s = sxx = sxy = sxz = syy = syz = szz = 0.0
        for x, y, z in points[:n]:
            rx, ry, rz = ex - x, ey - y, ez - z
            arms.append((rx, ry, rz))
            sxx, sxy, sxz = sxx + rx * rx, sxy + rx * ry, sxz + rx * rz
            syy, syz, szz = syy + ry * ry, syz + ry * rz, szz + rz * rz
        s = sxx + syy + szz
        # J J^T = |r|^2 I - r r^T summed over joints
        a, b, c, d, e, f = s - sxx, -sxy, -sxz, s - syy, -syz, s - szz  # [[a b c] [b d e] [c e f]]
        a, d, f = a + lam2, d + lam2, f + lam2
        c0, c1, c2 = d * f - e * e, c * e - b * f, b * e - c * d  # cofactors of the first row
        det = a * c0 + b * c1 + c * c2
        ux = (c0 * bx + c1 * by + c2 * bz) / det
        uy = (c1 * bx + (a * f - c * c) * by + (b * c - a * e) * bz) / det
        uz = (c2 * bx + (b * c - a * e) * by + (a * d - b * b) * bz) / det
        omega, biggest = [], 0.0
        for rx, ry, rz in arms:
            wx, wy, wz = ry * uz - rz * uy, rz * ux - rx * uz, rx * uy - ry * ux
            omega.append((wx, wy, wz))
            biggest = max(biggest, sqrt(wx * wx + wy * wy + wz * wz))
        scale = min(1.0, max_step / max(biggest, 1e-300))
        out = [points[0]]
        ox, oy, oz = points[0]
        cx = cy = cz = 0.0  # running sum of the joints' rotation vectors
        px = py = pz = 0.0  # running sum of the bones' new links
        for i, (wx, wy, wz) in enumerate(omega):
            cx, cy, cz = cx + wx * scale, cy + wy * scale, cz + wz * scale
            # floats.from_rotation_vector, inlined (it runs once per bone per iteration)
            angle = sqrt(cx * cx + cy * cy + cz * cz)
            half = 0.5 * angle
            k = sin(half) / angle if angle > 1e-12 else 0.5
            qw, qx, qy, qz = cos(half), cx * k, cy * k, cz * k
            (x0, y0, z0), (x1, y1, z1) = points[i], points[i + 1]
            vx, vy, vz = x1 - x0, y1 - y0, z1 - z0
            r = sqrt(vx * vx + vy * vy + vz * vz)
            vx, vy, vz = vx / r, vy / r, vz / r
            kx, ky, kz = 2.0 * (qy * vz - qz * vy), 2.0 * (qz * vx - qx * vz), 2.0 * (qx * vy - qy * vx)
            length = lengths[i]
            px += length * (vx + qw * kx + (qy * kz - qz * ky))
            py += length * (vy + qw * ky + (qz * kx - qx * kz))
            pz += length * (vz + qw * kz + (qx * ky - qy * kx))
            out.append((ox + px, oy + py, oz + pz))
        return out

    return step
