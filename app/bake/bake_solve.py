"""The bake's one solve path: every unit (app.spec.groups: chains sharing bones, or a chain alone)
read by `rig.tree`, its goals built by `app.solve.goals`, solved frame after frame from its
previous frame's solution by the skeleton entry points, its keys derived once from the solved
local rotations (`rig.modes.series_values`: quaternion sign, Euler and axis-angle continuity,
locks), nothing written until all is solved.

Each unit's frames go one of two ways (app.bake.bake_unit.UnitFrames):
- carried: when the unit's shape seen from its top bone's parent is a function of its own
  rotations (`bake_paths.carry_reason`), it is read once in that parent's space and every frame
  solved in one `solvers.solve_skeleton_sequence` call. A chain alone (one effector, not pinned)
  is carried whenever it can be: the scene is evaluated only to place its goals in that space
  (not at all when `rig.sampling` can read their curves), and the core's chain sequence kernel
  (`solvers.solve_sequence`) solves the whole range. A group, or a chain pinned, aiming or with
  Move Root, which the core solves one frame after another anyway (`bake_paths.frame_after_frame`),
  is carried only when no frame needs evaluating at all.
- frame by frame: each frame evaluated with `scene.frame_set`, the unit read there (bones above it
  solved earlier in the frame through `rig.fk`) and solved with `solvers.solve_skeleton_next`.

Which way each chain went, and why a faster one did not serve, is kept per chain
(`Solved.reasons`, reported by the Bake operator and cli.py); never a silent fallback.
"""

from __future__ import annotations

from collections.abc import Generator

import numpy as np

from ... import rig
from ...rig import keys, sampling
from ..spec import ChainSpec, groups
from .bake_frames import FrameUnits, Solved
from .bake_paths import carry_reason, frame_after_frame, stretch_weights  # noqa: F401 - app.bake's name

PER_FRAME = "baked frame by frame"
SAMPLED_GROUP = "baked as a tree from the first frame's pose, targets read from their curves"
# Frames per carried call in a modal bake (Esc is read between calls).
CHUNK = 64


class ChainsRead:
    """What the bake's solve reads of its chains before any frame is set, read once and shared by
    `frame_reasons`, `riding` and `FrameUnits`: the units (app.spec.groups.units), each chain's
    bones (root first) and the armature's animated paths (rig.keys.animated_paths). `chains` and
    `units`: the bones and units app.bake read of the same specs before the solve, when it has."""

    def __init__(self, obj, specs: list[ChainSpec], chains: list | None = None, units: list | None = None) -> None:
        self.animated = keys.animated_paths(obj)
        if chains is None:
            chains = [rig.chain_bone_names(obj, s.tip, s.chain_length, s.use_tail) for s in specs]
        self.chains = chains
        self.units = groups.units(obj, specs, chains) if units is None else units


def frame_reasons(obj, specs: list[ChainSpec], known: ChainsRead | None = None) -> list[str]:
    """Per chain, why the core's chain sequence kernel cannot carry it through every frame in one
    call ('' when it can): in a group, pinned, aiming or with Move Root (the core solves those
    frame after frame: `bake_paths.frame_after_frame`), or
    its unit cannot be carried (`bake_paths.carry_reason`), or it rides on another unit's bones.
    `known`: what the caller read of `specs` already (`ChainsRead`)."""
    known = known or ChainsRead(obj, specs)
    animated, chains = known.animated, known.chains
    reasons = [""] * len(specs)
    for unit in known.units:
        members = [specs[i] for i in unit.members]
        why = frame_after_frame(members) or carry_reason(obj, members, chains[unit.members[0]], animated)
        for i in unit.members:
            reasons[i] = why
    # Chains carried apart must be independent: no chain riding on another's bones (through a
    # parent, an own-bone target or Use Tail off); else both go frame by frame.
    for i, j, bone in riding(obj, specs, chains, known.units):
        why = f"chain '{specs[i].label}' moves with chain '{specs[j].label}' (bone '{bone}')"
        reasons[i], reasons[j] = reasons[i] or why, reasons[j] or why
    return reasons


def riding(obj, specs: list[ChainSpec], chains, units: list | None = None) -> list[tuple[int, int, str]]:
    """(i, j, bone): chain i moves with the bone of chain j of another unit (through its top
    bone's parents, a target bone of its own armature, or its Use Tail off tip). `units`:
    groups.units(obj, specs) when known."""
    units = groups.units(obj, specs) if units is None else units
    unit_of = {i: k for k, unit in enumerate(units) for i in unit.members}
    owner: dict[str, int] = {}
    for i, names in enumerate(chains):
        for name in names:
            owner.setdefault(name, i)
    out = []
    for i, (spec, names) in enumerate(zip(specs, chains, strict=True)):
        starts = [obj.pose.bones[names[0]].parent]
        if spec.target is obj and spec.target_bone:
            starts.append(obj.pose.bones.get(spec.target_bone))
        if not spec.use_tail:
            starts.append(obj.pose.bones[spec.tip])
        for bone in starts:
            while bone is not None:
                j = owner.get(bone.name, i)
                if unit_of[j] != unit_of[i]:
                    out.append((i, j, bone.name))
                bone = bone.parent
    return out


def solve_frames(
    context,
    obj,
    specs: list[ChainSpec],
    frames: np.ndarray,
    progress,
    stepwise: bool = False,
    read: tuple[list, list] | None = None,
) -> Generator[str, None, Solved]:
    """Solve every unit at every frame (yielding 'solve' between frames; with `stepwise`, a modal
    bake, between chunks of CHUNK frames of a carried unit too). `read`: (each spec's bones, the
    units) when the caller read them before any frame was set (ChainsRead)."""
    scene = context.scene
    n = len(frames)
    known = ChainsRead(obj, specs, *(read or ()))  # read once, before any frame is set
    why = frame_reasons(obj, specs, known)
    state = FrameUnits(obj, specs, n, known.units, known.chains)
    reason = {id(unit): why[unit.members[0]] for unit in state.units}
    # The chains the sequence kernel carries (evaluating each frame if it must); the other units
    # too when every one can be carried and nothing but the goals' own curves moves (no frame
    # evaluated at all). A chain alone that the sequence kernel cannot carry goes frame by frame.
    carried = [u for u in state.units if not reason[id(u)]]
    others = [u for u in state.units if reason[id(u)]]
    animated = known.animated
    direct = all(frame_after_frame(u.specs) and not u.carry_reason(obj, animated) for u in others)
    direct = direct and not riding(obj, specs, known.chains, known.units)
    direct = direct and not sampling.armature_static_reason(obj, [r for u in state.units for r in u.roots])
    direct = direct and not sampling.direct_targets_reason(scene, obj, [s for s in specs if not s.pin])
    if direct:
        carried, others = state.units, []
    state.per_frame = others
    scene.frame_set(int(frames[0]))
    depsgraph = context.evaluated_depsgraph_get()
    obj_eval = obj.evaluated_get(depsgraph)
    state.first_frame(obj_eval)
    for unit in carried:
        unit.carry(obj_eval, int(frames[0]), depsgraph)
    # Of the progress: the frame pass (units frame by frame solve in it).
    share = 0.0 if direct else (1.0 if not carried else 0.5)
    if direct:
        for unit in carried:  # nothing but the goals' own location curves moves: evaluate just those
            unit.sample_curves(frames, obj_eval)
    else:
        for k, frame in enumerate(frames):
            if k:
                scene.frame_set(int(frame))
                depsgraph = context.evaluated_depsgraph_get()
                obj_eval = obj.evaluated_get(depsgraph)
            for unit in carried:
                unit.sample(k, frame, obj_eval, depsgraph)
            state.step(k, frame, obj_eval, depsgraph)
            if progress is not None:
                progress(share * (k + 1) / n, int(frame))
            yield "solve"
    for j, unit in enumerate(carried):
        done = (share + (1.0 - share) * j / len(carried), (1.0 - share) / len(carried))

        def report(k: int, done=done) -> None:
            if progress is not None:
                progress(done[0] + done[1] * (k + 1) / n, int(frames[k]))

        # A modal bake (`stepwise`) yields between chunks of frames so Esc can stop it.
        for _ in unit.solve_carried(state, CHUNK if stepwise else n, report):
            yield "solve"
    solved = state.result(float(keys.action_frames(obj, np.asarray(frames[-1:], dtype=float))[0]))
    solved.posed = bool(others)  # only a unit solved frame by frame writes the pose (bake_unit.step)
    kernel = SAMPLED_GROUP if direct else PER_FRAME
    for unit in state.units:
        for spec in unit.specs:
            if not reason[id(unit)]:  # the sequence kernel's own reason, when its faster kernel did not serve
                solved.reasons[spec.label] = unit.carried_reason and f"sequence, {unit.carried_reason}"
            else:
                notes = unit.reason
                solved.reasons[spec.label] = f"{kernel}: {reason[id(unit)]}" + (f"; {notes}" if notes else "")
    return solved
