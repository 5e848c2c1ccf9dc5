"""The bake's one solve path: every chain solved frame after frame from its previous frame's
solution, its keys derived once from the solved local rotations (`rig.modes.series_values`:
quaternion sign, Euler and axis-angle continuity, locks), nothing written until all is solved.

Each chain's frames go through one of two kernels inside that path:
- sequence (`rig.sequence.ChainTrack` + `solvers.solve_sequence`): for a chain whose shape seen
  from its parent is a function of its own rotations. The scene is evaluated only to place the
  targets and poles in the chain's space (not at all when `rig.sampling` can read their curves),
  then the whole range solves in one call; poles, tip goal orientations and IK limits included.
- per frame (`bake_frames.FrameChains`): each frame evaluated with `scene.frame_set` and the chain read
  there with the previous frame's rotations (`rig.fk`), solved with `solvers.solve`. What needs
  it: constraints, locked channels, animated location/scale or inheritance options on chain
  bones, Influence below 1, IK stretch, chains sharing bones or riding on each other, a pole
  chain with animated rotations.

Which kernel served each chain, and why a faster one did not, is kept per chain
(`Solved.reasons`, reported by the Bake operator and cli.py); never a silent fallback.
"""

from __future__ import annotations

import time
from collections.abc import Generator

import numpy as np

from ... import rig
from ...rig import keys, sampling, sequence
from ..spec import ChainSpec, groups
from .bake_frames import FrameChains, Solved, check_rigid_at, stretch_weights

PER_FRAME = "baked frame by frame"
SAMPLED_GROUP = "baked as a tree from the first frame's pose, targets read from their curves"
# Frames per sequence-kernel call in a modal bake (Esc is read between calls).
CHUNK = 64


def frame_reasons(obj, specs: list[ChainSpec]) -> list[str]:
    """Per chain, why it needs the per-frame kernel ('' when the sequence kernel can carry it)."""
    animated = keys.animated_paths(obj)
    chains = [rig.chain_bone_names(obj, s.tip, s.chain_length, s.use_tail) for s in specs]
    reasons = []
    for spec, names in zip(specs, chains, strict=True):
        reason = ""
        if spec.influence < 1.0:
            reason = "influence below 1"
        elif stretch_weights(obj, spec):
            reason = "IK stretch"
        else:
            # With use_tail off the tip bone's head reaches: it must ride rigidly on the chain too.
            reason = sequence.unsuitable(obj, names if spec.use_tail else (*names, spec.tip), animated)
        if not reason and spec.pole is not None:
            # A pole chain starts each frame from its own input pose (solvers.goals), which the
            # sequence kernel reads once: its bones' rotations must not be animated.
            moving = [n for n in names if any(p.startswith(keys.data_path(n, "rotation")) for p in animated)]
            if moving:
                reason = f"bone '{moving[0]}' has animated rotation and the chain a pole target"
        reasons.append(reason)
    # Chains sharing bones are solved together, as a group, frame by frame (app.bake.bake_group).
    for unit in groups.units(obj, specs):
        members = [specs[i] for i in unit.members]
        if unit.is_group or members[0].pin or members[0].aims or members[0].move_root:
            why = "pinned" if members[0].pin else "Move Root (the tree's frames)"
            if members[0].aims:
                why = "aims (the tree's aim pass: solvers.common.aim_goals)"
            if unit.is_group:
                why = f"chains that share bones solved together as one group ({groups.group_label(members)})"
            for i in unit.members:
                reasons[i] = why
    # Chains carried apart must be independent: no chain riding on another's bones (through a
    # parent, an own-bone target or Use Tail off); else both go per frame.
    owner: dict[str, int] = {}
    for i, names in enumerate(chains):
        for name in names:
            owner.setdefault(name, i)
    for i, (spec, names) in enumerate(zip(specs, chains, strict=True)):
        starts = [obj.pose.bones[names[0]].parent]
        if spec.target is obj and spec.target_bone:
            starts.append(obj.pose.bones.get(spec.target_bone))
        if not spec.use_tail:
            starts.append(obj.pose.bones[spec.tip])
        for bone in starts:
            while bone is not None:
                j = owner.get(bone.name, i)
                if j != i:
                    why = f"chain '{spec.label}' moves with chain '{specs[j].label}' (bone '{bone.name}')"
                    reasons[i], reasons[j] = reasons[i] or why, reasons[j] or why
                bone = bone.parent
    return reasons


def solve_frames(
    context, obj, specs: list[ChainSpec], frames: np.ndarray, progress, stepwise: bool = False
) -> Generator[str, None, Solved]:
    """Solve every chain at every frame (yielding 'solve' between frames and chains; with
    `stepwise`, a modal bake, between chunks of CHUNK frames on the sequence kernel too)."""
    scene = context.scene
    n = len(frames)
    why = frame_reasons(obj, specs)
    carried = [i for i, r in enumerate(why) if not r]
    per_frame = FrameChains(obj, [specs[i] for i, r in enumerate(why) if r], n)
    scene.frame_set(int(frames[0]))
    depsgraph = context.evaluated_depsgraph_get()
    obj_eval = obj.evaluated_get(depsgraph)
    tracks = {
        i: sequence.ChainTrack(
            obj_eval,
            specs[i].tip,
            specs[i].chain_length,
            specs[i].use_tail,
            n,
            specs[i].use_limits,
            pole=specs[i].pole is not None,
            rotation=specs[i].use_rotation and specs[i].rotation_weight > 0.0,
        )
        for i in carried
    }
    groups_only = per_frame.groups_only(obj)
    direct = bool(carried or per_frame.specs) and groups_only
    roots = [t.names[0] for t in tracks.values()] + per_frame.group_roots()
    direct = direct and not sampling.armature_static_reason(obj, roots)
    goals = [specs[i] for i in carried] + [s for s in per_frame.specs if not s.pin]
    direct = direct and not sampling.direct_targets_reason(scene, obj, goals)
    # Of the progress: the frame pass (a group solves in it, sampled or not).
    share = 0.0 if direct and not per_frame.specs else (1.0 if not carried else 0.5)
    if direct:
        # Nothing but the targets' (and poles') own location curves moves: evaluate just those.
        for i, track in tracks.items():
            spec = specs[i]
            poles = None if spec.pole is None else sampling.target_positions(spec.pole, frames)
            track.sample_all(
                track.space_to_world(obj_eval), sampling.target_positions(spec.target, frames), frames, poles
            )
        if per_frame.specs:  # groups: every frame in one call each
            per_frame.solve_sampled(frames, obj_eval, depsgraph)
            if progress is not None:
                progress(share, int(frames[-1]))
            yield "solve"
    else:
        for k, frame in enumerate(frames):
            if k:
                scene.frame_set(int(frame))
                depsgraph = context.evaluated_depsgraph_get()
                obj_eval = obj.evaluated_get(depsgraph)
            for i, track in tracks.items():
                spec = specs[i]
                if k:
                    check_rigid_at(obj_eval, track.names, frame)
                goal = rig.evaluated(spec.target, depsgraph)
                pole = None
                if spec.pole is not None:
                    pole = rig.target_world_location(rig.evaluated(spec.pole, depsgraph), spec.pole_bone)
                rotation = None
                if track.rotations is not None:
                    rotation = rig.ik_settings.world_matrix(goal, spec.target_bone)
                target_world = rig.target_world_location(goal, spec.target_bone)
                to_world = track.space_to_world(obj_eval)
                track.sample(k, to_world, target_world, int(frame), obj_eval, pole, rotation)
            per_frame.step(k, frame, obj_eval, depsgraph)
            if progress is not None:
                progress(share * (k + 1) / n, int(frame))
            yield "solve"
    solved = per_frame.result()
    for i in range(len(specs)):
        if why[i]:
            solver = per_frame.solver_reasons.get(specs[i].tip, "")
            notes = per_frame.notes.get(specs[i].tip, "") or (f"solver: {solver}" if solver else "")
            kernel = SAMPLED_GROUP if direct else PER_FRAME
            solved.reasons[specs[i].label] = f"{kernel}: {why[i]}" + (f"; {notes}" if notes else "")
    for j, (i, track) in enumerate(tracks.items()):
        spec = specs[i]
        done = (share + (1.0 - share) * j / len(tracks), (1.0 - share) / len(tracks))

        def report(k: int, done=done) -> None:
            if progress is not None:
                progress(done[0] + done[1] * (k + 1) / n, int(frames[k]))

        # A modal bake (`stepwise`) yields between chunks of frames so Esc can stop it.
        steps = track.solve_in_chunks(spec, report, CHUNK if stepwise else n)
        seconds = 0.0
        while True:
            solve_start = time.perf_counter()
            try:
                next(steps)
            except StopIteration as done:
                solved.worst[spec.tip] = done.value
                break
            finally:
                seconds += time.perf_counter() - solve_start
            yield "solve"
        solved.seconds[spec.tip] = seconds
        solved.reasons[spec.label] = track.reason and f"sequence, {track.reason}"
        for name, table in track.channel_values(obj).items():
            if not np.all(np.isfinite(table)):
                raise ValueError(f"the solved rotation of bone '{name}' is not finite; nothing was keyed")
            solved.values[name] = table
    return solved
