#!/usr/bin/env bash
# Installs everything the project and its tests need, from a clean clone: a virtualenv in .venv with the
# core, every in-tree vendor driver and the example third-party driver (editable), plus the test tools.
# Safe to run again: it only installs what is missing or changed.
set -euo pipefail
shopt -s nullglob
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
    "$PY" -m venv .venv
    .venv/bin/pip install -q --upgrade pip
fi
stamp=.venv/.hami-installed
want=$(cat pyproject.toml vendors/*/pyproject.toml | sha256sum | cut -c1-16)
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
    args=(-e ".[test]")
    for d in vendors/*/; do
        [ -f "$d/pyproject.toml" ] && args+=(-e "$d")
    done
    .venv/bin/pip install -q "${args[@]}"
    echo "$want" > "$stamp"
fi
