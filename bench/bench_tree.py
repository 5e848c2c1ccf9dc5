"""Trees: several effectors on shared bones against Blender's legacy tree IK, same rig, same run (issue 10).

Run inside a bpy venv:  <venv>/bin/python bench/bench_tree.py [--poses 100] [--frames 120] [--repeats 3] [--quick]

Rig: Rigify's human metarig (the object at the origin, rest pose as every solve's input pose).
Chains as a Blender user sets them up: an IK constraint on each forearm with Use Tail (the wrist
reaches; the hand follows, as in Rigify's own IK), on the head (spine.006, Use Tail: the top of
the head) and on each shin with Use Tail (the ankle).
- two hands: both forearm chains down to spine.002 (chain_count 5: forearm, upper_arm, shoulder,
  spine.003, spine.002); Blender merges them into one tree at spine.002.
- hands and head: the same and the head down to spine.002 (spine.006 ... spine.002, chain_count 5).
- five from the hips: both forearms, the head and both shins, every chain to the root (chain_count 0).
Targets: the chains' end points in random FK poses of the tree's bones (every local rotation a
random rotation vector within --angle of the rest: jointly reachable). Conflicting: each target
moved along the line from the tree root's head to it until it is 0.2 beyond its chain's reach
(the sum of the head-to-head links down its branch and the end bone's length): no tip can
reach, the goal is the least-squares compromise (all weights 1), reported as the mean over
poses of the sum of squared tip errors.
- Blender: IK constraints (legacy solver, its default 500 iterations) with empties as targets.
  Per pose: move the empties, write the tree root's rotation channel (so the armature is
  re-evaluated with and without IK alike) and `view_layer.update()`; only the update is timed.
  The floor is the same loop with the constraints muted; "net" = with - without.
- Chain IK: rig.tree.read_tree once (the rest pose), then per pose `solvers.solve_skeleton`
  (effectors built inside the timed call) with tolerance 1e-5 for every method in
  solvers.REGISTRY; a method without a tree kernel shows "not available".
- Reach: share of poses with every tip within 1e-4 (and 1e-3) of its target; worst tip error.
  Rotation cost: the sum over the tree's bones of each local rotation's angle from the input
  pose (degrees, mean over poses): how far the solve turned the joints (Blender's read from its
  evaluated pose matrices through the same skeleton).
- Bake (--frames frames, targets keyed every frame on a smooth FK motion through random poses):
  Blender: the constraints + bpy.ops.nla.bake(visual_keying=True, clear_constraints=True,
  only_selected=True, bake_types={'POSE'}) on the tree's bones. Chain IK: its own bake (what the
  Bake operator runs, app.bake.bake) of panel chains set as the constraints, tolerance 1e-5: one
  group, solved per frame from the previous frame's solution. CPU time (time.process_time) per
  frame; in brackets the wall clock's and the part of a frame spent solving (wall clock). "vs
  Blender" and the goals compare each side's CPU time or its wall clock where less (bench/timing.py
  cost: Blender's depsgraph may run on two cores). Worst tip error on playback (in brackets, the
  worst the bake reported for its solutions: a bake plays back as well as it solved, within
  Blender's float32 floor, measured in the same pass: how far Blender's evaluation of the keyed
  pose lies from float64 forward kinematics of the same channels, up to 2.4e-6 on the metarig).
Prints one Markdown table per case and issue 20 item 5's goals, met or not. Timings: --repeats
interleaved passes over the same poses; each pose's fastest pass, averaged over the poses; bakes:
--repeats rounds of every side's bake, the order turning each round (bench/timing.py), each side's
least cost (the same measure).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import bpy
import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))

from blender_bench import bake_action, chosen_methods, exit_after_main, load_extension, select_only  # noqa: E402
from tables import print_cases  # noqa: E402
from timing import Clock, alternated, cost  # noqa: E402
from tree_tables import goals, table  # noqa: E402

ARMS = [("forearm.L", 5, True), ("forearm.R", 5, True)]
CASES = {
    "two hands": ARMS,
    "hands and head": [*ARMS, ("spine.006", 5, True)],
    "five from the hips": [
        ("forearm.L", 0, True),
        ("forearm.R", 0, True),
        ("spine.006", 0, True),
        ("shin.L", 0, True),
        ("shin.R", 0, True),
    ],
}
REACHED, LOOSE = 1e-4, 1e-3
SOLVE_TOLERANCE = 1e-5
BEYOND = 0.2


def metarig():
    bpy.ops.wm.read_homefile(use_empty=True)
    bpy.ops.object.armature_human_metarig_add()
    obj = bpy.context.object
    bpy.ops.object.mode_set(mode="POSE")
    return obj


def evaluated(obj):
    depsgraph = bpy.context.evaluated_depsgraph_get()
    return obj.evaluated_get(depsgraph)


def random_locals(local0: np.ndarray, rng, angle: float, quat) -> np.ndarray:
    return quat.multiply(local0, quat.from_rotation_vector(rng.uniform(-angle, angle, local0.shape[:-1] + (3,))))


def fk_targets(skeleton, poses: np.ndarray, bones: list[int]) -> np.ndarray:
    """(poses, effectors, 3): the end points of `bones` in each pose (armature space)."""
    return np.array([skeleton.forward(local)[2][bones] for local in poses])


def out_of_reach(skeleton, local0, bones: list[int], targets: np.ndarray) -> np.ndarray:
    _, heads, _ = skeleton.forward(local0)
    out = np.empty_like(targets)
    for k, bone in enumerate(bones):
        branch = skeleton.branch(bone)
        reach = sum(np.linalg.norm(skeleton.offsets[b]) for b in branch[1:]) + skeleton.lengths[bone]
        d = targets[:, k] - heads[branch[0]]
        out[:, k] = heads[branch[0]] + d / np.linalg.norm(d, axis=1)[:, None] * (reach + BEYOND)
    return out


def rotation_cost(skeleton, local0, local, quat) -> float:
    return float(np.degrees(quat.angle(quat.multiply(quat.conjugate(local0), local))).sum())


def locals_from_frames(skeleton, frames: np.ndarray, quat) -> np.ndarray:
    """L_i = (F_parent R_i)^-1 F_i: the local rotations of a pose given by its bone frames."""
    out = np.empty_like(frames)
    for i, p in enumerate(skeleton.parents):
        parent = skeleton.base_frame if p == -1 else frames[p]
        out[i] = quat.multiply(quat.conjugate(quat.multiply(parent, skeleton.reference[i])), frames[i])
    return out


def add_constraints(obj, chains, empties=None) -> list:
    """IK constraints (legacy solver) on the chains' tips, targeting `empties` (default: new ones)."""
    obj.pose.ik_solver = "LEGACY"
    if empties is None:
        empties = []
        for k in range(len(chains)):
            empties.append(bpy.data.objects.new(f"Target{k}", None))
            bpy.context.scene.collection.objects.link(empties[-1])
    for (tip, count, use_tail), empty in zip(chains, empties, strict=True):
        con = obj.pose.bones[tip].constraints.new("IK")
        con.target, con.chain_count, con.use_tail = empty, count, use_tail
    return empties


def tips_world(obj_eval, chains) -> np.ndarray:
    mw = obj_eval.matrix_world
    pose = obj_eval.pose.bones
    return np.array([(mw @ (pose[t].tail if u else pose[t].head))[:] for t, _, u in chains])


def blender_pass(obj, empties, targets, root: str, chains, names=None, ctx=None) -> tuple[np.ndarray, list]:
    """(seconds per pose's update, per pose (tip errors, local rotations) when `names`: measured)."""
    touch = obj.pose.bones[root]
    total, results = [], []
    # Settle what changed before the pass (muting, a new file) with one untimed update at the first pose.
    for empty, p in zip(empties, targets[0], strict=True):
        empty.location = p
    touch.location = touch.location
    bpy.context.view_layer.update()
    for row in targets:
        for empty, p in zip(empties, row, strict=True):
            empty.location = p
        touch.location = touch.location
        start = time.perf_counter()
        bpy.context.view_layer.update()
        total.append(time.perf_counter() - start)
        if names is not None:
            obj_eval = evaluated(obj)
            errors = np.linalg.norm(tips_world(obj_eval, chains) - row, axis=1)
            frames = np.array([obj_eval.pose.bones[n].matrix.to_quaternion().normalized()[:] for n in names])
            results.append((errors, locals_from_frames(ctx[0], frames, ctx[1])))
    return np.array(total), results


def ours_pass(solvers, skeleton, local0, bones, targets, method) -> tuple[np.ndarray, list] | str:
    """(seconds per pose's solve, per pose (tip errors, local rotations)), or why the method cannot."""
    Effector = solvers.skeleton.Effector
    total, results = [], []
    for row in targets:
        start = time.perf_counter()
        try:
            sol = solvers.solve_skeleton(
                skeleton,
                local0,
                [Effector(b, position=p) for b, p in zip(bones, row, strict=True)],
                method=method,
                tolerance=SOLVE_TOLERANCE,
            )
        except ValueError as exc:
            return "not available" if "one chain at a time" in str(exc) else f"refused: {exc}"
        total.append(time.perf_counter() - start)
        ends = skeleton.forward(sol.local)[2][bones]
        results.append((np.linalg.norm(ends - row, axis=1), sol.local))
    return np.array(total), results


def summary(results, skeleton, local0, quat) -> dict:
    worst = np.array([e.max() for e, _ in results])
    return {
        "reached": float(np.mean(worst <= REACHED)),
        "loose": float(np.mean(worst <= LOOSE)),
        "worst": float(worst.max()),
        "cost": float(np.mean([rotation_cost(skeleton, local0, loc, quat) for _, loc in results])),
        "squares": float(np.mean([np.sum(e * e) for e, _ in results])),
    }


def keyed_targets(chains, targets_per_frame: np.ndarray) -> list:
    empties = []
    for k in range(len(chains)):
        empty = bpy.data.objects.new(f"Target{k}", None)
        bpy.context.scene.collection.objects.link(empty)
        for f, p in enumerate(targets_per_frame[:, k], start=1):
            empty.location = p
            empty.keyframe_insert("location", frame=f)
        empties.append(empty)
    scene = bpy.context.scene
    scene.frame_start, scene.frame_end = 1, len(targets_per_frame)
    return empties


def playback_error(obj, chains, empties, frames: int, tree=None) -> tuple[float, float | None]:
    """(the worst tip error as Blender plays the keys back, and with `tree` (rig.tree) the float32
    floor: how far Blender's evaluation of the keyed pose lies from our float64 forward kinematics
    of the same channels, at worst; Blender keeps channels and matrices in float32)."""
    worst, floor = 0.0, None if tree is None else 0.0
    for f in range(1, frames + 1):
        bpy.context.scene.frame_set(f)
        goals = np.array([e.matrix_world.translation[:] for e in empties])
        obj_eval = evaluated(obj)
        played = tips_world(obj_eval, chains)
        worst = max(worst, float(np.linalg.norm(played - goals, axis=1).max()))
        if tree is not None:
            read = tree.read_tree_read(obj, obj_eval, chains)
            ends = read.skeleton.forward(read.local)[2][list(read.layout.effectors)]
            world = np.asarray(obj_eval.matrix_world)
            ends = ends @ world[:3, :3].T + world[:3, 3]
            floor = max(floor, float(np.linalg.norm(played - ends, axis=1).max()))
    return worst, floor


def bake_blender(chains, motion, names) -> tuple[float, float, None, None, float, None]:
    """(CPU seconds per frame, worst playback error, -, -, wall seconds per frame, -) of Bake Action."""
    obj = metarig()
    empties = add_constraints(obj, chains, keyed_targets(chains, motion))
    bpy.context.view_layer.objects.active = obj
    select_only(obj, names)
    frames = len(motion)
    clock = Clock()
    bake_action(frames)
    seconds, wall = clock.spent()
    return seconds / frames, playback_error(obj, chains, empties, frames)[0], None, None, wall / frames, None


def bake_ours(ext, chains, motion, method) -> tuple[float, float, float, float, float, float]:
    """(CPU seconds per frame, worst playback error, seconds per frame solving, the worst tip error
    the bake reported for its solutions, wall seconds per frame, the playback's float32 floor
    (`playback_error`)): Chain IK's own bake of
    the panel's chains (they share bones: one group, app.spec.groups), as the Bake operator runs it."""
    obj = metarig()
    empties = keyed_targets(chains, motion)
    frames = len(motion)
    bpy.context.view_layer.objects.active = obj
    for (tip, count, use_tail), empty in zip(chains, empties, strict=True):
        item = obj.chain_ik.chains.add()
        length = len(ext.rig.tree.chain_bones(obj, tip, count, use_tail)[0])
        item.name, item.tip, item.chain_length, item.use_tail = tip, tip, length, use_tail
        item.target, item.method, item.tolerance = empty, method, SOLVE_TOLERANCE
    specs = [ext.app.spec.spec_from_item(item) for item in obj.chain_ik.chains]
    # measure=False: the report's playback pass is a check, not baking (Bake Action checks nothing).
    options = ext.app.bake.BakeOptions(frame_start=1, frame_end=frames, measure=False)
    clock = Clock()
    result = ext.app.bake.bake(bpy.context, obj, specs, options)
    seconds, wall = clock.spent()
    solving = sum(result.per_chain_seconds.values())
    played, floor = playback_error(obj, chains, empties, frames, ext.rig.tree)
    return seconds / frames, played, solving / frames, result.worst_error, wall / frames, floor


def smooth_motion(skeleton, local0, bones, rng, frames: int, angle: float, quat) -> np.ndarray:
    """Targets per frame: FK of local rotations blended (normalised lerp) through random key poses."""
    keys_count = max(2, frames // 30 + 1)
    poses = np.array([random_locals(local0, rng, angle, quat) for _ in range(keys_count)])
    t = np.linspace(0.0, keys_count - 1, frames)
    k = np.minimum(t.astype(int), keys_count - 2)
    s = (t - k)[:, None, None]
    a, b = poses[k], poses[k + 1]
    b = np.where(np.sum(a * b, axis=-1, keepdims=True) < 0.0, -b, b)
    blended = (1.0 - s) * a + s * b
    blended /= np.linalg.norm(blended, axis=-1, keepdims=True)
    return fk_targets(skeleton, blended, bones)


def mute(obj, chains, state: bool) -> None:
    for tip, _, _ in chains:
        for con in obj.pose.bones[tip].constraints:
            con.mute = state


def measure_case(ext, chains, args, rng) -> dict:
    solvers, tree = ext.solvers, ext.rig.tree
    quat = solvers.quat
    obj = metarig()
    layout = tree.tree_layout(obj, chains)
    skeleton, local0, names = tree.read_tree(obj, evaluated(obj), chains, layout)
    bones = list(layout.effectors)
    poses = np.array([random_locals(local0, rng, args.angle, quat) for _ in range(args.poses)])
    # The metarig sits at the origin: armature space is world space (the empties take the targets as they are).
    assert np.allclose(np.array(obj.matrix_world), np.eye(4))
    targets = {"reach": fk_targets(skeleton, poses, bones)}
    targets["far"] = out_of_reach(skeleton, local0, bones, targets["reach"])
    empties = add_constraints(obj, chains)
    methods = [m for m in solvers.REGISTRY if not args.methods or m in args.methods]
    times, results = {}, {}

    def keep(key, seconds: np.ndarray):
        # Each pose's fastest pass (load spikes from other jobs drop out), then the mean over poses.
        times[key] = np.minimum(times.get(key, np.inf), seconds)

    for rep in range(args.repeats):
        for label, goal in targets.items():
            mute(obj, chains, False)
            seconds, measured = blender_pass(
                obj, empties, goal, names[0], chains, names if rep == 0 else None, (skeleton, quat)
            )
            keep(("blender", label), seconds)
            if rep == 0:
                results[("blender", label)] = summary(measured, skeleton, local0, quat)
            mute(obj, chains, True)
            keep(("floor", label), blender_pass(obj, empties, goal, names[0], chains)[0])
            for method in methods:
                out = ours_pass(solvers, skeleton, local0, bones, goal, method)
                if isinstance(out, str):
                    results[(method, label)] = out
                    continue
                keep((method, label), out[0])
                if rep == 0:
                    results[(method, label)] = summary(out[1], skeleton, local0, quat)
    times = {key: float(np.mean(per_pose)) for key, per_pose in times.items()}
    motion = smooth_motion(skeleton, local0, bones, rng, args.frames, args.angle, quat)
    routes = {"blender": lambda: bake_blender(chains, motion, names)}
    for method in methods:
        if not isinstance(results[(method, "reach")], str):
            routes[method] = lambda method=method: bake_ours(ext, chains, motion, method)
    # Alternated (the order turning each round); each side's bake of least cost (timing.cost).
    runs = alternated(routes, args.repeats)
    bakes = {side: min(tried, key=lambda run: cost(run[0], run[4])) for side, tried in runs.items()}
    return {"names": names, "methods": methods, "times": times, "results": results, "bakes": bakes}


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--poses", type=int, default=100)
    parser.add_argument("--frames", type=int, default=120)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--angle", type=float, default=0.6, help="largest random rotation per axis (radians)")
    parser.add_argument("--seed", type=int, default=10)
    parser.add_argument("--quick", action="store_true", help="a short run (smoke test)")
    parser.add_argument("--cases", nargs="*", default=list(CASES), choices=list(CASES))
    parser.add_argument("--methods", nargs="*", default=[], help="only these methods (default: every one)")
    args = parser.parse_args(argv)
    if args.quick:
        args.poses, args.frames, args.repeats = 4, 6, 1
    ext = load_extension("solvers", "rig.tree", "rig.keys", "app.bake", "app.spec")
    args.methods = chosen_methods(parser, args.methods, ext.solvers.REGISTRY)
    header = (
        f"bpy {bpy.app.version_string}, {args.poses} poses (random FK within ±{args.angle} rad per axis),"
        f" {args.frames} baked frames, fastest of {args.repeats} passes"
    )

    def case_lines(name: str) -> list[str]:
        measured = measure_case(ext, CASES[name], args, np.random.default_rng(args.seed))
        return [*table(name, CASES[name], measured), "", "Goals:", *goals(name, measured)]

    print_cases(ext, header, args.cases, case_lines)


if __name__ == "__main__":
    main()
    exit_after_main()
