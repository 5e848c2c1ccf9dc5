"""A stand-in launcher for tools/bake_shots.py in the solver tier, where no Blender runs: the
driver's own logic (which library clashes it refuses, that nothing bakes after a refusal) is
tested here; the real library scan and bakes run in Blender in tests/blender/test_bake_shots.py.

`standin(folder, libraries)` writes an executable used as `--python`: run on
headless/library_scan.py it answers as that script does, listing for each blend the libraries
`libraries` gives it (blend path -> list of paths, {"error": ...}, or {"crash": N}: it dies by a
signal there, the first N times, or every time for N = -1); run on cli.py (a bake) it leaves a
mark, `folder/RAN`, and fails, so a test can prove no shot ever started."""

from __future__ import annotations

import json
import sys
from pathlib import Path

SCRIPT = """#!{python}
import json, os, signal, sys
from pathlib import Path
MARK = "chain_ik library scan: "
if sys.argv[1].endswith("library_scan.py"):
    found = json.loads(Path({libraries!r}).read_text())
    print(MARK + json.dumps({{"ready": True}}), flush=True)
    for blend in sys.argv[sys.argv.index("--") + 1:]:
        answer = found.get(blend, [])
        answer = answer if isinstance(answer, dict) else {{"libraries": answer}}
        if answer.get("crash"):
            tally = Path({libraries!r} + "." + blend.replace("/", "_"))
            count = int(tally.read_text()) if tally.exists() else 0
            tally.write_text(str(count + 1))
            if answer["crash"] < 0 or count < answer["crash"]:
                os.kill(os.getpid(), signal.SIGKILL)
        print(MARK + json.dumps({{"blend": blend, **answer}}), flush=True)
else:
    Path({ran!r}).touch()
    sys.exit(1)
"""


def standin(folder: Path, libraries: dict[str, list[str] | dict] | None = None) -> Path:
    table = folder / "standin-libraries.json"
    table.write_text(json.dumps({str(k): v for k, v in (libraries or {}).items()}))
    path = folder / "standin-blender"
    path.write_text(SCRIPT.format(python=sys.executable, libraries=str(table), ran=str(folder / "RAN")))
    path.chmod(0o755)
    return path
