"""The near step's sweep (solvers.ccd.tree_near) written out once per tree layout and compiled, for
trees without limits or orientation goals (a character's bake: every bone turned whole, only the
effectors' end points tracked), compiled once per layout (bones, parents, effectors) and kept.

The same arithmetic as tree_near's sweep loop, term by term in its order (the same numbers to the
bit: tests/solvers/test_ccd_tree_near.py): each visit's head and parent frame read once, the
tracked points and their moves in local variables (CPython's fastest storage), no per-visit
lists, tuples or inner loops. On the metarig's two hands the loop's list and tuple handling cost
more than its arithmetic (bench/bench_tree_floor_bake.py).
"""

from __future__ import annotations

import math

from ..maths.floats import profile_rotation

# Compiled sweeps by layout (a bake reads its rig again, so every bake builds a new plan; the
# layout is the same): compiling one costs 5-30 ms on the metarig, a bake's whole CCD a few tens.
_COMPILED: dict = {}
_CACHE_SIZE = 64
# The source grows with visits x tracked points (~16 lines each) and compiling it with them:
# 17 x 5 (the metarig's five effectors) ~30 ms, 60 x 8 ~165 ms, 200 x 20 ~1.2 s, a pause on a big
# rig's first near step. Beyond this the general sweep serves (the same numbers).
MOST_TERMS = 128


def make(visits: list, points: int):
    """sweep(frames, heads, have, want, root, pull, one_pair, rests, base) -> (turns, columns (every
    visit's, in one flat list), trace, residual, swept) for `visits` as (bone, parent or -1, indices
    of its points), tips to roots, over `points` tracked points; `have` and `want` flat (x, y, z per
    point), `rests` each visit's reference, `base` the skeleton's base frame. None where the layout
    is beyond MOST_TERMS visits x points (its compile would cost more than a bake's whole CCD)."""
    if len(visits) * points > MOST_TERMS:
        return None
    key = (tuple((j, p, tuple(pts)) for j, p, pts in visits), points)
    sweep = _COMPILED.get(key)
    if sweep is None:
        scope = {"sqrt": math.sqrt, "profile_rotation": profile_rotation}
        source = _source(visits, points)
        exec(compile(source, "<ccd.tree_near_written>", "exec"), scope)  # noqa: S102 - our own source, from integers
        if len(_COMPILED) >= _CACHE_SIZE:
            _COMPILED.clear()
        sweep = _COMPILED[key] = scope["sweep"]
    return sweep


def _source(visits: list, points: int) -> str:
    lines = ["def sweep(frames, heads, have, want, root, pull, one_pair, rests, base):"]
    add = lines.append
    names = ", ".join(f"p{i}x, p{i}y, p{i}z" for i in range(points))
    add(f"    {names}, = have")
    add(f"    {', '.join(f'g{i}x, g{i}y, g{i}z' for i in range(points))}, = want")
    add(f"    {', '.join(f's{i}' for i in range(points))}, = root")
    add("    trace = 0.0")
    turns = []
    for v, (j, p, pts) in enumerate(visits):
        add(f"    ox, oy, oz = heads[{j}]")
        if len(pts) == 1:
            i = pts[0]
            add(f"    ax, ay, az = p{i}x - ox, p{i}y - oy, p{i}z - oz")
            add(f"    bx, by, bz = g{i}x - ox, g{i}y - oy, g{i}z - oz")
            add("    n = sqrt(ax * ax + ay * ay + az * az)")
            add("    m = sqrt(bx * bx + by * by + bz * bz)")
            add("    if n > 0.0 and m > 0.0 and ax * bx + ay * by + az * bz >= 0.0:")
            swing = (  # (one name a statement: a tuple of four or more names is built, then unpacked)
                "ax = ax / n; ay = ay / n; az = az / n; bx = bx / m; by = by / m; bz = bz / m;"
                " cw = 1.0 + ax * bx + ay * by + az * bz; cx = ay * bz - az * by; cy = az * bx - ax * bz;"
                " cz = ax * by - ay * bx; r = sqrt(cw * cw + cx * cx + cy * cy + cz * cz);"
                " cw = cw / r; cx = cx / r; cy = cy / r; cz = cz / r"
            )
            for line in swing.split("; "):
                add(f"        {line}")
            add("    else:")
            add("        cw, cx, cy, cz = one_pair((ax, ay, az), (bx, by, bz))")
        else:
            add("    sxx = sxy = sxz = syx = syy = syz = szx = szy = szz = 0.0")
            add("    size = 0.0")
            add(f"    lightest = heaviest = pull[{pts[0]}]")
            for i in pts:
                add(f"    ax, ay, az = p{i}x - ox, p{i}y - oy, p{i}z - oz")
                add(f"    bx, by, bz = g{i}x - ox, g{i}y - oy, g{i}z - oz")
                add(f"    wk = pull[{i}]")
                add("    if wk < lightest:")  # (min(lightest, wk) and max(heaviest, wk), without their calls)
                add("        lightest = wk")
                add("    if wk > heaviest:")
                add("        heaviest = wk")
                for a in "xyz":
                    for b in "xyz":
                        add(f"    s{a}{b} += wk * a{a} * b{b}")
                add("    size += wk * sqrt((ax * ax + ay * ay + az * az) * (bx * bx + by * by + bz * bz))")
            add("    cw, cx, cy, cz = profile_rotation((sxx, sxy, sxz, syx, syy, syz, szx, szy, szz), size,")
            add("                                      lightest, heaviest)")
        add("    aw, ax, ay, az = base" if p == -1 else f"    aw, ax, ay, az = frames[{p}]")
        add(f"    rw, rx, ry, rz = rests[{v}]")
        add("    sw = aw * rw - ax * rx - ay * ry - az * rz")
        add("    sx = aw * rx + ax * rw + ay * rz - az * ry")
        add("    sy = aw * ry - ax * rz + ay * rw + az * rx")
        add("    sz = aw * rz + ax * ry - ay * rx + az * rw")
        add("    bw = cw * sw - cx * sx - cy * sy - cz * sz")
        add("    bx = cw * sx + cx * sw + cy * sz - cz * sy")
        add("    by = cw * sy - cx * sz + cy * sw + cz * sx")
        add("    bz = cw * sz + cx * sy - cy * sx + cz * sw")
        add("    ax, ay, az = -sx, -sy, -sz")
        add("    tw = sw * bw - ax * bx - ay * by - az * bz")
        add("    tx = sw * bx + ax * bw + ay * bz - az * by")
        add("    ty = sw * by - ax * bz + ay * bw + az * bx")
        add("    tz = sw * bz + ax * by - ay * bx + az * bw")
        add(f"    t{v} = (tw, tx, ty, tz) if tw >= 0.0 else (-tw, -tx, -ty, -tz)")
        turns.append(f"t{v}")
        for i in pts:
            add(f"    vx, vy, vz = p{i}x - ox, p{i}y - oy, p{i}z - oz")
            add("    ux, uy, uz = 2.0 * (cy * vz - cz * vy), 2.0 * (cz * vx - cx * vz), 2.0 * (cx * vy - cy * vx)")
            add("    dx = cw * ux + (cy * uz - cz * uy)")
            add("    dy = cw * uy + (cz * ux - cx * uz)")
            add("    dz = cw * uz + (cx * uy - cy * ux)")
            add(f"    p{i}x, p{i}y, p{i}z = p{i}x + dx, p{i}y + dy, p{i}z + dz")
            add(f"    d{v}_{i}x, d{v}_{i}y, d{v}_{i}z = s{i} * dx, s{i} * dy, s{i} * dz")
            add(f"    trace += s{i} * s{i} * (dx * dx + dy * dy + dz * dz)")
    columns = []  # every visit's column, one after another in one flat list
    for v, (_, _, pts) in enumerate(visits):
        for i in range(points):
            columns += [f"d{v}_{i}{a}" if i in pts else "0.0" for a in "xyz"]
    add("    swept = 0.0")
    residual = []
    for i in range(points):
        add(f"    r{i}x, r{i}y, r{i}z = s{i} * (p{i}x - g{i}x), s{i} * (p{i}y - g{i}y), s{i} * (p{i}z - g{i}z)")
        add(f"    swept += r{i}x * r{i}x + r{i}y * r{i}y + r{i}z * r{i}z")
        residual += [f"r{i}x", f"r{i}y", f"r{i}z"]
    add(f"    return [{', '.join(turns)}], [{', '.join(columns)}], trace, [{', '.join(residual)}], swept")
    return "\n".join(lines) + "\n"
