"""The damped least squares step (`kernels.jacobian`) on (n+1, 3, w) blocks: J J^T + lambda^2 I
is a 3x3 sum over the joints, solved in closed form (Cramer's rule) on (w,) arrays."""

from __future__ import annotations

import numpy as np

from ..chain import Chain


def running(a: np.ndarray) -> np.ndarray:
    """Running sums along axis 0, in place, in order (np.cumsum along a leading axis is ~9x
    slower than these row adds)."""
    for i in range(1, a.shape[0]):
        np.add(a[i - 1], a[i], out=a[i])
    return a


def make_step(chain: Chain, damping: float, max_step: float):
    n = chain.n_bones
    lam2 = (damping * chain.total_length) ** 2
    lengths = chain.lengths[:, None, None]

    def step(old: np.ndarray, new: np.ndarray, targets: np.ndarray) -> None:
        tip = old[n]
        bx, by, bz = targets - tip
        arms = tip - old[:n]  # (n, 3, w)
        rx, ry, rz = arms[:, 0], arms[:, 1], arms[:, 2]
        # Sums over the joints in joint order, as the float kernel adds them.
        sxx, sxy, sxz = running(rx * rx)[-1], running(rx * ry)[-1], running(rx * rz)[-1]
        syy, syz, szz = running(ry * ry)[-1], running(ry * rz)[-1], running(rz * rz)[-1]
        s = sxx + syy
        s += szz
        a, b, c, d, e, f = s - sxx, -sxy, -sxz, s - syy, -syz, s - szz  # J J^T = sum |r|^2 I - r r^T
        a += lam2
        d += lam2
        f += lam2
        c0, c1, c2 = d * f - e * e, c * e - b * f, b * e - c * d  # cofactors of the first row
        det = a * c0 + b * c1 + c * c2
        bc_ae = b * c - a * e
        ux = (c0 * bx + c1 * by + c2 * bz) / det
        uy = (c1 * bx + (a * f - c * c) * by + bc_ae * bz) / det
        uz = (c2 * bx + bc_ae * by + (a * d - b * b) * bz) / det
        omega = np.empty_like(arms)  # joint rotation vectors r_j x u
        np.subtract(ry * uz, rz * uy, out=omega[:, 0])
        np.subtract(rz * ux, rx * uz, out=omega[:, 1])
        np.subtract(rx * uy, ry * ux, out=omega[:, 2])
        sq = omega * omega
        norms = sq[:, 0] + sq[:, 1]
        norms += sq[:, 2]
        biggest = np.sqrt(np.max(norms, axis=0))
        scale = np.minimum(1.0, max_step / np.maximum(biggest, 1e-300))
        omega *= scale
        turns = running(omega)  # bone i turns by the joints 0..i
        cx, cy, cz = turns[:, 0], turns[:, 1], turns[:, 2]
        angle = cx * cx + cy * cy
        angle += cz * cz
        np.sqrt(angle, out=angle)
        half = 0.5 * angle
        k = np.where(angle > 1e-12, np.sin(half) / angle, 0.5)  # sin(x/2)/x -> 1/2
        qw = np.cos(half)
        turns *= k[:, None, :]
        qx, qy, qz = cx, cy, cz
        links = old[1:] - old[:n]
        sq = links * links
        r = sq[:, 0] + sq[:, 1]
        r += sq[:, 2]
        links /= np.sqrt(r, out=r)[:, None, :]
        vx, vy, vz = links[:, 0], links[:, 1], links[:, 2]
        kx = 2.0 * (qy * vz - qz * vy)
        ky = 2.0 * (qz * vx - qx * vz)
        kz = 2.0 * (qx * vy - qy * vx)
        moved = np.empty_like(links)
        np.add(vx + qw * kx, qy * kz - qz * ky, out=moved[:, 0])
        np.add(vy + qw * ky, qz * kx - qx * kz, out=moved[:, 1])
        np.add(vz + qw * kz, qx * ky - qy * kx, out=moved[:, 2])
        moved *= lengths
        running(moved)
        np.add(old[0], moved, out=new[1:])

    return step
