#!/usr/bin/env python3
"""Compare two outcome corpora (tests/blender/outcome_corpus.py; tools/record_corpus.sh).

    python tools/compare_corpus.py A B [--tolerance T] [--ignore KEY ...] [--show N]

A and B are corpus folders (every *.jsonl below them, matched by relative path, so a folder
holding one subfolder per Blender version compares both) or two .jsonl files. Records are
matched by (file, test, kind, seq); their `order` (the place among all of the test's records)
is left out unless --check-order, so one extra record of a kind does not mark the others.
Each pair is bit-identical (every float the same bits, everything else equal), within
tolerance (floats differ by at most T, nothing else differs), or beyond it; the report gives
per differing record its largest float difference, in value and in units in the last place
(ulps), and where it is. Records only in A or only in B count as beyond.

Exit status: 0 when nothing is beyond the tolerance (default 0: bit for bit), 1 otherwise,
2 on bad arguments. Stdlib only.
"""

from __future__ import annotations

import argparse
import json
import math
import struct
import sys
from dataclasses import dataclass, field
from pathlib import Path

KEY_FIELDS = ("test", "kind", "seq")


@dataclass
class Difference:
    """What differs between two records: the largest float gap and every other (structural) change."""

    largest: float = 0.0
    ulps: int = 0
    where: str = ""
    floats: int = 0  # float values whose bits differ
    structural: list[str] = field(default_factory=list)

    def beyond(self, tolerance: float) -> bool:
        if self.structural:
            return True
        return self.floats > 0 and (tolerance == 0.0 or self.largest > tolerance)


def ulp_distance(a: float, b: float) -> int:
    """How many representable doubles lie between a and b (0.0 and -0.0: 1 apart)."""

    def ordered(x: float) -> int:
        n = struct.unpack("<q", struct.pack("<d", x))[0]
        return n if n >= 0 else -(n & 0x7FFFFFFFFFFFFFFF) - 1

    return abs(ordered(a) - ordered(b))


def same_bits(a: float, b: float) -> bool:
    return struct.pack("<d", a) == struct.pack("<d", b)


def compare(a, b, path: str, diff: Difference) -> None:
    if isinstance(a, float) and isinstance(b, float):
        if same_bits(a, b):
            return
        diff.floats += 1
        gap = abs(a - b) if not (math.isnan(a) or math.isnan(b)) else math.inf
        ulps = ulp_distance(a, b)
        if gap > diff.largest or (gap == diff.largest and ulps > diff.ulps) or not diff.where:
            diff.largest, diff.ulps, diff.where = gap, ulps, f"{path}: {a!r} vs {b!r}"
    elif type(a) is not type(b):
        diff.structural.append(f"{path}: {_brief(a)} vs {_brief(b)}")
    elif isinstance(a, dict):
        for key in a.keys() | b.keys():
            if key not in b:
                diff.structural.append(f"{path}.{key}: only in A")
            elif key not in a:
                diff.structural.append(f"{path}.{key}: only in B")
            else:
                compare(a[key], b[key], f"{path}.{key}", diff)
    elif isinstance(a, list):
        if len(a) != len(b):
            diff.structural.append(f"{path}: {len(a)} items vs {len(b)}")
        for i, (x, y) in enumerate(zip(a, b, strict=False)):  # the length told above
            compare(x, y, f"{path}[{i}]", diff)
    elif a != b:
        diff.structural.append(f"{path}: {_brief(a)} vs {_brief(b)}")


def _brief(value) -> str:
    text = json.dumps(value) if not isinstance(value, float) else repr(value)
    return text if len(text) <= 120 else text[:117] + "..."


def _without(value, ignore: set[str]):
    if isinstance(value, dict):
        return {k: _without(v, ignore) for k, v in value.items() if k not in ignore}
    if isinstance(value, list):
        return [_without(v, ignore) for v in value]
    return value


def load(root: Path, ignore: set[str]) -> dict[tuple, dict]:
    """Every record under `root` by (file, test, kind, seq), without the ignored keys."""
    files = [root] if root.is_file() else sorted(root.rglob("*.jsonl"))
    records = {}
    for path in files:
        name = path.name if root.is_file() else str(path.relative_to(root))
        with path.open(encoding="utf-8") as handle:
            for number, line in enumerate(handle, 1):
                record = json.loads(line)
                key = (name, *(record[k] for k in KEY_FIELDS))
                if key in records:
                    raise ValueError(f"{path}:{number}: record {key} appears twice")
                records[key] = _without(record, ignore)
    return records


def label(key: tuple) -> str:
    file, test, kind, seq = key
    return f"{file} {test} {kind}#{seq}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], allow_abbrev=False)
    parser.add_argument("a", type=Path, help="corpus folder or .jsonl file (e.g. recorded before a change)")
    parser.add_argument("b", type=Path, help="corpus folder or .jsonl file (e.g. recorded after it)")
    parser.add_argument("--tolerance", type=float, default=0.0, help="largest float gap accepted (default 0: bits)")
    parser.add_argument("--ignore", action="append", default=[], metavar="KEY", help="leave out this key anywhere")
    parser.add_argument("--check-order", action="store_true", help="also compare each record's place in its test")
    parser.add_argument("--show", type=int, default=20, help="differing records listed (default 20)")
    args = parser.parse_args(argv)
    if not (args.tolerance >= 0.0):
        parser.error("--tolerance must be 0 or more")
    for root in (args.a, args.b):
        if not root.exists():
            parser.error(f"no such corpus: {root}")
    ignore = set(args.ignore) | (set() if args.check_order else {"order"})
    a, b = load(args.a, ignore), load(args.b, ignore)
    if not a and not b:
        parser.error("no records in either corpus")
    only_a, only_b = sorted(a.keys() - b.keys()), sorted(b.keys() - a.keys())
    identical, within, beyond = 0, [], []
    for key in sorted(a.keys() & b.keys()):
        diff = Difference()
        compare(a[key], b[key], "", diff)
        if not diff.floats and not diff.structural:
            identical += 1
        elif diff.beyond(args.tolerance):
            beyond.append((key, diff))
        else:
            within.append((key, diff))
    files = {key[0] for key in a} | {key[0] for key in b}
    print(f"A: {len(a)} records, B: {len(b)} records, {len(files)} file(s)")
    print(f"bit-identical: {identical}")
    print(f"differing within tolerance {args.tolerance:g}: {len(within)}")
    print(f"differing beyond tolerance: {len(beyond)}")
    print(f"only in A: {len(only_a)}, only in B: {len(only_b)}")
    differing = within + beyond
    if any(diff.floats for _, diff in differing):
        key, worst = max(differing, key=lambda kd: (kd[1].floats > 0, kd[1].largest, kd[1].ulps))
        print(f"largest float difference: {worst.largest:.3g} ({worst.ulps} ulp) in {label(key)} at {worst.where}")
    shown = 0
    for key, diff in beyond + within:
        if shown >= args.show:
            print(f"... {len(differing) - shown} more differing record(s)")
            break
        shown += 1
        mark = "BEYOND" if diff.beyond(args.tolerance) else "within"
        print(f"{mark} {label(key)}: {diff.floats} float(s) differ, largest {diff.largest:.3g} ({diff.ulps} ulp)")
        if diff.where:
            print(f"    {diff.where}")
        for change in diff.structural[:5]:
            print(f"    {change}")
        if len(diff.structural) > 5:
            print(f"    ... {len(diff.structural) - 5} more change(s)")
    for side, keys in (("A", only_a), ("B", only_b)):
        for key in keys[: args.show]:
            print(f"only in {side}: {label(key)}")
        if len(keys) > args.show:
            print(f"... {len(keys) - args.show} more only in {side}")
    return 1 if beyond or only_a or only_b else 0


if __name__ == "__main__":
    sys.exit(main())
