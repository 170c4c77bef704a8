#!/usr/bin/env bash
# The quickstart (README, "Getting started"): a local management cluster with
# cert-manager, Cluster API and CAPTF installed the clusterctl way, the sample
# modules as images, and a sample cluster of the development flavor applied
# and waited for. Every stage prints a line with the time so far. A second
# run reuses the control plane, the install and the images.
#   scripts/quickstart.sh [up] [--manager BIN --runner BIN --lint BIN]
#   scripts/quickstart.sh down      stop the control plane, forget everything
# State lives in $CAPTF_QUICKSTART_DIR (default ~/.cache/captf-quickstart);
# --rig-dir DIR uses a rig already up there instead of its own (tests).
# --manager/--runner/--lint take binaries already built (--dynamic-ok: a
# dynamic manager, the tests'); by default scripts/release.sh builds them
# with the release-static preset.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
START=$SECONDS
stage() { printf '[%4ds] %s\n' $((SECONDS - START)) "$*"; }
die() { echo "quickstart: $*" >&2; exit 1; }

STATE=${CAPTF_QUICKSTART_DIR:-$HOME/.cache/captf-quickstart}
RIG=$STATE/rig
cmd=up release_args=()
[ $# -gt 0 ] && [[ "$1" != --* ]] && { cmd=$1; shift; }
while [ $# -gt 0 ]; do
  case "$1" in
    --manager|--runner|--lint) release_args+=("$1" "$2"); shift 2 ;;
    --dynamic-ok) release_args+=("$1"); shift ;;
    --rig-dir) RIG=$2; shift 2 ;;
    *) die "unknown argument $1 (see the header of $0)" ;;
  esac
done
NS=quickstart CLUSTER=quickstart IDENTITY=quickstart

case "$cmd" in
  down)
    "$ROOT/test/rig/rig" down --dir "$RIG" >/dev/null 2>&1 || true
    rm -rf "$STATE"
    stage "stopped; $STATE removed"
    exit 0 ;;
  up) ;;
  *) die "unknown command $cmd (up or down)" ;;
esac

stage "packages (scripts/bootstrap.sh)"
bash "$ROOT/scripts/bootstrap.sh" >/dev/null
if [ -f "$RIG/ready" ] && kill -0 "$(cat "$RIG/rig.pid" 2>/dev/null)" 2>/dev/null; then
  stage "control plane: reusing $RIG"
else
  stage "control plane: building what is missing (cached by version), then starting it in $RIG"
  "$ROOT/test/rig/rig" down --dir "$RIG" >/dev/null 2>&1 || true
  rm -rf "$RIG"
  "$ROOT/test/rig/rig" up --dir "$RIG" --tier install >/dev/null
fi
# shellcheck disable=SC1091
. "$RIG/env"
K=$CAPTF_RIG_KUBECTL
export KUBECTL=$K
CLUSTERCTL=$CAPTF_RIG_CLUSTERCTL
INSTALL=$STATE/install

if "$K" get providers.clusterctl.cluster.x-k8s.io -n captf-system infrastructure-terraform >/dev/null 2>&1; then
  stage "Cluster API and CAPTF: already installed"
else
  stage "Cluster API and CAPTF: images, local repositories, clusterctl init"
  "$ROOT/scripts/install.sh" --kubeconfig "$KUBECONFIG" --registry "$CAPTF_RIG_REGISTRY" \
    --out "$INSTALL" "${release_args[@]}" 2>&1 | sed 's/^/    /'
fi
# The version clusterctl's inventory says is installed.
version=$("$K" get providers.clusterctl.cluster.x-k8s.io -n captf-system infrastructure-terraform \
  -o jsonpath='{.version}')
[ -x "$INSTALL/release/$version/tfcapi-lint" ] ||
  die "CAPTF $version is installed but $INSTALL has not its release; run scripts/quickstart.sh down first"

stage "sample modules: lint, package with OpenTofu, push"
lint=$INSTALL/release/$version/tfcapi-lint
images=()
for role in cluster machine; do
  "$lint" module --role "$role" --strict "$ROOT/config/samples/modules/$role" >/dev/null ||
    die "config/samples/modules/$role does not pass tfcapi-lint"
  images+=("$("$ROOT/scripts/module-image.sh" --module "$ROOT/config/samples/modules/$role" \
    --runtime "$CAPTF_RIG_TOFU" --ref "$CAPTF_RIG_REGISTRY/samples/$role:v1")")
done

stage "sample cluster: identity, clusterctl generate cluster --flavor development, apply"
"$K" create namespace "$NS" --dry-run=client -o yaml | "$K" apply -f - >/dev/null
TERRAFORM_IDENTITY_NAME=$IDENTITY NAMESPACE=$NS "$CLUSTERCTL" generate yaml \
  --config "$INSTALL/clusterctl.yaml" --from "$INSTALL/release/$version/identity.yaml" |
  "$K" apply --server-side -f - >/dev/null
TERRAFORM_CLUSTER_IMAGE=${images[0]} TERRAFORM_MACHINE_IMAGE=${images[1]} \
  TERRAFORM_IDENTITY_NAME=$IDENTITY "$CLUSTERCTL" generate cluster "$CLUSTER" \
  --config "$INSTALL/clusterctl.yaml" --kubeconfig "$KUBECONFIG" \
  --infrastructure "terraform:$version" --flavor development \
  --kubernetes-version v1.34.0 --worker-machine-count 2 --target-namespace "$NS" \
  >"$STATE/cluster.yaml"
"$K" apply --server-side -f "$STATE/cluster.yaml" >/dev/null

stage "waiting for the cluster's infrastructure and 2 machines Provisioned (real OpenTofu in Jobs)"
deadline=$((SECONDS + 600))
until [ "$("$K" -n "$NS" get clusters.v1beta2.cluster.x-k8s.io "$CLUSTER" \
  -o jsonpath='{.status.initialization.infrastructureProvisioned}' 2>/dev/null)" = true ] &&
  [ "$("$K" -n "$NS" get machines.v1beta2.cluster.x-k8s.io -l "cluster.x-k8s.io/cluster-name=$CLUSTER" \
    -o jsonpath='{range .items[?(@.status.phase=="Provisioned")]}x{end}' 2>/dev/null)" = xx ]; do
  [ $SECONDS -lt $deadline ] || {
    "$K" -n "$NS" get terraformclusters,terraformmachines,machines -o wide >&2 || true
    die "the sample cluster was not provisioned within 10 minutes"
  }
  sleep 2
done
stage "ready"
"$CLUSTERCTL" describe cluster "$CLUSTER" -n "$NS" --kubeconfig "$KUBECONFIG" --show-conditions all || true
cat <<EOF

The management cluster is up; kubectl and clusterctl talk to it with
  source $RIG/env
Try next:
  scale:    \$CAPTF_RIG_KUBECTL -n $NS scale machinedeployment $CLUSTER-md-0 --replicas 3
  watch:    \$CAPTF_RIG_KUBECTL -n $NS get terraformmachines -w
  drift:    checks run every spec.drift.intervalSeconds (default 30m; there is no run-now annotation):
            \$CAPTF_RIG_KUBECTL -n $NS patch terraformcluster $CLUSTER --type merge -p '{"spec":{"drift":{"intervalSeconds":60}}}'
            then see its DriftDetected condition (docs/user-guide.md)
  approve:  set spec.applyPolicy: Manual, then approve status.plan.planHash with the captf.io/approve-plan annotation
  delete:   \$CAPTF_RIG_KUBECTL -n $NS delete cluster.cluster.x-k8s.io $CLUSTER
  tear down everything: scripts/quickstart.sh down
EOF
