#!/usr/bin/env bash
# Renders deploy/hami-core.yaml, the plain manifests for `kubectl apply --server-side -f deploy/` (or a
# kustomization of it, docs/operations.md): the namespace hami-core, then charts/hami-core with its default
# values as release "hami-core", labelled as applied by kubectl rather than installed by Helm (no
# helm.sh/chart label; app.kubernetes.io/managed-by: kubectl), so that no tool takes them for a release.
#
#   bash scripts/render-deploy.sh          write deploy/hami-core.yaml
#   bash scripts/render-deploy.sh --check  exit 1 (with a diff) when the committed file is out of date
#
# Needs helm from scripts/build-tools.sh (run it first; scripts/test.sh does).
set -euo pipefail
cd "$(dirname "$0")/.."

RELEASE=hami-core
NAMESPACE=hami-core
OUT=deploy/hami-core.yaml

die() { printf 'render-deploy: error: %s\n' "$*" >&2; exit 1; }

case "${1:-}" in
    "" | --check) ;;
    *) die "unknown argument '$1' (usage: render-deploy.sh [--check])" ;;
esac

helm=$(bash scripts/build-tools.sh --print helm)
[ -x "$helm" ] || die "helm is not built ($helm); run 'bash scripts/build-tools.sh' first"

render() {
    cat <<HEADER
# hami-core, rendered from charts/hami-core with its default values (release "$RELEASE", namespace
# "$NAMESPACE") by scripts/render-deploy.sh. Do not edit: change the chart and run the script again.
# Install: kubectl apply --server-side -f deploy/    (see docs/operations.md)
---
apiVersion: v1
kind: Namespace
metadata:
  name: $NAMESPACE
  labels:
    app.kubernetes.io/part-of: hami-core
HEADER
    "$helm" template "$RELEASE" charts/hami-core --namespace "$NAMESPACE" | as_applied_by_kubectl
}

as_applied_by_kubectl() {  # the labels Helm's .Release.Service and .Chart put on every object
    sed -e '/^ *helm\.sh\/chart: /d' -e 's/^\( *app\.kubernetes\.io\/managed-by:\) Helm$/\1 kubectl/'
}

if [ "${1:-}" = "--check" ]; then
    fresh=$(mktemp)
    trap 'rm -f "$fresh"' EXIT
    render > "$fresh"
    if ! diff -u "$OUT" "$fresh" >&2; then
        die "$OUT is out of date with charts/hami-core; run 'bash scripts/render-deploy.sh' and commit it"
    fi
    echo "$OUT is up to date"
else
    mkdir -p "$(dirname "$OUT")"
    render > "$OUT.tmp"
    mv "$OUT.tmp" "$OUT"
    echo "wrote $OUT"
fi
