#!/usr/bin/env bash
# Installs everything the project and its tests need, from a clean clone: a virtualenv in .venv with the
# core and every in-tree vendor driver (editable), plus the test tools and a setuptools recent enough to
# build driver packages offline (the packages here are built with it, without isolated build
# environments; the example third-party driver's tests build and install it into a temporary directory,
# never into .venv). Safe to run again: it only installs what is missing or changed.
#
# Quiet: it says in one line what it is installing and how long that took; pip's output goes to a log
# that is printed only when something fails.
set -euo pipefail
shopt -s nullglob
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
stamp=.venv/.hami-installed
want=$(cat pyproject.toml vendors/*/pyproject.toml scripts/bootstrap.sh | sha256sum | cut -c1-16)
if [ -x .venv/bin/python ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
    exit 0
fi

log=$(mktemp "${TMPDIR:-/tmp}/hami-bootstrap.XXXXXX")
quietly() {  # quietly COMMAND...: run it with its output in the log; on failure show the log and stop
    if ! "$@" >>"$log" 2>&1; then
        printf 'bootstrap: error: `%s` failed; its output:\n' "$*" >&2
        cat "$log" >&2
        rm -f "$log"
        exit 1
    fi
}

started=$(date +%s)
drivers=()
for d in vendors/*/; do
    [ -f "$d/pyproject.toml" ] && drivers+=("$(basename "$d")")
done
if [ ! -x .venv/bin/python ]; then
    echo "hami-core: first run: installing hami-core, its drivers (${drivers[*]}) and the test tools into .venv; this takes a minute or two"
    quietly "$PY" -m venv .venv
    quietly .venv/bin/python -m pip install --upgrade pip
else
    echo "hami-core: pyproject.toml or the drivers changed: updating .venv"
fi
args=(-e ".[test]")
for d in "${drivers[@]}"; do
    args+=(-e "vendors/$d")
done
quietly .venv/bin/python -m pip install "setuptools>=77"
quietly .venv/bin/python -m pip install --no-build-isolation "${args[@]}"
echo "$want" > "$stamp"
rm -f "$log"
echo "hami-core: .venv is ready ($(( $(date +%s) - started )) s)"
