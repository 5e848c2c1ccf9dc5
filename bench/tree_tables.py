"""bench_tree.py's printed figures: one Markdown table per case and issue 20 item 5's goals, met or
not, from what `bench_tree.measure_case` measured (bench_full_body.py prints the same)."""

from __future__ import annotations

from timing import cost


def faster(theirs: float, ours: float) -> str:
    if theirs <= 0.0:
        return "n/a (Blender's net time <= 0: noise)"
    return f"**{theirs / ours:.1f}x faster**" if ours <= theirs else f"{ours / theirs:.1f}x slower"


def table(name: str, chains, m: dict) -> list[str]:
    t, r, bakes = m["times"], m["results"], m["bakes"]
    net = {k: t[("blender", k)] - t[("floor", k)] for k in ("reach", "far")}
    tips = ", ".join(f"{tip} ({count or 'to root'}{'' if tail else ', head'})" for tip, count, tail in chains)
    lines = [
        f"### {name}: {len(chains)} effectors, {len(m['names'])} bones ({tips})",
        "",
        "| side | reached 1e-4 | reached 1e-3 | worst error | rotation cost ° | ms / solve | vs Blender net"
        " | conflicting: mean Σ error² | conflicting: ms / solve | bake: CPU ms / frame | bake: vs Blender"
        " | bake: worst playback error (its solve's) |",
        "|---|---:|---:|---:|---:|---:|---|---:|---:|---:|---|---:|",
    ]

    def fig(s: dict) -> str:
        return f"{s['reached']:.0%} | {s['loose']:.0%} | {s['worst']:.2e} | {s['cost']:.1f}"

    b, far = r[("blender", "reach")], r[("blender", "far")]
    bake_b = bakes["blender"]
    lines.append(
        f"| Blender legacy IK (update with IK) | {fig(b)} | {1e3 * t[('blender', 'reach')]:.3f} | |"
        f" {far['squares']:.4f} | {1e3 * t[('blender', 'far')]:.3f} | {1e3 * bake_b[0]:.2f}"
        f" (wall {1e3 * bake_b[4]:.2f}) | | {bake_b[1]:.2e} |"
    )
    lines.append(
        f"| Blender: same update without IK (floor) | | | | | {1e3 * t[('floor', 'reach')]:.3f} | | |"
        f" {1e3 * t[('floor', 'far')]:.3f} | | | |"
    )
    lines.append(
        f"| Blender IK net (with - without) | | | | | {1e3 * net['reach']:.3f} | | | {1e3 * net['far']:.3f} | | | |"
    )
    for method in m["methods"]:
        s = r[(method, "reach")]
        if isinstance(s, str):
            lines.append(f"| Chain IK {method} | {s} | | | | | | | | | | |")
            continue
        f = r[(method, "far")]
        ours, ours_far = t[(method, "reach")], t[(method, "far")]
        bake = bakes[method]
        lines.append(
            f"| Chain IK {method} | {fig(s)} | {1e3 * ours:.3f} | {faster(net['reach'], ours)} |"
            f" {f['squares']:.4f} ({f['squares'] / far['squares']:.2f}x Blender's) | {1e3 * ours_far:.3f} |"
            f" {1e3 * bake[0]:.2f} (wall {1e3 * bake[4]:.2f}, solve {1e3 * bake[2]:.2f}) |"
            f" {faster(cost(bake_b[0], bake_b[4]), cost(bake[0], bake[4]))} | {bake[1]:.2e}"
            f" ({bake[3]:.2e}) |"
        )
    return lines


def goals(name: str, m: dict) -> list[str]:
    """Issue 20 item 5's goals per method with a tree kernel: met or not, as measured here."""
    t, r, bakes = m["times"], m["results"], m["bakes"]
    b = r[("blender", "reach")]
    net = t[("blender", "reach")] - t[("floor", "reach")]
    out, speedups = [], {}
    for method in m["methods"]:
        s = r[(method, "reach")]
        if isinstance(s, str):
            continue
        theirs, ours = bakes["blender"], bakes[method]
        speedups[method] = cost(theirs[0], theirs[4]) / cost(ours[0], ours[4])
        least_squares = method == "jacobian"
        checks = [
            (f"reach >= Blender's ({s['reached']:.0%} vs {b['reached']:.0%})", s["reached"] >= b["reached"]),
            (
                f"rotation cost <= {'1' if least_squares else '1.2'}x Blender's ({s['cost'] / b['cost']:.2f}x)",
                s["cost"] <= (1.0 if least_squares else 1.2) * b["cost"],
            ),
            (f"bake >= 3x faster per frame ({speedups[method]:.1f}x)", speedups[method] >= 3.0),
            (
                f"bake plays back within its solve's error + max(1e-6, float32 floor) ({bakes[method][1]:.1e}"
                f" vs {bakes[method][3]:.1e} + {max(1e-6, bakes[method][5]):.1e})",
                bakes[method][1] <= bakes[method][3] + max(1e-6, bakes[method][5]),
            ),
        ]
        if method in ("jacobian", "fabrik"):
            ratio = t[(method, "reach")] / net if net > 0.0 else float("inf")
            checks.insert(1, (f"per solve <= 1x Blender's net ({ratio:.1f}x)", ratio <= 1.0))
        met = ", ".join(f"{what}: {'yes' if ok else '**no**'}" for what, ok in checks)
        out.append(f"- {method}: {met}")
    if speedups:
        best = max(speedups, key=speedups.get)
        ok = speedups[best] >= 5.0
        out.append(f"- best bake ({best}, {speedups[best]:.1f}x) >= 5x faster per frame: {'yes' if ok else '**no**'}")
    return out or ["- no method has a tree kernel yet: no goal can be met"]
