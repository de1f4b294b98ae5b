#!/usr/bin/env bash
# Builds the Go conformance oracle (tests/oracle) that the differential codec tests talk to.
# Idempotent: the binary is cached outside the clone, keyed by the oracle's sources and the Go toolchain,
# at ${HAMI_ORACLE_CACHE:-$HOME/.cache/hami-core/oracle}/<key>/hami-oracle, and rebuilt only when the key
# changes. tests/harness/oracle.py computes the same key to find it. Needs only Go (no cgo, no network:
# the oracle uses the standard library alone).
set -euo pipefail
cd "$(dirname "$0")/.."
src=tests/oracle

if ! command -v go >/dev/null 2>&1; then
    echo "build-oracle: error: 'go' is not on PATH; install Go (1.25 or newer) to build the oracle" >&2
    exit 1
fi
export GOTOOLCHAIN=local CGO_ENABLED=0

# The cache key: each source file's name and bytes, then the toolchain (encoding/json and strconv belong
# to it). Keep in step with oracle_key() in tests/harness/oracle.py.
key=$(
    cd "$src"
    for f in go.mod go.sum main.go; do
        printf '%s\n' "$f"
        if [ -f "$f" ]; then cat "$f"; fi
    done
    go env GOVERSION GOOS GOARCH
)
key=$(printf '%s' "$key" | sha256sum | cut -c1-16)
cache=${HAMI_ORACLE_CACHE:-${HOME:-/tmp}/.cache/hami-core/oracle}
bin="$cache/$key/hami-oracle"

if [ -x "$bin" ]; then
    echo "== oracle: up to date ($bin)"
    exit 0
fi

echo "== oracle: building $src with $(go env GOVERSION) -> $bin"
mkdir -p "$cache/$key"
tmp="$cache/$key/.hami-oracle.$$"
trap 'rm -f "$tmp"' EXIT
if ! (cd "$src" && go build -mod=readonly -trimpath -buildvcs=false -o "$tmp" .); then
    echo "build-oracle: error: 'go build' of $src failed (see above); the differential tests need it" >&2
    exit 1
fi
mv -f "$tmp" "$bin"
trap - EXIT
echo "== oracle: built $bin"
