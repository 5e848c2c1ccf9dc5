"""Grassia's mass-matrix weighting against the plain damped least squares (issue 20 item 3), on reach
sequences for a 3- and a 4-bone arm. By default a numpy model of the solver's step (solvers.common.mass's
functions, the loop below; the naive model: no limits, no trust region), --solver the real solver:

    python bench/bench_mass.py [--frames 120] [--solver]

--solver runs each frame through the real solver (solvers.solve, method "jacobian", its default
options, joint_weighting "STIFFNESS" (no stiffness: the plain step) against "MASS"), from the
previous frame's pose as a bake does.

Each arm is a chain of ball joints in world axes (solvers.jacobian's parametrisation); each frame
starts from the previous frame's pose and iterates q' = W J^T (J W J^T + lambda^2 I)^-1 e (each
joint's turn capped at 0.5 rad per iteration, lambda = 0.05 x the arm's length, as the solver's
defaults) until the hand is within 1e-5 x the arm's length of the target or 200 iterations:
- plain: W = I (today's weighting without stiffness);
- mass:  W = M(q)^-1, M the arm's joint-space inertia (solvers.common.mass.chain_mass_matrix, capsules,
         radii as given) as the solver weights it (solvers.common.mass.weighting_inertia: scaled by
         its mean diagonal, so lambda means the same, plus each joint's armature), recomputed every
         iteration.
Between frames each joint's world rotation vector q' (frame to frame, one frame = one time unit)
gives the kinetic energy 1/2 q'^T M q' (M of the frame's start pose, unscaled, density 1); the
table sums it over the sequence, and gives each joint's share of the summed turning (the angle
its local rotation turns, frame to frame). Every sequence starts at the start pose's hand.

Before each joint had its armature (2026-11-25, --frames 60, --solver; M alone): the hand took
40-60% of the turning (plain 10-16%), the root 2-18% (plain 22-41%), and the energy was 0.29-0.98 of
the plain step's on 14 of 16 rows but 1.14-1.16x on the 4-bone arm's sweep. Per frame (120 frames of
the sweep, 4-bone arm): the nearly massless hand swung 0.2-0.39 rad a frame while it could, until
its lever was spent (turned ~90 degrees, pointing along the motion); then the heavy joints caught up
in big steps, 2-2.5x the plain step's energy a frame for 25 frames running. In the numpy model neither
the damping (lambda / 10: 1.16), the 0.5 rad cap (off: 1.16) nor M held at the frame's start pose
(1.16) changed it: each frame's step is the least-energy one from where the arm stands, and the greedy sequence of
them is not the least-energy motion.

Measured with the armature (solvers.common.mass.ARMATURE_SHARE = 0.1 of the mean joint's inertia on
M's diagonal; 2026-11-26, --frames 60): with --solver the energy is 0.29-0.94 of the plain step's on
all 16 rows (4-bone sweep 0.94 and 0.91), the hand takes 35-59% of the turning (plain 10-16%) and
the root 7-28% (plain 22-41%), on every row more hand and less root than the plain step; the
standalone model gives 0.29-0.95 on all 16. Every frame reached (worst miss 8.2e-6, the tolerance
1e-5 x the arm's length). No joint limits here.
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from solvers import Chain, quat, solve  # noqa: E402
from solvers.common import mass  # noqa: E402

MAX_STEP, DAMPING, TOLERANCE, CAP = 0.5, 0.05, 1e-5, 200
UP = np.array([0.0, 1.0, 0.0])

# (name, bone lengths, capsule radii; None: solvers.common.mass's default share of the length)
ARMS = (
    ("3-bone arm", [0.30, 0.27, 0.09], [0.05, 0.04, 0.03]),
    ("3-bone, default radii", [0.30, 0.27, 0.09], None),
    ("4-bone arm", [0.16, 0.30, 0.27, 0.09], [0.05, 0.05, 0.04, 0.03]),
    ("4-bone, default radii", [0.16, 0.30, 0.27, 0.09], None),
)


def start_pose(n: int) -> np.ndarray:
    """World orientations (n, 4): the first bone sideways (+X), the rest bent forward (+Y) and down."""
    turns = [(0.0, 0.0, -math.pi / 2.0)] + [(-0.6, 0.0, 0.3 if i % 2 else -0.2) for i in range(1, n)]
    q = np.array([1.0, 0.0, 0.0, 0.0])
    out = []
    for t in turns:
        q = quat.multiply(quat.from_rotation_vector(np.array(t)), q)
        out.append(q)
    return np.array(out)


def points_of(frames: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    dirs = quat.rotate(frames, np.broadcast_to(UP, (len(lengths), 3)))
    return np.concatenate((np.zeros((1, 3)), np.cumsum(lengths[:, None] * dirs, axis=0)))


def sequences(start: np.ndarray, reach: float, frames: int) -> dict[str, np.ndarray]:
    """Target paths (frames, 3), each starting at the start pose's hand `start`."""
    t = np.linspace(0.0, 1.0, frames)
    ease = (0.5 - 0.5 * np.cos(np.pi * t))[:, None]
    ahead = np.array([0.35, 0.55, -0.05]) * reach / np.linalg.norm([0.35, 0.55, -0.05])
    far = ahead * 0.92
    out = {"reach out": start + ease * (far - start)}
    centre = 0.6 * ahead
    angle = 2.0 * np.pi * t
    circle = centre + 0.25 * reach * np.stack((np.cos(angle), np.zeros_like(t), np.sin(angle)), axis=1)
    lead = np.linspace(0.0, 1.0, frames // 4)[:, None]
    out["circle"] = np.concatenate((start + lead * (circle[0] - start), circle))
    side = np.array([-0.5, 0.6, 0.0]) * reach, np.array([0.8, 0.3, 0.0]) * reach
    out["sweep"] = start + np.concatenate((ease * (side[0] - start), side[0] - start + ease * (side[1] - side[0])))
    rng = np.random.default_rng(7)
    phase, speed = rng.uniform(0, 2 * np.pi, 3), rng.uniform(1.0, 3.0, 3)
    wave = 0.6 * ahead + 0.22 * reach * np.sin(2 * np.pi * speed * t[:, None] + phase)
    out["wander"] = np.concatenate((start + lead * (wave[0] - start), wave))
    return out


def solve_frame(frames, lengths, radii, target, weighted: bool) -> tuple[np.ndarray, int, float]:
    n = len(lengths)
    lam = DAMPING * float(lengths.sum())
    for it in range(CAP + 1):
        points = points_of(frames, lengths)
        err = target - points[-1]
        if np.linalg.norm(err) <= TOLERANCE * lengths.sum() or it == CAP:
            return frames, it, float(np.linalg.norm(err))
        J = mass.position_jacobian(points[:-1], range(-1, n - 1), [n - 1], points[-1:])[0]
        W = mass.weighting_inertia(mass.chain_mass_matrix(points, radii)) if weighted else np.eye(3 * n)
        omega = mass.weighted_step(J, err, W, lam).reshape(n, 3)
        biggest = np.linalg.norm(omega, axis=1).max()
        omega *= min(1.0, MAX_STEP / max(biggest, 1e-300))
        frames = quat.normalize(quat.multiply(quat.from_rotation_vector(np.cumsum(omega, axis=0)), frames))
    raise AssertionError("unreachable")


def solve_frame_solver(frames, lengths, radii, target, weighted: bool) -> tuple[np.ndarray, int, float]:
    """The frame through the real solver (solvers.solve, the Jacobian's defaults): joint_weighting
    STIFFNESS without stiffness (the plain step) or MASS, from the previous frame's pose (a bake's
    warm start: the frame's step is the motion)."""
    chain = Chain(points_of(frames, lengths), frames, radii=radii)
    tolerance = TOLERANCE * float(lengths.sum())
    weighting = "MASS" if weighted else "STIFFNESS"
    sol = solve(chain, target, method="jacobian", tolerance=tolerance, joint_weighting=weighting)
    return quat.normalize(quat.multiply(sol.rotations, frames)), sol.iterations, float(sol.error)


def run(lengths, radii, path, weighted: bool, frame_solve=solve_frame) -> dict:
    lengths = np.asarray(lengths, dtype=float)
    frames = start_pose(len(lengths))
    energy, turning, iterations, worst = 0.0, np.zeros(len(lengths)), 0, 0.0
    for target in path:
        new, its, miss = frame_solve(frames, lengths, radii, target, weighted)
        iterations, worst = iterations + its, max(worst, miss)
        # World rotation vector of each bone, then of each joint (bone minus parent), frame to frame.
        phi = quat.to_rotation_vector(quat.multiply(new, quat.conjugate(frames)))
        qdot = np.diff(phi, axis=0, prepend=np.zeros((1, 3)))
        M = mass.chain_mass_matrix(points_of(frames, lengths), radii)
        energy += mass.kinetic_energy(M, qdot.ravel())
        parents = np.concatenate(([[1.0, 0.0, 0.0, 0.0]], frames[:-1]))
        new_parents = np.concatenate(([[1.0, 0.0, 0.0, 0.0]], new[:-1]))
        local = quat.multiply(quat.conjugate(parents), frames)
        new_local = quat.multiply(quat.conjugate(new_parents), new)
        turning += quat.angle(quat.multiply(new_local, quat.conjugate(local)))
        frames = new
    return {"energy": energy, "share": turning / turning.sum(), "turn": turning, "its": iterations, "miss": worst}


def measure(frames: int, solver: bool) -> list[dict]:
    """Per arm and sequence: {"arm", "sequence", "plain", "mass"} (each `run`'s figures)."""
    frame_solve = solve_frame_solver if solver else solve_frame
    rows = []
    for name, lengths, radii in ARMS:
        lengths_a = np.asarray(lengths, dtype=float)
        radii_a = None if radii is None else np.asarray(radii, dtype=float)
        start = points_of(start_pose(len(lengths)), lengths_a)[-1]
        for seq, path in sequences(start, float(lengths_a.sum()), frames).items():
            plain = run(lengths_a, radii_a, path, False, frame_solve)
            weighted = run(lengths_a, radii_a, path, True, frame_solve)
            rows.append({"arm": name, "sequence": seq, "plain": plain, "mass": weighted})
    return rows


def table(rows: list[dict]) -> list[str]:
    lines = [
        "| arm | sequence | energy plain | energy mass | mass/plain | joint shares plain (root..hand) "
        "| joint shares mass | total turn plain / mass (rad) | iterations plain / mass | worst miss |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        plain, weighted = row["plain"], row["mass"]
        shares = [" ".join(f"{s:.2f}" for s in r["share"]) for r in (plain, weighted)]
        lines.append(
            f"| {row['arm']} | {row['sequence']} | {plain['energy']:.3e} | {weighted['energy']:.3e} "
            f"| {weighted['energy'] / plain['energy']:.2f} | {shares[0]} | {shares[1]} "
            f"| {plain['turn'].sum():.2f} / {weighted['turn'].sum():.2f} | {plain['its']} / {weighted['its']} "
            f"| {max(plain['miss'], weighted['miss']):.1e} |"
        )
    return lines


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", type=int, default=120)
    parser.add_argument(
        "--solver", action="store_true", help="through solvers.solve (joint_weighting STIFFNESS vs MASS)"
    )
    args = parser.parse_args(argv)
    print("\n".join(table(measure(args.frames, args.solver))))


if __name__ == "__main__":
    main()
