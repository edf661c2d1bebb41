#!/usr/bin/env bash
# Builds the peer servers of the peer benchmark (bench/suites/peers.ts) from Go modules into a cache
# dir, and prints that dir. Today: k8s.io/sample-apiserver, from the wrapper module
# bench/peers/sample-apiserver (sample-apiserver v0.33.3 with its k8s.io deps at v0.33.13).
#   default dir: $REPO/.cache/peer-bin/sample-apiserver-<ver>_apiserver-<ver>/   (override: FARM_PEER_BIN)
# A binary already present and non-empty is not rebuilt. The control plane (etcd, kube-apiserver)
# comes from scripts/cluster-bins.sh.
set -euo pipefail
REPO=$(cd "$(dirname "$0")/../.." && pwd)
MOD=$REPO/bench/peers/sample-apiserver

die() { echo "peer-bins: ERROR: $*" >&2; exit 1; }
command -v go >/dev/null || die "go not found in PATH (need Go >= 1.24)"

ver() { sed -n "s#^\s*$1 \(v[0-9.]*\).*#\1#p" "$MOD/go.mod" | head -1; }
SAMPLE_VERSION=$(ver 'k8s.io/sample-apiserver')
APISERVER_VERSION=$(ver 'k8s.io/apiserver')
[ -n "$SAMPLE_VERSION" ] && [ -n "$APISERVER_VERSION" ] || die "cannot read versions from $MOD/go.mod"

OUT=${FARM_PEER_BIN:-$REPO/.cache/peer-bin/sample-apiserver-${SAMPLE_VERSION}_apiserver-${APISERVER_VERSION}}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)

# One build at a time per cache dir (parallel runs may call us).
if command -v flock >/dev/null; then
  exec 9>"$OUT/.lock"
  flock 9
fi

export GOTOOLCHAIN=local CGO_ENABLED=0 GOFLAGS=-mod=readonly

if [ ! -s "$OUT/sample-apiserver" ]; then
  echo "peer-bins: building sample-apiserver $SAMPLE_VERSION (apiserver $APISERVER_VERSION; minutes when cold)..." >&2
  start=$SECONDS
  tmp=$(mktemp -d "$OUT/.build.XXXXXX")
  if ! (cd "$MOD" && go build -trimpath -tags=selinux,notest -ldflags="-s -w" -o "$tmp/sample-apiserver" k8s.io/sample-apiserver) >&2; then
    rm -rf "$tmp"
    die "go build of sample-apiserver failed (module $MOD)"
  fi
  [ -s "$tmp/sample-apiserver" ] || { rm -rf "$tmp"; die "build produced no binary"; }
  mv -f "$tmp/sample-apiserver" "$OUT/sample-apiserver"
  rm -rf "$tmp"
  echo "peer-bins: built sample-apiserver in $((SECONDS - start))s" >&2
fi

echo "$OUT"
