"""Which way a bake unit's frames go, and why not the faster one (app.bake.bake_solve decides):
carried in its top bone's parent space when its shape there depends on its own rotations only
(`carry_reason`), through the core's chain sequence kernel when it is a chain alone
(`frame_after_frame`), else frame by frame (app.bake.bake_unit.UnitFrames)."""

from __future__ import annotations

from ... import rig
from ...rig import keys, read, sequence
from ..spec import ChainSpec
from ..spec.groups import group_label


def stretch_weights(obj, spec: ChainSpec) -> list[float] | None:
    """The chain bones' ik_stretch when the chain stretches (rig.stretch), else None (an aim never does)."""
    if spec.aims:
        return None
    return rig.stretch.weights(obj, spec.tip, spec.chain_length, spec.use_tail, spec.use_stretch)


def check_rigid_at(obj_eval, names, frame) -> None:
    """The first frame's rigidity check again at a later frame: a parent's animated scale can
    turn non-uniform part way through, which would shear the chain."""
    try:
        read.check_rigid_bones(obj_eval, names)
    except ValueError as exc:
        raise ValueError(f"{exc} (at frame {int(frame)}); nothing was keyed") from None


def continues(specs: list[ChainSpec]) -> bool:
    """Whether each frame starts from the last frame's solution alone (one effector, not a pin, no
    pole: `solvers.solve_skeleton_next`), so the unit's own input rotations may be animated. An
    aim turns from each frame's input rotations (solvers.common.aim_goals): it does not."""
    return len(specs) == 1 and not specs[0].pin and specs[0].pole is None and not specs[0].aims


def frame_after_frame(specs: list[ChainSpec]) -> str:
    """Why the core solves the unit of `specs` one frame after another rather than through the
    chain sequence kernel ('' when that kernel can carry it): a group, a pin, an aim, Move Root."""
    lead = specs[0]
    if len(specs) > 1:
        return f"chains that share bones solved together as one group ({group_label(specs)})"
    if lead.pin:
        return "pinned"
    if lead.aims:
        return "aims (the tree's aim pass: solvers.common.aim_goals)"
    if lead.move_root:
        return "Move Root (the tree's frames)"
    return ""


def carry_reason(obj, specs: list[ChainSpec], names, animated: set[str]) -> str:
    """Why the unit of `specs` (its bones `names`) cannot be carried in its top bone's parent
    space ('' when it can): its shape there must be a function of its own rotations, and what
    its frames start from must not move."""
    if specs[0].influence < 1.0:
        return "influence below 1"
    if any(stretch_weights(obj, s) for s in specs):
        return "IK stretch"  # each frame's bone lengths follow its targets
    # With Use Tail off a chain's tip bone rides on it and its head is the goal point.
    riding = [s.tip for s in specs if not s.use_tail and s.tip not in names]
    why = sequence.unsuitable(obj, (*names, *riding), animated)
    if why or continues(specs):
        return why
    # Every frame starts from its own input pose (a pole, several effectors, a pin): it must not move.
    moving = [n for n in names if any(p.startswith(keys.data_path(n, "rotation")) for p in animated)]
    if not moving:
        return ""
    if len(specs) == 1 and specs[0].pole is not None and not specs[0].pin and not specs[0].aims:
        return f"bone '{moving[0]}' has animated rotation and the chain a pole target"
    return f"bone '{moving[0]}' has animated rotation (each frame starts from its own pose)"
