"""The damped least squares step (jacobian.chain_numpy, unlimited chains, variant "dls") on
float tuples. J J^T is a 3x3 sum over the joints (as in the numpy step), solved here
by Cramer's rule."""

from __future__ import annotations

from math import cos, sin, sqrt

from ..common.float_loop import Solve, iterated


def declines(options: dict, kernel: str) -> str | None:
    """Why the Jacobian's float (or block) kernel cannot serve these checked options (None: it can)."""
    if options.get("joint_weighting", "STIFFNESS") == "MASS":
        # The float and block kernels solve J J^T as one 3x3 sum; W = M(q)^-1 couples every joint
        # (a 3n x 3n Cholesky per step): numpy only, where it is one batched factorisation.
        return f"the Jacobian's mass weighting has no {kernel}"
    if options["variant"] != "dls":
        # The transpose converges linearly through near-singular poses, where rounding
        # differences grow past 1e-9 x length over a hundred iterations: numpy only.
        return f"the Jacobian {options['variant']} has no {kernel}"
    if not options["damping"] > 0.0:
        return f"undamped least squares has no {kernel}"
    return None


def solver(tolerance: float, cap: int, options: dict) -> Solve:
    """The Jacobian's float solve, damped least squares (the registry's float kernel; options as
    `declines` accepts): the damping is relative to the chain length."""
    damping, max_step = options["damping"], options["max_step"]

    def start(t, target: tuple):
        return make_step(t.lengths, t.dirs, target, (damping * t.total) ** 2, max_step)

    return iterated(start, tolerance, cap)


def make_step(lengths: tuple, dirs: tuple, target: tuple, lam2: float, max_step: float):
    """One damped least squares step toward `target`, as `jacobian.make_step(chain, "dls", ...)`;
    `lam2` > 0 (the damped J J^T is then invertible). `dirs` are the unit bone directions of
    the points the first step gets; each step then carries its bones' turned directions to the
    next instead of re-normalising the points' differences (the same directions to rounding,
    a fifth of a step's arithmetic), so `step` must be given the points it last returned.
    `step.carried` is [those directions, those points]."""
    n = len(lengths)
    tx, ty, tz = target
    carried = [dirs, None]  # the last returned points' unit directions, and those points
    bound2 = (1.0 + 1e-9) * sum(lengths) ** 2
    max_step2 = max_step * max_step

    def step(points: list) -> list:
        ex, ey, ez = points[n]
        bx, by, bz = tx - ex, ty - ey, tz - ez
        arms = []
        sxx = sxy = sxz = syy = syz = szz = 0.0
        for x, y, z in points[:n]:
            rx, ry, rz = ex - x, ey - y, ez - z
            arms.append((rx, ry, rz))
            sxx += rx * rx
            sxy += rx * ry
            sxz += rx * rz
            syy += ry * ry
            syz += ry * rz
            szz += rz * rz
        s = sxx + syy + szz
        # J J^T = |r|^2 I - r r^T summed over joints, damped: [[a b c] [b d e] [c e f]]
        a, b, c, d, e, f = s - sxx + lam2, -sxy, -sxz, s - syy + lam2, -syz, s - szz + lam2
        c0, c1, c2 = d * f - e * e, c * e - b * f, b * e - c * d  # cofactors of the first row
        det = a * c0 + b * c1 + c * c2
        c4 = b * c - a * e
        ux = (c0 * bx + c1 * by + c2 * bz) / det
        uy = (c1 * bx + (a * f - c * c) * by + c4 * bz) / det
        uz = (c2 * bx + c4 * by + (a * d - b * b) * bz) / det
        origin = points[0]
        out = [origin]
        new_dirs = []
        ox, oy, oz = origin
        cx = cy = cz = 0.0  # running sum of the joints' rotation vectors r x u
        px = py = pz = 0.0  # running sum of the bones' new links (root + sum, as numpy's cumsum)
        if (ux * ux + uy * uy + uz * uz) * bound2 <= max_step2:
            # |r x u| <= |r| |u| <= chain length x |u| (margin for rounding): no joint turns by
            # more than max_step, so the step is not scaled and needs no pass for the largest turn.
            omega = None
        else:
            # The largest turn caps the step (compared squared: sqrt is monotonic).
            omega, big = [], 0.0
            for rx, ry, rz in arms:
                wx, wy, wz = ry * uz - rz * uy, rz * ux - rx * uz, rx * uy - ry * ux
                omega.append((wx, wy, wz))
                w2 = wx * wx + wy * wy + wz * wz
                if w2 > big:
                    big = w2
            scale = min(1.0, max_step / max(sqrt(big), 1e-300))
        for i, (vx, vy, vz) in enumerate(carried[0]):
            if omega is None:
                rx, ry, rz = arms[i]
                cx += ry * uz - rz * uy
                cy += rz * ux - rx * uz
                cz += rx * uy - ry * ux
            else:
                wx, wy, wz = omega[i]
                cx += wx * scale
                cy += wy * scale
                cz += wz * scale
            # floats.from_rotation_vector and floats.rotate, inlined (once per bone per iteration)
            angle = sqrt(cx * cx + cy * cy + cz * cz)
            half = 0.5 * angle
            k = sin(half) / angle if angle > 1e-12 else 0.5
            qw, qx, qy, qz = cos(half), cx * k, cy * k, cz * k
            kx, ky, kz = 2.0 * (qy * vz - qz * vy), 2.0 * (qz * vx - qx * vz), 2.0 * (qx * vy - qy * vx)
            vx, vy, vz = (
                vx + qw * kx + (qy * kz - qz * ky),
                vy + qw * ky + (qz * kx - qx * kz),
                vz + qw * kz + (qx * ky - qy * kx),
            )
            new_dirs.append((vx, vy, vz))
            length = lengths[i]
            px += length * vx
            py += length * vy
            pz += length * vz
            out.append((ox + px, oy + py, oz + pz))
        carried[0], carried[1] = new_dirs, out
        return out

    step.carried = carried  # read by common.float_solve: the solved directions for the rotations
    return step
