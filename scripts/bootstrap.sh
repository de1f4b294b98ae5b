#!/usr/bin/env bash
# Installs everything the project and its tests need, from a clean clone: a virtualenv in .venv with the
# core and every in-tree vendor driver (editable), plus the test tools and a setuptools recent enough to
# build driver packages offline (the example third-party driver's tests build and install it into a
# temporary directory, never into .venv). Safe to run again: it only installs what is missing or changed.
set -euo pipefail
shopt -s nullglob
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
    "$PY" -m venv .venv
    .venv/bin/pip install -q --upgrade pip
fi
stamp=.venv/.hami-installed
want=$(cat pyproject.toml vendors/*/pyproject.toml scripts/bootstrap.sh | sha256sum | cut -c1-16)
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
    args=(-e ".[test]" "setuptools>=77")
    for d in vendors/*/; do
        [ -f "$d/pyproject.toml" ] && args+=(-e "$d")
    done
    .venv/bin/pip install -q "${args[@]}"
    echo "$want" > "$stamp"
fi
