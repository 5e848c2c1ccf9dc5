"""Solver-tier test configuration.

Hypothesis runs with a fixed, database-free, derandomized profile so CI is
deterministic and the whole tier stays fast on a 2-core machine. The shared
strategies and checks live in `ik_strategies.py` next to this file; under
pytest's importlib mode test modules cannot import each other, so this
directory is put on sys.path here and the tests `import ik_strategies`.
"""

import sys
from pathlib import Path

from hypothesis import HealthCheck, settings

HERE = str(Path(__file__).resolve().parent)
if HERE not in sys.path:
    sys.path.insert(0, HERE)

settings.register_profile(
    "chain_ik_solvers",
    deadline=None,
    derandomize=True,
    database=None,
    max_examples=60,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.load_profile("chain_ik_solvers")
