#!/usr/bin/env bash
# Cluster API's core provider as a clusterctl local repository, from the
# rig's own build (docs/decisions/rig-pod-network.md, "the install tier"):
#   OUT/cluster-api/VERSION/core-components.yaml  core/config/default (kustomize),
#                                                 image pinned by digest
#   OUT/cluster-api/VERSION/metadata.yaml         the module's release series
# and pushes the image (the static core manager as /manager, user 65532) to
# REGISTRY. Prints the components' path.
#   test/rig/capi-repository.sh --registry HOST:PORT --out DIR
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$HERE/build/common.sh"
registry="" out=""
while [ $# -gt 0 ]; do
  case "$1" in
    --registry) registry=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    *) echo "capi-repository: unknown argument $1" >&2; exit 2 ;;
  esac
done
[ -n "$registry" ] && [ -n "$out" ] || { sed -n '2,9p' "$0" >&2; exit 2; }
bin=$("$HERE/build/capi.sh")
src=$GOMODCACHE/sigs.k8s.io/cluster-api@$CAPI_VERSION
kubectl=$("$HERE/build/kube.sh")/kubectl
work=$(mktemp -d) && trap 'rm -rf "$work"' EXIT
mkdir -p "$work/rootfs/etc"
install -m 0755 "$bin/capi-manager" "$work/rootfs/manager"
printf 'nonroot:x:65532:65532:nonroot:/nonexistent:/sbin/nologin\n' >"$work/rootfs/etc/passwd"
repo=$registry/cluster-api/cluster-api-controller
pushed=$("$HERE/rig" image push --rootfs "$work/rootfs" --ref "$repo:$CAPI_VERSION" \
  --user 65532:65532 --entrypoint /manager)
digest=${pushed##*@}
[[ "$digest" == sha256:* ]] || { echo "capi-repository: the push printed no digest: $pushed" >&2; exit 1; }
# The module cache is read-only: the overlay names a copy.
cp -r "$src/core/config" "$work/config" && chmod -R u+w "$work/config"
cat >"$work/kustomization.yaml" <<YAML
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
- config/default
images:
- name: gcr.io/k8s-staging-cluster-api/cluster-api-controller
  newName: $repo
  digest: $digest
YAML
dir=$out/cluster-api/$CAPI_VERSION
mkdir -p "$dir"
"$kubectl" kustomize "$work" >"$dir/core-components.yaml"
grep -q "image: $repo@$digest" "$dir/core-components.yaml" ||
  { echo "capi-repository: the components do not pin $repo@$digest" >&2; exit 1; }
cp "$src/metadata.yaml" "$dir/metadata.yaml"
echo "$dir/core-components.yaml"
