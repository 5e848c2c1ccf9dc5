"""Issue 20 items 1-5 measured in one run: each figure beside its goal, met or not, then each
item's own tables.

Run inside a bpy venv:  <venv>/bin/python bench/bench_full_body.py [--quick]

One process, one run, the benches' own functions (nothing measured twice in two ways):
1. Move Root (bench_root.issue_case): Rigify's metarig, the hand chain from the hips, both feet
   pinned, a target 25% beyond the chain's reach, level and in front; the Solve operator with Move
   Root on (the hand reached, the feet held, how far the hips moved) and off (reported missed).
2. Soft IK (bench_soft.measure): a leg baked while its target passes through full extension over
   100 frames; the largest knee turn per frame with softness 0.05 over the exact solve's (goal:
   at most a fifth) and the tip's distance to the target against Nicholas' formula.
3. Mass weighting (bench_mass.measure, through the solver): kinetic energy summed over 16 reach
   sequences and each joint's share of the turning, MASS against the unweighted Jacobian (goal:
   lower energy, the distal joints moving more).
4. Aim (bench_aim.measure): the metarig's head chain aiming while both hands reach, apart and in
   one group; the angle left (goal: within the tolerance) and each bone's share of the turn (goal:
   every bone a visible share, read here as at least 10%).
5. Trees (bench_tree: reach, time per solve, bake per frame, rotation cost against Blender's tree
   IK, its own goal lines), Live (bench_live: one update against Blender's IK constraints, goal at
   most 2x) and the cost of a movable root and of soft IK over the plain solve (bench_root, goal at
   most 1.5x).
--quick: a smoke run (a few targets, poses and frames, one case each): its figures mean nothing.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import bpy
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_aim  # noqa: E402
import bench_live  # noqa: E402
import bench_mass  # noqa: E402
import bench_root  # noqa: E402
import bench_soft  # noqa: E402
import bench_tree  # noqa: E402
import tree_tables  # noqa: E402
from blender_bench import exit_after_main, load_extension  # noqa: E402

VISIBLE_SHARE = 0.10  # item 4: "every bone ... a visible share"
FORMULA = 1e-4  # item 2: the tip's distance follows the formula within this (tests/blender/test_soft_ik.py's)


def sizes(quick: bool) -> dict:
    """Each bench's arguments: its defaults, or a smoke run's."""
    if quick:
        return {
            "root": argparse.Namespace(targets=3, repeats=1, seed=7, methods=None),
            "soft frames": 20,
            "mass frames": 10,
            "tree": argparse.Namespace(
                poses=4, frames=6, repeats=1, angle=0.6, seed=10, cases=["two hands"], methods=[]
            ),
            "live": argparse.Namespace(updates=4, repeats=1, angle=0.6, seed=10, cases=["five chains"]),
        }
    return {
        "root": argparse.Namespace(targets=30, repeats=5, seed=7, methods=None),
        "soft frames": 100,
        "mass frames": 60,
        "tree": argparse.Namespace(
            poses=100, frames=120, repeats=3, angle=0.6, seed=10, cases=list(bench_tree.CASES), methods=[]
        ),
        "live": argparse.Namespace(updates=60, repeats=3, angle=0.6, seed=10, cases=list(bench_live.CASES)),
    }


def row(item: str, what: str, figure: str, goal: str, met: bool) -> str:
    return f"| {item} | {what} | {figure} | {goal} | {'met' if met else '**not met**'} |"


def item_root(ext, methods) -> tuple[list[str], list[str]]:
    rows, lines = (
        [],
        ["| method | Move Root | hand error | reached | feet's drift | hips moved |", "|---|---|---:|---|---:|---:|"],
    )
    for method in methods:
        on, off = (bench_root.issue_case(ext, method, m) for m in (True, False))
        for label, r in (("on", on), ("off", off)):
            lines.append(
                f"| {method} | {label} | {r['error']:.1e} | {'yes' if r['reached'] else 'no'} | {r['feet']:.1e}"
                f" | {r['hips']:.3f} |"
            )
        tol = on["tolerance"]
        met = on["reached"] and on["error"] <= tol and on["feet"] <= tol and not off["reached"] and off["error"] > tol
        rows.append(
            row(
                "1 Move Root",
                f"{method}: target 25% beyond, feet pinned",
                f"on: error {on['error']:.1e}, feet {on['feet']:.1e}, hips moved {on['hips']:.3f}; off: missed by"
                f" {off['error']:.2f}",
                f"on: reached and feet held (within {tol:.1e}); off: reported missed",
                met,
            )
        )
    return rows, lines


def item_soft(ext, methods, frames: int) -> tuple[list[str], list[str]]:
    measured = {m: bench_soft.measure(ext, m, frames) for m in methods}
    rows = [
        row(
            "2 Soft IK",
            f"{m}: knee's largest turn per frame, softness {bench_soft.SHARE:g} / exact; tip vs formula",
            f"{r['soft']:.2f}° / {r['exact']:.2f}° = {r['ratio']:.3f}; {r['formula']:.1e}",
            f"<= 0.2; within {FORMULA:g}",
            r["ratio"] <= 0.2 and r["formula"] <= FORMULA,
        )
        for m, r in measured.items()
    ]
    return rows, bench_soft.table(measured, frames)


def item_mass(frames: int) -> tuple[list[str], list[str]]:
    measured = bench_mass.measure(frames, solver=True)
    energy = np.array([r["mass"]["energy"] / r["plain"]["energy"] for r in measured])
    hand = np.array([(r["plain"]["share"][-1], r["mass"]["share"][-1]) for r in measured])
    root = np.array([(r["plain"]["share"][0], r["mass"]["share"][0]) for r in measured])
    rows = [
        row(
            "3 Mass",
            f"energy MASS / unweighted, {len(measured)} sequences",
            f"lower on {int(np.sum(energy < 1.0))} of {len(energy)} ({energy.min():.2f}-{energy.max():.2f})",
            "lower",
            bool(np.all(energy < 1.0)),
        ),
        row(
            "3 Mass",
            "hand's (root's) share of the turning, unweighted -> MASS",
            f"{hand[:, 0].min():.0%}-{hand[:, 0].max():.0%} -> {hand[:, 1].min():.0%}-{hand[:, 1].max():.0%}"
            f" ({root[:, 0].min():.0%}-{root[:, 0].max():.0%} -> {root[:, 1].min():.0%}-{root[:, 1].max():.0%})",
            "distal joints move more",
            bool(np.all(hand[:, 1] > hand[:, 0]) and np.all(root[:, 1] < root[:, 0])),
        ),
    ]
    return rows, bench_mass.table(measured)


def item_aim(ext, methods) -> tuple[list[str], list[str]]:
    measured = {(c, m): bench_aim.measure(ext, m, c) for c in bench_aim.CASES for m in methods}
    rows = []
    for case in bench_aim.CASES:
        here = [measured[case, m] for m in methods]
        rows.append(
            row(
                "4 Aim",
                f"head chain aims, hands reach ({case}), every method: angle left; smallest bone share",
                f"{max(r['angle'] for r in here):.1e}°; {min(float(r['shares'].min()) for r in here):.0%}",
                f"reached (within tolerance {bench_aim.TOLERANCE:g}); >= {VISIBLE_SHARE:.0%}",
                all(r["reached"] for r in here) and min(float(r["shares"].min()) for r in here) >= VISIBLE_SHARE,
            )
        )
    return rows, bench_aim.table(measured)


def item_trees(ext, args) -> tuple[list[str], list[str]]:
    rows, lines = [], []
    for name in args.cases:
        measured = bench_tree.measure_case(ext, bench_tree.CASES[name], args, np.random.default_rng(args.seed))
        goals = tree_tables.goals(name, measured)
        text = "\n".join(goals)
        yes, no = text.count(": yes"), text.count(": **no**")
        rows.append(row("5 Trees", f"{name}: bench_tree's goals", f"{yes} of {yes + no} met", "all", no == 0))
        lines += [*tree_tables.table(name, bench_tree.CASES[name], measured), "", "Goals:", *goals, ""]
    return rows, lines


def item_live(ext, args) -> tuple[list[str], list[str]]:
    rows, lines = [], []
    for name in args.cases:
        measured = bench_live.measure_case(ext, bench_live.CASES[name], args, np.random.default_rng(args.seed))
        t = measured["times"]
        # bench_live's times are (wall, CPU) per update; judged on CPU time, as bench_live judges them
        ratios = {m: float(t[m][1] / t["blender"][1]) for m in measured["methods"]}
        figure = ", ".join(f"{m} {r:.2f}x" for m, r in ratios.items())
        what = f"{name}: one update / Blender's (CPU; goal judged on the best method)"
        rows.append(row("5 Live", what, figure, "<= 2x", min(ratios.values()) <= 2.0))
        lines += [*bench_live.table(name, bench_live.CASES[name], measured), ""]
    return rows, lines


def item_costs(ext, args) -> tuple[list[str], list[str]]:
    measured = bench_root.measure_rows(ext, args)
    rows = []
    for case in ("beyond", "within"):
        here = {m: r for (c, m), r in measured["rows"].items() if c == case}
        moving = {m: r["moving ms"] / r["plain ms"] for m, r in here.items()}
        soft = {m: r["soft ms"] / r["plain ms"] for m, r in here.items()}
        reached = {m: r["moving reached"] for m, r in here.items()}
        rows.append(
            row(
                "5 Costs",
                f"{case}: Move Root / plain (reached), soft IK / plain",
                ", ".join(f"{m} {moving[m]:.2f}x ({reached[m]:.0%}), soft {soft[m]:.2f}x" for m in here),
                "<= 1.5x; every method reaches where the others do",
                max(moving.values()) <= 1.5 and max(soft.values()) <= 1.5 and len(set(reached.values())) == 1,
            )
        )
    return rows, bench_root.table(measured, args)


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="a smoke run: a few targets, poses and frames")
    args = p.parse_args(argv)
    size = sizes(args.quick)
    import addon_utils

    ext = load_extension("solvers", "solvers.common.soft", "rig.tree", "rig.keys", "app.bake", "app.spec", "app.live")
    if not hasattr(bpy.types.Object, "chain_ik"):  # the operators read panel chains (a test has registered it)
        ext.register()
    methods = list(ext.solvers.REGISTRY)
    addon_utils.enable("rigify", default_set=True)
    try:
        parts = [
            ("Item 1: Move Root on Rigify's metarig (bench/bench_root.py issue_case)", item_root(ext, methods)),
            ("Item 2: soft IK (bench/bench_soft.py)", item_soft(ext, methods, size["soft frames"])),
            ("Item 3: mass weighting (bench/bench_mass.py --solver)", item_mass(size["mass frames"])),
            ("Item 4: aim (bench/bench_aim.py)", item_aim(ext, methods)),
            ("Item 5: trees (bench/bench_tree.py)", item_trees(ext, size["tree"])),
            ("Item 5: Live (bench/bench_live.py)", item_live(ext, size["live"])),
            ("Item 5: Move Root and soft IK cost (bench/bench_root.py)", item_costs(ext, size["root"])),
        ]
    finally:
        addon_utils.disable("rigify", default_set=True)
    out = [
        f"Issue 20, items 1-5, one run: bpy {bpy.app.version_string}{' (--quick: a smoke run)' if args.quick else ''}",
        "",
        "| item | measured | figure | goal | |",
        "|---|---|---|---|---|",
    ]
    for _, (rows, _) in parts:
        out += rows
    for title, (_, lines) in parts:
        out += ["", f"## {title}", "", *lines]
    print("\n".join(out))


if __name__ == "__main__":
    main()
    exit_after_main()
