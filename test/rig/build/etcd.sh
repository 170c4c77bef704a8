#!/usr/bin/env bash
# Builds etcd from go.etcd.io/etcd/server/v3 (its go.mod has replaces, so it is
# built as a dependency of a wrapper module, where the replaces are ignored).
. "$(dirname "$0")/common.sh"
OUT=$RIG_CACHE/bin/etcd-$ETCD_VERSION
rig_done "$OUT" etcd && { echo "$OUT"; exit 0; }
LOG=$(rig_log etcd-$ETCD_VERSION)
W=$RIG_CACHE/src/etcd-$ETCD_VERSION
build_etcd() {
  mkdir -p "$W" && cd "$W"
  [ -f go.mod ] || go mod init rig.local/etcd
  go get -tool "go.etcd.io/etcd/server/v3@$ETCD_VERSION"
  go build -trimpath -ldflags "-s -w" -o "$OUT.tmp/etcd" go.etcd.io/etcd/server/v3
  rm -rf "$OUT" && mv "$OUT.tmp" "$OUT"
}
rig_build "etcd $ETCD_VERSION" "$LOG" build_etcd
echo "$OUT"
