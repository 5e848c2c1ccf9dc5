"""FABRIK's tree step written out (solvers.fabrik.tree.place_plain) against its helpers' calls:
the same poses to the bit, on random trees with and without limits, pins and orientations."""

import math
from dataclasses import replace

import numpy as np
import pytest
import tree_shapes
from hypothesis import given, settings
from hypothesis import strategies as st
from test_tree_solvers import trees

import solvers
from solvers import quat
from solvers.fabrik import tree as fabrik_tree
from solvers.fabrik import tree_turns
from solvers.maths import floats
from solvers.skeleton import finish
from solvers.skeleton_floats import forward, measured_locals, rows, to_locals


def _solve(skeleton, local, effectors, written_out: bool, monkeypatch):
    monkeypatch.setattr(fabrik_tree, "WRITTEN_OUT", written_out)
    # a skeleton of its own: the plan (and its step, built with or without) is cached by skeleton
    fresh = replace(skeleton)
    return solvers.solve_skeleton(fresh, local, effectors, method="fabrik", tolerance=1e-5)


@settings(max_examples=40, deadline=None)
@given(st.booleans().flatmap(lambda limited: trees(limited=limited)), st.booleans(), st.booleans())
def test_written_out_placement_is_the_helpers_to_the_bit(tree, pinned, oriented):
    skeleton, local, bones, rng = tree
    if len(bones) < 2:
        return
    turned = quat.multiply(local, quat.from_rotation_vector(rng.uniform(-0.8, 0.8, (len(local), 3))))
    frames, _, ends = skeleton.forward(turned)
    effectors = [solvers.Effector(b, position=ends[b] * rng.uniform(0.9, 1.3)) for b in bones]
    if pinned:
        effectors[0] = solvers.Effector(bones[0], pin=True)
    if oriented:
        effectors[-1] = replace(effectors[-1], orientation=frames[bones[-1]], rotation_weight=0.5)
    with pytest.MonkeyPatch.context() as mp:  # (hypothesis: no function-scoped fixture)
        helpers = _solve(skeleton, local, effectors, False, mp)
        written = _solve(skeleton, local, effectors, True, mp)
    np.testing.assert_array_equal(written.local, helpers.local)
    np.testing.assert_array_equal(written.error, helpers.error)
    assert written.iterations == helpers.iterations


def test_the_humanoid_hands_and_head_to_the_bit(monkeypatch):
    skeleton, local, names = tree_shapes.humanoid()
    bones = [names["forearm.L"], names["forearm.R"], names["head"]]
    for seed in range(6):
        targets, _ = tree_shapes.fk_targets(skeleton, local, bones, np.random.default_rng(seed))
        effectors = [solvers.Effector(b, t) for b, t in zip(bones, targets, strict=True)]
        helpers = _solve(skeleton, local, effectors, False, monkeypatch)
        written = _solve(skeleton, local, effectors, True, monkeypatch)
        np.testing.assert_array_equal(written.local, helpers.local)
        assert written.iterations == helpers.iterations
        assert written.reached


points = st.tuples(*[st.floats(-2.0, 2.0, allow_nan=False)] * 3)


@settings(max_examples=300, deadline=None)
@given(points, points, st.floats(0.01, 2.0), st.floats(0.01, 2.0), points, st.booleans())
def test_spheres_written_out_are_sphere_point_to_the_bit(a, b, ra, rb, near, on_line):
    """on_spheres is floats.sphere_point (the bits), or None where sphere_point reads its tie."""
    if on_line:  # near on the line a-b: sphere_point's tie-breaker case
        near = tuple(x + 0.5 * (y - x) for x, y in zip(a, b, strict=True))
    written = tree_turns.on_spheres(*a, b, ra, rb, *near)
    read = []

    def tie():
        read.append(True)
        return (1.0, 0.0, 0.0)

    helper = floats.sphere_point(a, b, ra, rb, near, tie)
    if written is None:  # where sphere_point reads its tie, or has a on b (a zero distance)
        assert read or math.sqrt(sum((y - x) * (y - x) for x, y in zip(a, b, strict=True))) <= 0.0
    else:
        assert not read and written == helper


def _forward_by_helpers(skeleton, local):
    """solvers.skeleton_floats.forward as it was, by floats' helpers (the reference)."""
    frames, heads = [], []
    reference, offsets = rows(skeleton.reference), rows(skeleton.offsets)
    base = tuple(skeleton.base_frame.tolist())
    for i, p in enumerate(skeleton.parents):
        parent = base if p == -1 else frames[p]
        frames.append(floats.multiply(floats.multiply(parent, reference[i]), local[i]))
        if p == -1:
            heads.append(offsets[i])
        else:
            o = floats.rotate(parent, offsets[i])
            heads.append(tuple(h + x for h, x in zip(heads[p], o, strict=True)))
    return frames, heads


def _to_locals_by_helpers(skeleton, local, frames, bones, swing_only):
    """solvers.skeleton_floats.to_locals as it was, by floats' helpers (the reference)."""
    out, inputs, solved = np.array(local, dtype=float), rows(local), []
    reference, links = rows(skeleton.reference), rows(skeleton.links)
    base = tuple(skeleton.base_frame.tolist())
    for i, p in enumerate(skeleton.parents):
        rest = floats.multiply(base if p == -1 else solved[p], reference[i])
        if i not in bones:
            solved.append(floats.multiply(rest, inputs[i]))
            continue
        frame = frames[i]
        if i in swing_only:
            inherited = floats.multiply(rest, inputs[i])
            have, want = floats.rotate(inherited, links[i]), floats.rotate(frame, links[i])
            turn = floats.swing(have, want, floats.side(inherited, have))
            frame = floats.normalize4(floats.multiply(turn, inherited))
        solved.append(frame)
        out[i] = floats.normalize4(floats.multiply(floats.conjugate(rest), frame))
    return out


@settings(max_examples=60, deadline=None)
@given(trees(), st.floats(0.0, 3.1))
def test_forward_and_to_locals_written_out_are_the_helpers_to_the_bit(tree, spread):
    """skeleton_floats.forward and to_locals (written out) against floats' helpers; turns up to
    `spread` radians per bone, so swings past a quarter turn (floats.swing's own path) come too."""
    skeleton, local, _, rng = tree
    n = skeleton.n_bones
    current = rows(local)
    assert forward(skeleton, current) == _forward_by_helpers(skeleton, current)
    turned = quat.multiply(local, quat.from_rotation_vector(rng.uniform(-spread, spread, (n, 3))))
    frames, _ = forward(skeleton, rows(turned))
    bones = sorted(rng.choice(n, size=int(rng.integers(1, n + 1)), replace=False).tolist())
    swing_only = {i for i in bones if rng.random() < 0.6}
    expected = _to_locals_by_helpers(skeleton, local, frames, set(bones), swing_only)
    np.testing.assert_array_equal(to_locals(skeleton, local, frames, bones, swing_only), expected)


@settings(max_examples=60, deadline=None)
@given(trees(), st.floats(0.0, 3.1))
def test_measured_locals_errors_are_the_results_own_measure_to_the_bit(tree, spread):
    """skeleton_floats.measured_locals: its locals are to_locals', and its distances skeleton.finish's
    measure of them (forward kinematics of the result, then end_point) to the bit."""
    skeleton, local, _, rng = tree
    n = skeleton.n_bones
    turned = quat.multiply(local, quat.from_rotation_vector(rng.uniform(-spread, spread, (n, 3))))
    frames, _ = forward(skeleton, rows(turned))
    bones = sorted(rng.choice(n, size=int(rng.integers(1, n + 1)), replace=False).tolist())
    swing_only = {i for i in bones if rng.random() < 0.6}
    ends = rng.choice(n, size=int(rng.integers(1, n + 1))).tolist()
    goals = [(b, tuple(rng.uniform(-2.0, 2.0, 3).tolist())) for b in ends]
    solved, errors = measured_locals(skeleton, local, frames, bones, swing_only, goals)
    np.testing.assert_array_equal(solved, to_locals(skeleton, local, frames, bones, swing_only))
    effectors = [solvers.Effector(b, position=np.array(t)) for b, t in goals]
    expected = finish(skeleton, solved, effectors, 1e-5, 0, "any").error
    np.testing.assert_array_equal(np.array(errors), expected)


vectors = st.tuples(*[st.floats(-2.0, 2.0, allow_nan=False)] * 3)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.tuples(vectors, vectors, st.sampled_from([1.0, 0.5, 1e6]), st.booleans()), min_size=2, max_size=4),
    st.tuples(*[st.floats(-1.0, 1.0)] * 4).filter(lambda q: sum(c * c for c in q) > 0.1),
)
def test_a_sub_bases_turn_is_best_rotation_with_held_branches_at_hold(pairs, q):
    """tree_turns.pairs_turn (a sub-base's turn, its sums written out, the eigenvector on floats) is
    floats.best_rotation of the same pairs, a held branch's weight x HOLD: its sums to the bit (then
    profile_rotation on floats, as CCD's tree sweep), LAPACK's eigenvector to 1e-9."""
    inherited = floats.normalize4(q)
    head = (0.1, -0.2, 0.3)
    targets = [tuple(c + h for c, h in zip(b, head, strict=True)) for _, b, _, _ in pairs]
    # Effectors' points (child -1, their targets) and a held and a free child (their new heads).
    points, new_heads, held = [], {}, set()
    for k, (vec, _, w, is_child) in enumerate(pairs):
        child = 10 + k if is_child else -1
        if is_child:
            new_heads[child] = targets[k]
            if k % 2:
                held.add(child)
        points.append((vec, k, child, w))
    turn = tree_turns.pairs_turn(points, inherited, head, targets, new_heads, held, fabrik_tree.HOLD)
    have = [floats.rotate(inherited, vec) for vec, _, _, _ in points]
    want = [tuple(t - h for t, h in zip(targets[k], head, strict=True)) for k in range(len(points))]
    weights = [w * fabrik_tree.HOLD if c in held else w for _, _, c, w in points]
    sums = [0.0] * 9
    size = 0.0
    for a, b, w in zip(have, want, weights, strict=True):
        for r in range(3):
            for c in range(3):
                sums[3 * r + c] += w * a[r] * b[c]
        size += w * math.sqrt(sum(x * x for x in a) * sum(x * x for x in b))
    assert turn == floats.profile_rotation(tuple(sums), size, min(weights), max(weights))
    lapack = floats.best_rotation(have, want, weights)
    sxx, sxy, sxz, syx, syy, syz, szx, szy, szz = sums
    mu = floats.NEAREST * size * min(weights) / max(weights)
    sxx, syy, szz = sxx + mu, syy + mu, szz + mu
    k = np.array(
        [
            (sxx + syy + szz, syz - szy, szx - sxz, sxy - syx),
            (syz - szy, sxx - syy - szz, sxy + syx, szx + sxz),
            (szx - sxz, sxy + syx, syy - sxx - szz, syz + szy),
            (sxy - syx, szx + sxz, syz + szy, szz - sxx - syy),
        ]
    )
    top = np.linalg.eigvalsh(k)
    if top[3] - top[2] <= 1e-6 * max(size, 1e-300):  # a near-repeated top eigenvalue: the vector is ill-set
        return
    np.testing.assert_allclose(turn, lapack, atol=1e-9)
