#!/usr/bin/env bash
# Builds the kube-rs follower (this Cargo package: kube 5.0 watcher + reflector; its `apply` mode
# does server-side apply) and prints the binary's path. Cached like clientgo/build.sh: the binary
# is named after a hash of Cargo.toml, Cargo.lock and src/, so a warm cache is a no-op and any change rebuilds; cargo's target dir stays
# under .cache/ so a rebuild is incremental; a failed build fails loudly.
#   default dir: $REPO/.cache/bin   (override: FARM_CLIENTS_BIN)
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/../../.." && pwd)
OUT=${FARM_CLIENTS_BIN:-$REPO/.cache/bin}
NAME=kubers-follow

die() { echo "kubers: ERROR: $*" >&2; exit 1; }
# rustup installs cargo in ~/.cargo/bin, which a non-login shell may not have on PATH.
command -v cargo >/dev/null || { [ -x "$HOME/.cargo/bin/cargo" ] && PATH=$HOME/.cargo/bin:$PATH; }
command -v cargo >/dev/null || die "cargo not found in PATH or ~/.cargo/bin (need Rust >= 1.89 for kube 5.0, e.g. installed by rustup)"

mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
if command -v flock >/dev/null; then
  exec 9>"$OUT/.$NAME.lock"
  flock 9
fi

HASH=$(cd "$HERE" && cat Cargo.toml Cargo.lock $(find src -type f -name '*.rs' | sort) | sha256sum | cut -c1-16)
BIN=$OUT/$NAME-$HASH
if [ -s "$BIN" ]; then
  echo "$BIN"
  exit 0
fi

echo "kubers: building $BIN (several minutes when cold)..." >&2
export CARGO_TARGET_DIR=$REPO/.cache/kubers-target
start=$SECONDS
# --locked: build exactly the committed Cargo.lock (fail rather than re-resolve).
if ! (cd "$HERE" && cargo build --locked --quiet) >&2; then
  die "cargo build failed (package $HERE)"
fi
[ -s "$CARGO_TARGET_DIR/debug/$NAME" ] || die "cargo build produced no binary at $CARGO_TARGET_DIR/debug/$NAME"
tmp=$(mktemp "$OUT/.$NAME.XXXXXX")
cp "$CARGO_TARGET_DIR/debug/$NAME" "$tmp"
chmod +x "$tmp"
mv -f "$tmp" "$BIN"
# Older builds of this program are dead weight.
find "$OUT" -maxdepth 1 -name "$NAME-*" ! -name "$NAME-$HASH" -delete
echo "kubers: built in $((SECONDS - start))s" >&2
echo "$BIN"
