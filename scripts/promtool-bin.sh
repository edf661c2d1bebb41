#!/usr/bin/env bash
# Builds Prometheus's promtool from Go modules into a cache dir (as cluster-bins.sh does for the control
# plane) and prints the binary's path. test/integration/metrics.test.ts evaluates the kubernetes-mixin's
# apiserver SLI rules with it (`promtool test rules`).
#   default: $REPO/.cache/promtool-bin/promtool-<version>   (override the dir: FARM_PROMTOOL_BIN)
# A binary already present and non-empty is not rebuilt (about 10 minutes cold on 2 cores).
set -euo pipefail
REPO=$(cd "$(dirname "$0")/.." && pwd)
# Prometheus v3.x is published to the module proxy as v0.3xx.y (github.com/prometheus/prometheus).
VERSION=${FARM_PROMTOOL_VERSION:-v0.316.0}

die() { echo "promtool-bin: ERROR: $*" >&2; exit 1; }
command -v go >/dev/null || die "go not found in PATH"

OUT=${FARM_PROMTOOL_BIN:-$REPO/.cache/promtool-bin}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
BIN=$OUT/promtool-$VERSION

# One build at a time (parallel test runs may call us).
if command -v flock >/dev/null; then
  exec 9>"$OUT/.lock"
  flock 9
fi

if [ ! -s "$BIN" ]; then
  tmp=$(mktemp -d "$OUT/.build.XXXXXX")
  trap 'rm -rf "$tmp"' EXIT
  echo "promtool-bin: building promtool $VERSION (this takes minutes when cold)..." >&2
  start=$SECONDS
  # -mod=mod: promtool's own go.mod pins its dependencies; no module of ours is involved.
  if ! GOTOOLCHAIN=local CGO_ENABLED=0 GOBIN=$tmp GOFLAGS=-mod=mod \
      go install -trimpath -ldflags='-s -w' "github.com/prometheus/prometheus/cmd/promtool@$VERSION" >&2; then
    die "go install of promtool $VERSION failed"
  fi
  [ -s "$tmp/promtool" ] || die "the build produced no promtool"
  mv -f "$tmp/promtool" "$BIN"
  echo "promtool-bin: built promtool in $((SECONDS - start))s" >&2
fi
echo "$BIN"
