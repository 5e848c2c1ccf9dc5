"""Forward kinematics on plain floats (lists of tuples), and back (`to_locals`): a character's tree
is 10-40 bones, where numpy's per-call cost on (4,) arrays dominates; every tree kernel and
Skeleton.forward use these. The joint model is solvers.skeleton's."""

from __future__ import annotations

import math
from collections.abc import Iterable

import numpy as np

from .maths.floats import side, swing


def moved_bones(skeleton, bones) -> list[int]:
    """Ascending: every bone on a branch from a root down to one of `bones`."""
    moved: set[int] = set()
    parents = skeleton.parents
    for b in bones:
        while b != -1 and b not in moved:
            moved.add(b)
            b = parents[b]
    return sorted(moved)


def rows(array: np.ndarray) -> list[tuple]:
    return [tuple(r) for r in np.asarray(array, dtype=float).tolist()]


def forward(skeleton, local: list[tuple], bones: list[int] | None = None, frames=None, heads=None):
    """(world frames, heads) as lists of tuples for local rotations `local` (tuples).

    With `bones` (ascending, each one's parent among them or in `frames`/`heads` already)
    only those are recomputed, in the given lists."""
    joints, base = _joints(skeleton)
    n = len(joints)
    frames = [None] * n if frames is None else frames
    heads = [None] * n if heads is None else heads
    # multiply(multiply(parent, reference), local) and rotate(parent, offset) written out, term by
    # term in their order (the same bits): the helpers' calls cost more than their arithmetic. Each
    # bone's parent, offset and reference come as one row (`_joints`): a tree kernel calls this a
    # few times a solve, a bake's frame a dozen.
    for i in range(n) if bones is None else bones:
        p, offset, (bw, bx, by, bz) = joints[i]
        if p == -1:
            pw, px, py, pz = base
            heads[i] = offset
        else:
            pw, px, py, pz = frames[p]
            vx, vy, vz = offset
            tx, ty, tz = 2.0 * (py * vz - pz * vy), 2.0 * (pz * vx - px * vz), 2.0 * (px * vy - py * vx)
            hx, hy, hz = heads[p]
            heads[i] = (
                hx + (vx + pw * tx + (py * tz - pz * ty)),
                hy + (vy + pw * ty + (pz * tx - px * tz)),
                hz + (vz + pw * tz + (px * ty - py * tx)),
            )
        rw = pw * bw - px * bx - py * by - pz * bz
        rx = pw * bx + px * bw + py * bz - pz * by
        ry = pw * by - px * bz + py * bw + pz * bx
        rz = pw * bz + px * by - py * bx + pz * bw
        bw, bx, by, bz = local[i]
        frames[i] = (
            rw * bw - rx * bx - ry * by - rz * bz,
            rw * bx + rx * bw + ry * bz - rz * by,
            rw * by - rx * bz + ry * bw + rz * bx,
            rw * bz + rx * by - ry * bx + rz * bw,
        )
    return frames, heads


def end_point(skeleton, frames: list[tuple], heads: list[tuple], bone: int) -> tuple:
    """Bone `bone`'s end point (head + length x its link)."""
    # rotate(frames[bone], reach[bone]) written out (the same bits)
    qw, qx, qy, qz = frames[bone]
    vx, vy, vz = cached_rows(skeleton, "reach")[bone]
    tx, ty, tz = 2.0 * (qy * vz - qz * vy), 2.0 * (qz * vx - qx * vz), 2.0 * (qx * vy - qy * vx)
    hx, hy, hz = heads[bone]
    return (
        hx + (vx + qw * tx + (qy * tz - qz * ty)),
        hy + (vy + qw * ty + (qz * tx - qx * tz)),
        hz + (vz + qw * tz + (qx * ty - qy * tx)),
    )


def end_distances(frames: list, heads: list, bones: list[int], reach: list, targets: list) -> tuple[list, list]:
    """(the end point of each of `bones`, its distance from its target): `end_point` written out
    (the same terms in their order: the same bits), one loop for both lists, `reach` the
    skeleton's cached_rows "reach" (a tree kernel measures its effectors after every step)."""
    ends, errors = [], []
    dist = math.dist
    for b, target in zip(bones, targets, strict=True):
        qw, qx, qy, qz = frames[b]
        vx, vy, vz = reach[b]
        tx, ty, tz = 2.0 * (qy * vz - qz * vy), 2.0 * (qz * vx - qx * vz), 2.0 * (qx * vy - qy * vx)
        hx, hy, hz = heads[b]
        end = (
            hx + (vx + qw * tx + (qy * tz - qz * ty)),
            hy + (vy + qw * ty + (qz * tx - qx * tz)),
            hz + (vz + qw * tz + (qx * ty - qy * tx)),
        )
        ends.append(end)
        errors.append(dist(end, target))
    return ends, errors


def to_locals(
    skeleton, local: np.ndarray, frames: list[tuple], bones: list[int], swing_only: set[int] | frozenset = frozenset()
) -> np.ndarray:
    """Local rotations (n, 4): `local` (the input) with the bones `bones` (ascending) given
    their solved world `frames` (a list over all bones; only `bones`' entries are read).

    A bone in `swing_only` keeps only its solved link direction: its frame is the minimal
    swing from its input local rotation under its solved parent onto that direction (pass the
    bones whose twist moves nothing a goal sees: every moved child head on the link, no
    orientation goal)."""
    return measured_locals(skeleton, local, frames, bones, swing_only, ())[0]


def measured_locals(
    skeleton,
    local: np.ndarray,
    frames: list[tuple],
    bones: list[int],
    swing_only: set[int] | frozenset,
    goals: Iterable[tuple[int, tuple]],
    inputs: list[tuple] | None = None,
) -> tuple[np.ndarray, list[float]]:
    """(`to_locals`, each goal's distance from its bone's end point on those very locals): `goals`
    are (bone, target point) pairs. The distances are forward kinematics of the locals returned,
    `forward` and `end_point`'s terms in their order (the same bits as measuring the result
    afterwards), done in the same loop, bone by bone, as each local is found. `inputs`: `local`'s
    rows (`rows(local)`) where the caller has them already."""
    joints, base = _joints(skeleton)
    n = len(joints)
    if inputs is None:
        inputs = rows(local)
    out = list(inputs)
    links = cached_rows(skeleton, "links")
    solved = [None] * n
    fk = [None] * n  # forward kinematics of `out` (forward's frames and heads)
    fh = [None] * n
    wanted = set(bones)
    # floats.multiply / rotate / swing / normalize4 written out, term by term in their order (the
    # same bits: tests/solvers/test_tree_fabrik_floats.py), for their calls cost more than their
    # arithmetic; a swing past a quarter turn (rare) is floats.swing itself.
    for i in range(n):
        p, offset, (bw, bx, by, bz) = joints[i]  # rest = parent x reference
        pw, px, py, pz = base if p == -1 else solved[p]
        rw = pw * bw - px * bx - py * by - pz * bz
        rx = pw * bx + px * bw + py * bz - pz * by
        ry = pw * by - px * bz + py * bw + pz * bx
        rz = pw * bz + px * by - py * bx + pz * bw
        if i not in wanted or i in swing_only:  # rest x input
            lw, lx, ly, lz = inputs[i]
            iw = rw * lw - rx * lx - ry * ly - rz * lz
            ix = rw * lx + rx * lw + ry * lz - rz * ly
            iy = rw * ly - rx * lz + ry * lw + rz * lx
            iz = rw * lz + rx * ly - ry * lx + rz * lw
        if i not in wanted:
            solved[i] = (iw, ix, iy, iz)
        else:
            fw, fx, fy, fz = frames[i]
            if i in swing_only:  # the minimal swing from inherited's link onto the frame's
                vx, vy, vz = links[i]
                tx, ty, tz = 2.0 * (iy * vz - iz * vy), 2.0 * (iz * vx - ix * vz), 2.0 * (ix * vy - iy * vx)
                ux, uy, uz = (
                    vx + iw * tx + (iy * tz - iz * ty),
                    vy + iw * ty + (iz * tx - ix * tz),
                    vz + iw * tz + (ix * ty - iy * tx),
                )
                tx, ty, tz = 2.0 * (fy * vz - fz * vy), 2.0 * (fz * vx - fx * vz), 2.0 * (fx * vy - fy * vx)
                vx, vy, vz = (
                    vx + fw * tx + (fy * tz - fz * ty),
                    vy + fw * ty + (fz * tx - fx * tz),
                    vz + fw * tz + (fx * ty - fy * tx),
                )
                dot = ux * vx + uy * vy + uz * vz
                if dot >= 0.0:
                    tw, tx, ty, tz = 1.0 + dot, uy * vz - uz * vy, uz * vx - ux * vz, ux * vy - uy * vx
                    m = math.sqrt(tw * tw + tx * tx + ty * ty + tz * tz)
                    tw, tx, ty, tz = (tw / m, tx / m, ty / m, tz / m) if m > 0.0 else (0.0, 0.0, 0.0, 0.0)
                else:  # (its tie-breaker axis is read only here)
                    inherited, have = (iw, ix, iy, iz), (ux, uy, uz)
                    tw, tx, ty, tz = swing(have, (vx, vy, vz), side(inherited, have))
                fw, fx, fy, fz = (  # turn x inherited, normalized
                    tw * iw - tx * ix - ty * iy - tz * iz,
                    tw * ix + tx * iw + ty * iz - tz * iy,
                    tw * iy - tx * iz + ty * iw + tz * ix,
                    tw * iz + tx * iy - ty * ix + tz * iw,
                )
                m = math.sqrt(fw * fw + fx * fx + fy * fy + fz * fz)
                fw, fx, fy, fz = (fw / m, fx / m, fy / m, fz / m) if m > 0.0 else (0.0, 0.0, 0.0, 0.0)
            solved[i] = (fw, fx, fy, fz)
            cx, cy, cz = -rx, -ry, -rz  # normalize4(conjugate(rest) x frame)
            lw = rw * fw - cx * fx - cy * fy - cz * fz
            lx = rw * fx + cx * fw + cy * fz - cz * fy
            ly = rw * fy - cx * fz + cy * fw + cz * fx
            lz = rw * fz + cx * fy - cy * fx + cz * fw
            m = math.sqrt(lw * lw + lx * lx + ly * ly + lz * lz)
            lw, lx, ly, lz = (lw / m, lx / m, ly / m, lz / m) if m > 0.0 else (0.0, 0.0, 0.0, 0.0)
            out[i] = (lw, lx, ly, lz)
        # forward kinematics of out[i] (`forward`'s terms; a root's rest is the one above)
        if p == -1:
            fh[i] = offset
        else:
            pw, px, py, pz = fk[p]
            vx, vy, vz = offset
            tx, ty, tz = 2.0 * (py * vz - pz * vy), 2.0 * (pz * vx - px * vz), 2.0 * (px * vy - py * vx)
            hx, hy, hz = fh[p]
            fh[i] = (
                hx + (vx + pw * tx + (py * tz - pz * ty)),
                hy + (vy + pw * ty + (pz * tx - px * tz)),
                hz + (vz + pw * tz + (px * ty - py * tx)),
            )
            rw = pw * bw - px * bx - py * by - pz * bz
            rx = pw * bx + px * bw + py * bz - pz * by
            ry = pw * by - px * bz + py * bw + pz * bx
            rz = pw * bz + px * by - py * bx + pz * bw
        fk[i] = (
            rw * lw - rx * lx - ry * ly - rz * lz,
            rw * lx + rx * lw + ry * lz - rz * ly,
            rw * ly - rx * lz + ry * lw + rz * lx,
            rw * lz + rx * ly - ry * lx + rz * lw,
        )
    errors = [math.dist(end_point(skeleton, fk, fh, b), target) for b, target in goals]
    return np.array(out, dtype=float).reshape(np.shape(local)), errors


def _joints(skeleton) -> tuple[list[tuple], tuple]:
    """(per bone (its parent, offset, reference), the base frame) as plain floats, built once per
    skeleton (cached_rows)."""
    cache = skeleton.__dict__.get("_tree_rows")
    joints = None if cache is None else cache.get("joints")
    if joints is None:
        offsets, reference = cached_rows(skeleton, "offsets"), cached_rows(skeleton, "reference")
        joints = [(int(p), offsets[i], reference[i]) for i, p in enumerate(skeleton.parents)]
        cache = skeleton.__dict__["_tree_rows"]
        cache["joints"], cache["base"] = joints, tuple(skeleton.base_frame.tolist())
    return joints, cache["base"]


def cached_rows(skeleton, name: str) -> list[tuple]:
    """The skeleton's arrays as lists of tuples, built once per skeleton (it is frozen)."""
    cache = skeleton.__dict__.get("_tree_rows")
    if cache is None:
        cache = {
            "reference": rows(skeleton.reference),
            "offsets": rows(skeleton.offsets),
            "links": rows(skeleton.links),
            "reach": rows(skeleton.lengths[:, None] * skeleton.links),
        }
        object.__setattr__(skeleton, "_tree_rows", cache)
    return cache[name]
