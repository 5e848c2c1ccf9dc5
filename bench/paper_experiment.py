"""The triangulation paper's experiment (Mueller-Cajar & Mukundan 2007, §4-5)
and the FABRIK paper's 10-joint case, printed as Markdown tables.

    python bench/paper_experiment.py [--targets 10000] [--seed 7]

Chain 4 x 9 + 4 (length 40) straight from the origin; targets uniform in a
60-unit box centred on the root; success within 0.5; CCD and FABRIK stop at
0.5 or 99 iterations. Each target is solved from the rest pose ("rest") and
from the previous solution ("sequential"). Cost C (eq. 3) is the sum over
bones of the angle to the parent bone, the first bone against its rest
direction, in degrees, averaged over reachable targets (and, in its own
column, over all targets: the paper does not say which; its CCD figure,
315.5°, sits closer to our all-targets average).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import solvers  # noqa: E402

PAPER = {  # §5 of the paper, unconstrained chain
    "ccd": "92.12% in 20 it; mean 8.351 it; C 315.5°",
    "triangulation": "100%, 1 pass; C 159.9°",
}

VARIANTS = [
    ("triangulation", {}),
    ("triangulation", {"fold_angle": 90.0}),
    ("triangulation", {"smooth_fold": 1.0}),
    ("fabrik", {}),
    ("ccd", {}),
    ("jacobian", {"variant": "dls"}),
    ("jacobian", {"variant": "pseudoinverse"}),
    ("jacobian", {"variant": "transpose"}),
]


def label(method: str, options: dict) -> str:
    extra = ", ".join(f"{v}" if k == "variant" else f"{k}={v:g}" for k, v in options.items())
    return f"{method} ({extra})" if extra else method


def straight_chain(lengths: list[float]) -> solvers.Chain:
    ys = np.concatenate(([0.0], np.cumsum(lengths)))
    return solvers.Chain(np.stack((np.zeros_like(ys), ys, np.zeros_like(ys)), axis=1))


def time_per_call(fn, count: int) -> float:
    """Best of three runs of `count` calls, in microseconds per call."""
    best = float("inf")
    for _ in range(3):
        start = time.perf_counter()
        for k in range(count):
            fn(k)
        best = min(best, (time.perf_counter() - start) / count)
    return best * 1e6


def paper_table(targets: np.ndarray, sequential: int) -> list[str]:
    chain = straight_chain([9, 9, 9, 9, 4])
    reachable = np.linalg.norm(targets, axis=1) <= chain.total_length
    tol, cap = 0.5, 99
    rows = [
        "| method | reached (rest) | in 20 it | mean it | cost C | cost C, all targets | reached (seq.) "
        "| mean it (seq.) "
        "| cost C (seq.) | µs / solve | µs / target, batch | paper |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for method, options in VARIANTS:
        kw = dict(method=method, tolerance=tol, max_iterations=cap, **options)
        start = time.perf_counter()
        batch = solvers.solve_batch(chain, targets, **kw)
        batch_us = (time.perf_counter() - start) / len(targets) * 1e6
        ok = batch.reached[reachable]
        its = batch.iterations[reachable][ok]
        costs = solvers.rotation_cost(chain, batch.points)
        cost, cost_all = costs[reachable].mean(), costs.mean()
        # Sequential: each target from the previous solution.
        current, seq_points, seq_its, seq_ok = chain, [], [], []
        for t in targets[:sequential]:
            sol = solvers.solve(current, t, **kw)
            seq_points.append(sol.points)
            seq_its.append(sol.iterations)
            seq_ok.append(sol.reached)
            current = solvers.Chain(sol.points)
        seq_reachable = reachable[:sequential]
        seq_points = np.array(seq_points)[seq_reachable]
        seq_ok = np.array(seq_ok)[seq_reachable]
        seq_its = np.array(seq_its)[seq_reachable][seq_ok]
        seq_cost = solvers.rotation_cost(chain, seq_points).mean()
        n_single = 2000 if method == "triangulation" else 200
        single_us = time_per_call(lambda k, kw=kw: solvers.solve(chain, targets[k % len(targets)], **kw), n_single)
        rows.append(
            f"| {label(method, options)} | {ok.mean():.2%} | {(ok & (batch.iterations[reachable] <= 20)).mean():.2%} "
            f"| {its.mean():.3f} | {cost:.1f}° | {cost_all:.1f}° | {seq_ok.mean():.2%} | {seq_its.mean():.3f} "
            f"| {seq_cost:.1f}° "
            f"| {single_us:.1f} | {batch_us:.2f} | {PAPER.get(method if not options else '', '')} |"
        )
    exact = solvers.solve_batch(chain, targets[reachable], method="triangulation")
    rows.append("")
    rows.append(
        f"Triangulation at its default tolerance: worst tip error over the {reachable.sum()} reachable targets"
        f" {exact.error.max():.1e} ({exact.error.max() / chain.total_length:.1e} x chain length), one pass each."
    )
    outside = (~reachable).mean()
    return [
        f"{len(targets)} targets, {outside:.2%} beyond reach (paper: 8.27%); percentages are of reachable "
        "targets, mean iterations over reached ones.",
        "",
        *rows,
    ]


FABRIK_CASES = [  # (method, options, the FABRIK paper's mean iterations)
    ("fabrik", {"placement": "line"}, "15.5"),
    ("fabrik", {"placement": "sphere"}, ""),
    ("ccd", {}, "26.3"),
    ("jacobian", {}, ""),
]


BANDS = (0.0, 0.5, 0.8, 0.9, 0.95, 0.99, 1.0)  # target distance from the root, x chain length


def distance_table(goals: np.ndarray, length: float, fabrik, ccd) -> list[str]:
    """Where the mean iterations come from: the rest-pose solves of FABRIK (line) and CCD by
    the target's distance from the root (uniform in the ball: the outer bands hold most)."""
    r = np.linalg.norm(goals, axis=1) / length
    rows = [
        "| distance / length | targets | FABRIK (line) mean it | median | CCD mean it | median | CCD reached "
        "| CCD's iterations spent (all targets) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for lo, hi in zip(BANDS[:-1], BANDS[1:], strict=True):
        band = (r >= lo) & ((r < hi) | (hi == BANDS[-1]))
        f_its = fabrik.iterations[band & fabrik.reached]
        c_its = ccd.iterations[band & ccd.reached]
        rows.append(
            f"| {lo:g}-{hi:g} | {band.mean():.1%} | {f_its.mean():.1f} | {np.median(f_its):g} | {c_its.mean():.1f} "
            f"| {np.median(c_its):g} | {ccd.reached[band].mean():.1%} "
            f"| {ccd.iterations[band].sum() / ccd.iterations.sum():.0%} |"
        )
    return rows


def fabrik_table(count: int, rng: np.random.Generator) -> list[str]:
    # FABRIK paper: a chain of 10 joints (9 unit bones), tolerance 1e-3 x length.
    chain = straight_chain([1.0] * 9)
    length = chain.total_length
    cap = 1000
    dirs = rng.normal(size=(count, 3))
    dirs /= np.linalg.norm(dirs, axis=1, keepdims=True)
    goals = dirs * (length * rng.uniform(0.0, 1.0, size=(count, 1)) ** (1 / 3))  # uniform in the ball
    rows = [
        "| method | reached (rest) | unreached at the cap (rest) | mean it (rest) | median it (rest) | cost C (rest) "
        "| reached (seq.) | mean it (seq.) | median it (seq.) | FABRIK paper |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    batches = {}
    for method, options, paper in FABRIK_CASES:
        kw = dict(method=method, tolerance=1e-3 * length, max_iterations=cap, **options)
        batch = batches[method, tuple(options.items())] = solvers.solve_batch(chain, goals, **kw)
        current, its, ok = chain, [], []
        for g in goals:
            sol = solvers.solve(current, g, **kw)
            its.append(sol.iterations)
            ok.append(sol.reached)
            current = solvers.Chain(sol.points)
        its, ok = np.array(its), np.array(ok)
        rest_its = batch.iterations[batch.reached]
        cost = solvers.rotation_cost(chain, batch.points).mean()
        name = f"{method} ({', '.join(f'{k}={v}' for k, v in options.items())})" if options else method
        missed = ~batch.reached
        rows.append(
            f"| {name} | {batch.reached.mean():.2%} | {(missed & (batch.iterations == cap)).sum()} of {missed.sum()} "
            f"| {rest_its.mean():.2f} | {np.median(rest_its):g} | {cost:.1f}° "
            f"| {ok.mean():.2%} | {its[ok].mean():.2f} | {np.median(its[ok]):g} | {paper} |"
        )
    return [
        f"{len(goals)} targets uniform in the reachable ball, chain of 10 joints (9 unit bones), tolerance "
        f"1e-3 x length, cap {cap} iterations; mean and median iterations over reached targets; unreached at the cap: "
        "those that ran all the iterations (the rest stopped on the stall test); cost C (eq. 3) "
        "averaged over the rest-pose solves. FABRIK placement: line = the paper's passes; sphere = its CGA form "
        "(each joint on the circle where the spheres about its two neighbours meet, nearest its current position).",
        "",
        *rows,
        "",
        "The rest-pose solves by the target's distance from the root:",
        "",
        *distance_table(goals, length, batches["fabrik", (("placement", "line"),)], batches["ccd", ()]),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--targets", type=int, default=10000)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--sequential", type=int, default=2000, help="targets solved one after another")
    parser.add_argument("--fabrik-targets", type=int, default=1000)
    parser.add_argument("--fabrik-only", action="store_true", help="only the FABRIK paper case (same targets)")
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    targets = rng.uniform(-30.0, 30.0, size=(args.targets, 3))
    if not args.fabrik_only:
        print("## Triangulation paper experiment (chain 4 x 9 + 4)\n")
        print("\n".join(paper_table(targets, args.sequential)))
    print("\n## FABRIK paper case\n")
    print("\n".join(fabrik_table(args.fabrik_targets, rng)))


if __name__ == "__main__":
    main()
