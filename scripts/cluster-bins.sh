#!/usr/bin/env bash
# Builds the control-plane binaries used by the real-cluster e2e tests (kube-apiserver,
# kube-controller-manager, etcd) from Go modules, into a cache dir, and prints that dir.
#   default dir: $REPO/.cache/cluster-bin/k8s-<ver>_etcd-<ver>/   (override: FARM_CLUSTER_BIN)
# A binary already present and non-empty is not rebuilt. Versions come from the wrapper modules
# test/cluster/kube/go.mod and test/cluster/etcd/go.mod (regenerate them with their update.sh).
set -euo pipefail
REPO=$(cd "$(dirname "$0")/.." && pwd)
KUBE_MOD=$REPO/test/cluster/kube
ETCD_MOD=$REPO/test/cluster/etcd

die() { echo "cluster-bins: ERROR: $*" >&2; exit 1; }
command -v go >/dev/null || die "go not found in PATH (need Go >= 1.24)"

K8S_VERSION=$(sed -n 's/^require k8s.io\/kubernetes \(v[0-9.]*\).*/\1/p; s/^\s*k8s.io\/kubernetes \(v[0-9.]*\).*/\1/p' "$KUBE_MOD/go.mod" | head -1)
ETCD_VERSION=$(sed -n 's/^\s*go.etcd.io\/etcd\/server\/v3 \(v[0-9.]*\).*/\1/p' "$ETCD_MOD/go.mod" | head -1)
[[ $K8S_VERSION =~ ^v1\.([0-9]+)\.[0-9]+$ ]] || die "cannot read k8s.io/kubernetes version from $KUBE_MOD/go.mod"
K8S_MINOR=${BASH_REMATCH[1]}
[ -n "$ETCD_VERSION" ] || die "cannot read etcd version from $ETCD_MOD/go.mod"

OUT=${FARM_CLUSTER_BIN:-$REPO/.cache/cluster-bin/k8s-${K8S_VERSION}_etcd-${ETCD_VERSION}}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)

# One build at a time per cache dir (parallel test runs may call us).
if command -v flock >/dev/null; then
  exec 9>"$OUT/.lock"
  flock 9
fi

export GOTOOLCHAIN=local CGO_ENABLED=0 GOFLAGS=-mod=readonly

need() { [ ! -s "$OUT/$1" ]; }

# build <module dir> <ldflags> <binary=package>...
build() {
  local dir=$1 ldflags=$2; shift 2
  local tmp; tmp=$(mktemp -d "$OUT/.build.XXXXXX")
  local pkgs=() names=() spec
  for spec in "$@"; do names+=("${spec%%=*}"); pkgs+=("${spec#*=}"); done
  echo "cluster-bins: building ${names[*]} (this takes minutes when cold)..." >&2
  local start=$SECONDS
  # one package: -o names the file; several: -o is a dir and each binary is named after its package
  local o=$tmp/; [ ${#pkgs[@]} -eq 1 ] && o=$tmp/${names[0]}
  if ! (cd "$dir" && go build -trimpath -tags=selinux,notest -ldflags="$ldflags" -o "$o" "${pkgs[@]}") >&2; then
    rm -rf "$tmp"
    die "go build of ${names[*]} failed (module $dir)"
  fi
  local i
  for i in "${!names[@]}"; do
    local bin=$tmp/${names[$i]}
    [ -s "$bin" ] || { rm -rf "$tmp"; die "build produced no $bin"; }
    mv -f "$bin" "$OUT/${names[$i]}"
  done
  rm -rf "$tmp"
  echo "cluster-bins: built ${names[*]} in $((SECONDS - start))s" >&2
}

KUBE_SPECS=()
need kube-apiserver && KUBE_SPECS+=(kube-apiserver=k8s.io/kubernetes/cmd/kube-apiserver)
need kube-controller-manager && KUBE_SPECS+=(kube-controller-manager=k8s.io/kubernetes/cmd/kube-controller-manager)
if [ ${#KUBE_SPECS[@]} -gt 0 ]; then
  LD="-s -w"
  for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    LD+=" -X $p.gitVersion=$K8S_VERSION -X $p.gitMajor=1 -X $p.gitMinor=$K8S_MINOR -X $p.gitTreeState=clean"
    LD+=" -X $p.buildDate=1970-01-01T00:00:00Z"
  done
  build "$KUBE_MOD" "$LD" "${KUBE_SPECS[@]}"
fi
if need etcd; then
  build "$ETCD_MOD" "-s -w" etcd=go.etcd.io/etcd/server/v3
fi

echo "$OUT"
