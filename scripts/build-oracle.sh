#!/usr/bin/env bash
# Builds the Go oracles the differential tests and bench/codec.py talk to: tests/oracle/main.go, a program
# that calls HAMi v2.10.0's real codec and handshake functions, and tests/oracle/nodes/main.go, one that
# sets HAMi's devices up from a device config as HAMi's scheduler does and calls every vendor's
# GetNodeDevices and CheckHealth on whole Nodes.
#
#   bash scripts/build-oracle.sh               build if needed, then print the binary's path
#   bash scripts/build-oracle.sh --print-path  print where the codec oracle is (or would be) only; the
#                                              Node oracle is hami-node-oracle in the same directory
#
# HAMi's source is not part of this repository: it is read from ../shared/hami/v2.10.0 beside the clone
# (HAMI_SOURCE_DIR overrides). At build time its unmodified tree is copied into a staging directory
# outside the clone, tests/oracle/main.go is added to that copy as cmd/hami-oracle/main.go and
# tests/oracle/nodes/main.go as cmd/hami-node-oracle/main.go, and both programs are built there with HAMi's own go.mod and go.sum (-mod=readonly: they pin every dependency;
# the modules come from the Go module proxy on first use). The binary is cached outside the clone at
# ${HAMI_ORACLE_CACHE:-~/.cache/hami-core/oracle}/<key>/{hami-oracle,hami-node-oracle}, where <key>
# hashes this recipe, both main.go files, every file of HAMi's tree and the Go toolchain, and is rebuilt only when one of them changes.
# tests/harness/oracle.py asks this script (--print-path) where the binary is, so the key lives here only.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)

RECIPE=3
MAIN=tests/oracle/main.go
NODES=tests/oracle/nodes/main.go
log() { printf '[build-oracle %s] %s\n' "$(date -u +%H:%M:%S)" "$*" >&2; }
die() { printf 'build-oracle: error: %s\n' "$*" >&2; exit 1; }

print_path=false
case "${1:-}" in
    --print-path) print_path=true ;;
    "") ;;
    *) printf "build-oracle: error: unknown argument '%s' (usage: build-oracle.sh [--print-path])\n" "$1" >&2
       exit 2 ;;
esac

hami=${HAMI_SOURCE_DIR:-$repo/../shared/hami/v2.10.0}
if [ ! -f "$hami/go.mod" ] || [ ! -f "$hami/pkg/device/devices.go" ]; then
    die "HAMi v2.10.0's source is not at $hami (expected shared/hami/v2.10.0 beside the clone, with go.mod and pkg/device); set HAMI_SOURCE_DIR to where it is"
fi
hami=$(cd "$hami" && pwd)
grep -q '^module github.com/Project-HAMi/HAMi$' "$hami/go.mod" \
    || die "$hami/go.mod is not HAMi's (module github.com/Project-HAMi/HAMi)"
[ -f "$MAIN" ] || die "missing $MAIN"
[ -f "$NODES" ] || die "missing $NODES"
command -v go >/dev/null 2>&1 || die "'go' is not on PATH; install Go (1.26 or newer) to build the oracle"
export GOTOOLCHAIN=local CGO_ENABLED=0

key=$( { printf 'recipe %s\n' "$RECIPE"
         sha256sum "$MAIN" | cut -c1-64
         sha256sum "$NODES" | cut -c1-64
         (cd "$hami" && find . -type f -print0 | LC_ALL=C sort -z | xargs -0 sha256sum)
         go env GOVERSION GOOS GOARCH; } | sha256sum | cut -c1-16)
cache=${HAMI_ORACLE_CACHE:-${HOME:-/tmp}/.cache/hami-core/oracle}
bin="$cache/$key/hami-oracle"
node_bin="$cache/$key/hami-node-oracle"

if $print_path; then
    echo "$bin"
    exit 0
fi

if [ -x "$bin" ] && [ -x "$node_bin" ]; then
    log "up to date: $bin"
    echo "$bin"
    exit 0
fi

. scripts/build-lock.sh
take_build_lock "$cache"
if [ -x "$bin" ] && [ -x "$node_bin" ]; then
    log "another build finished meanwhile: $bin"
    echo "$bin"
    exit 0
fi

stage=$(mktemp -d "$cache/.stage.XXXXXX")
trap 'rm -rf "$stage"' EXIT
cp -R "$hami/." "$stage/src"
chmod -R u+w "$stage/src"  # shared/ may be laid read-only
mkdir -p "$stage/src/cmd/hami-oracle" "$stage/src/cmd/hami-node-oracle" "$stage/out"
cp "$MAIN" "$stage/src/cmd/hami-oracle/main.go"
cp "$NODES" "$stage/src/cmd/hami-node-oracle/main.go"
log "building HAMi's codecs, CheckHealth and device registration from $hami with $(go env GOVERSION) (first build: a few minutes)"
if ! (cd "$stage/src" && go build -mod=readonly -trimpath -buildvcs=false -o "$stage/out/" ./cmd/hami-oracle); then
    die "'go build' of the oracle inside a copy of $hami failed (see above); the differential tests need it"
fi
# The Node oracle links HAMi's NVIDIA package, which imports go-nvml: cgo (the library is only dlopen'ed
# by nvml.Init, which registration never calls), as scripts/build-hami-scheduler.sh builds HAMi.
if ! (cd "$stage/src" && CGO_ENABLED=1 go build -mod=readonly -trimpath -buildvcs=false -o "$stage/out/" ./cmd/hami-node-oracle); then
    die "'go build' of the Node oracle inside a copy of $hami failed (see above; it needs cgo: a C compiler on PATH); the Node differential tests need it"
fi
mkdir -p "$cache/$key"
mv -f "$stage/out/hami-node-oracle" "$node_bin"
mv -f "$stage/out/hami-oracle" "$bin"
log "built $bin and $node_bin"
echo "$bin"
