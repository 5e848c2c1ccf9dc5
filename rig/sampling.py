"""Target positions over a frame range without evaluating the scene at every frame.

`scene.frame_set` evaluates everything at a frame (the safe baseline; most of a
fast bake's time on a heavy rig like Rigify's). When provably nothing but a
target's own location F-Curves move what the bake reads, evaluating those
F-Curves (`FCurve.evaluate`, modifiers included) gives the same positions for a
fraction of the cost. "Provably" is kept strict, anything else falls back to
frame_set:
- the armature object: no parent, constraints, rigid body, or animation of its
  transform; the armature data has no animation; each chain root's ancestor
  bones have no constraints and no animated channels (so the chain's space does
  not move);
- each target and pole target: an object (not a bone), no parent, constraints, rigid body or
  drivers; animated only by its active action (no NLA, full influence,
  replace), not layered beyond one layer and strip; its location and
  delta_location curves unmuted; no tip goal orientation (it needs the
  target's rotation);
- no frame-change handlers besides Chain IK's own (they could move anything),
  and no time remapping.
"""

from __future__ import annotations

import bpy
import numpy as np

from .keys import animated_paths, assigned_fcurves, data_path, plays

TRANSFORM_PATHS = ("location", "rotation_", "scale", "delta_", "matrix_")


# app.live marks its handlers (disabled during a bake) with this attribute.
LIVE_HANDLER_MARK = "chain_ik_live_handler"


def frame_handlers_quiet() -> bool:
    handlers = [*bpy.app.handlers.frame_change_pre, *bpy.app.handlers.frame_change_post]
    return all(getattr(h, LIVE_HANDLER_MARK, False) for h in handlers)


def armature_reason(obj) -> str:
    """Why the armature may move or change over frames other than through its object's action
    ('' when it cannot): parented, simulated, constrained, or its data animated."""
    if obj.parent is not None or obj.rigid_body is not None:
        return "the armature is parented or simulated"
    if any(c.enabled and c.influence > 0.0 for c in obj.constraints):
        return "the armature has constraints"
    data = obj.data.animation_data
    if data is not None and (data.action is not None or len(data.drivers) or len(data.nla_tracks)):
        return "the armature data is animated"
    return ""


def armature_static_reason(obj, root_names) -> str:
    """Why the chains' spaces may move over frames ('' when they cannot)."""
    why = armature_reason(obj)
    if why:
        return why
    paths = animated_paths(obj)
    if any(p.startswith(TRANSFORM_PATHS) for p in paths):
        return "the armature object is animated"
    for root in root_names:
        bone = obj.pose.bones[root].parent
        while bone is not None:
            if any(c.enabled and c.influence > 0.0 for c in bone.constraints):
                return f"bone '{bone.name}' has constraints"
            prefix = data_path(bone.name, "")
            if any(p.startswith(prefix) for p in paths):
                return f"bone '{bone.name}' is animated"
            bone = bone.parent
    return ""


def active_curves(ob) -> tuple[str, list]:
    """(why `ob`'s animation is more than its active action's F-Curves, or ''; those F-Curves)."""
    ad = ob.animation_data
    if ad is None or ad.action is None:
        return ("", []) if ad is None or not (len(ad.drivers) or len(ad.nla_tracks)) else ("NLA or drivers", [])
    if len(ad.drivers) or len(ad.nla_tracks) or ad.use_tweak_mode:
        return "NLA or drivers", []
    if ad.action_blend_type != "REPLACE" or ad.action_influence < 1.0:
        return "blended action", []
    action = ad.action
    if hasattr(action, "layers") and (len(action.layers) > 1 or any(len(layer.strips) > 1 for layer in action.layers)):
        return "layered action", []
    return "", assigned_fcurves(ob)


def _target_curves(target) -> tuple[str, list]:
    """(reason it cannot be sampled directly or '', [(path, index, fcurve)])."""
    if target.parent is not None or target.rigid_body is not None:
        return "parented or simulated", []
    if any(c.enabled and c.influence > 0.0 for c in target.constraints):
        return "constraints", []
    reason, curves = active_curves(target)
    if reason:
        return reason, []
    out = []
    for fc in curves:
        if fc.data_path in ("location", "delta_location"):
            if not plays(fc) or not fc.is_valid:
                return "muted location curve", []
            out.append((fc.data_path, fc.array_index, fc))
    return "", out


def direct_targets_reason(scene, obj, specs) -> str:
    """Why `target_positions` cannot stand in for frame_set here ('' when it can)."""
    if scene.render.frame_map_old != scene.render.frame_map_new:
        return "time remapping"
    if not frame_handlers_quiet():
        return "frame change handlers"
    for spec in specs:
        if spec.target_bone:
            return "a bone target"
        if spec.use_rotation and spec.rotation_weight > 0.0:
            return "a tip goal orientation (the target's rotation)"
        reason = _target_curves(spec.target)[0]
        if reason:
            return f"target '{spec.target.name}': {reason}"
        if spec.pole is not None:
            if spec.pole_bone:
                return "a bone pole target"
            reason = _target_curves(spec.pole)[0]
            if reason:
                return f"pole target '{spec.pole.name}': {reason}"
    return ""


def target_positions(target, frames: np.ndarray) -> np.ndarray:
    """(m, 3) world locations of an object target checked by `direct_targets_reason`."""
    _, curves = _target_curves(target)
    base = {"location": np.array(target.location[:]), "delta_location": np.array(target.delta_location[:])}
    parts = {path: np.tile(value, (len(frames), 1)) for path, value in base.items()}
    for path, index, fc in curves:
        parts[path][:, index] = curve_values(fc, frames)
    return parts["location"] + parts["delta_location"]


def curve_values(fc, frames: np.ndarray, seen: dict | None = None, read: dict | None = None, key=None) -> np.ndarray:
    """(F,) `fc` as playback evaluates it at (action) `frames`. Blender's F-Curve evaluation returns a
    key's own value at its frame (whatever the interpolation), so on frames that are keys (a
    capture keyed on every frame) the keys are read in one call; modifiers, and the frames between
    keys, go through `FCurve.evaluate`. `seen` (a dict, one per `frames`): where each frame falls
    among key times already looked up, by those times (an action's curves mostly share them).
    `read` (a dict): the keys' co as read (float32, 2 per key) put there under `key`, for a writer of
    the same curve that follows with nothing in between (rig.keys.write_keys_in's `co`)."""
    count = len(fc.keyframe_points)
    if not count or len(fc.modifiers):
        return np.array([fc.evaluate(float(f)) for f in frames.tolist()])
    co = np.empty(2 * count, dtype=np.float32)
    fc.keyframe_points.foreach_get("co", co)
    if read is not None:
        read[key] = co
    times_key = co[0::2].tobytes()
    found = None if seen is None else seen.get(times_key)
    if found is None:
        times = co[0::2].astype(float)
        at = np.clip(np.searchsorted(times, frames), 0, count - 1)
        on_key = (times[at] == frames) & np.all(times[1:] > times[:-1])
        found = at, np.flatnonzero(~on_key).tolist()
        if seen is not None:
            seen[times_key] = found
    at, between = found
    out = co[1::2][at].astype(float)  # the keys' 32-bit values, exactly as doubles
    for row in between:
        out[row] = fc.evaluate(float(frames[row]))
    return out
