"""The tree Jacobian's written-out kernel (solvers.jacobian.tree_unrolled): on the layouts it takes
(small trees, the plain case) it runs jacobian.tree_plain's numpy iteration, so it gives the same
poses to rounding, with the same iterations; larger layouts keep the numpy kernel."""

import numpy as np
import pytest
import tree_shapes
from hypothesis import given, settings
from hypothesis import strategies as st

import solvers
from solvers.jacobian import tree as tree_jacobian
from solvers.jacobian import tree_structure, tree_unrolled

SKELETON, LOCAL, NAMES = tree_shapes.humanoid()
TWO_HANDS, HANDS_AND_HEAD = ["forearm.L", "forearm.R"], ["forearm.L", "forearm.R", "head"]
FIVE = [*HANDS_AND_HEAD, "shin.L", "shin.R"]  # 15 rows: not written out (numpy's kernel)


def _solved(skeleton, local, effectors, unrolled: bool):
    """solve_skeleton's Jacobian with the written-out kernel, or with tree_plain's numpy one."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(tree_structure, "_STRUCTURES", {})  # structures are kept per layout: build them anew
        if not unrolled:
            patch.setattr(tree_unrolled, "applies", lambda tree: False)
        return solvers.solve_skeleton(skeleton, local, effectors, method="jacobian")


def _same(skeleton, local, effectors) -> None:
    fast, numpy = _solved(skeleton, local, effectors, True), _solved(skeleton, local, effectors, False)
    assert fast.iterations == numpy.iterations
    assert fast.reached == numpy.reached
    np.testing.assert_allclose(fast.local, numpy.local, rtol=0, atol=1e-9)
    np.testing.assert_allclose(fast.error, numpy.error, rtol=0, atol=1e-9)
    np.testing.assert_allclose(np.linalg.norm(fast.local, axis=1), 1.0, atol=1e-12)


@settings(max_examples=30, deadline=None)
@given(st.sampled_from([TWO_HANDS, HANDS_AND_HEAD]), st.integers(0, 2**16), st.sampled_from([0.0, 0.5]))
def test_the_written_out_kernel_gives_the_numpy_kernels_pose(names, seed, far):
    """Reachable goals (Newton's approach) and goals beyond reach (the trust region's refusals and
    the stall stop: the least-squares compromise) alike."""
    bones = [NAMES[n] for n in names]
    targets, _ = tree_shapes.fk_targets(SKELETON, LOCAL, bones, np.random.default_rng(seed))
    _same(SKELETON, LOCAL, [solvers.Effector(b, t * (1.0 + far)) for b, t in zip(bones, targets, strict=True)])


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 2**16))
def test_random_layouts_give_the_numpy_kernels_pose(seed):
    """Random trees (4-12 bones, 2-4 effectors, some on another's branch): every layout written
    out as the numpy kernel runs it (those beyond the size limit run the numpy kernel itself)."""
    rng = np.random.default_rng(seed)
    skeleton, local, bones = tree_shapes.random_tree(rng)
    targets, _ = tree_shapes.fk_targets(skeleton, local, bones, rng)
    _same(skeleton, local, [solvers.Effector(b, t) for b, t in zip(bones, targets, strict=True)])


def test_two_roots():
    """A skeleton of two trees (each root's head in the skeleton's space): one effector on each."""
    heads = [(0, 0, 0), (0, 0, 1), (1, 0, 0), (1, 0, 1)]
    tails = [(0, 0, 1), (0, 0.5, 1.8), (1, 0, 1), (1, 0.5, 1.8)]
    skeleton, local = solvers.Skeleton.from_bones((-1, 0, -1, 2), heads, tails)
    targets, _ = tree_shapes.fk_targets(skeleton, local, [1, 3], np.random.default_rng(3))
    _same(skeleton, local, [solvers.Effector(b, t) for b, t in zip([1, 3], targets, strict=True)])


def test_small_layouts_are_written_out_and_large_ones_are_not():
    def tree(names):
        return tree_jacobian.Tree(SKELETON, [solvers.Effector(NAMES[n], np.zeros(3)) for n in names])

    assert tree(TWO_HANDS).unrolled is not None
    assert tree(HANDS_AND_HEAD).unrolled is not None
    assert tree(FIVE).unrolled is None


@pytest.mark.parametrize(("names", "share"), [(TWO_HANDS, 0.06), (HANDS_AND_HEAD, 0.12)])
def test_the_loops_variables_are_read_without_a_prefix(names, share):
    """The kernel's loop (its iterations: the whole cost) reads its most used variables from
    CPython's first 256 local slots (tree_unrolled._hot_first): few of its instructions are
    EXTENDED_ARG prefixes (on this humanoid 4.5% and 10%; 28% and 30% before they were named first)."""
    import dis

    tree = tree_jacobian.Tree(SKELETON, [solvers.Effector(NAMES[n], np.zeros(3)) for n in names])
    source = tree_unrolled._source(*tree.unrolled.layout)
    code = next(c for c in compile(source, "kernel", "exec").co_consts if hasattr(c, "co_code"))
    lines = source.splitlines()
    start = next(k for k, line in enumerate(lines) if line.strip().startswith("while ")) + 1
    stop = next(k for k, line in enumerate(lines) if line.strip().startswith("if stale >= PATIENCE")) + 1
    loop = [i for i in dis.get_instructions(code) if i.positions.lineno and start <= i.positions.lineno < stop]
    prefixes = sum(i.opname == "EXTENDED_ARG" for i in loop)
    assert prefixes <= share * len(loop)


@settings(max_examples=20, deadline=None)
@given(st.sampled_from([TWO_HANDS, HANDS_AND_HEAD, FIVE]), st.integers(0, 2**16), st.sampled_from([0.0, 0.5]))
def test_the_solve_straight_from_the_effectors_gives_the_trees_floats(names, seed, far):
    """jacobian.tree runs the plain case without a Tree (tree_structure.kept, Structure.plain; the
    written-out kernel, or tree_plain.run on a layout too large to write out): the same kernel on
    the same floats as through a Tree and tree_plain.iterate, so the same pose, errors and
    iterations to the bit."""
    bones = [NAMES[n] for n in names]
    targets, _ = tree_shapes.fk_targets(SKELETON, LOCAL, bones, np.random.default_rng(seed))
    effectors = [solvers.Effector(b, t * (1.0 + far)) for b, t in zip(bones, targets, strict=True)]
    direct = solvers.solve_skeleton(SKELETON, LOCAL, effectors, method="jacobian")
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(tree_jacobian, "_plain", lambda *args: False)
        through_tree = solvers.solve_skeleton(SKELETON, LOCAL, effectors, method="jacobian")
    assert direct.iterations == through_tree.iterations
    np.testing.assert_array_equal(direct.local, through_tree.local)
    np.testing.assert_array_equal(direct.error, through_tree.error)


def test_only_the_plain_case_goes_straight_to_the_plain_kernel():
    """Equal weights, no pole, DLS without pull or mass weighting on a plain layout (written out
    or not); the others take the Tree (their row scales, pole spins and options)."""
    bones = [NAMES[n] for n in TWO_HANDS]
    plain = [solvers.Effector(b, np.zeros(3)) for b in bones]
    held = tree_structure.kept(SKELETON, plain)
    assert held.written_out
    assert tree_jacobian._plain(held, plain, "dls", 0.0, False)
    assert not tree_jacobian._plain(held, plain, "pseudoinverse", 0.0, False)
    assert not tree_jacobian._plain(held, plain, "dls", 0.5, False)
    assert not tree_jacobian._plain(held, plain, "dls", 0.0, True)
    weighted = [solvers.Effector(bones[0], np.zeros(3), weight=2.0), plain[1]]
    assert not tree_jacobian._plain(held, weighted, "dls", 0.0, False)
    poled = [solvers.Effector(bones[0], np.zeros(3), pole=np.ones(3)), plain[1]]
    assert not tree_jacobian._plain(held, poled, "dls", 0.0, False)
    turned = [solvers.Effector(bones[0], np.zeros(3), orientation=(1.0, 0.0, 0.0, 0.0)), plain[1]]
    assert not tree_structure.kept(SKELETON, turned).plain
    assert not tree_structure.kept(SKELETON, turned).written_out
    large = tree_structure.kept(SKELETON, [solvers.Effector(NAMES[n], np.zeros(3)) for n in FIVE])
    assert large.plain and not large.written_out
