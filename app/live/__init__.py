"""Live mode: re-solve chains marked `live` when their target or the armature moves.

A depsgraph_update_post (and frame_change_post) handler. No feedback loop:
each live chain remembers a signature of what it depends on from outside the
chain (target location, and orientation with Rotation on, pole location, armature
matrix, the root's parent pose, settings, the chain bones' IK settings) and
is solved only when that changed. Writing the pose changes none of those, so
the update our own write causes finds nothing to do. The handlers are added
in register() and removed in unregister().

The handler runs on every depsgraph update of every scene, so it must cost
nothing where no chain is live: it visits only the armatures that had a live
chain when it last looked (`_watch`), looking again over all objects only when
their count changes, a watched name disappears or no longer has a live chain
(renamed, deleted, switched off, names swapped), the frame changes (the switch
may be animated), a file is loaded, an undo or redo happens, or a chain is
switched to Live.
"""

from __future__ import annotations

import sys

import bpy
from bpy.app.handlers import persistent

from ... import properties, rig
from ...rig import protected
from ...rig.sampling import LIVE_HANDLER_MARK
from .. import checks, solve, spec
from ..solve.result import measured_angle, measured_error, store_result
from ..spec import groups

# Per live unit: (armature, chain index) for a lone chain, (armature, member indices) for a group.
_signatures: dict[tuple, tuple] = {}
_busy = False


def _signature(obj_eval, s: spec.ChainSpec, names: tuple[str, ...] | None, depsgraph) -> tuple:
    """What a lone chain (spec `s`, its bones `names`, None when they cannot be found) reads from
    outside itself, as plain values (module docstring)."""
    parts = [tuple(map(tuple, obj_eval.matrix_world)), *_goal_parts(s, depsgraph)]
    if names is None:
        parts.append(None)
    else:
        parent = obj_eval.pose.bones[names[0]].parent
        if parent is not None:
            parts.append(tuple(map(tuple, parent.matrix)))
        parts.append(_bone_parts(obj_eval, s, names))
    return tuple(parts)


def _goal_parts(s: spec.ChainSpec, depsgraph) -> list:
    """A chain's settings (its spec: every value the solve reads from the chain) and its target's
    and pole's placement, as plain values."""
    parts: list = [s]
    if s.target is not None:
        try:
            target_eval = rig.evaluated(s.target, depsgraph)
            parts.append(rig.space.target_world_point(target_eval, s.target_bone))
            if s.use_rotation:  # the target's orientation is a goal too
                parts.append(tuple(map(tuple, rig.ik_settings.world_matrix(target_eval, s.target_bone))))
        except ValueError:
            parts.append(None)
    if s.pole is not None:
        try:
            pole_eval = rig.evaluated(s.pole, depsgraph)
            parts.append(rig.space.target_world_point(pole_eval, s.pole_bone))
        except ValueError:
            parts.append(None)
    return parts


def _bone_parts(obj_eval, s: spec.ChainSpec, names) -> tuple:
    """The chain bones' IK settings (and stretch) that the solve reads."""
    parts = []
    if s.use_limits:
        parts.append(rig.ik_settings.settings_signature(obj_eval, names))
    if s.use_stretch:  # the stretch channels are the solve's own output (divided out on reading)
        parts.append(tuple(obj_eval.pose.bones[n].ik_stretch for n in names))
    return tuple(parts)


# Names of the objects that had a live chain when last looked at (the `live` switch adds to it).
_watch = properties.live_armatures
_scanned = -1  # len(bpy.data.objects) then; -1: look again


def forget_watch() -> None:
    global _scanned
    _scanned = -1
    groups.forget()  # the units are cached per armature; bones may have been re-parented


def _has_live(obj) -> bool:
    return obj.type == "ARMATURE" and any(c.live for c in obj.chain_ik.chains)


def _live_armatures(scene) -> list:
    """The armatures of `scene` with a live chain, visiting only watched ones (see above)."""
    global _scanned
    objects = bpy.data.objects
    for again in (False, True):
        if again or _scanned != len(objects):
            _watch.clear()
            _watch.update(o.name for o in objects if _has_live(o))
            _scanned = len(objects)
        found, stale = [], False
        for name in _watch:
            obj = objects.get(name)
            if obj is None or not _has_live(obj):
                stale = True  # switched off, or names swapped: look at everything again
            elif scene.objects.get(name) == obj:
                found.append(obj)
        if not stale:
            break
    return found


def solve_live(scene, depsgraph, errors: list | None = None) -> int:
    """Solve every live chain in `scene` whose inputs changed; returns how many were solved.
    A live chain sharing bones with others is solved with its whole group (app.spec.groups). A chain
    that cannot be solved is printed once, or, given `errors`, added there as (armature, chain
    names, why) for the caller to say."""
    solved = 0
    for obj in _live_armatures(scene):
        if obj.mode != "EDIT":
            solved += _solve_armature(obj, depsgraph, errors)
    # Armatures with no live chain left (all switched off, or deleted): a fresh start when they are again.
    objects = bpy.data.objects
    _forget(lambda key: not (key[0] in objects and _has_live(objects[key[0]])))
    return solved


def _solve_armature(obj, depsgraph, errors: list | None) -> int:
    """Solve `obj`'s live units whose inputs changed, in the units' order (app.spec.groups), and
    store each chain's result measured on the pose they all wrote; the number of chains solved.

    The pose is evaluated once after the last write, not after each unit: a unit is read on the
    pose as evaluated, so before one that reads a bone written since (hanging below it, or riding on
    it through constraints or drivers, its target or pole: `_reads_any`) the pose is evaluated first. Units
    that do not depend on one another (five separate limbs) thus cost one evaluation, not five."""
    chains = obj.chain_ik.chains
    live_keys = set()
    written: set[str] = set()  # bones written since the pose was last evaluated
    carriers: dict = {}  # app.checks.carried_by's memo: writing poses changes no parent, constraint or driver
    done = []  # (items, key, outcomes) solved and written, measured once the pose is evaluated
    for members in groups.panel_units(obj):
        items = [chains[i] for i in members]
        if not any(item.live for item in items):
            continue
        alone = len(members) == 1 and not items[0].pin  # watched as a chain (its key: the chain)
        key = (obj.name, members[0]) if alone else (obj.name, members)
        live_keys.add(key)
        try:
            # Each chain's settings read once: its spec serves the change signature and the solve.
            specs = [spec.spec_from_item(item) for item in items]
            names = [_chain_names(obj, s) for s in specs]
            if written and _reads_any(obj, specs, names, written, carriers):
                depsgraph.update()  # `_busy` keeps this update from running the handler again
                written.clear()
            outcomes = _solve_unit(obj, obj.evaluated_get(depsgraph), specs, names, alone, key, depsgraph, written)
        except Exception as exc:  # noqa: BLE001 - one chain's error must not stop the others
            _failed(obj, items, key, exc, errors)
        else:
            if outcomes:
                done.append((items, key, outcomes))
    _forget(lambda key: key[0] == obj.name and key not in live_keys)
    if written:
        depsgraph.update()
    solved = 0
    for items, key, outcomes in done:
        # Measured on the written pose (locks, influence, constraints and drivers can make it differ
        # from the solver's), once every unit has written.
        try:
            for item, outcome in zip(items, outcomes, strict=True):
                error = measured_error(depsgraph, obj, outcome.spec, outcome.goal_world)
                store_result(item, outcome, error, obj, measured_angle(depsgraph, obj, outcome.spec))
        except Exception as exc:  # noqa: BLE001
            _failed(obj, items, key, exc, errors)
        else:
            _reported.pop(key, None)  # solved (not merely unchanged): a later failure is news again
            solved += len(items)
    return solved


def _failed(obj, items, key, exc: Exception, errors: list | None) -> None:
    """A unit's error: printed once, or added to `errors` (see solve_live)."""
    if errors is None:
        what = f"chain '{items[0].name}'" if len(items) == 1 else f"group '{' + '.join(i.name for i in items)}'"
        _report_once(key, obj, what, exc)
    else:
        errors.append((obj, tuple(item.name for item in items), _message(exc)))


def _chain_names(obj, s: spec.ChainSpec) -> tuple[str, ...] | None:
    """The bones chain `s` of `obj` rotates, None when they cannot be found (its solve says why)."""
    try:
        return groups.chain_names(obj, s)
    except ValueError:
        return None


def _reads_any(obj, specs, names, bones: set[str], memo: dict) -> bool:
    """Whether the unit of chains `specs` (their bones `names`, `_chain_names`) of `obj` reads any
    of `bones` (of `obj`): its own bones, the armature object, its targets and poles ride on one of
    them (app.checks.carried_by: bone and object parents, constraints, drivers). A chain whose bones
    cannot be found reads none (its solve says why)."""
    starts = [(obj, "", False)]
    for s, chain in zip(specs, names, strict=True):
        if chain is not None:
            starts += [(obj, name, False) for name in chain]
        starts += [(s.target, s.target_bone, False), (s.pole, s.pole_bone, False)]
    carried = checks.carried_by(starts, memo)
    return any(bone in bones and ob == obj for ob, bone in carried)


def _forget(which) -> None:
    """Drop the signatures and printed errors of the units (lone chains, groups) `which` picks: no
    longer live, or no longer made of the same chains. Live again, each is solved, and a failure
    printed, afresh."""
    for key in [key for key in (*_signatures, *_reported) if which(key)]:
        _signatures.pop(key, None)
        _reported.pop(key, None)


def _group_signature(obj, obj_eval, specs, names, depsgraph) -> tuple:
    """`_signature` of a group's chains (`specs`, their bones `names`), and of the pose it hangs from."""
    chains = [groups.chain_names(obj, s) if n is None else n for s, n in zip(specs, names, strict=True)]
    union = dict.fromkeys(n for chain in chains for n in chain)
    parts = [tuple(map(tuple, obj_eval.matrix_world))]
    for s, chain in zip(specs, chains, strict=True):
        parts += _goal_parts(s, depsgraph)
        parts.append(_bone_parts(obj_eval, s, chain))
    # The pose the group hangs from (its own bones move with every solve: not watched).
    pose = obj_eval.pose.bones
    parents = {pose[n].parent.name for n in union if pose[n].parent is not None} - set(union)
    parts += [tuple(map(tuple, pose[p].matrix)) for p in sorted(parents)]
    return tuple(parts)


def _solve_unit(obj, obj_eval, specs, names, alone: bool, key, depsgraph, written: set[str]) -> list:
    """Solve one live unit (a chain alone, or a group with a live chain: `specs`, their bones
    `names`) and write its pose if its inputs changed, adding the bones written to `written`; its
    outcomes ([] when unchanged)."""
    if alone:
        sig = _signature(obj_eval, specs[0], names[0], depsgraph)
    else:
        sig = _group_signature(obj, obj_eval, specs, names, depsgraph)
    if _signatures.get(key) == sig:
        return []
    _signatures[key] = sig  # before solving: a failing unit is not retried until something changes
    refusal = protected.pose_refusal(obj)  # a library file saved with Live on
    if refusal:
        raise ValueError(refusal)
    outcomes = solve.solve_unit(obj, specs, depsgraph)
    for outcome in outcomes:
        write = outcome.write
        written.update(write.values, write.scales, write.locations)
        solve.apply_write(obj, write)
    return outcomes


_reported: dict[tuple, str] = {}  # live unit (as `_signatures`) -> the error last printed for it


def _message(exc: Exception) -> str:
    return f"{type(exc).__name__}: {exc}" if not isinstance(exc, ValueError) else str(exc)


def _report_once(key, obj, what: str, exc: Exception) -> None:
    """Print a live unit's error (`what`: "chain 'X'" or "group 'X + Y'", by their names in the
    list) to the console once (the handler runs on every update; an operator's report is not
    available there); Solve reports the same error in words."""
    message = _message(exc)
    if _reported.get(key) != message:
        _reported[key] = message
        print(f"Chain IK Live: {what} of '{obj.name}' not solved: {message}", file=sys.stderr)


def solve_again(obj) -> None:
    """Solve `obj`'s live chains at the next update even where nothing they read changed."""
    for key in [key for key in _signatures if key[0] == obj.name]:
        del _signatures[key]


def follow_frame(scene, depsgraph) -> list[tuple[object, tuple[str, ...], str]]:
    """What Live does on a frame change, for a bake that steps through frames with the handler held
    off (`set_busy`): the live chains whose inputs changed are solved, as on playback. Returns
    (armature, chain names, why) for those that could not be (not printed: the bake says it)."""
    forget_watch()
    errors: list = []
    solve_live(scene, depsgraph, errors)
    return errors


def switch_off(obj, bones) -> tuple[str, ...]:
    """Switch Live off on `obj`'s chains that pose any of `bones` (a bake just keyed them:
    Live would solve them again over the keys). Returns those chains' names."""
    bones = set(bones)
    names = []
    for item in obj.chain_ik.chains:
        if not item.live:
            continue
        try:
            chain = rig.chain_bone_names(obj, item.tip, item.chain_length, item.use_tail)
        except ValueError:
            chain = ()  # a chain Live cannot solve poses nothing
        if bones.intersection(chain):
            item.live = False
            names.append(item.name)
    return tuple(names)


def is_busy() -> bool:
    return _busy


def set_busy(state: bool) -> None:
    """Bake sets this while it steps through frames: Live must not pose the rig meanwhile."""
    global _busy
    _busy = state


@persistent
def on_update(scene, depsgraph=None) -> None:
    global _busy
    if _busy:
        return
    _busy = True
    try:
        depsgraph = depsgraph if depsgraph is not None else bpy.context.evaluated_depsgraph_get()
        _watch_updated(depsgraph)
        solve_live(scene, depsgraph)
    finally:
        _busy = False


def _watch_updated(depsgraph) -> None:
    """Armatures this update touched (a new copy, say) that have a live chain start being watched:
    the update lists only what changed, so this costs little."""
    for update in depsgraph.updates:
        ob = update.id
        if isinstance(ob, bpy.types.Armature):
            groups.forget()  # bones edited (re-parented, renamed): which chains share bones may change
        elif isinstance(ob, bpy.types.Object) and ob.name not in _watch and _has_live(ob):
            _watch.add(ob.name)


@persistent
def on_load(*_args) -> None:
    """A newly loaded (or reverted) file starts unsolved: forget the signatures of the last one."""
    _signatures.clear()
    _reported.clear()
    groups.forget()
    forget_watch()


@persistent
def on_frame(scene, depsgraph=None) -> None:
    """Frame change: the `live` switches themselves may be animated (no property update runs
    then), so look over all objects again (once per frame, as before watching), then solve."""
    forget_watch()
    on_update(scene, depsgraph)


@persistent
def on_undo(*_args) -> None:
    """Undo and redo can switch chains to Live or back without the property's update running."""
    forget_watch()


# Marked so that rig.sampling tells them from other add-ons' frame handlers (which rule out
# sampling a bake's targets without frame_set).
for _fn in (on_update, on_frame, on_load, on_undo):
    setattr(_fn, LIVE_HANDLER_MARK, True)

HANDLERS = (
    (bpy.app.handlers.depsgraph_update_post, on_update),
    (bpy.app.handlers.frame_change_post, on_frame),
    (bpy.app.handlers.load_post, on_load),
    (bpy.app.handlers.undo_post, on_undo),
    (bpy.app.handlers.redo_post, on_undo),
)


def register_handlers() -> None:
    for handlers, fn in HANDLERS:
        if fn not in handlers:
            handlers.append(fn)


def unregister_handlers() -> None:
    # By identity and by name: a reloaded module leaves an older function object.
    for handlers, fn in HANDLERS:
        for old in [h for h in handlers if h is fn or _is_ours(h, fn.__name__)]:
            handlers.remove(old)
    _signatures.clear()
    _reported.clear()
    groups.forget()
    _watch.clear()
    forget_watch()


def _is_ours(fn, name: str) -> bool:
    return getattr(fn, "__module__", None) == __name__ and getattr(fn, "__name__", None) == name
