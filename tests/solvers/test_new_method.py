"""A new method is one folder plus one line in the registry (issue 19 item 2).

The test copies solvers/ to a temporary directory, writes a toy method's folder (CCD sweeping
from the root instead of the tip: a numpy step and its declaration, nothing else) and its one
line in registry.py, and in a fresh interpreter solves a chain and a tree with it. No other file
changes: the chain goes through the one solve path (its batch kernel, with the reason that it
has no float kernel), the tree through the least-squares method's tree kernel (with that reason).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

TOY = '''"""A toy method: cyclic coordinate descent from the root (a test's)."""

import numpy as np

from .. import quat
from ..common.make_kernels import iterated
from ..model.method import Method


def make_step(chain):
    n = chain.n_bones

    def step(points, local, targets):
        p = points.copy()
        for j in range(n):
            pivot = p[:, j]
            e = quat.normalize(p[:, n] - pivot)
            t = quat.normalize(targets - pivot)
            q = quat.swing(e, t, np.broadcast_to(chain.fallback_axes[j], e.shape))
            p[:, j + 1 :] = pivot[:, None, :] + quat.rotate(q[:, None, :], p[:, j + 1 :] - pivot[:, None, :])
        return p, None

    return step


METHOD = Method(
    name="toy",
    label="Toy",
    description="CCD from the root",
    options=(),
    max_iterations=300,
    batch=iterated("toy", make_step),
)
'''

LINE = "from .toy import METHOD as TOY  # noqa: F401 (in METHOD_LIST)\n"

RUN = """
import json, sys
import numpy as np
sys.path.insert(0, sys.argv[1])
import solvers

chain = solvers.Chain([[0.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 2.0, 0.0], [0.0, 2.6, 0.0]])
one = solvers.solve(chain, [0.8, 1.5, 0.4], method="toy")
skeleton, local = solvers.Skeleton.from_bones(
    (-1, 0, 1, 1),
    [[0, 0, 0], [0, 1, 0], [0, 2, 0], [0, 2, 0]],
    [[0, 1, 0], [0, 2, 0], [0.8, 2.6, 0], [-0.8, 2.6, 0]],
)
effectors = [solvers.Effector(2, [0.7, 2.1, 0.5]), solvers.Effector(3, [-0.9, 1.9, 0.3])]
tree = solvers.solve_skeleton(skeleton, local, effectors, method="toy")
print(json.dumps({
    "methods": list(solvers.REGISTRY),
    "chain": [one.method, bool(one.reached), one.reason],
    "tree": [tree.method, bool(tree.reached), tree.reason],
}))
"""


def test_a_toy_method_is_one_folder_and_one_registry_line(tmp_path):
    copy = tmp_path / "solvers"
    shutil.copytree(ROOT / "solvers", copy, ignore=shutil.ignore_patterns("__pycache__"))
    before = {p.relative_to(copy): p.read_bytes() for p in copy.rglob("*.py")}
    (copy / "toy").mkdir()
    (copy / "toy" / "__init__.py").write_text(TOY)
    registry = copy / "registry.py"
    text = registry.read_text()
    anchor = "# isort: on\n"
    assert text.count(anchor) == 1
    registry.write_text(text.replace(anchor, LINE + anchor))

    after = {p.relative_to(copy): p.read_bytes() for p in copy.rglob("*.py")}
    changed = sorted(str(p) for p in after if before.get(p) != after[p])
    assert changed == ["registry.py", "toy/__init__.py"]

    out = subprocess.run(
        [sys.executable, "-c", RUN, str(tmp_path)], capture_output=True, text=True, timeout=120, check=False
    )
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout)
    assert got["methods"] == ["triangulation", "fabrik", "ccd", "jacobian", "toy"]
    assert got["chain"] == ["toy", True, "toy has no float kernel"]
    method, reached, reason = got["tree"]
    assert reached and method == "jacobian"
    assert reason == "toy has no tree kernel: several effectors solved by the jacobian"
