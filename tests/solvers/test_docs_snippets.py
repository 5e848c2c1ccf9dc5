"""The Python snippets of docs/api.md run as written (issue 11 §7: no undefined names)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

DOC = Path(__file__).resolve().parents[2] / "docs" / "api.md"
SNIPPETS = re.findall(r"```python\n(.*?)```", DOC.read_text(encoding="utf-8"), re.S)


def test_the_api_doc_has_snippets():
    assert len(SNIPPETS) >= 2


@pytest.mark.parametrize("index", range(len(SNIPPETS)))
def test_api_snippet_runs(index, capsys):
    exec(compile(SNIPPETS[index], f"{DOC.name} snippet {index}", "exec"), {"__name__": "snippet"})
