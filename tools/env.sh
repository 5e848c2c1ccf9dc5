#!/usr/bin/env bash
# Sourced by the other tools: builds (once) and names the Python 3.11 venvs
# that hold Blender as a Python module (the bpy wheel) plus the dev tools.
# Cached outside the repo; rebuilt whenever absent or incomplete.
# Sets no shell options: sourced into an interactive shell, `set -e` would close
# it on the next failing command (test.sh and demo.sh set their own).

CHAIN_IK_CACHE="${CHAIN_IK_CACHE:-$HOME/.cache/chain_ik}"
BLENDER_VERSIONS="${CHAIN_IK_BLENDER_VERSIONS:-5.0.1 4.2.23}"
# ruff pinned: its formatter's output is checked (tools/test.sh), and changes between releases.
# dask[distributed]: tools/bake_shots.py --scheduler and its tests only, never the extension.
DEV_PACKAGES="pytest==8.* hypothesis==6.* ruff==0.17.6 numpy dask[distributed]"

find_python311() {
  for cand in python3.11 python3 python; do
    if command -v "$cand" >/dev/null 2>&1 && "$cand" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))'; then
      command -v "$cand"; return 0
    fi
  done
  echo "Chain IK needs Python 3.11 (the bpy wheel supports only 3.11)" >&2
  return 1
}

# install_dev_packages DIR: DEV_PACKAGES into the venv at DIR (read -a: no globbing of "dask[...]").
install_dev_packages() {
  local packages
  read -ra packages <<< "$DEV_PACKAGES"
  "$1/bin/python" -m pip install --quiet --disable-pip-version-check "${packages[@]}" >&2 || return 1
  echo "$DEV_PACKAGES" > "$1/.dev-packages"
}

# venv_for VERSION -> prints the venv's python, building the venv if needed. A cached venv
# made with other DEV_PACKAGES (an older checkout, a CI cache) gets the missing ones installed.
venv_for() {
  local version="$1" dir="$CHAIN_IK_CACHE/venv-bpy-$1"
  if [ ! -f "$dir/.complete" ] || ! "$dir/bin/python" -c 'import bpy' >/dev/null 2>&1; then
    echo "[chain_ik] building $dir (bpy==$version, ~1 GB, a few minutes)..." >&2
    local python
    python="$(find_python311)" || return 1
    rm -rf "$dir"
    mkdir -p "$CHAIN_IK_CACHE" || return 1
    "$python" -m venv "$dir" >&2 || return 1
    "$dir/bin/python" -m pip install --quiet --disable-pip-version-check "bpy==$version" >&2 || return 1
    install_dev_packages "$dir" || return 1
    touch "$dir/.complete"
  elif [ "$(cat "$dir/.dev-packages" 2>/dev/null)" != "$DEV_PACKAGES" ]; then
    # Several test runs may share the cache: one installs, the others wait for it.
    (
      flock 9
      if [ "$(cat "$dir/.dev-packages" 2>/dev/null)" != "$DEV_PACKAGES" ]; then
        echo "[chain_ik] installing dev packages into $dir: $DEV_PACKAGES" >&2
        install_dev_packages "$dir"
      fi
    ) 9>"$dir/.dev-packages.lock"
  fi
  echo "$dir/bin/python"
}
