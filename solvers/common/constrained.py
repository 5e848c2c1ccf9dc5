"""Hierarchical poses for chains with joint limits: bone frames built root to
tip from local rotations, each local rotation kept inside its limits.

A pose is the local rotations `locals` (m, n, 4). Bone i's frame is
F_i = F_{i-1} R_i L_i (F_{-1} = the chain's base frame, R_i its reference)
and its link (head to next head) is F_i applied to the bone's `link_local`.
"""

from __future__ import annotations

import weakref

import numpy as np

from .. import limits as joint_limits
from .. import quat
from ..model.chain import Chain


def start_locals(chain: Chain, m: int) -> np.ndarray:
    """The input pose's local rotations, clamped into the limits, (m, n, 4)."""
    local = chain.input_locals
    if chain.limits is not None:
        local = joint_limits.clamp(chain.limits, np.arange(chain.n_bones), local)
    return np.array(np.broadcast_to(local, (m,) + local.shape))


def forward(chain: Chain, locals_: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Frames (m, n, 4) and points (m, n+1, 3) of the poses `locals_`."""
    m, n = locals_.shape[0], chain.n_bones
    frames = np.empty((m, n, 4))
    points = np.empty((m, n + 1, 3))
    points[:, 0] = chain.root
    parent = np.broadcast_to(chain.base_frame, (m, 4))
    for i in range(n):
        parent = quat.multiply(quat.multiply(parent, chain.reference[i]), locals_[:, i])
        frames[:, i] = parent
        points[:, i + 1] = points[:, i] + chain.lengths[i] * quat.rotate(parent, chain.link_local[i])
    return frames, points


def aim(
    chain: Chain, i: int, parent: np.ndarray, local: np.ndarray, desired: np.ndarray, scale: np.ndarray | float = 1.0
) -> tuple[np.ndarray, np.ndarray]:
    """Turn bone i (parent frame `parent` (m, 4), current local `local`) so its
    link points along `desired` (m, 3): the minimal swing, scaled by `scale`
    (stiffness), then clamped into the limits. Returns (frame, local)."""
    rest = quat.multiply(parent, chain.reference[i])
    inherited = quat.multiply(rest, local)
    link = quat.rotate(inherited, np.broadcast_to(chain.link_local[i], desired.shape))
    length = np.linalg.norm(desired, axis=-1, keepdims=True)
    desired = np.where(length > 0.0, desired / np.where(length > 0.0, length, 1.0), link)
    fallback = quat.rotate(inherited, np.broadcast_to(sides(chain)[i], desired.shape))
    turn = quat.swing(link, desired, fallback)
    if not np.isscalar(scale) or scale != 1.0:
        turn = quat.from_rotation_vector(np.asarray(scale)[..., None] * quat.to_rotation_vector(turn))
    # New frame = turn * inherited, so the new local = rest^-1 * turn * inherited.
    new_local = clamp_local(chain, i, quat.multiply(quat.multiply(quat.conjugate(rest), turn), inherited))
    return quat.multiply(rest, new_local), new_local


def clamp_local(chain: Chain, i: int, local: np.ndarray) -> np.ndarray:
    """Bone i's local rotations (m, 4) inside its limits (unchanged without)."""
    if chain.limits is None:
        return local
    return joint_limits.clamp(chain.limits, i, local)


def perpendicular(link_local: np.ndarray) -> np.ndarray:
    """Per bone (n, 3), a local axis perpendicular to its link: the bone's X
    axis when it is (Blender's bones point along Y), else any."""
    x = np.array([1.0, 0.0, 0.0])
    ok = np.abs(link_local @ x) < 1e-6
    return np.where(ok[:, None], x, quat.any_perpendicular(link_local))


_SIDES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def sides(chain: Chain) -> np.ndarray:
    """`perpendicular(chain.link_local)`, computed once per chain (every aim needs it)."""
    out = _SIDES.get(chain)
    if out is None:
        out = _SIDES[chain] = perpendicular(chain.link_local)
    return out


def rotations(chain: Chain, frames: np.ndarray) -> np.ndarray:
    """World rotations (m, n, 4) from the input frames to `frames`."""
    return quat.normalize(quat.multiply(frames, quat.conjugate(chain.frames)))


def reach_toward(chain: Chain, locals_: np.ndarray, targets: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Every bone, root to tip, aimed at the target within its limits: the
    limited chain's answer to a target beyond reach. Returns (locals, points)."""
    m, n = targets.shape[0], chain.n_bones
    out = locals_.copy()
    points = np.empty((m, n + 1, 3))
    points[:, 0] = chain.root
    parent = np.broadcast_to(chain.base_frame, (m, 4))
    for i in range(n):
        parent, out[:, i] = aim(chain, i, parent, out[:, i], targets - points[:, i])
        points[:, i + 1] = points[:, i] + chain.lengths[i] * quat.rotate(parent, chain.link_local[i])
    return out, points
