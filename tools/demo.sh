#!/usr/bin/env bash
# The main job. Until baking lands (issue 4) it runs the solver core on the
# triangulation paper's experiment and prints the comparison tables.
set -euo pipefail
cd "$(dirname "$0")/.."
source tools/env.sh
py="$(venv_for "${BLENDER_VERSIONS%% *}")"
"$py" bench/paper_experiment.py --targets "${TARGETS:-2000}" --sequential "${SEQUENTIAL:-300}" --fabrik-targets 300
