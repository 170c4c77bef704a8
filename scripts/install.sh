#!/usr/bin/env bash
# Installs Cluster API's core and CAPTF on a cluster the clusterctl way, from
# local repositories and offline (docs/decisions/rig-pod-network.md, "the
# install tier"). The cluster must run cert-manager (the rig's install tier
# does) and reach REGISTRY:
#   1. Cluster API's core repository from the rig's own build
#      (test/rig/capi-repository.sh), its image pushed to REGISTRY;
#   2. CAPTF's release artifacts (scripts/release.sh), its image pushed too;
#   3. OUT/clusterctl.yaml naming both, then
#      clusterctl init --core cluster-api:V --infrastructure terraform:V
#      --bootstrap - --control-plane - --wait-providers
#
#   scripts/install.sh --kubeconfig FILE --registry HOST:PORT --out DIR
#                      [--version vX.Y.Z] [--manager BIN --runner BIN --lint BIN] [--dynamic-ok]
#
# --version/--manager/--runner/--lint/--dynamic-ok go to scripts/release.sh.
# The last line printed is "installed: cluster-api VERSION, terraform VERSION".
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
START=$SECONDS
stage() { printf '[%4ds] %s\n' $((SECONDS - START)) "$*" >&2; }
die() { echo "install: $*" >&2; exit 1; }

kubeconfig="" registry="" out="" release_args=()
version=v$(sed -n 's/^project(captf VERSION \([0-9.]*\).*/\1/p' "$ROOT/CMakeLists.txt")
while [ $# -gt 0 ]; do
  case "$1" in
    --kubeconfig) kubeconfig=$2; shift 2 ;;
    --registry) registry=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --version) version=$2; shift 2 ;;
    --manager|--runner|--lint) release_args+=("$1" "$2"); shift 2 ;;
    --dynamic-ok) release_args+=("$1"); shift ;;
    *) die "unknown argument $1 (see the header of $0)" ;;
  esac
done
[ -n "$kubeconfig" ] && [ -n "$registry" ] && [ -n "$out" ] || die "--kubeconfig, --registry and --out are required"
out=$(mkdir -p "$out" && cd "$out" && pwd)
. "$ROOT/test/rig/build/common.sh"
clusterctl=$("$ROOT/test/rig/build/capi.sh")/clusterctl
KUBECTL=${KUBECTL:-$("$ROOT/test/rig/build/kube.sh")/kubectl}
export KUBECTL

stage "Cluster API $CAPI_VERSION: image and core repository"
core=$("$ROOT/test/rig/capi-repository.sh" --registry "$registry" --out "$out/repository")
stage "CAPTF $version: image and release artifacts"
"$ROOT/scripts/release.sh" --registry "$registry" --version "$version" --out "$out/release" \
  "${release_args[@]}" >/dev/null
infra=$out/release/repository/infrastructure-terraform/$version/infrastructure-components.yaml
[ -f "$infra" ] || die "scripts/release.sh wrote no $infra"

cat >"$out/clusterctl.yaml" <<YAML
# clusterctl --config $out/clusterctl.yaml: both providers from local files;
# cert-manager is already there, so clusterctl installs none of its own.
providers:
- name: cluster-api
  type: CoreProvider
  url: file://$core
- name: terraform
  type: InfrastructureProvider
  url: file://$infra
cert-manager:
  externallyProvisioned: "true"
CLUSTERCTL_DISABLE_VERSIONCHECK: "true"
YAML
stage "clusterctl init (waits for both providers)"
"$clusterctl" init --config "$out/clusterctl.yaml" --kubeconfig "$kubeconfig" \
  --core "cluster-api:$CAPI_VERSION" --infrastructure "terraform:$version" \
  --bootstrap - --control-plane - --wait-providers --wait-provider-timeout 300
stage "done"
echo "installed: cluster-api $CAPI_VERSION, terraform $version"
