#!/usr/bin/env bash
# Runs every test file (Node 20 does not expand globs); a run that finds no test fails loudly.
set -euo pipefail
cd "$(dirname "$0")/.."
mapfile -t files < <(find test -name '*.test.ts' -not -path '*/node_modules/*' | sort)
if [ "${#files[@]}" -eq 0 ]; then
  echo "test/run.sh: no test files found" >&2
  exit 1
fi
# tsx does not type-check: the whole tree (src, tests, scripts, bench) is checked first.
npx --no-install tsc -p tsconfig.check.json
exec node --import tsx --test "$@" "${files[@]}"
