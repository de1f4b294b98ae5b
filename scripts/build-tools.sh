#!/usr/bin/env bash
# Builds the command-line tools the install tests drive -- helm (lint and template charts/hami-core),
# kubectl (server-side apply of the result) and promtool (unit tests of the chart's alert rules) -- from
# the pinned Go modules in tests/k8s/{helm,kubectl,promtool}.
# Idempotent: each binary is cached outside the clone, keyed by its module's go.mod and go.sum, and is
# rebuilt only when they (or this recipe) change.
#
#   bash scripts/build-tools.sh               build what is missing, then print where the tools are
#   bash scripts/build-tools.sh --print TOOL  print the path of TOOL (helm, kubectl or promtool) only; no build
#
# Environment: HAMI_TOOLS_CACHE (default ~/.cache/hami-core/tools) is the cache root.
# tests/harness/tools.py computes the same paths; keep RECIPE and the hashed files in step with it.
set -euo pipefail
cd "$(dirname "$0")/.."

RECIPE=1
CACHE_ROOT="${HAMI_TOOLS_CACHE:-$HOME/.cache/hami-core/tools}"

log() { printf '[build-tools %s] %s\n' "$(date -u +%H:%M:%S)" "$*"; }
die() { printf '[build-tools] error: %s\n' "$*" >&2; exit 1; }

pin() {  # pin <go.mod> <module path>: the required version of a module
    awk -v m="$2" '$1 == m || ($1 == "require" && $2 == m) { print ($1 == m ? $2 : $3); exit }' "$1"
}

module_of() {  # module_of <tool>: the wrapper module that builds it
    case "$1" in
        helm) echo tests/k8s/helm ;;
        kubectl) echo tests/k8s/kubectl ;;
        promtool) echo tests/k8s/promtool ;;
        *) die "unknown tool '$1' (known: helm, kubectl, promtool)" ;;
    esac
}

version_of() {  # version_of <tool>: the pinned release the tool is built from
    case "$1" in
        helm) pin tests/k8s/helm/go.mod helm.sh/helm/v3 ;;
        kubectl) pin tests/k8s/kubectl/go.mod k8s.io/kubernetes ;;
        promtool) pin tests/k8s/promtool/go.mod github.com/prometheus/prometheus ;;
    esac
}

path_of() {  # path_of <tool>: <cache root>/<tool>-<version>-<12 hex of the recipe and the module files>/<tool>
    local tool=$1 module version key
    module=$(module_of "$tool")
    [ -f "$module/go.mod" ] && [ -f "$module/go.sum" ] || die "missing $module/go.mod or $module/go.sum"
    version=$(version_of "$tool")
    [ -n "$version" ] || die "$module/go.mod does not pin the $tool module"
    key=$( { printf 'recipe %s\n' "$RECIPE"; cat "$module/go.mod" "$module/go.sum"; } | sha256sum | cut -c1-12)
    echo "$CACHE_ROOT/$tool-$version-$key/$tool"
}

if [ "${1:-}" = "--print" ]; then
    [ $# -eq 2 ] || die "usage: build-tools.sh --print helm|kubectl|promtool"
    path_of "$2"
    exit 0
fi
[ $# -eq 0 ] || die "unknown argument '$1' (usage: build-tools.sh [--print helm|kubectl|promtool])"

# kubectl must speak the API server's release: both come from the same k8s.io/kubernetes pin.
apiserver_pin=$(pin tests/k8s/apiserver/go.mod k8s.io/kubernetes)
kubectl_pin=$(version_of kubectl)
[ "$apiserver_pin" = "$kubectl_pin" ] || die "tests/k8s/kubectl pins k8s.io/kubernetes $kubectl_pin but" \
    "tests/k8s/apiserver pins $apiserver_pin; move both (see docs/testing.md)"

complete() { [ -x "$1" ] && [ -f "$(dirname "$1")/.complete" ]; }

todo=()
for tool in helm kubectl promtool; do
    if complete "$(path_of "$tool")"; then
        log "$tool $(version_of "$tool") is up to date: $(path_of "$tool")"
    else
        todo+=("$tool")
    fi
done
[ ${#todo[@]} -gt 0 ] || exit 0

command -v go >/dev/null || die "go is not on PATH; Go >= 1.26 is needed to build ${todo[*]}"
export GOTOOLCHAIN=local CGO_ENABLED=0
GO_VERSION=$(go env GOVERSION)
. scripts/build-lock.sh
take_build_lock "$CACHE_ROOT"

ldflags_of() {  # ldflags_of <tool>: version stamps as the upstream builds set them
    local tool=$1 version minor client_go
    version=$(version_of "$tool")
    case "$tool" in
        helm)
            # helm's Makefile stamps its version, and the Kubernetes version `helm template` and
            # `helm lint` assume, from the client-go it is built with (v0.X.Y -> 1.X).
            client_go=$(pin tests/k8s/helm/go.mod k8s.io/client-go)
            minor=${client_go#v0.}
            minor=${minor%%.*}
            printf '%s' "-s -w -X helm.sh/helm/v3/internal/version.version=$version" \
                " -X helm.sh/helm/v3/internal/version.gitTreeState=clean" \
                " -X helm.sh/helm/v3/pkg/lint/rules.k8sVersionMajor=1" \
                " -X helm.sh/helm/v3/pkg/lint/rules.k8sVersionMinor=$minor" \
                " -X helm.sh/helm/v3/pkg/chartutil.k8sVersionMajor=1" \
                " -X helm.sh/helm/v3/pkg/chartutil.k8sVersionMinor=$minor"
            ;;
        kubectl)
            minor=${version#v1.}
            minor=${minor%%.*}
            local pkg flags="-s -w"
            for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
                flags="$flags -X $pkg.gitVersion=$version -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor"
                flags="$flags -X $pkg.gitTreeState=clean"
            done
            printf '%s' "$flags"
            ;;
        promtool)
            # Prometheus' Makefile stamps the release (module v0.X.Y is Prometheus 3.X.Y).
            minor=${version#v0.}
            printf '%s' "-s -w -X github.com/prometheus/common/version.Version=3.${minor:1}" \
                " -X github.com/prometheus/common/version.Branch=HEAD"
            ;;
    esac
}

package_of() {
    case "$1" in
        helm) echo helm.sh/helm/v3/cmd/helm ;;
        kubectl) echo k8s.io/kubernetes/cmd/kubectl ;;
        promtool) echo github.com/prometheus/prometheus/cmd/promtool ;;
    esac
}

for tool in "${todo[@]}"; do
    target=$(path_of "$tool")
    if complete "$target"; then
        log "another build finished $tool meanwhile: $target"
        continue
    fi
    version=$(version_of "$tool")
    stage=$(mktemp -d "$CACHE_ROOT/.stage.XXXXXX")
    trap 'rm -rf "$stage"' EXIT
    chmod 755 "$stage"
    started=$(date +%s)
    log "$tool $version: go build with $GO_VERSION (modules are downloaded on first use; cold on 2 cores: see docs/testing.md)"
    ldflags=$(ldflags_of "$tool")  # read before the cd below: it reads the go.mod files by relative path
    (cd "$(module_of "$tool")" && go build -mod=readonly -trimpath -buildvcs=false \
        -ldflags "$ldflags" -o "$stage/$tool" "$(package_of "$tool")") \
        || die "building $tool $version failed (see the go output above)"
    case "$tool" in
        helm) check=(version --short) ;;
        kubectl) check=(version --client) ;;
        promtool) check=(--version) ;;
    esac
    "$stage/$tool" "${check[@]}" >/dev/null || die "the built $tool does not run"
    printf '%s %s\n%s\n' "$tool" "$version" "$GO_VERSION" > "$stage/.complete"
    rm -rf "$(dirname "$target")"
    mv "$stage" "$(dirname "$target")"
    trap - EXIT
    log "$tool $version built in $(( $(date +%s) - started ))s: $target"
done
