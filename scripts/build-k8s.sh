#!/usr/bin/env bash
# Builds the real kube-apiserver and etcd for the API-server test tier from the pinned Go modules in
# tests/k8s/{apiserver,etcd}. Idempotent: the binaries are cached outside the clone, keyed by the pins,
# and rebuilt only when a go.mod/go.sum (or this recipe) changes.
#
#   bash scripts/build-k8s.sh              build if needed, then print the binary directory
#   bash scripts/build-k8s.sh --print-dir  print the binary directory only (no build, no checks)
#
# Environment: HAMI_K8S_CACHE (default ~/.cache/hami-core/k8s) is the cache root.
# The directory name is computed the same way by tests/harness/apiserver.py (k8s_bin_dir); keep
# RECIPE and the hashed file list in step with it.
set -euo pipefail
cd "$(dirname "$0")/.."

RECIPE=1
MODULES=(tests/k8s/apiserver tests/k8s/etcd)
CACHE_ROOT="${HAMI_K8S_CACHE:-$HOME/.cache/hami-core/k8s}"

log() { printf '[build-k8s %s] %s\n' "$(date -u +%H:%M:%S)" "$*"; }
die() { printf '[build-k8s] error: %s\n' "$*" >&2; exit 1; }

pin() {  # pin <go.mod> <module path>: the required version of a module
    awk -v m="$2" '$1 == m || ($1 == "require" && $2 == m) { print ($1 == m ? $2 : $3); exit }' "$1"
}

for m in "${MODULES[@]}"; do
    [ -f "$m/go.mod" ] && [ -f "$m/go.sum" ] || die "missing $m/go.mod or $m/go.sum"
done
K8S_VERSION=$(pin tests/k8s/apiserver/go.mod k8s.io/kubernetes)
ETCD_VERSION=$(pin tests/k8s/etcd/go.mod go.etcd.io/etcd/server/v3)
[ -n "$K8S_VERSION" ] || die "tests/k8s/apiserver/go.mod does not require k8s.io/kubernetes"
[ -n "$ETCD_VERSION" ] || die "tests/k8s/etcd/go.mod does not require go.etcd.io/etcd/server/v3"

KEY=$( { printf 'recipe %s\n' "$RECIPE"
         for m in "${MODULES[@]}"; do cat "$m/go.mod" "$m/go.sum"; done; } | sha256sum | cut -c1-12)
BIN_DIR="$CACHE_ROOT/$K8S_VERSION-$KEY"

if [ "${1:-}" = "--print-dir" ]; then
    echo "$BIN_DIR"
    exit 0
fi
[ $# -eq 0 ] || die "unknown argument '$1' (usage: build-k8s.sh [--print-dir])"

if [ -x "$BIN_DIR/kube-apiserver" ] && [ -x "$BIN_DIR/etcd" ] && [ -f "$BIN_DIR/.complete" ]; then
    log "kube-apiserver $K8S_VERSION and etcd $ETCD_VERSION are up to date in $BIN_DIR"
    exit 0
fi

command -v go >/dev/null || die "go is not on PATH; Go >= 1.26 is needed to build kube-apiserver and etcd"
export GOTOOLCHAIN=local CGO_ENABLED=0
GO_VERSION=$(go env GOVERSION)
. scripts/build-lock.sh
take_build_lock "$CACHE_ROOT"
if [ -f "$BIN_DIR/.complete" ]; then
    log "another build finished meanwhile: $BIN_DIR"
    exit 0
fi

STAGE=$(mktemp -d "$CACHE_ROOT/.stage.XXXXXX")
trap 'rm -rf "$STAGE"' EXIT
chmod 755 "$STAGE"
started=$(date +%s)
log "building with $GO_VERSION into $BIN_DIR (cold on 2 cores: ~5 min, ~14 min when the modules must be downloaded too; needs a few GB of RAM)"

MINOR=${K8S_VERSION#v1.}
MINOR=${MINOR%%.*}
VERSION_PKG=k8s.io/component-base/version
LDFLAGS="-s -w -X $VERSION_PKG.gitVersion=$K8S_VERSION -X $VERSION_PKG.gitMajor=1"
LDFLAGS="$LDFLAGS -X $VERSION_PKG.gitMinor=$MINOR -X $VERSION_PKG.gitTreeState=clean"

log "kube-apiserver $K8S_VERSION: go build (modules are downloaded on first use)"
(cd tests/k8s/apiserver && go build -mod=readonly -trimpath -buildvcs=false -ldflags "$LDFLAGS" \
    -o "$STAGE/kube-apiserver" k8s.io/kubernetes/cmd/kube-apiserver) \
    || die "building kube-apiserver $K8S_VERSION failed (see the go output above)"
log "kube-apiserver built after $(( $(date +%s) - started ))s"

log "etcd $ETCD_VERSION: go build"
(cd tests/k8s/etcd && go build -mod=readonly -trimpath -buildvcs=false -ldflags "-s -w" \
    -o "$STAGE/etcd" go.etcd.io/etcd/server/v3) \
    || die "building etcd $ETCD_VERSION failed (see the go output above)"

"$STAGE/kube-apiserver" --version >/dev/null || die "the built kube-apiserver does not run"
"$STAGE/etcd" --version >/dev/null || die "the built etcd does not run"
printf 'kube-apiserver %s\netcd %s\n%s\n' "$K8S_VERSION" "$ETCD_VERSION" "$GO_VERSION" > "$STAGE/.complete"

rm -rf "$BIN_DIR"
mv "$STAGE" "$BIN_DIR"
trap - EXIT
log "done in $(( $(date +%s) - started ))s: $BIN_DIR/{kube-apiserver,etcd}"
