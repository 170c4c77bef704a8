#!/usr/bin/env bash
# Builds Cluster API's core manager and clusterctl. The root module replaces
# sigs.k8s.io/cluster-api/api with ./api and requires a placeholder version,
# so the wrapper pins the published api module of the same tag. Version
# ldflags matter: clusterctl refuses a cluster whose version it cannot read.
. "$(dirname "$0")/common.sh"
OUT=$RIG_CACHE/bin/capi-$CAPI_VERSION
rig_done "$OUT" capi-manager clusterctl && { echo "$OUT"; exit 0; }
LOG=$(rig_log capi-$CAPI_VERSION)
W=$RIG_CACHE/src/capi-$CAPI_VERSION
MINOR=$(cut -d. -f2 <<<"$CAPI_VERSION")
build_capi() {
  mkdir -p "$W" && cd "$W"
  if [ ! -f go.mod ]; then
    go mod init rig.local/capi
    go mod edit -replace="sigs.k8s.io/cluster-api/api=sigs.k8s.io/cluster-api/api@$CAPI_VERSION"
  fi
  go get -tool "sigs.k8s.io/cluster-api/core@$CAPI_VERSION" "sigs.k8s.io/cluster-api/cmd/clusterctl@$CAPI_VERSION"
  V=sigs.k8s.io/cluster-api/version
  go build -trimpath -ldflags "-s -w -X $V.gitVersion=$CAPI_VERSION -X $V.gitMajor=1 -X $V.gitMinor=$MINOR -X $V.gitTreeState=clean" \
    -o "$OUT.tmp/" sigs.k8s.io/cluster-api/core sigs.k8s.io/cluster-api/cmd/clusterctl
  mv "$OUT.tmp/core" "$OUT.tmp/capi-manager"
  rm -rf "$OUT" && mv "$OUT.tmp" "$OUT"
}
rig_build "cluster-api $CAPI_VERSION" "$LOG" build_capi
echo "$OUT"
