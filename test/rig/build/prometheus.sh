#!/usr/bin/env bash
# Prometheus for the tests of config/prometheus. Prints two lines:
#   1. the directory of `promtool` and `prometheus`, built from
#      github.com/prometheus/prometheus (Prometheus 3.N.P is the Go module
#      v0.3NN.P; its go.mod has no replaces). promtool checks and unit-tests
#      the alerts and lints the manager's /metrics; prometheus scrapes the
#      manager in the alert e2e test. Built with `remove_all_sd`: only the
#      file and HTTP service discoveries stay, which static scrape targets
#      do not even need, and the build compiles far less.
#   2. `promql-names` (test/rig/promql): Prometheus's own PromQL parser as a
#      filter, for the dashboard test. Built in the same wrapper module, so
#      it parses what this Prometheus parses; its directory is keyed by the
#      version and a hash of its source, and other keys are removed.
. "$(dirname "$0")/common.sh"
SRC=$(cd "$(dirname "$0")/../promql" && pwd)
OUT=$RIG_CACHE/bin/prometheus-$PROMETHEUS_VERSION
LOG=$(rig_log prometheus-$PROMETHEUS_VERSION)
W=$RIG_CACHE/src/prometheus-$PROMETHEUS_VERSION
wrapper() {
  mkdir -p "$W"
  cd "$W"
  if [ ! -f go.mod ]; then
    go mod init rig.local/prometheus
    local gomod
    gomod=$(go mod download -json "github.com/prometheus/prometheus@$PROMETHEUS_VERSION" |
      sed -n 's/.*"GoMod": "\(.*\)".*/\1/p')
    [ -f "$gomod" ] || { rm -f go.mod; echo "no go.mod for prometheus $PROMETHEUS_VERSION"; exit 1; }
    go mod edit -go="$(sed -n 's/^go \(.*\)/\1/p' "$gomod")"
  fi
}
build_prometheus() {
  wrapper
  PKGS="github.com/prometheus/prometheus/cmd/promtool github.com/prometheus/prometheus/cmd/prometheus"
  for p in $PKGS; do go get -tool "$p@$PROMETHEUS_VERSION"; done
  V=github.com/prometheus/common/version
  rm -rf "$OUT.tmp"
  go build -trimpath -tags remove_all_sd \
    -ldflags "-s -w -X $V.Version=$PROMETHEUS_VERSION -X $V.Branch=HEAD -X $V.BuildUser=rig -X $V.BuildDate=19700101-00:00:00" \
    -o "$OUT.tmp/" $PKGS
  rm -rf "$OUT" && mv "$OUT.tmp" "$OUT"
}
if ! rig_done "$OUT" promtool prometheus; then
  rig_build "prometheus $PROMETHEUS_VERSION" "$LOG" build_prometheus
fi
NAME=promql-names-$PROMETHEUS_VERSION-$(sha256sum "$SRC/main.go" | cut -c1-12)
NAMES=$RIG_CACHE/bin/$NAME
TMP=$NAMES.tmp.$$ # parallel rigs may build the same key at once
build_names() {
  wrapper
  go get "github.com/prometheus/prometheus@$PROMETHEUS_VERSION"
  mkdir -p promql-names
  cp "$SRC/main.go" promql-names/main.go
  go build -trimpath -ldflags "-s -w" -o "$TMP/promql-names" ./promql-names
  rm -rf "$NAMES" && mv "$TMP" "$NAMES"
}
if [ ! -x "$NAMES/promql-names" ]; then
  rig_build "promql-names ($PROMETHEUS_VERSION)" "$(rig_log promql-names-$PROMETHEUS_VERSION)" build_names
  # Keep only the filter of the current source (and builds of it in flight).
  find "$RIG_CACHE/bin" -maxdepth 1 -name 'promql-names-*' ! -name "$NAME" ! -name "$NAME.tmp.*" -exec rm -rf {} +
fi
echo "$OUT"
echo "$NAMES/promql-names"
