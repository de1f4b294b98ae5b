#!/usr/bin/env bash
# The whole test suite, from a clean clone: installs what is missing, builds the real API server and
# the tools the install tests drive (helm, kubectl) when their pins changed, then lint, type check and
# every test (in-memory and real-API-server tiers).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/bootstrap.sh
bash scripts/build-k8s.sh
bash scripts/build-tools.sh
bash scripts/build-oracle.sh
bash scripts/build-hami-scheduler.sh >/dev/null  # HAMi's own scheduler, for bench/peer.py's smoke test
echo "== ruff"
.venv/bin/ruff check hami_core tests vendors examples bench
echo "== mypy --strict hami_core"
.venv/bin/mypy
echo "== lint-imports (the layers of docs/architecture.md)"
# The example drivers are not installed in .venv (their tests install them elsewhere): found from source.
examples=$(printf '%s:' examples/*/src)
PYTHONPATH="${examples%:}${PYTHONPATH:+:$PYTHONPATH}" .venv/bin/lint-imports
echo "== pytest"
set +e
.venv/bin/python -m pytest "$@"
rc=$?
set -e
if [ "$rc" -eq 5 ]; then
    echo "error: pytest collected no tests" >&2
    exit 1
fi
exit "$rc"
