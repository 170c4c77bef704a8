#!/usr/bin/env bash
# cert-manager's module (its CRDs under deploy/crds) from the Go module
# proxy. The capi tier exports it as CAPTF_RIG_CERT_MANAGER_SRC: the release
# tests install the CRDs to validate infrastructure-components.yaml's Issuer
# and Certificate against the real schemas. The controllers are not built
# or run yet.
. "$(dirname "$0")/common.sh"
DIR=$GOMODCACHE/github.com/cert-manager/cert-manager@$CERT_MANAGER_VERSION
[ -f "$DIR/deploy/crds/cert-manager.io_certificates.yaml" ] && { echo "$DIR"; exit 0; }
LOG=$(rig_log cert-manager-$CERT_MANAGER_VERSION)
(cd "$RIG_CACHE" && go mod download "github.com/cert-manager/cert-manager@$CERT_MANAGER_VERSION") \
  >"$LOG" 2>&1 || rig_fail "cert-manager $CERT_MANAGER_VERSION" "$LOG"
echo "$DIR"
