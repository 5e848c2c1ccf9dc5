"""Goals beyond the tip position: the pole target (Blender's convention) and
the tip bone's orientation (target_rotation with rotation_weight), for every
method, with and without joint limits."""

import math

import ik_strategies as ik
import numpy as np
import pytest

import solvers
from solvers import quat

X = np.array([1.0, 0.0, 0.0])
POLE_ANGLE = -math.pi / 2  # up = -Z: the knee side of a chain bending about X toward +Z


def bent_chain(lengths, bends, *, knee_hinges=False, root_limits=None):
    """A chain along +Y bending about X toward +Z (each joint by `bends`
    radians), frames Y along the bone and X the bend axis (X x Y = Z). With
    `knee_hinges`, every joint after the root is a hinge about X bending
    0..170° (keeps the bend sense); `root_limits` are make_limits fields for
    the root bone."""
    n = len(lengths)
    points = [np.zeros(3)]
    frames = []
    heading = 0.0
    for i, length in enumerate(lengths):
        if i > 0:
            heading += bends[i - 1]
        d = np.array([0.0, math.cos(heading), math.sin(heading)])
        points.append(points[-1] + length * d)
        frames.append(np.column_stack((X, d, np.cross(X, d))))
    frames = quat.from_matrix(np.array(frames))
    limits = None
    if knee_hinges or root_limits:
        fields = [{} for _ in range(n)]
        if root_limits:
            fields[0] = root_limits
        if knee_hinges:
            for f in fields[1:]:
                f.update(lock=[False, True, True], use_limit=[True, False, False], minimum=[0, 0, 0])
                f.update(maximum=[math.radians(170), 0, 0])
        keys = ["lock", "use_limit", "minimum", "maximum", "cone", "stiffness"]
        defaults = {
            "lock": [False] * 3,
            "use_limit": [False] * 3,
            "minimum": [-math.pi] * 3,
            "maximum": [math.pi] * 3,
            "cone": math.pi,
            "stiffness": [0.0] * 3,
        }
        limits = solvers.make_limits(n, **{k: np.array([f.get(k, defaults[k]) for f in fields]) for k in keys})
    # The input pose is the rest pose: with knee hinges measured from it, its
    # bends are already 'bent' by bends; the hinge ranges hold relative to it.
    return solvers.Chain(np.array(points), frames, limits=limits)


def perpendicular_part(v, axis):
    axis = axis / np.linalg.norm(axis)
    return v - np.dot(v, axis) * axis


def cosine(a, b):
    return float(np.dot(a, b) / (np.linalg.norm(a) * np.linalg.norm(b)))


def pole_targets(chain, m, seed):
    """Reachable targets (well inside the reach, off the root) and poles off
    the root-target line."""
    rng = np.random.default_rng(seed)
    out = []
    while len(out) < m:
        u = rng.normal(size=3)
        u /= np.linalg.norm(u)
        t = chain.root + rng.uniform(0.45, 0.9) * chain.total_length * u
        p = rng.normal(size=3) * chain.total_length
        if np.linalg.norm(np.cross(u, p - chain.root)) > 0.5 * np.linalg.norm(p - chain.root):
            out.append((t, p))
    return out


def root_up(chain, sol, pole_angle=POLE_ANGLE):
    frame = quat.multiply(sol.rotations[0], chain.frames[0])
    x = quat.rotate(frame, X)
    z = quat.rotate(frame, np.array([0.0, 0.0, 1.0]))
    return math.cos(pole_angle) * x + math.sin(pole_angle) * z


def local_rotations(chain, sol):
    """Each bone's rotation relative to its parent's solved frame (root: world)."""
    frames = quat.multiply(sol.rotations, chain.frames)
    parents = np.concatenate((np.array([[1.0, 0.0, 0.0, 0.0]]), frames[:-1]))
    return quat.multiply(quat.conjugate(parents), frames)


def same_rotation(a, b, atol):
    d = np.minimum(np.linalg.norm(a - b, axis=-1), np.linalg.norm(a + b, axis=-1))
    return bool(np.all(d <= atol))


# --------------------------------------------------------------------------- pole target


@pytest.mark.parametrize("config", ik.CONFIGS, ids=ik.CONFIG_IDS)
@pytest.mark.parametrize("lengths", [(1.0, 1.0), (1.0, 0.8, 0.6)], ids=["2-bone", "3-bone"])
def test_pole_convention_and_knee_toward_pole(config, lengths):
    """Blender's convention on any solve: the root's up vector, perpendicular
    to the root-target line, points at the pole's perpendicular part. With
    hinged knees (bending one way about X) the knee then points at the pole."""
    for hinged in (False, True):
        chain = bent_chain(lengths, [0.6] * (len(lengths) - 1), knee_hinges=hinged)
        for target, pole in pole_targets(chain, 6, seed=len(lengths)):
            free = ik.solve(chain, target, config)
            sol = ik.solve(chain, target, config, pole=pole, pole_angle=POLE_ANGLE)
            assert np.all(np.isfinite(sol.points)) and np.all(np.isfinite(sol.rotations))
            np.testing.assert_allclose(np.linalg.norm(np.diff(sol.points, axis=0), axis=1), chain.lengths, rtol=1e-9)
            line = target - chain.root
            want = perpendicular_part(pole - chain.root, line)
            up = perpendicular_part(root_up(chain, sol), line)
            # Reach unchanged by the pole (a rigid turn about the root).
            assert sol.error <= free.error + 1e-9 * chain.total_length, (free.error, sol.error)
            if free.reached:
                assert sol.reached
                assert cosine(up, want) > 1 - 1e-9, (hinged, target, pole, cosine(up, want))
                if hinged:
                    knee = perpendicular_part(sol.points[1] - chain.root, line)
                    assert cosine(knee, want) > 1 - 1e-9, (target, pole, cosine(knee, want))
            # Every joint angle after the root's is kept (rigid turn).
            assert same_rotation(local_rotations(chain, sol)[1:], local_rotations(chain, free)[1:], 1e-9)


@pytest.mark.parametrize("config", ik.CONFIGS, ids=ik.CONFIG_IDS)
def test_pole_on_the_line_is_finite_and_fades(config):
    chain = bent_chain((1.0, 1.0, 0.5), [0.5, 0.4])
    target = np.array([0.3, 1.2, 0.9])
    free = ik.solve(chain, target, config)
    for scale in (2.0, 0.5, -1.0, 1e-9):
        sol = ik.solve(chain, target, config, pole=chain.root + scale * target, pole_angle=POLE_ANGLE)
        assert np.all(np.isfinite(sol.points)) and np.all(np.isfinite(sol.rotations))
        np.testing.assert_allclose(sol.points, free.points, atol=1e-12)
    # Pole at the root itself: no side, finite.
    sol = ik.solve(chain, target, config, pole=chain.root, pole_angle=POLE_ANGLE)
    assert np.all(np.isfinite(sol.points))


def knee_steps(config, steps, moving, sequential):
    """Knee jumps (steps,) as the pole or the target crosses the root-target
    line; each solve from the previous solution (`sequential`, as the Bake
    operator and the live handler do) or from the rest pose."""
    rest = bent_chain((1.0, 1.0), [0.6])
    chain = rest
    target0 = np.array([0.0, 1.2, 0.6])
    side = np.array([1.0, 0.0, 0.0])
    knees = []
    for s in np.linspace(-0.3, 0.3, steps + 1):
        if moving == "pole":
            target, pole = target0, 2.0 * target0 + s * side
        else:
            target, pole = target0 + s * side, 2.0 * target0 + 0.05 * np.array([0.0, 0.0, 1.0])
        sol = ik.solve(chain, target, config, pole=pole, pole_angle=POLE_ANGLE)
        assert np.all(np.isfinite(sol.points))
        knees.append(sol.points[1])
        if sequential:
            chain = solvers.Chain(sol.points, sol.frames(chain))
    return np.linalg.norm(np.diff(knees, axis=0), axis=1)


# The spin is applied after the position solve, the same way for every method;
# one configuration per method keeps this affordable.
ONE_PER_METHOD = [c for c in ik.CONFIGS if c[1] in ({}, {"variant": "dls"})]
ONE_PER_METHOD_IDS = [i for i, c in zip(ik.CONFIG_IDS, ik.CONFIGS, strict=True) if c in ONE_PER_METHOD]


@pytest.mark.parametrize("config", ONE_PER_METHOD, ids=ONE_PER_METHOD_IDS)
@pytest.mark.parametrize("moving", ["pole", "target"])
def test_pole_crossing_the_line_is_continuous(config, moving):
    """Solving sequentially while the pole (or target) crosses the root-target
    line: no knee jump beyond a small multiple of the largest step the same
    path takes when each solve starts from rest (where the fade blends
    continuously), and refining the path shrinks the largest jump."""
    fine = knee_steps(config, 120, moving, sequential=True)
    typical = knee_steps(config, 120, moving, sequential=False)
    assert np.max(fine) <= 4.0 * np.max(typical), (np.max(fine), np.max(typical))
    coarse = knee_steps(config, 30, moving, sequential=True)
    assert np.max(fine) < 0.5 * np.max(coarse), (np.max(coarse), np.max(fine))


@pytest.mark.parametrize("config", ik.CONFIGS, ids=ik.CONFIG_IDS)
def test_pole_keeps_the_root_within_its_limits(config):
    root = {"use_limit": [True, True, True], "minimum": [-0.4, -0.2, -0.5], "maximum": [0.7, 0.3, 0.4], "cone": 0.8}
    chain = bent_chain((1.0, 0.8, 0.6), [0.5, 0.5], knee_hinges=True, root_limits=root)
    targets = pole_targets(chain, 8, seed=5)
    for target, pole in targets:
        sol = ik.solve(chain, target, config, pole=pole, pole_angle=POLE_ANGLE)
        ik.check_limited_solution(chain, sol.points, sol.rotations)
    batch = ik.solve_batch(
        chain, np.array([t for t, _ in targets]), config, pole=np.array([p for _, p in targets]), pole_angle=0.3
    )
    ik.check_limited_solution(chain, batch.points, batch.rotations)
