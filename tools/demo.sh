#!/usr/bin/env bash
# The main job: build a rig (out/arm.blend), bake its IK motion headless through
# cli.py into out/arm_baked.blend (as `blender --background scene.blend --python
# cli.py -- ...` would; the command is printed), play it back, print a summary and
# draw out/bake_demo.png (the README shows docs/bake_demo.png, made the same way
# with --png); then the solver core on a small version of the triangulation
# paper's experiment.
set -euo pipefail
cd "$(dirname "$0")/.."
source tools/env.sh
py="$(venv_for "${BLENDER_VERSIONS%% *}")"
"$py" tools/demo_bake.py
echo
"$py" bench/paper_experiment.py --targets "${TARGETS:-2000}" --sequential "${SEQUENTIAL:-200}" --fabrik-targets 200
