#!/usr/bin/env bash
# Builds the client-go check program (this Go module: k8s.io/client-go v0.33) and prints the
# binary's path. Cached like scripts/cluster-bins.sh: the binary is named after a hash of the
# module's sources, so a warm cache is a no-op and any change rebuilds; a failed build fails loudly.
#   default dir: $REPO/.cache/bin   (override: FARM_CLIENTS_BIN)
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/../../.." && pwd)
OUT=${FARM_CLIENTS_BIN:-$REPO/.cache/bin}

die() { echo "clientgo: ERROR: $*" >&2; exit 1; }
command -v go >/dev/null || die "go not found in PATH (need Go >= 1.24)"

mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
if command -v flock >/dev/null; then
  exec 9>"$OUT/.clientgo-check.lock"
  flock 9
fi

HASH=$(cd "$HERE" && cat go.mod go.sum $(ls ./*.go | sort) | sha256sum | cut -c1-16)
BIN=$OUT/clientgo-check-$HASH
if [ -s "$BIN" ]; then
  echo "$BIN"
  exit 0
fi

echo "clientgo: building $BIN (a minute or three when cold)..." >&2
export GOTOOLCHAIN=local CGO_ENABLED=0 GOFLAGS="-mod=readonly -buildvcs=false"
start=$SECONDS
tmp=$(mktemp "$OUT/.clientgo-check.XXXXXX")
if ! (cd "$HERE" && go build -trimpath -ldflags="-s -w" -o "$tmp" .) >&2; then
  rm -f "$tmp"
  die "go build failed (module $HERE)"
fi
[ -s "$tmp" ] || { rm -f "$tmp"; die "go build produced no binary"; }
mv -f "$tmp" "$BIN"
# Older builds of this program are dead weight.
find "$OUT" -maxdepth 1 -name 'clientgo-check-*' ! -name "clientgo-check-$HASH" -delete
echo "clientgo: built in $((SECONDS - start))s" >&2
echo "$BIN"
