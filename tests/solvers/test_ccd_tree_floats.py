"""CCD's tree sweep written out on floats (solvers.ccd.tree.make_sweep) against the general sweep it
replaced (goal_pairs, best_rotation and the floats helpers, kept here as the reference), and Horn's
top eigenvector on floats (solvers.maths.floats.profile_rotation) against LAPACK's."""

import math
from contextlib import contextmanager

import numpy as np
import tree_shapes
from hypothesis import given, settings
from hypothesis import strategies as st

import solvers
from solvers import limits as joint_limits
from solvers import quat
from solvers.ccd import tree as ccd_tree
from solvers.common.tree_mixing import goal_pairs
from solvers.common.tree_plan import make_plan
from solvers.maths import floats
from solvers.maths.floats import best_rotation, conjugate, multiply, normalize4, rotate, scaled
from solvers.skeleton_floats import end_point, forward, rows


def reference_sweep(skeleton, plan, effectors, whole_near: bool = False):
    """The sweep as it was before it was written out (solvers.ccd.tree at ab5a653), helper by helper.
    Near the goals it turned each bone whole; that step is now tree_near's (its sweep part is
    compared with `whole_near` in test_ccd_tree_near.py), and make_sweep always takes the shares."""
    parents = skeleton.parents
    reference, offsets = rows(skeleton.reference), rows(skeleton.offsets)
    base = tuple(skeleton.base_frame.tolist())
    limits = skeleton.limits
    moved = plan.moved
    below = {i: [] for i in moved}
    for k, e in enumerate(effectors):
        for b in skeleton.branch(e.bone):
            below[b].append(k)
    subtree = {i: [] for i in moved}
    for i in reversed(moved):
        p = parents[i]
        if p != -1:
            subtree[p] = sorted(set(subtree[p]) | set(subtree[i]) | {i})
    clamped = set() if limits is None else {i for i in moved if limits.active[i]}
    keep = {i: 1.0 if limits is None else 1.0 - float(np.mean(limits.stiffness[i])) for i in moved}
    bones = [e.bone for e in effectors]
    share = dict(keep)
    spread = len(effectors) > 1
    if spread:
        depth = {}
        for i in moved:
            depth[i] = 0 if parents[i] == -1 else depth[parents[i]] + 1
            share[i] = keep[i] / (1.0 + ccd_tree.SPREAD * depth[i])
    near = ccd_tree.NEAR * plan.length

    def sweep(local, frames, heads):
        turns = share
        if spread and whole_near:
            ends = (end_point(skeleton, frames, heads, b) for b in bones)
            if all(math.dist(e, t) <= near for e, t in zip(ends, plan.targets, strict=True)):
                turns = keep
        for j in reversed(moved):
            found = ([], [], [])
            for k in below[j]:
                goal_pairs(skeleton, plan, bones, k, heads[j], frames, heads, found)
            turn = best_rotation(*found)
            if turns[j] != 1.0:
                turn = scaled(turn, turns[j])
            p = parents[j]
            rest = multiply(base if p == -1 else frames[p], reference[j])
            new_local = normalize4(multiply(conjugate(rest), multiply(turn, frames[j])))
            if j in clamped:
                new_local = tuple(joint_limits.clamp(limits, j, np.array(new_local)).tolist())
            local[j] = new_local
            frame = multiply(rest, new_local)
            w, x, y, z = frames[j]
            inverse = 1.0 / (w * w + x * x + y * y + z * z)
            w, x, y, z = multiply(frame, conjugate(frames[j]))
            applied = (w * inverse, x * inverse, y * inverse, z * inverse)
            frames[j] = frame
            for i in subtree[j]:
                frames[i] = multiply(applied, frames[i])
                p = parents[i]
                hx, hy, hz = heads[p]
                x, y, z = rotate(frames[p], offsets[i])
                heads[i] = (hx + x, hy + y, hz + z)

    return sweep


def _case(seed: int, limited: bool, oriented: bool, near: bool):
    """A random tree, its effectors (targets by forward kinematics; near: within NEAR of the pose),
    one effector with an orientation goal if `oriented`."""
    rng = np.random.default_rng(seed)
    skeleton, local, bones = tree_shapes.random_tree(rng, limited=limited)
    targets, posed = tree_shapes.fk_targets(skeleton, local, bones, rng, spread=0.01 if near else 0.8)
    frames = skeleton.forward(posed)[0]
    effectors = [
        solvers.Effector(b, t, orientation=frames[b] if oriented and k == 0 else None)
        for k, (b, t) in enumerate(zip(bones, targets, strict=True))
    ]
    return skeleton, local, effectors


def _sweeps(make, skeleton, local, effectors, count: int = 4):
    plan = make_plan(skeleton, effectors)
    sweep = make(skeleton, plan, effectors)
    state = rows(local)
    frames, heads = forward(skeleton, state)
    out = []
    for _ in range(count):
        sweep(state, frames, heads)
        out.append((list(state), list(frames), list(heads)))
    return out


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**32 - 1), st.booleans(), st.booleans(), st.booleans())
def test_written_out_sweep_is_the_general_sweep_to_the_bit(seed, limited, oriented, near):
    """Four sweeps from the same state: the same local rotations, frames and heads, bit for bit,
    with several pairs solved by LAPACK as before (the float eigenvector is the next test's)."""
    skeleton, local, effectors = _case(seed, limited, oriented, near)
    with _lapack_only():
        want = _sweeps(reference_sweep, skeleton, local, effectors)
        got = _sweeps(ccd_tree.make_sweep, skeleton, local, effectors)
    assert got == want


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**32 - 1), st.booleans(), st.booleans(), st.booleans())
def test_written_out_sweep_with_float_eigenvectors_agrees(seed, limited, oriented, near):
    """The same with Horn's eigenvector on floats (where the tree has a sub-base): equal to ~1e-15."""
    skeleton, local, effectors = _case(seed, limited, oriented, near)
    want = _sweeps(reference_sweep, skeleton, local, effectors, count=1)[0]
    got = _sweeps(ccd_tree.make_sweep, skeleton, local, effectors, count=1)[0]
    for a, b in zip(got, want, strict=True):
        moved = [i for i, v in enumerate(b) if v is not None]
        np.testing.assert_allclose(np.array([a[i] for i in moved]), np.array([b[i] for i in moved]), atol=1e-11)


@contextmanager
def _lapack_only():
    """Several pairs' rotation by LAPACK's eigh alone (as before the float eigenvector)."""
    saved = floats._top_eigenvector
    floats._top_eigenvector = lambda k, bound: None
    try:
        yield
    finally:
        floats._top_eigenvector = saved


@settings(max_examples=300, deadline=None)
@given(
    st.integers(2, 6),
    st.integers(0, 2**32 - 1),
    st.sampled_from([0.0, 1e-9, 1e-4, 0.3, 3.0]),
    st.sampled_from([0.0, 1e-7, 1e-3, 1.0]),
)
def test_float_top_eigenvector_is_lapacks(k, seed, noise, off_line):
    """Horn's rotation from the float eigenvector (Newton on the characteristic polynomial, an
    adjugate row) is LAPACK's to ~1e-9 at worst (near-repeated eigenvalues) and ~1e-15 typically,
    down to pairs nearly on one line (off_line 0: on it, where only the NEAREST pull decides)."""
    rng = np.random.default_rng(seed)
    q = quat.normalize(rng.normal(size=4))
    line = rng.normal(size=3)
    a = np.outer(rng.uniform(0.2, 2.0, k), line) + off_line * rng.normal(size=(k, 3))
    b = quat.rotate(q, a) + noise * rng.normal(size=(k, 3))
    w = rng.uniform(0.1, 2.0, size=k).tolist()
    a_rows, b_rows = [tuple(r) for r in a.tolist()], [tuple(r) for r in b.tolist()]
    sums = [0.0] * 9
    size = 0.0
    for (ax, ay, az), (bx, by, bz), wk in zip(a_rows, b_rows, w, strict=True):
        for n, v in enumerate((ax * bx, ax * by, ax * bz, ay * bx, ay * by, ay * bz, az * bx, az * by, az * bz)):
            sums[n] += wk * v
        size += wk * math.sqrt((ax * ax + ay * ay + az * az) * (bx * bx + by * by + bz * bz))
    got = np.array(floats.profile_rotation(tuple(sums), size, min(w), max(w)))
    want = np.array(floats.profile_rotation(tuple(sums), size, min(w), max(w), lapack=True))
    assert got[0] >= 0.0 and abs(np.linalg.norm(got) - 1.0) < 1e-14
    assert min(np.abs(got - want).max(), np.abs(got + want).max()) < 1e-8, (got, want)
