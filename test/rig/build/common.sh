# Shared settings for the rig's component builds. Sourced, not run.
# Every component is built from the Go module proxy into a directory keyed by
# its version; a build whose output already exists is skipped, so only a cold
# cache pays for it.
set -euo pipefail
RIG_CACHE=${RIG_CACHE:-$HOME/.cache/captf-rig}
export GOTOOLCHAIN=local GOFLAGS=-mod=mod CGO_ENABLED=0
export GOMODCACHE=${GOMODCACHE:-$RIG_CACHE/gomod} GOCACHE=${GOCACHE:-$RIG_CACHE/gobuild}

# Versions pinned by spec/test-rig.md, or the nearest one the proxy serves
# (recorded in docs/decisions/0002-rig-versions.md).
ETCD_VERSION=${ETCD_VERSION:-v3.6.14}
KUBE_VERSION=${KUBE_VERSION:-v1.36.3}
TOFU_VERSION=${TOFU_VERSION:-v1.12.6}
CAPI_VERSION=${CAPI_VERSION:-v1.14.2}
CERT_MANAGER_VERSION=${CERT_MANAGER_VERSION:-v1.21.0}
# Prometheus 3.16.0 (promtool and prometheus; not pinned by the spec).
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
