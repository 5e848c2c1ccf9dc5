"""The method registry and the one solve path: declarations, option checks, the reason a
faster kernel declines, goals and limits through solve_sequence, Smooth Fold with limits."""

import dataclasses
import importlib.util
import math
from pathlib import Path

import numpy as np
import pytest

import solvers
from solvers import chain_sequence as sequence
from solvers import limits as joint_limits
from solvers import quat, registry
from solvers.ccd import chain_floats as ccd_floats
from solvers.ccd import chain_numpy as ccd

_goals_path = Path(__file__).with_name("test_goals.py")
_spec = importlib.util.spec_from_file_location("_goal_chains", _goals_path)
goal_chains = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(goal_chains)


def test_every_method_is_declared_once_with_checked_defaults():
    assert list(solvers.METHODS) == list(registry.REGISTRY)
    for method in registry.METHOD_LIST:
        assert method.label and method.description and method.max_iterations >= 1
        assert method.options_for({}) == method.defaults == solvers.OPTIONS[method.name]
        assert solvers.METHODS[method.name] == method.description
        method.check(method.defaults)
        for option in method.options:
            assert option.check(option.default) == option.default
            assert option.label and option.description
            if option.choices:
                assert option.default in [c[0] for c in option.choices]


def test_the_panels_declarations_are_within_the_checks():
    """What the panel lets a user set (its limits, its default) the core accepts; a panel default
    apart from the core's says why (Smooth Fold, the only one); one property name per option."""
    names = {}
    for method in registry.METHOD_LIST:
        for option in method.options:
            assert names.setdefault(option.property_name, option) is option
            for value in (option.minimum, option.maximum, option.panel_default):
                if value is not None:
                    assert option.check(value) == value
            assert (option.panel_default != option.default) == bool(option.why)
    apart = [name for name, o in names.items() if o.panel_default != o.default]
    assert apart == ["smooth_fold"]
    assert registry.get("fabrik").options[0].property_name == "fabrik_placement"
    with pytest.raises(ValueError, match="the panel's default differs from the core's; say why"):
        registry.Option("x", 0.0, "X", "An option", float, panel_default=1.0)


@pytest.mark.parametrize(
    "method, options, words",
    [
        ("fabrik", {"placement": "circle"}, "placement"),
        ("jacobian", {"max_step": 0.0}, "max_step"),
        ("jacobian", {"damping": -1.0}, "damping"),
        ("ccd", {"fold_angle": 90.0}, "unknown option"),
        ("triangulation", {"smooth_fold": 1.0, "fold_angle": 120.0}, "fold_angle 180"),
    ],
)
def test_bad_options_are_refused_naming_them(method, options, words):
    with pytest.raises(ValueError, match=words):
        registry.get(method).options_for(options)


def test_unknown_method_lists_the_registry():
    with pytest.raises(ValueError, match="triangulation, fabrik, ccd, jacobian"):
        registry.get("newton")


def test_inactive_option_flags():
    tri, jac = registry.get("triangulation"), registry.get("jacobian")
    smooth = next(o for o in tri.options if o.name == "smooth_fold")
    damping = next(o for o in jac.options if o.name == "damping")
    assert smooth.active({"fold_angle": 180.0}) and not smooth.active({"fold_angle": 120.0})
    assert damping.active({"variant": "dls"}) and not damping.active({"variant": "transpose"})


def test_reason_kept_when_the_fast_kernel_declines():
    plain = goal_chains.bent_chain([1.0, 1.0, 0.5], [0.3, 0.3])
    limited = goal_chains.bent_chain([1.0, 1.0, 0.5], [0.3, 0.3], knee_hinges=True)
    target = [0.3, 1.2, 0.9]
    assert solvers.solve(plain, target, method="triangulation").reason == ""
    assert "joint limits" in solvers.solve(limited, target, method="triangulation").reason
    assert "joint limits" in solvers.solve(limited, target, method="fabrik").reason
    assert "sphere" in solvers.solve(plain, target, method="fabrik", placement="sphere").reason
    steps = solvers.solve_sequence(limited, [target, target], method="triangulation")
    assert "joint limits" in steps.reason
    assert solvers.solve_sequence(plain, [target], method="triangulation").reason == ""


def test_a_method_is_one_registry_entry_naming_its_float_kernel(monkeypatch):
    """A method declared by its entry alone (CCD's kernels under another name): `solve` runs the
    float kernel the entry names, keeps the reason its `declines` gives, and says so when the
    entry names none."""
    calls = []

    def solver(tolerance, cap, options):
        plain = ccd_floats.solver(tolerance, cap, {})

        def solve(terms, target):
            calls.append(target)
            return plain(terms, target)

        return solve

    def declines(options, kernel):
        return None if options["fast"] else f"toy without fast has no {kernel}"

    general = registry.iterated("toy", ccd.make_step)
    toy = registry.Method(
        name="toy",
        label="Toy",
        description="CCD under another name",
        options=(registry.Option("fast", True, "Fast", "Take the float kernel", bool),),
        max_iterations=100,
        batch=lambda chain, targets, tol, iters, options: general(chain, targets, tol, iters, {}),
        one=registry.floats("toy", solver, declines),
    )
    monkeypatch.setitem(registry.REGISTRY, "toy", toy)
    chain = goal_chains.bent_chain([1.0, 1.0, 0.5], [0.3, 0.3])
    target = [0.3, 1.2, 0.9]
    reference = solvers.solve(chain, target, method="ccd")
    fast = solvers.solve(chain, target, method="toy")
    assert len(calls) == 1 and fast.reason == "" and fast.method == "toy"
    np.testing.assert_array_equal(fast.points, reference.points)
    slow = solvers.solve(chain, target, method="toy", fast=False)
    assert len(calls) == 1 and slow.reason == "toy without fast has no float kernel"
    np.testing.assert_allclose(slow.points, reference.points, rtol=0, atol=1e-9 * chain.total_length)
    monkeypatch.setitem(registry.REGISTRY, "toy", dataclasses.replace(toy, one=None))
    bare = solvers.solve(chain, target, method="toy")
    assert bare.reason == "toy has no float kernel" and bare.iterations == slow.iterations


@pytest.mark.parametrize("method", list(registry.REGISTRY))
@pytest.mark.parametrize("limited", [False, True])
def test_sequence_with_a_pole_solves_every_step_from_the_input_pose(method, limited):
    """solve_sequence with a pole per step is each step's solve with that pole from the chain's
    input pose (pre-turned toward the pole, as Blender's IK starts every frame), not from the
    last step: the steps do not depend on their order."""
    chain = goal_chains.bent_chain([1.0, 1.0, 0.6], [0.4, 0.5], knee_hinges=limited)
    pairs = goal_chains.pole_targets(chain, 4, seed=3)
    targets = np.array([t for t, _ in pairs])
    poles = np.array([p for _, p in pairs])
    steps = solvers.solve_sequence(chain, targets, method=method, pole=poles, pole_angle=0.3)
    backwards = solvers.solve_sequence(chain, targets[::-1], method=method, pole=poles[::-1], pole_angle=0.3)
    assert steps.reason == sequence.BATCH_REASON
    batch = solvers.solve_batch(chain, targets, method=method, pole=poles, pole_angle=0.3)
    for k in range(len(targets)):
        sol = solvers.solve(chain, targets[k], method=method, pole=poles[k], pole_angle=0.3)
        # One batch solves the independent steps: solve_batch's kernels, within its 2e-8 of `solve`.
        np.testing.assert_allclose(steps.points[k], batch.points[k], atol=1e-12 * chain.total_length)
        np.testing.assert_allclose(steps.points[k], sol.points, atol=2e-8 * chain.total_length)
        np.testing.assert_allclose(steps.frames[k], sol.frames(chain), atol=2e-8)
        np.testing.assert_allclose(backwards.points[-1 - k], sol.points, atol=1e-9 * chain.total_length)
        np.testing.assert_allclose(batch.points[k], sol.points, atol=2e-8 * chain.total_length)


def test_sequence_tip_rotation_goal_per_step():
    chain = goal_chains.bent_chain([1.0, 1.0, 0.6], [0.4, 0.5])
    targets = np.array([[0.2, 1.5, 0.8], [0.3, 1.4, 0.9]])
    rotation = np.array([math.cos(0.2), math.sin(0.2), 0.0, 0.0])
    steps = solvers.solve_sequence(chain, targets, method="triangulation", target_rotation=rotation)
    first = solvers.solve(chain, targets[0], method="triangulation", target_rotation=rotation)
    np.testing.assert_allclose(steps.points[0], first.points, atol=1e-12)


def test_smooth_fold_acts_on_limited_chains():
    """It was silently dropped with joint limits; now each limited pass softens its fold as the
    unlimited pass does: the result differs near the fold distance, reachable targets are still reached."""
    chain = goal_chains.bent_chain([1.0, 1.0, 1.0], [0.2, 0.2], knee_hinges=True)
    # Targets along the chain's own bend plane, sweeping in through the root bone's fold distance.
    radii = np.linspace(0.3, 2.6, 40)
    targets = np.stack([np.zeros_like(radii), radii * math.cos(0.5), radii * math.sin(0.5)], axis=1)
    sharp = solvers.solve_batch(chain, targets, method="triangulation")
    smooth = solvers.solve_batch(chain, targets, method="triangulation", smooth_fold=1.0)
    assert not np.allclose(sharp.points, smooth.points)
    assert np.all(smooth.reached[sharp.reached])
    frames = quat.multiply(smooth.rotations, chain.frames)
    parents = np.concatenate((np.broadcast_to(chain.base_frame, (len(frames), 1, 4)), frames[:, :-1]), axis=1)
    local = quat.multiply(quat.conjugate(quat.multiply(parents, chain.reference)), frames)
    assert joint_limits.violation(chain.limits, local).max() < 1e-9
