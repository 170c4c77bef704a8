#!/usr/bin/env bash
# cert-manager for the capi tier. Prints two lines:
#   1. cert-manager's module source (its CRDs under deploy/crds), which the
#      release tests read to validate infrastructure-components.yaml's Issuer
#      and Certificate against the real schemas;
#   2. the `cert-manager` binary: test/rig/certmanager, our main over
#      cert-manager's own controller and cainjector packages (the proxy
#      serves the root module, not its cmd/* modules), for selfSigned and CA
#      issuers plus caBundle injection. See test/rig/certmanager/main.go.
# The binary's directory is keyed by the version and a hash of
# test/rig/certmanager's sources; other keys are removed.
. "$(dirname "$0")/common.sh"
SRC=$(cd "$(dirname "$0")/../certmanager" && pwd)
DIR=$GOMODCACHE/github.com/cert-manager/cert-manager@$CERT_MANAGER_VERSION
LOG=$(rig_log cert-manager-$CERT_MANAGER_VERSION)
download_source() {
  cd "$RIG_CACHE"
  go mod download "github.com/cert-manager/cert-manager@$CERT_MANAGER_VERSION"
}
if [ ! -f "$DIR/deploy/crds/cert-manager.io_certificates.yaml" ]; then
  rig_build "cert-manager $CERT_MANAGER_VERSION" "$LOG" download_source
fi
grep -q "github.com/cert-manager/cert-manager $CERT_MANAGER_VERSION\$" "$SRC/go.mod" || {
  echo "rig: $SRC/go.mod does not require cert-manager $CERT_MANAGER_VERSION (CERT_MANAGER_VERSION)" >&2
  exit 1
}
SUM=$(cat "$SRC/go.mod" "$SRC/go.sum" "$SRC"/*.go | sha256sum | cut -c1-12)
NAME=cert-manager-$CERT_MANAGER_VERSION-$SUM
OUT=$RIG_CACHE/bin/$NAME
TMP=$OUT.tmp.$$ # parallel rigs may build the same key at once
build_binary() {
  cd "$SRC"
  go build -trimpath \
    -ldflags "-s -w -X github.com/cert-manager/cert-manager/pkg/util.AppVersion=$CERT_MANAGER_VERSION" \
    -o "$TMP/cert-manager" .
  rm -rf "$OUT" && mv "$TMP" "$OUT"
}
if [ ! -x "$OUT/cert-manager" ]; then
  rig_build "cert-manager $CERT_MANAGER_VERSION" "$LOG" build_binary
  # Keep only the binary of the current sources (and builds of it in flight).
  find "$RIG_CACHE/bin" -maxdepth 1 -name 'cert-manager-*' ! -name "$NAME" ! -name "$NAME.tmp.*" -exec rm -rf {} +
fi
echo "$DIR"
echo "$OUT/cert-manager"
