"""The planted bake's batched passes (issue 21's speed) give each leg, hold and frame exactly what it
gets alone: several legs solved in one positional pass, the hips-lowered legs kept together, every
hold's eases at once, the legs' frames joined, every leg planted on one joined timeline. Bit for
bit: each frame's figures are its own."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

FPS = 120.0


def _unit(rng, shape):
    q = rng.normal(size=(*shape, 4))
    return q / np.linalg.norm(q, axis=-1, keepdims=True)


def random_leg(rng, frames: int, turned: bool = True):
    """A LegFrames of a bent leg (thigh 0.45, shin 0.42, foot) wandering over `frames`, the armature
    turned and scaled (`turned`), with random local and armature-space rotations."""
    from chain_ik.rig import plant_read

    hip = np.array([0.1, 0.0, 1.0]) + 0.02 * rng.normal(size=(frames, 3))
    knee = hip + np.array([0.0, -0.15, -0.42]) + 0.02 * rng.normal(size=(frames, 3))
    ankle = knee + np.array([0.0, 0.12, -0.4]) + 0.02 * rng.normal(size=(frames, 3))
    toe = ankle + np.array([0.0, -0.18, -0.08])
    world = np.tile(np.eye(4), (frames, 1, 1))
    if turned:
        c, s = np.cos(0.3), np.sin(0.3)
        world[:, :3, :3] = 1.5 * np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])
        world[:, :3, 3] = [0.2, -0.1, 0.05]
    values = [np.zeros((frames, 3)) for _ in range(3)]
    return plant_read.LegFrames(
        ("thigh", "shin", "foot"),
        ("XYZ",) * 3,
        world,
        np.stack([hip, knee, ankle], axis=1),
        toe,
        _unit(rng, (frames, 3)),
        _unit(rng, (frames, 3)),
        values,
    )


@pytest.mark.parametrize("tilted", [False, True])
def test_legs_solved_together_are_each_leg_solved_alone(scene, tilted):
    from chain_ik.app.bake import contact_legs

    rng = np.random.default_rng(7)
    legs = [random_leg(rng, 60), random_leg(rng, 45, turned=False)]
    jobs = []
    for j, leg in enumerate(legs):
        target = leg.toe_world + 0.03 * rng.normal(size=(len(leg.world), 3))
        rows = None if j == 0 else np.array([3, 4, 4, 10, 44, 0])
        tilt = _unit(rng, (len(leg.world),)) if tilted else None
        if rows is not None:
            target, tilt = target[rows], None if tilt is None else tilt[rows]
        jobs.append((leg, target, tilt, rows, None))
    together = contact_legs.positional_legs(jobs, 0.05, FPS)
    for (leg, target, tilt, rows, _), (basis, errors) in zip(jobs, together, strict=True):
        alone, alone_errors = contact_legs.positional(leg, target, 0.05, FPS, tilt, rows)
        assert np.array_equal(basis, alone) and np.array_equal(errors, alone_errors)


def test_legs_alike_are_planted_together_and_others_apart(scene):
    from chain_ik.app.bake import contact_legs

    rng = np.random.default_rng(11)
    legs = [random_leg(rng, 40) for _ in range(4)]
    plans = []
    for j, leg in enumerate(legs):
        weight = np.where(rng.random(40) < 0.4, 1.0, rng.random(40) * 0.99)
        changed = rng.random(40) < (0.0 if j == 3 else 0.5)  # the last: nothing read but its holds
        plans.append(
            SimpleNamespace(target=leg.toe_world + 0.02 * rng.normal(size=(40, 3)), weight=weight, changed=changed)
        )
    plans[3].weight[:] = 0.0  # ... and no hold: nothing solved
    jobs = [(legs[0], plans[0], 0.0, None), (legs[1], plans[1], 0.1, None), (legs[2], plans[2], 0.0, None)]
    jobs.append((legs[3], plans[3], 0.0, None))
    for (leg, plan, softness, tilt), (basis, errors, pole) in zip(
        jobs, contact_legs.planted_solves(jobs, FPS), strict=True
    ):
        # Solved where the plant reads it (changed or held frames), as on every frame; elsewhere the input.
        read = plan.changed | (plan.weight == 1.0)
        alone = contact_legs.positional(leg, plan.target, softness, FPS, tilt)
        assert np.array_equal(basis[read], alone[0][read]) and np.array_equal(errors[read], alone[1][read])
        assert np.array_equal(basis[~read], leg.basis[~read]) and not np.any(errors[~read])
        assert np.array_equal(pole, contact_legs.knee_poles(leg, FPS))
    assert not np.any(plans[3].changed | (plans[3].weight == 1.0))
    with pytest.raises(ValueError, match="tilt"):
        contact_legs.positional_legs(
            [(legs[0], plans[0].target, None, None, None), (legs[1], plans[1].target, np.ones((40, 4)), None, None)],
            0.0,
            FPS,
        )


def test_legs_kept_under_lowered_hips_together_are_each_kept_alone(scene):
    from chain_ik.app.bake import contact_hips, contact_legs

    rng = np.random.default_rng(5)
    legs = [random_leg(rng, 50), random_leg(rng, 50)]
    offset = np.zeros((50, 3))
    offset[10:30, 2] = -0.02 * np.sin(np.linspace(0.0, np.pi, 20))
    still = np.zeros((50, 3))

    def solve(jobs):
        return contact_legs.positional_legs(jobs, 0.0, FPS)

    moved = [contact_hips.shifted(legs[0], offset), contact_hips.shifted(legs[1], still)]
    together = contact_hips.kept_feet(legs, moved, solve)
    assert not np.any(together[1][1]) and together[1][0] is moved[1]  # no move: the leg as it was
    (alone, changed), *_ = contact_hips.kept_feet(legs[:1], moved[:1], solve)
    assert np.array_equal(changed, together[0][1]) and np.any(changed)
    for name in ("heads", "toe", "rotations", "basis"):
        assert np.array_equal(getattr(alone, name), getattr(together[0][0], name)), name


def test_every_holds_eases_at_once_are_each_holds_ease(scene):
    from chain_ik.app.bake import contact_eases
    from chain_ik.solvers import plant, plant_legs, quat

    rng = np.random.default_rng(3)
    plan = SimpleNamespace(blend=6.0)
    inputs = _unit(rng, (80, 3))
    budget = 0.2 + rng.random(80)
    eases = []
    for start, end, following, count in ((5, 20, 30, 1), (30, 50, 53, 3), (60, 70, 80, 9)):
        hold = SimpleNamespace(start=start, end=end)
        after = np.arange(end, min(end + 7, following, 80))
        target = _unit(rng, (3,)) if following - end < 7 else None
        eases.append((hold, after, inputs[after], _unit(rng, (count, 3)), following, target))
    for use in (None, budget):
        together = contact_eases.eased_outs(plan, eases, use)
        for ease, got in zip(eases, together, strict=True):
            assert np.array_equal(got, contact_eases.eased_outs(plan, [ease], use)[0])  # each hold alone
            assert got.shape == (len(ease[3]), len(ease[1]), 3, 4)
    # Each candidate's ease written out frame by frame (its correction converted on every frame).
    for ease, got in zip(eases, contact_eases.eased_outs(plan, eases), strict=True):
        hold, after, inputs_after, corrections, following, target = ease
        last = hold.end - 1
        for g, fix in enumerate(corrections):
            if target is None:
                weight = 1.0 - plant.smooth((after - last) / (plan.blend + 1.0))
                want = plant_legs.faded(inputs_after, fix, weight)
            else:
                weight = plant.smooth((after - last) / float(following - last))
                fixes = np.broadcast_to(fix, inputs_after.shape)
                step = plant_legs.slerp_identity(
                    quat.multiply(quat.conjugate(fixes), np.broadcast_to(target, fixes.shape)), weight
                )
                want = quat.normalize(quat.multiply(quat.multiply(fixes, step), inputs_after))
            assert np.array_equal(got[g], want)


def test_joined_legs_keep_each_frames_figures(scene):
    from chain_ik.rig import plant_read

    rng = np.random.default_rng(1)
    a, b = random_leg(rng, 20), random_leg(rng, 7, turned=False)
    both = plant_read.joined([a, b.rows(np.array([6, 0, 0]))])
    assert len(both.world) == 23
    assert np.array_equal(both.toe_world[:20], a.toe_world)
    assert np.array_equal(both.inverse3()[20:], b.inverse3()[[6, 0, 0]])
    assert np.array_equal(both.armature_turn()[:20], a.armature_turn())
    assert np.array_equal(both.scales()[20:], b.scales()[[6, 0, 0]])
    assert np.allclose(a.scales(), 1.5) and np.allclose(b.scales(), 1.0)


def _planted_job(rng, frames: int, runs, softness: float, turned: bool = True, grounded: bool = True):
    """(leg, plan, softness, tilt, ground_at, largest, first) for contact_legs.solve_legs: a random leg
    planted on `runs` (start, end), over a ground plane just under its lowest tip (`grounded`) or
    none, its joints' speed limit low enough that its holds' push-off is reworked."""
    from chain_ik.solvers import plant

    leg = random_leg(rng, frames, turned)
    planted = np.zeros(frames, dtype=bool)
    for start, end in runs:
        planted[start:end] = True
    if not grounded:
        return (leg, plant.plan(leg.toe_world, planted, FPS), softness, None, None, 0.5, None)
    height = float(leg.toe_world[:, 2].min()) - 0.01
    plan = plant.plan(leg.toe_world, planted, FPS, ground=height)

    def ground_at(points, rows):
        return np.full(len(rows), height)

    return (leg, plan, softness, None, ground_at, 0.5, None)


def test_legs_planted_on_joined_frames_are_each_leg_planted_alone(scene, monkeypatch):
    from chain_ik.app.bake import contact_legs, contact_pitch

    rng = np.random.default_rng(21)
    jobs = [
        _planted_job(rng, 70, ((8, 30), (40, 62)), 0.0, grounded=False),
        _planted_job(rng, 50, ((0, 20), (26, 50)), 0.0, turned=False, grounded=False),  # holds to both ends
        _planted_job(rng, 70, ((8, 30), (40, 62)), 0.0),  # with a ground: joined apart from those without
        _planted_job(rng, 50, ((0, 20), (26, 50)), 0.0, turned=False),
        _planted_job(rng, 40, ((10, 30),), 0.1),  # other softness: solved apart
    ]
    kept = []
    push_off = contact_pitch.push_off

    def counted(*args, **kwargs):
        result = push_off(*args, **kwargs)
        kept.append(result is not None)
        return result

    monkeypatch.setattr(contact_pitch, "push_off", counted)
    together = contact_legs.solve_legs(jobs, FPS)
    assert kept[0]  # the joined legs' push-off reworked (some leg kept it)
    for job, got in zip(jobs, together, strict=True):
        alone = contact_legs.solve_legs([job], FPS)[0]
        assert len(got) == len(alone) == 4
        for a, b in zip(got, alone, strict=True):
            assert np.array_equal(a, b)
        assert np.any(got[2])


def test_the_hips_envelope_at_once_is_the_envelope_shift_by_shift(scene):
    from chain_ik.app.bake import contact_hips
    from chain_ik.solvers import plant

    def shift_by_shift(need, blend):
        out = need.copy()
        span = max(1, int(np.ceil(blend)))
        for k, weight in zip(range(1, span + 1), plant.ease(np.arange(1, span + 1), span + 1).tolist(), strict=True):
            if weight <= 0.0 or k >= len(need):
                break
            out[k:] = np.maximum(out[k:], weight * need[:-k])
            out[:-k] = np.maximum(out[:-k], weight * need[k:])
        return out

    rng = np.random.default_rng(9)
    for frames, blend in ((0, 3.0), (1, 5.0), (7, 30.0), (200, 18.0), (300, 150.0)):  # the last: several row blocks
        need = np.where(rng.random(frames) < 0.7, 0.0, 0.1 * rng.random(frames))
        assert np.array_equal(contact_hips.envelope(need, blend), shift_by_shift(need, blend))
