"""The damped least squares step (`jacobian.chain_floats`) on (n+1, 3, w) blocks: J J^T + lambda^2 I
is a 3x3 sum over the joints, solved in closed form (Cramer's rule) on (w,) arrays. Every
(n, w) and (n, 3, w) term goes into a kept work array (`vec.Buffers`)."""

from __future__ import annotations

import numpy as np

from ..maths.blocks import Buffers, running
from ..model.chain import Chain


def make_step(chain: Chain, damping: float, max_step: float):
    n = chain.n_bones
    lam2 = (damping * chain.total_length) ** 2
    lengths = chain.lengths[:, None, None]
    buf = Buffers()
    mul, sub, add = np.multiply, np.subtract, np.add

    def cross_term(a, b, c, d, out, tmp):
        """a * b - c * d into `out`."""
        mul(a, b, out=out)
        out -= mul(c, d, out=tmp)
        return out

    def step(old: np.ndarray, new: np.ndarray, targets: np.ndarray) -> None:
        w = targets.shape[1]
        tmp = buf("tmp", (n, w))
        tip = old[n]
        bx, by, bz = targets - tip
        arms = sub(tip, old[:n], out=buf("arms", (n, 3, w)))
        rx, ry, rz = arms[:, 0], arms[:, 1], arms[:, 2]
        # Sums over the joints in joint order, as the float kernel adds them.
        sums = buf("sums", (6, n, w))
        for k, (x, y) in enumerate(((rx, rx), (rx, ry), (rx, rz), (ry, ry), (ry, rz), (rz, rz))):
            running(mul(x, y, out=sums[k]))
        sxx, sxy, sxz, syy, syz, szz = sums[:, -1]
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
        omega = buf("omega", (n, 3, w))  # joint rotation vectors r_j x u
        cross_term(ry, uz, rz, uy, omega[:, 0], tmp)
        cross_term(rz, ux, rx, uz, omega[:, 1], tmp)
        cross_term(rx, uy, ry, ux, omega[:, 2], tmp)
        sq = mul(omega, omega, out=buf("sq", (n, 3, w)))
        norms = add(sq[:, 0], sq[:, 1], out=buf("norms", (n, w)))
        norms += sq[:, 2]
        biggest = np.sqrt(running(norms, np.maximum)[-1])
        scale = np.minimum(1.0, max_step / np.maximum(biggest, 1e-300))
        omega *= scale
        turns = running(omega)  # bone i turns by the joints 0..i
        cx, cy, cz = turns[:, 0], turns[:, 1], turns[:, 2]
        angle = mul(cx, cx, out=buf("angle", (n, w)))
        angle += mul(cy, cy, out=tmp)
        angle += mul(cz, cz, out=tmp)
        np.sqrt(angle, out=angle)
        half = mul(angle, 0.5, out=buf("half", (n, w)))
        k = np.sin(half, out=buf("k", (n, w)))
        k /= angle
        small = np.greater(angle, 1e-12, out=buf("small", (n, w), bool))
        np.logical_not(small, out=small)
        np.copyto(k, 0.5, where=small)  # sin(x/2)/x -> 1/2
        qw = np.cos(half, out=half)
        turns *= k[:, None, :]
        qx, qy, qz = cx, cy, cz
        links = sub(old[1:], old[:n], out=buf("links", (n, 3, w)))
        mul(links, links, out=sq)
        r = add(sq[:, 0], sq[:, 1], out=norms)
        r += sq[:, 2]
        links /= np.sqrt(r, out=r)[:, None, :]
        vx, vy, vz = links[:, 0], links[:, 1], links[:, 2]
        kk = buf("kk", (n, 3, w))
        kx, ky, kz = kk[:, 0], kk[:, 1], kk[:, 2]
        cross_term(qy, vz, qz, vy, kx, tmp)
        cross_term(qz, vx, qx, vz, ky, tmp)
        cross_term(qx, vy, qy, vx, kz, tmp)
        kk *= 2.0
        moved, twist = sq, buf("twist", (n, w))  # sq is free again
        for m, v, kv, (p1, p2, p3, p4) in (
            (moved[:, 0], vx, kx, (qy, kz, qz, ky)),
            (moved[:, 1], vy, ky, (qz, kx, qx, kz)),
            (moved[:, 2], vz, kz, (qx, ky, qy, kx)),
        ):
            mul(qw, kv, out=m)
            m += v  # v + qw k
            m += cross_term(p1, p2, p3, p4, twist, tmp)  # + (q x k)
        moved *= lengths
        running(moved)
        add(old[0], moved, out=new[1:])

    return step
