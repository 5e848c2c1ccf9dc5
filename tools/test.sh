#!/usr/bin/env bash
# The whole test suite: ruff, the solver tier (no bpy), the Flamenco job type
# (Node; nodejs is installed with apt-get if missing), then the Blender tier
# once per Blender version, each in its own process under a timeout (on 4.2 a
# class left registered at exit can hang the interpreter).
set -euo pipefail
cd "$(dirname "$0")/.."
source tools/env.sh

status=0
first=""
for version in $BLENDER_VERSIONS; do
  py="$(venv_for "$version")"
  if [ -z "$first" ]; then
    first="$py"
    echo "== ruff"
    "$py" -m ruff check . || status=1
    "$py" -m ruff format --check . || status=1
    echo "== solver tier (numpy only)"
    "$py" -m pytest -q -p no:cacheprovider tests/solvers || status=1
    echo "== Flamenco job type (Node)"
    if ! command -v node >/dev/null 2>&1; then
      echo "[chain_ik] node is missing: installing nodejs with apt-get" >&2
      { apt-get update -qq && apt-get install -y -qq nodejs >/dev/null; } || status=1
    fi
    # Files, not the directory: Node 21+ reads a --test argument as a glob and
    # would take the bare directory for a module to run.
    node --test tests/flamenco/*.test.js || status=1
  fi
  echo "== Blender tier: bpy $version"
  if [ -d tests/blender ] && ls tests/blender/test_*.py >/dev/null 2>&1; then
    timeout --kill-after=30 1200 "$py" -m pytest -q -p no:cacheprovider tests/blender || status=1
  else
    echo "no Blender tests yet"
  fi
done
exit $status
