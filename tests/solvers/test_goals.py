"""Goals beyond the tip position: the pole target (Blender's convention) and
the tip bone's orientation (target_rotation with rotation_weight), for every
method, with and without joint limits."""

import math

import ik_strategies as ik
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

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


def blender_pre_turn(chain, target, pole, pole_angle):
    """The chain's input pose turned about its root as Blender's IK turns it before solving
    (intern/iksolver ConstrainPoleVector): look-at rows x = dir x up, y = x x dir, z = -dir for
    the root-tip line with up = the root bone's X cos(angle) + Z sin(angle), and for the
    root-target line with the root-pole direction as up; the turn is polemat^T mat."""

    def look_at(d, up):
        x = np.cross(d, up)
        x /= np.linalg.norm(x)
        return np.array([x, np.cross(x, d), -d])

    root = chain.root
    frame = quat.to_matrix(chain.frames[0])
    up = math.cos(pole_angle) * frame[:, 0] + math.sin(pole_angle) * frame[:, 2]
    d = (chain.points[-1] - root) / np.linalg.norm(chain.points[-1] - root)
    g = (target - root) / np.linalg.norm(target - root)
    turn = quat.from_matrix(look_at(g, (pole - root) / np.linalg.norm(pole - root)).T @ look_at(d, up))
    points = root + quat.rotate(turn, chain.points - root)
    frames = quat.multiply(turn, chain.frames)
    return solvers.Chain(points, frames, limits=chain.limits, reference=chain.reference, base_frame=chain.base_frame)


@pytest.mark.parametrize("config", ik.CONFIGS, ids=ik.CONFIG_IDS)
@pytest.mark.parametrize("lengths", [(1.0, 1.0), (1.0, 0.8, 0.6)], ids=["2-bone", "3-bone"])
def test_pole_convention_and_knee_toward_pole(config, lengths):
    """Blender's convention on any solve: the root's up vector, perpendicular
    to the root-target line, points at the pole's perpendicular part. With
    hinged knees (bending one way about X) the knee then points at the pole.
    Free joints too: the solve starts, as Blender's, from the input pose turned
    toward the pole, and its joint angles are that start's plain solve's."""
    for hinged in (False, True):
        chain = bent_chain(lengths, [0.6] * (len(lengths) - 1), knee_hinges=hinged)
        for target, pole in pole_targets(chain, 4, seed=len(lengths)):
            turned = blender_pre_turn(chain, target, pole, POLE_ANGLE)
            free = ik.solve(turned, target, config)
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
            # Every joint angle after the root's is the pre-turned start's solve's (rigid turn).
            assert same_rotation(local_rotations(chain, sol)[1:], local_rotations(turned, free)[1:], 1e-8)


@pytest.mark.parametrize("config", ik.CONFIGS, ids=ik.CONFIG_IDS)
def test_pole_on_the_line_is_finite_and_falls_back_to_the_rest_side(config):
    """A pole on the root-target line gives no side: the root bone's up then
    takes its rest pose's side (here the input pose is the rest pose), with
    the reach of the position-only solve."""
    chain = bent_chain((1.0, 1.0, 0.5), [0.5, 0.4])
    target = np.array([0.3, 1.2, 0.9])
    free = ik.solve(chain, target, config)
    line = (target - chain.root) / np.linalg.norm(target - chain.root)

    def up_side(frame):
        up = math.cos(POLE_ANGLE) * quat.rotate(frame, np.array([1.0, 0.0, 0.0])) + math.sin(POLE_ANGLE) * quat.rotate(
            frame, np.array([0.0, 0.0, 1.0])
        )
        up = up - up.dot(line) * line
        return up / np.linalg.norm(up)

    rest_side = up_side(chain.frames[0])
    for scale in (2.0, 0.5, -1.0, 1e-9):
        sol = ik.solve(chain, target, config, pole=chain.root + scale * target, pole_angle=POLE_ANGLE)
        assert np.all(np.isfinite(sol.points)) and np.all(np.isfinite(sol.rotations))
        # The turn also lines the root-tip direction up with the target: reached as without a pole.
        assert free.reached and sol.reached
        solved_side = up_side(quat.multiply(sol.rotations[0], chain.frames[0]))
        np.testing.assert_allclose(solved_side, rest_side, atol=1e-6)
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
            # The rest pose stays the first chain's (as the rig passes Blender's rest).
            chain = solvers.Chain(sol.points, sol.frames(chain), reference=rest.reference, base_frame=rest.base_frame)
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
    for target, pole in targets[:2]:
        sol = ik.solve(chain, target, config, pole=pole, pole_angle=POLE_ANGLE)
        ik.check_limited_solution(chain, sol.points, sol.rotations)
    batch = ik.solve_batch(
        chain, np.array([t for t, _ in targets]), config, pole=np.array([p for _, p in targets]), pole_angle=0.3
    )
    ik.check_limited_solution(chain, batch.points, batch.rotations)


# --------------------------------------------------------------------------- tip orientation


def fk_goals(chain, m, seed, spread=0.8):
    """m (target, tip orientation) pairs from forward kinematics of random
    poses (local rotations up to ~spread x 180°): reachable by construction."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(m):
        frames, points = ik.forward_kinematics(chain, ik.allowed_pose(chain, rng, spread))
        out.append((points[-1], frames[-1]))
    return out


def framed_chain(n, seed):
    rng = np.random.default_rng(seed)
    lengths = rng.uniform(0.5, 1.5, n)
    plain = solvers.Chain(
        ik.chain_points([0, 0, 0], lengths, [0, 1, 0], rng.uniform(0.1, 0.8, n - 1), rng.uniform(0, 6.2, n - 1))
    )
    return solvers.Chain(plain.points, ik.frames_along(plain.directions, rng.uniform(-3, 3, n)))


def tip_frame(chain, sol):
    return quat.multiply(sol.rotations[-1], chain.frames[-1])


def rotation_angle(a, b):
    return float(quat.angle(quat.multiply(a, quat.conjugate(b))))


# Measured with the current solvers on framed_chain(n, seed=n) for n = 2, 3, 5
# and fk_goals(m=8, seed=10 + n): 24 goals per method. Position reached:
#   triangulation 24/24 (both fold angles), fabrik 24/24, ccd 23/24,
#   jacobian dls 24/24, pseudoinverse 24/24, transpose 22/24.
ORIENTATION_REACH_FLOORS = {cid: 1.0 for cid in ik.CONFIG_IDS}
ORIENTATION_REACH_FLOORS["ccd"] = 0.9
ORIENTATION_REACH_FLOORS["jacobian-variant=transpose"] = 0.9


@pytest.fixture(scope="module")
def orientation_runs():
    runs = {}
    for config, cid in zip(ik.CONFIGS, ik.CONFIG_IDS, strict=True):
        hits = total = 0
        worst_angle = 0.0
        for n in (2, 3, 5):
            chain = framed_chain(n, seed=n)
            for target, rotation in fk_goals(chain, 8, seed=10 + n):
                sol = ik.solve(chain, target, config, target_rotation=rotation)
                assert np.all(np.isfinite(sol.points)) and np.all(np.isfinite(sol.rotations))
                np.testing.assert_allclose(
                    np.linalg.norm(np.diff(sol.points, axis=0), axis=1), chain.lengths, rtol=1e-9
                )
                worst_angle = max(worst_angle, rotation_angle(tip_frame(chain, sol), rotation))
                hits += int(sol.reached)
                total += 1
        runs[cid] = (hits / total, worst_angle)
    print("orientation goal, position reach rates:", {k: round(v[0], 3) for k, v in runs.items()})
    return runs


@pytest.mark.parametrize("cid", ik.CONFIG_IDS)
def test_tip_orientation_reached_with_position(orientation_runs, cid):
    rate, worst_angle = orientation_runs[cid]
    assert worst_angle < 1e-9, f"tip frame off the target rotation by {worst_angle:.3g} rad"
    assert rate >= ORIENTATION_REACH_FLOORS[cid], f"{cid}: position reached for {rate:.2f} of the goals"


@pytest.mark.parametrize("config", ik.CONFIGS, ids=ik.CONFIG_IDS)
def test_rotation_weight_zero_and_half(config):
    chain = framed_chain(3, seed=3)
    for target, rotation in fk_goals(chain, 3, seed=4):
        free = ik.solve(chain, target, config)
        zero = ik.solve(chain, target, config, target_rotation=rotation, rotation_weight=0.0)
        np.testing.assert_array_equal(zero.points, free.points)
        np.testing.assert_array_equal(zero.rotations, free.rotations)
        half = ik.solve(chain, target, config, target_rotation=rotation, rotation_weight=0.5)
        full_angle = rotation_angle(rotation, tip_frame(chain, free))
        assert math.isclose(
            rotation_angle(tip_frame(chain, half), tip_frame(chain, free)), 0.5 * full_angle, abs_tol=1e-9
        )
        assert math.isclose(rotation_angle(tip_frame(chain, half), rotation), 0.5 * full_angle, abs_tol=1e-9)


@pytest.mark.parametrize("config", ik.CONFIGS, ids=ik.CONFIG_IDS)
def test_one_bone_takes_the_orientation(config):
    chain = framed_chain(1, seed=1)
    rotation = quat.from_axis_angle(np.array([0.6, 0.0, 0.8]), 1.1)
    sol = ik.solve(chain, [3.0, 0.0, 0.0], config, target_rotation=rotation)
    assert rotation_angle(tip_frame(chain, sol), rotation) < 1e-9
    np.testing.assert_allclose(np.linalg.norm(sol.points[1] - sol.points[0]), chain.lengths[0], rtol=1e-12)
    np.testing.assert_array_equal(sol.points[0], chain.root)


@pytest.mark.parametrize("config", ik.CONFIGS, ids=ik.CONFIG_IDS)
def test_batch_goals_equal_single_solves(config):
    chain = framed_chain(3, seed=7)
    goals = fk_goals(chain, 4, seed=8)
    targets = np.array([t for t, _ in goals])
    rotations = np.array([r for _, r in goals])
    poles = np.array([[2.0, 1.0, 0.5], [-1.0, 2.0, 0.0], [0.0, 0.0, 3.0], [1.0, -2.0, 1.0]])
    batch = ik.solve_batch(chain, targets, config, pole=poles, pole_angle=0.4, target_rotation=rotations)
    for k in range(len(targets)):
        one = ik.solve(chain, targets[k], config, pole=poles[k], pole_angle=0.4, target_rotation=rotations[k])
        np.testing.assert_allclose(one.points, batch.points[k], rtol=0, atol=1e-9 * chain.total_length)
        assert same_rotation(one.rotations, batch.rotations[k], 1e-8)
        assert one.reached == batch.reached[k] or abs(one.error - batch.error[k]) < 1e-9
    # One pole / rotation for all targets broadcasts.
    shared = ik.solve_batch(chain, targets, config, pole=poles[0], target_rotation=rotations[0])
    one = ik.solve(chain, targets[2], config, pole=poles[0], target_rotation=rotations[0])
    np.testing.assert_allclose(one.points, shared.points[2], rtol=0, atol=1e-9 * chain.total_length)


def test_bad_goal_inputs_raise():
    chain = framed_chain(2, seed=2)
    plain = solvers.Chain(chain.points)
    t = [0.5, 1.0, 0.2]
    r = [1.0, 0.0, 0.0, 0.0]
    bad = [
        (chain, dict(target_rotation=[1.0, 0.1, 0.0, 0.0]), "unit"),
        (chain, dict(target_rotation=[0.0, 0.0, 0.0, 0.0]), "unit"),
        (chain, dict(target_rotation=r, rotation_weight=1.5), "rotation_weight"),
        (chain, dict(target_rotation=r, rotation_weight=-0.1), "rotation_weight"),
        (chain, dict(target_rotation=r, rotation_weight=math.nan), "rotation_weight"),
        (chain, dict(target_rotation=[1.0, 0.0, 0.0]), "target_rotation"),
        (chain, dict(target_rotation=[[1.0, 0.0, 0.0, 0.0]] * 2), "target_rotation"),
        (chain, dict(target_rotation=[math.nan, 0.0, 0.0, 0.0]), "target_rotation"),
        (chain, dict(pole=[1.0, math.nan, 0.0]), "pole"),
        (chain, dict(pole=[1.0, 0.0]), "pole"),
        (chain, dict(pole=[1.0, 0.0, 0.0], pole_angle=math.inf), "pole_angle"),
        (chain, dict(pole=[1.0, 0.0, 0.0], pole_angle="a"), "pole_angle"),
        (plain, dict(pole=[1.0, 0.0, 0.0]), "frames"),
        (plain, dict(target_rotation=r), "frames"),
    ]
    for c, kwargs, match in bad:
        for method in ("triangulation", "jacobian"):
            with pytest.raises(ValueError, match=match):
                solvers.solve(c, t, method=method, **kwargs)
    with pytest.raises(ValueError, match="pole"):
        solvers.solve_batch(chain, [t, t], method="fabrik", pole=[[1.0, 0.0, 0.0]] * 3)
    with pytest.raises(ValueError, match="target_rotation"):
        solvers.solve_batch(chain, [t, t], method="ccd", target_rotation=[r] * 3)


@pytest.mark.parametrize("config", ik.CONFIGS, ids=ik.CONFIG_IDS)
@settings(max_examples=6)
@given(chain=ik.limited_chains(max_bones=5), seed=st.integers(0, 2**32 - 1), weight=st.sampled_from([1.0, 0.5]))
def test_goals_on_limited_chains_never_violate_limits(config, chain, seed, weight):
    rng = np.random.default_rng(seed)
    frames, points = ik.forward_kinematics(chain, ik.allowed_pose(chain, rng))
    pole = chain.root + chain.total_length * rng.normal(size=3)
    kw = {} if config[0] == "triangulation" else {"max_iterations": 12}
    targets = np.array([points[-1], chain.root + 3.0 * chain.total_length * rng.normal(size=3)])
    rotations = np.array([frames[-1], ik.random_rotations(rng, ())])
    batch = ik.solve_batch(
        chain, targets, config, pole=pole, pole_angle=0.7, target_rotation=rotations, rotation_weight=weight, **kw
    )
    ik.check_limited_solution(chain, batch.points, batch.rotations)
    one = ik.solve(chain, targets[0], config, target_rotation=rotations[0], rotation_weight=weight, **kw)
    ik.check_limited_solution(chain, one.points, one.rotations)


@pytest.mark.parametrize("method", ["triangulation", "fabrik", "ccd", "jacobian"])
@pytest.mark.parametrize("seed", [5, 11])
def test_limits_below_a_free_root_solve_poles_as_one_batch(method, seed):
    """Hinge knees under a free root: the pole's pre-turn goes through the one equivariant batch,
    with the points of each target solved from its own pre-turned chain (the limited route)."""
    from solvers import api
    from solvers.common import goals

    chain = bent_chain([1.0, 1.0, 0.6], [0.4, 0.5], knee_hinges=True)
    pairs = pole_targets(chain, 12, seed=seed)
    targets = np.array([t for t, _ in pairs])
    poles = np.array([p for _, p in pairs])
    batch = solvers.solve_batch(chain, targets, method=method, pole=poles, pole_angle=0.3)
    entry, tol, iters, options = api.settings(chain, method, None, None, {})
    extra = goals.read_goals(chain, len(targets), poles, 0.3, None, 1.0)
    each = goals._posed_limited(chain, targets, extra, api.position_solver(entry, tol, iters, options), tol)
    np.testing.assert_allclose(batch.points, each.points, atol=1e-9 * chain.total_length)
    np.testing.assert_allclose(np.abs(np.sum(batch.rotations * each.rotations, axis=-1)), 1.0, atol=1e-9)
