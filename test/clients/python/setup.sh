#!/usr/bin/env bash
# Creates the venv with the pinned Kubernetes Python client (requirements.txt) that
# test/clients/python/check.py runs in, and prints its python. Idempotent: a venv whose stamp
# matches requirements.txt and the interpreter is reused; otherwise it is rebuilt from scratch.
#   default venv: $REPO/.cache/pyclients (override: FARM_PYCLIENTS_VENV); interpreter: FARM_PYTHON or python3
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/../../.." && pwd)
VENV=${FARM_PYCLIENTS_VENV:-$REPO/.cache/pyclients}
REQ=$HERE/requirements.txt

die() { echo "pyclients: ERROR: $*" >&2; exit 1; }
PY=${FARM_PYTHON:-python3}
command -v "$PY" >/dev/null || die "$PY not found in PATH (need Python >= 3.10 with the venv module)"
"$PY" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 10) else 1)' || die "$("$PY" --version 2>&1) is too old: the kubernetes client needs Python >= 3.10"

mkdir -p "$(dirname "$VENV")"
# One install at a time (parallel test files may call us).
if command -v flock >/dev/null; then
  exec 9>"$VENV.lock"
  flock 9
fi

STAMP="$(sha256sum "$REQ" | cut -d' ' -f1) $("$PY" -c 'import sys; print(sys.version.split()[0])')"
if [ -x "$VENV/bin/python" ] && [ "$(cat "$VENV/.stamp" 2>/dev/null)" = "$STAMP" ] && "$VENV/bin/python" -c 'import kubernetes' 2>/dev/null; then
  echo "$VENV/bin/python"
  exit 0
fi

echo "pyclients: creating $VENV from $REQ..." >&2
rm -rf "$VENV"
"$PY" -m venv "$VENV" >&2 || die "python -m venv failed (on Debian: apt-get install python3-venv)"
# --no-deps: only what requirements.txt pins is installed; pip check proves the pins are complete.
"$VENV/bin/pip" install --quiet --disable-pip-version-check --no-input --no-deps -r "$REQ" >&2 || { rm -rf "$VENV"; die "pip install -r $REQ failed"; }
"$VENV/bin/pip" check --disable-pip-version-check >&2 || { rm -rf "$VENV"; die "the pins in $REQ are inconsistent (pip check)"; }
"$VENV/bin/python" -c 'import kubernetes' || { rm -rf "$VENV"; die "kubernetes does not import"; }
echo "$STAMP" > "$VENV/.stamp"
echo "pyclients: installed kubernetes $("$VENV/bin/python" -c 'import kubernetes; print(kubernetes.__version__)')" >&2
echo "$VENV/bin/python"
