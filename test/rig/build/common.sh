# Shared settings for the rig's component builds. Sourced, not run.
# Every component is built from the Go module proxy into a directory keyed by
# its version; a build whose output already exists is skipped, so only a cold
# cache pays for it.
set -euo pipefail
RIG_CACHE=${RIG_CACHE:-$HOME/.cache/captf-rig}
# No DWARF from the compiler either: the binaries are stripped (-s -w), and
# generating it costs about 8 % of a cold build (docs/decisions/ci-budget.md).
export GOTOOLCHAIN=local GOFLAGS="-mod=mod -gcflags=all=-dwarf=false" CGO_ENABLED=0
export GOMODCACHE=${GOMODCACHE:-$RIG_CACHE/gomod} GOCACHE=${GOCACHE:-$RIG_CACHE/gobuild}

# The versions the rig pins, or the nearest one the proxy serves
# (recorded in docs/decisions/rig-design.md#versions).
ETCD_VERSION=${ETCD_VERSION:-v3.6.14}
KUBE_VERSION=${KUBE_VERSION:-v1.36.3}
TOFU_VERSION=${TOFU_VERSION:-v1.12.6}
CAPI_VERSION=${CAPI_VERSION:-v1.14.2}
CERT_MANAGER_VERSION=${CERT_MANAGER_VERSION:-v1.21.0}
# Prometheus 3.16.0 (promtool and prometheus; docs/decisions/observability-package.md).
PROMETHEUS_VERSION=${PROMETHEUS_VERSION:-v0.316.0}

# rig_done DIR FILE...: true when every FILE exists in DIR.
rig_done() {
  local dir=$1; shift
  local f
  for f in "$@"; do [ -x "$dir/$f" ] || return 1; done
}

# rig_log NAME: where a build writes its log.
rig_log() { mkdir -p "$RIG_CACHE/logs"; echo "$RIG_CACHE/logs/build-$1.log"; }

# rig_fail NAME LOG: one line naming the cause and the log.
rig_fail() { echo "rig: building $1 failed; see $2" >&2; tail -n 15 "$2" >&2; exit 1; }

# rig_build NAME LOG COMMAND...: runs COMMAND (a build function) with its
# output in LOG, stopping at its first failing step. Not `{ ...; } || fail`:
# bash turns `set -e` off on the left of `||`, so a version the proxy does not
# serve would fail `go get` and then let `go build -mod=mod` quietly build the
# newest one. A background subshell keeps errexit; `wait` gives its status.
rig_build() {
  local name=$1 log=$2
  shift 2
  ( set -euo pipefail; "$@" ) >"$log" 2>&1 &
  wait $! || rig_fail "$name" "$log"
}
