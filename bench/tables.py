"""Markdown tables the Blender benchmarks print (bench_live.py, bench_tree.py): one helper, so every
table has the same header, alignment row and cell layout."""

from __future__ import annotations


def markdown_table(header: list[str], rows: list[list[str]], align: str = "") -> list[str]:
    """The table's lines: `header`, the alignment row (`align`: one letter per column, 'l' or 'r';
    missing letters left-align) and one line per row (short rows padded with empty cells)."""
    marks = [("---:" if a == "r" else "---") for a in align.ljust(len(header), "l")]
    lines = [_line(header), "|" + "|".join(marks) + "|"]
    for row in rows:
        if len(row) > len(header):
            raise ValueError(f"a row has {len(row)} cells, the header {len(header)}")
        lines.append(_line([*row, *[""] * (len(header) - len(row))]))
    return lines


def _line(cells: list[str]) -> str:
    return "| " + " | ".join(cells) + " |"


def print_cases(ext, header: str, cases: list[str], case_lines) -> None:
    """Print `header`, then each case's lines (`case_lines(name)`) followed by a blank line, as the
    metarig benchmarks do: the extension registered if nobody has (Live and Bake read panel
    chains; a test may have registered it already), Rigify on for its metarig while they run."""
    import addon_utils
    import bpy

    if not hasattr(bpy.types.Object, "chain_ik"):
        ext.register()
    addon_utils.enable("rigify", default_set=True)
    try:
        lines = [header, ""]
        for name in cases:
            lines += [*case_lines(name), ""]
    finally:
        addon_utils.disable("rigify", default_set=True)
    print("\n".join(lines))
