"""solvers.quat: the helpers every solver's rotations are built from.
Targeted tests so a rotation bug is pinned to the helper, not a solver."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from solvers import quat

unit3 = st.tuples(st.floats(-1.0, 1.0), st.floats(-1.0, 1.0), st.floats(-1.0, 1.0)).filter(
    lambda v: 0.1 < math.sqrt(v[0] ** 2 + v[1] ** 2 + v[2] ** 2)
)


def unit(v):
    v = np.asarray(v, dtype=float)
    return v / np.linalg.norm(v)


@given(u=unit3, v=unit3)
def test_swing_takes_u_to_v_without_twist(u, v):
    u, v = unit(u), unit(v)
    fallback = quat.any_perpendicular(u)
    q = quat.swing(u, v, fallback)
    assert np.linalg.norm(q) == pytest.approx(1.0, abs=1e-12)
    np.testing.assert_allclose(quat.rotate(q, u), v, atol=1e-12)
    assert abs(np.dot(q[1:], u)) <= 1e-12


@pytest.mark.parametrize("eps", [0.0, 1e-15, 1e-12, 4e-9, 1e-7, 1e-6, 1e-5])
def test_swing_near_opposite_vectors(eps):
    """u and v nearly opposite (angle pi - eps): the rotation must still take
    u onto v to 1e-12, not snap to an exact half turn about the fallback."""
    u = np.array([0.0, 1.0, 0.0])
    v = unit([eps, -1.0, 0.0])
    q = quat.swing(u, v, np.array([0.0, 0.0, 1.0]))
    np.testing.assert_allclose(quat.rotate(q, u), v, atol=1e-12)
    assert abs(np.dot(q[1:], u)) <= 1e-12


def test_swing_exactly_opposite_uses_the_fallback_axis():
    u = np.array([0.0, 1.0, 0.0])
    q = quat.swing(u, -u, np.array([1.0, 0.0, 0.0]))
    np.testing.assert_allclose(np.abs(q), [0.0, 1.0, 0.0, 0.0], atol=1e-15)


@given(v=unit3)
def test_any_perpendicular(v):
    v = unit(v)
    p = quat.any_perpendicular(v)
    assert np.linalg.norm(p) == pytest.approx(1.0)
    assert abs(np.dot(p, v)) <= 1e-12


@given(rv=st.tuples(*[st.floats(-3.0, 3.0)] * 3), w=unit3)
def test_matrix_round_trip_and_rotate(rv, w):
    q = quat.from_rotation_vector(np.array(rv))
    m = quat.to_matrix(q)
    np.testing.assert_allclose(m.T @ m, np.eye(3), atol=1e-12)
    assert np.linalg.det(m) == pytest.approx(1.0)
    np.testing.assert_allclose(quat.rotate(q, np.array(w)), m @ np.array(w), atol=1e-12)
    back = quat.from_matrix(m)
    assert back[0] >= 0.0
    np.testing.assert_allclose(quat.to_matrix(back), m, atol=1e-12)
    assert quat.angle(q) == pytest.approx(min(np.linalg.norm(rv), 2 * math.pi - np.linalg.norm(rv)), abs=1e-9)


def test_multiply_composes_rotations():
    a = quat.from_axis_angle(np.array([0.0, 0.0, 1.0]), math.pi / 2)
    b = quat.from_axis_angle(np.array([1.0, 0.0, 0.0]), math.pi / 2)
    v = np.array([0.0, 1.0, 0.0])
    np.testing.assert_allclose(quat.rotate(quat.multiply(a, b), v), quat.rotate(a, quat.rotate(b, v)), atol=1e-15)


def test_cumulative_is_the_running_product():
    rng = np.random.default_rng(5)
    q = rng.normal(size=(37, 3, 4))
    q /= np.linalg.norm(q, axis=-1, keepdims=True)
    out = quat.cumulative(q)
    running = q[0]
    assert np.allclose(out[0], running)
    for k in range(1, len(q)):
        running = quat.multiply(q[k], running)
        assert np.allclose(out[k], running, atol=1e-13)


@given(
    rv=st.tuples(*[st.floats(-3.0, 3.0)] * 3),
    axis=unit3,
    turn=st.floats(0.0, 3.1),
    sign=st.sampled_from([1.0, -1.0]),
)
def test_angle_between_is_the_turn_down_to_the_smallest(rv, axis, turn, sign):
    a = quat.from_rotation_vector(np.array(rv))
    b = sign * quat.multiply(quat.from_axis_angle(unit(axis), turn), a)  # either sign: the same rotation
    assert quat.angle_between(a, b) == pytest.approx(turn, rel=1e-9, abs=1e-15)
    assert quat.angle_between(b, a) == pytest.approx(turn, rel=1e-9, abs=1e-15)


@pytest.mark.parametrize("turn", [1e-12, 1e-9, 6e-7, 1e-4])
def test_angle_between_tiny_turns_where_acos_of_the_dot_fails(turn):
    a = unit(np.array([0.3, -0.5, 0.7, 0.4]))
    b = quat.multiply(quat.from_axis_angle(unit(np.array([1.0, 2.0, -0.5])), turn), a)
    assert quat.angle_between(a, b) == pytest.approx(turn, rel=1e-6)
    acos = 2.0 * math.acos(min(1.0, abs(float(np.dot(a, b)))))
    assert turn > 1e-4 or abs(acos - turn) > 10 * abs(quat.angle_between(a, b) - turn)  # acos: far off


@settings(max_examples=60, deadline=None)
@given(
    st.integers(3, 4),
    st.lists(st.integers(1, 9), min_size=0, max_size=3),
    st.integers(-8, 8),
    st.booleans(),
    st.integers(0, 2**32 - 1),
)
def test_property_dots_are_numpys_sums_to_the_bit(width, lead, exponent, fortran, seed):
    rng = np.random.default_rng(seed)
    a = rng.normal(size=(*lead, width)) * 10.0**exponent
    b = rng.normal(size=(*lead, width))
    if fortran:
        a = np.asfortranarray(a)
    assert np.array_equal(quat.dots(a, b), np.add.reduce(a * b, axis=-1))
    across = a.reshape(-1, 1, width), b.reshape(1, -1, width)  # every a with every b, broadcast
    assert np.array_equal(quat.dots(*across), np.add.reduce(across[0] * across[1], axis=-1))
    assert np.array_equal(quat.norm(a), np.linalg.norm(a, axis=-1))
    assert np.array_equal(quat.norm(a, keepdims=True), np.linalg.norm(a, axis=-1, keepdims=True))


@settings(max_examples=60, deadline=None)
@given(
    st.integers(3, 4),
    st.lists(st.integers(1, 9), min_size=1, max_size=3),
    st.integers(-8, 8),
    st.sampled_from(["C", "F", "strided"]),
    st.sampled_from(["none", "zero", "nan"]),
    st.integers(0, 2**32 - 1),
)
def test_property_normalize_and_conjugate_keep_the_masked_and_product_bits(width, lead, exponent, layout, odd, seed):
    """normalize without the masked divide (no zero or NaN length) and conjugate as a negation: the
    same bits, signed zeros included, and the same memory layout as the reference forms."""
    rng = np.random.default_rng(seed)
    v = rng.normal(size=(*lead, width)) * 10.0**exponent
    v[rng.random(v.shape) < 0.2] = 0.0
    v[rng.random(v.shape) < 0.1] = -0.0
    if odd == "zero":
        v.reshape(-1, width)[-1] = 0.0
    elif odd == "nan":
        v.reshape(-1, width)[0, -1] = np.nan
    if layout == "F":
        v = np.asfortranarray(v)
    elif layout == "strided":
        v = np.repeat(v, 2, axis=-1)[..., ::2]
    n = np.linalg.norm(v, axis=-1, keepdims=True)
    with np.errstate(invalid="ignore"):
        masked = np.divide(v, n, out=np.zeros(v.shape), where=n > 0.0)
        got = quat.normalize(v)
    assert got.tobytes() == masked.tobytes() and _layout(got) == _layout(masked)
    if width == 4:
        product = v * np.array([1.0, -1.0, -1.0, -1.0])
        turned = quat.conjugate(v)
        finite = np.isfinite(product)  # (a NaN's sign bit is not kept alike)
        assert np.array_equal(np.signbit(turned)[finite], np.signbit(product)[finite])
        assert np.array_equal(turned, product, equal_nan=True) and _layout(turned) == _layout(product)


def _layout(a: np.ndarray) -> tuple:
    """The strides that matter (an axis of length 1 may have any)."""
    return tuple(s for s, n in zip(a.strides, a.shape, strict=True) if n > 1)
