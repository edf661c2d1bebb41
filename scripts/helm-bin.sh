#!/usr/bin/env bash
# Builds helm from its Go module (helm.sh/helm/v4, at the version below, with the module's own go.mod
# and go.sum checksums) into a cache dir, and prints the binary's path. charts/farm-apiserver is
# linted, rendered and installed with it (test/e2e/helm.test.ts).
#   default: $REPO/.cache/helm-bin/helm-<ver>/helm   (override the dir: FARM_HELM_BIN)
# A binary already present and non-empty is not rebuilt.
set -euo pipefail
REPO=$(cd "$(dirname "$0")/.." && pwd)
# The newest stable Helm on the Go module proxy that builds with the machine's Go (its go.mod wants 1.26).
HELM_VERSION=v4.3.1

die() { echo "helm-bin: ERROR: $*" >&2; exit 1; }
command -v go >/dev/null || die "go not found in PATH (need Go >= 1.26)"

OUT=${FARM_HELM_BIN:-$REPO/.cache/helm-bin/helm-$HELM_VERSION}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)

# One build at a time per cache dir (parallel test runs may call us).
if command -v flock >/dev/null; then
  exec 9>"$OUT/.lock"
  flock 9
fi

if [ ! -s "$OUT/helm" ]; then
  export GOTOOLCHAIN=local CGO_ENABLED=0 GOFLAGS=-mod=readonly
  tmp=$(mktemp -d "$OUT/.build.XXXXXX")
  trap 'rm -rf "$tmp"' EXIT
  echo "helm-bin: building helm $HELM_VERSION (about 5-8 minutes on 2 cores when cold)..." >&2
  start=$SECONDS
  # The ldflags of helm's Makefile for a release build: `helm version` reports the tag, no "+unreleased".
  V=helm.sh/helm/v4/internal/version
  LD="-s -w -X $V.version=$HELM_VERSION -X $V.metadata= -X $V.gitTreeState=clean"
  # From outside any module, so only helm's own go.mod and go.sum decide the dependencies.
  (cd "$tmp" && GOBIN="$tmp" go install -trimpath -ldflags="$LD" "helm.sh/helm/v4/cmd/helm@$HELM_VERSION") >&2 \
    || die "go install helm.sh/helm/v4/cmd/helm@$HELM_VERSION failed"
  [ -s "$tmp/helm" ] || die "build produced no $tmp/helm"
  mv -f "$tmp/helm" "$OUT/helm"
  echo "helm-bin: built helm $HELM_VERSION in $((SECONDS - start))s" >&2
fi

echo "$OUT/helm"
