#!/usr/bin/env bash
# Builds HAMi's own scheduler (v2.10.0, unmodified) for the side-by-side benchmark bench/peer.py.
# Idempotent: the binary is cached outside the clone, keyed by a hash of HAMi's sources (go.mod, go.sum,
# every file under cmd/ and pkg/), the Go toolchain and this recipe, and rebuilt only when one changes.
#
#   bash scripts/build-hami-scheduler.sh [--src DIR]   build if needed; the binary's path is the last
#                                                      line on stdout (progress goes to stderr)
#
# Where HAMi's source is, first found wins: --src DIR, $HAMI_SRC, $HAMI_SHARED/hami/v2.10.0, then
# <repo>/../shared/hami/v2.10.0 (for a git worktree also next to the main checkout). bench/_lib/hami.py
# looks in the same places. The build happens in a writable copy of the source, so HAMi's own go.mod and
# go.sum pin every dependency (-mod=readonly); CGO_ENABLED=1 because HAMi links go-nvml (never loaded on
# the scheduler's path). Environment: HAMI_SCHEDULER_CACHE (default ~/.cache/hami-core/hami-scheduler).
set -euo pipefail
cd "$(dirname "$0")/.."

RECIPE=1
CACHE_ROOT="${HAMI_SCHEDULER_CACHE:-${HOME:-/tmp}/.cache/hami-core/hami-scheduler}"

log() { printf '[build-hami-scheduler %s] %s\n' "$(date -u +%H:%M:%S)" "$*" >&2; }
die() { printf 'build-hami-scheduler: error: %s\n' "$*" >&2; exit 1; }
usage() { printf 'build-hami-scheduler: error: %s\n' "$*" >&2; exit 2; }

src=""
while [ $# -gt 0 ]; do
    case "$1" in
        --src) [ $# -ge 2 ] || usage "--src needs a directory"; src=$2; shift 2 ;;
        --src=*) src=${1#--src=}; shift ;;
        *) usage "unknown argument '$1' (usage: build-hami-scheduler.sh [--src DIR])" ;;
    esac
done

candidates=()
if [ -n "$src" ]; then
    candidates=("$src")
elif [ -n "${HAMI_SRC:-}" ]; then
    candidates=("$HAMI_SRC")
else
    [ -n "${HAMI_SHARED:-}" ] && candidates+=("$HAMI_SHARED/hami/v2.10.0")
    candidates+=("$PWD/../shared/hami/v2.10.0")
    common=$(git rev-parse --path-format=absolute --git-common-dir 2>/dev/null || true)
    [ -n "$common" ] && candidates+=("$(dirname "$common")/../shared/hami/v2.10.0")
fi
SRC=""
for c in "${candidates[@]}"; do
    if [ -f "$c/go.mod" ] && [ -d "$c/cmd/scheduler" ]; then SRC=$(cd "$c" && pwd); break; fi
done
[ -n "$SRC" ] || usage "HAMi v2.10.0's source not found (looked in: ${candidates[*]}); pass --src DIR (a checkout of HAMi at v2.10.0) or set HAMI_SRC or HAMI_SHARED"
grep -q '^module github.com/Project-HAMi/HAMi$' "$SRC/go.mod" || usage "$SRC/go.mod is not HAMi's module"

command -v go >/dev/null || die "go is not on PATH; Go >= 1.26 is needed to build HAMi's scheduler"
command -v cc >/dev/null || command -v gcc >/dev/null || die "no C compiler (cc/gcc) on PATH; HAMi's scheduler needs cgo"
export GOTOOLCHAIN=local CGO_ENABLED=1

KEY=$( { printf 'recipe %s\n' "$RECIPE"
         go env GOVERSION GOOS GOARCH CC
         cd "$SRC" && find go.mod go.sum cmd pkg -type f -print0 | LC_ALL=C sort -z | xargs -0 sha256sum
       } | sha256sum | cut -c1-16)
BIN_DIR="$CACHE_ROOT/$KEY"
BIN="$BIN_DIR/hami-scheduler"

if [ -x "$BIN" ]; then
    log "up to date: $BIN"
    echo "$BIN"
    exit 0
fi

. scripts/build-lock.sh
take_build_lock "$CACHE_ROOT"
if [ -x "$BIN" ]; then
    log "another build finished meanwhile: $BIN"
    echo "$BIN"
    exit 0
fi

STAGE=$(mktemp -d "$CACHE_ROOT/.stage.XXXXXX")
trap 'chmod -R u+w "$STAGE" 2>/dev/null; rm -rf "$STAGE"' EXIT
mkdir "$STAGE/src"
(cd "$SRC" && cp -R go.mod go.sum cmd pkg "$STAGE/src/")
chmod -R u+w "$STAGE/src"
started=$(date +%s)
log "building $SRC/cmd/scheduler with $(go env GOVERSION) (cold on 2 cores: a few minutes, longer when modules must be downloaded)"
(cd "$STAGE/src" && go build -mod=readonly -trimpath -buildvcs=false -ldflags "-s -w" \
    -o "$STAGE/hami-scheduler" ./cmd/scheduler) \
    || die "'go build ./cmd/scheduler' of $SRC failed (see the go output above)"
"$STAGE/hami-scheduler" --help >/dev/null 2>&1 || die "the built HAMi scheduler does not run"
mkdir -p "$BIN_DIR"
mv -f "$STAGE/hami-scheduler" "$BIN.tmp"
mv -f "$BIN.tmp" "$BIN"
log "built in $(( $(date +%s) - started ))s: $BIN"
echo "$BIN"
