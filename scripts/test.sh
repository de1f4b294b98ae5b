#!/usr/bin/env bash
# The whole test suite, from a clean clone: installs what is missing, builds the real API server and
# the tools the install tests drive (helm, kubectl) when their pins changed, then lint, type check and
# every test (in-memory and real-API-server tiers).
set -euo pipefail
cd "$(dirname "$0")/.."
# The run starts hundreds of Python processes (pytest workers, `hami` commands, fresh venvs): let them
# share compiled modules and pytest's rewritten test modules instead of compiling each one again.
unset PYTHONDONTWRITEBYTECODE
bash scripts/bootstrap.sh
bash scripts/build-k8s.sh
bash scripts/build-tools.sh
bash scripts/build-oracle.sh
bash scripts/build-hami-scheduler.sh >/dev/null  # HAMi's own scheduler, for bench/peer.py's smoke test
echo "== ruff"
.venv/bin/ruff check hami_core tests vendors examples bench
.venv/bin/ruff format --check --quiet hami_core tests vendors examples bench conftest.py
echo "== mypy --strict hami_core"
# mypy's incremental cache lives outside the clone, like the Go builds: a fresh clone re-checks only what
# differs from the last run on this machine (mypy validates every cached module by its source hash).
mypy_cache=${MYPY_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/hami-core/mypy}
MYPY_CACHE_DIR=$mypy_cache .venv/bin/mypy
echo "== mypy tests, vendors, examples, bench (mypy-tests.ini)"
drivers=$(printf '%s:' vendors/*/src examples/*/src)
MYPY_CACHE_DIR=$mypy_cache-tests MYPYPATH="tests:${drivers%:}" \
    .venv/bin/mypy --config-file mypy-tests.ini tests vendors examples
MYPY_CACHE_DIR=$mypy_cache-bench MYPYPATH=bench:tests .venv/bin/mypy --config-file mypy-tests.ini bench
echo "== lint-imports (the layers of docs/architecture.md)"
# The example drivers are not installed in .venv (their tests install them elsewhere): found from source.
examples=$(printf '%s:' examples/*/src)
PYTHONPATH="${examples%:}${PYTHONPATH:+:$PYTHONPATH}" .venv/bin/lint-imports
# pytest-xdist: the tests run in HAMI_TEST_WORKERS processes (default 4 on any machine: many tests wait on
# API servers and subprocesses, so more workers than cores keep the cores busy). Each worker starts its
# own kube-apiserver + etcd when it first needs one. `-n 0` (or any -n) on the command line wins.
workers=${HAMI_TEST_WORKERS:-4}
echo "== pytest ($workers workers)"
set +e
.venv/bin/python -m pytest -n "$workers" "$@"
rc=$?
set -e
if [ "$rc" -eq 5 ]; then
    echo "error: pytest collected no tests" >&2
    exit 1
fi
exit "$rc"
