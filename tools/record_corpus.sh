#!/usr/bin/env bash
# Record the outcome corpus (tests/blender/outcome_corpus.py): the Blender tier run with
# CHAIN_IK_CORPUS set, once per Blender version, each into OUT/<version>/ (one .jsonl per test
# module and a manifest.json). Compare two corpora with tools/compare_corpus.py.
#
#   tools/record_corpus.sh OUT [VERSION] [-- PYTEST_ARGS...]
#
# VERSION: one bpy version (default: every one of tools/env.sh, "5.0.1 4.2.23"); PYTEST_ARGS
# replace the default selection (tests/blender), e.g. -- tests/blender/test_bake.py -k loop.
# Exit status 1 when a test run failed: a corpus of a failing run is not a reference.
set -euo pipefail
cd "$(dirname "$0")/.."
source tools/env.sh

if [ $# -lt 1 ] || [ "$1" = "--" ]; then
  echo "usage: tools/record_corpus.sh OUT [VERSION] [-- PYTEST_ARGS...]" >&2
  exit 2
fi
out="$1"
shift
versions="$BLENDER_VERSIONS"
if [ $# -gt 0 ] && [ "$1" != "--" ]; then
  versions="$1"
  shift
fi
[ $# -gt 0 ] && [ "$1" = "--" ] && shift
selection=("$@")
[ ${#selection[@]} -gt 0 ] || selection=(tests/blender)

mkdir -p "$out"
out="$(cd "$out" && pwd)"
status=0
for version in $versions; do
  py="$(venv_for "$version")"
  echo "== outcome corpus: bpy $version -> $out/$version"
  CHAIN_IK_CORPUS="$out/$version" timeout --kill-after=30 2400 \
    "$py" -m pytest -q -p no:cacheprovider "${selection[@]}" || status=1
done
exit $status
