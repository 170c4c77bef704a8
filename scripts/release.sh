#!/usr/bin/env bash
# Builds the release artifacts (docs/decisions/release.md):
#   OUT/VERSION/infrastructure-components.yaml  config/default, image pinned by digest
#   OUT/VERSION/metadata.yaml                   release series -> contract
#   OUT/VERSION/cluster-template*.yaml          templates/ (the flavors)
#   OUT/VERSION/clusterclass-*.yaml             templates/ (the ClusterClasses the flavors name)
#   OUT/VERSION/identity.yaml                   templates/identity.yaml
#   OUT/VERSION/tfcapi-lint                     the linter
#   OUT/VERSION/checksums.txt                   sha256 of every file above
#   OUT/repository/infrastructure-terraform/VERSION/  clusterctl's local repository
#   OUT/clusterctl.yaml                         registers it: clusterctl init --config OUT/clusterctl.yaml --infrastructure terraform
# and pushes the manager image (the static /manager and /runner, CA
# certificates; user 65532; no shell, no libraries) to REGISTRY, without a
# container engine.
#
#   scripts/release.sh --registry HOST:PORT [--version vX.Y.Z] [--out DIR]
#                      [--manager BIN] [--runner BIN] [--lint BIN] [--dynamic-ok]
#
# --manager/--runner/--lint take binaries already built; by default the
# release-static preset builds all three, fully static. The image takes a
# dynamic manager only with --dynamic-ok (scripts/image-rootfs.sh: its
# shared libraries go into the image too), for the tests that pass the dev
# build's.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
START=$SECONDS
stage() { printf '[%4ds] %s\n' $((SECONDS - START)) "$*" >&2; }
die() { echo "release: $*" >&2; exit 1; }

version=v$(sed -n 's/^project(captf VERSION \([0-9.]*\).*/\1/p' "$ROOT/CMakeLists.txt")
registry="" out="$ROOT/build/release-artifacts" manager="" runner="" lint="" rootfs_args=()
while [ $# -gt 0 ]; do
  case "$1" in
    --registry) registry=$2; shift 2 ;;
    --version) version=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --manager) manager=$2; shift 2 ;;
    --runner) runner=$2; shift 2 ;;
    --lint) lint=$2; shift 2 ;;
    --dynamic-ok) rootfs_args+=(--dynamic-ok); shift ;;
    *) die "unknown argument $1 (see the header of $0)" ;;
  esac
done
[ -n "$registry" ] || die "--registry HOST:PORT is required (the image is pushed there)"
[[ "$version" =~ ^v[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?$ ]] || die "version $version is not vMAJOR.MINOR.PATCH"
KUBECTL=${KUBECTL:-$(command -v kubectl || true)}
if [ -z "$KUBECTL" ]; then
  KUBECTL=$("$ROOT/test/rig/build/kube.sh")/kubectl
fi

if [ -z "$manager" ] || [ -z "$runner" ] || [ -z "$lint" ]; then
  stage "building the static manager, runner and tfcapi-lint (release-static preset)"
  (cd "$ROOT" && cmake --preset release-static >/dev/null &&
    cmake --build --preset release-static --target manager runner tfcapi-lint >/dev/null)
  static=$ROOT/build/release-static
  manager=${manager:-$static/manager/controllers/manager}
  runner=${runner:-$static/runner/runner}
  lint=${lint:-$static/lint/tfcapi-lint}
fi
for f in "$manager" "$runner" "$lint"; do [ -x "$f" ] || die "$f is not an executable"; done

dist=$out/$version
rm -rf "$dist" && mkdir -p "$dist"
work=$(mktemp -d) && trap 'rm -rf "$work"' EXIT

stage "assembling the image filesystem"
rootfs=$work/rootfs
"$ROOT/scripts/image-rootfs.sh" --manager "$manager" --runner "$runner" --out "$rootfs" \
  "${rootfs_args[@]}"

stage "pushing the manager image to $registry"
repo=$registry/captf/cluster-api-provider-terraform
pushed=$("$ROOT/test/rig/rig" image push --rootfs "$rootfs" --ref "$repo:$version" \
  --user 65532:65532 --entrypoint /manager \
  --env SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt \
  --label "org.opencontainers.image.version=$version" \
  --label "org.opencontainers.image.source=https://github.com/captf-io/cluster-api-provider-terraform")
digest=${pushed##*@}
[[ "$digest" == sha256:* ]] || die "the image push printed no digest: $pushed"
image="$repo@$digest"

stage "rendering infrastructure-components.yaml (kustomize: config/default, $image)"
mkdir -p "$work/overlay"
cp -r "$ROOT/config" "$work/overlay/config"
cat >"$work/overlay/kustomization.yaml" <<YAML
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
- config/default
images:
- name: ghcr.io/captf-io/cluster-api-provider-terraform
  newName: $repo
  digest: $digest
# The manager's own image is the runner image's default (CAPTF_MANAGER_IMAGE):
# copied from the container after images: has set it, so the two never differ.
replacements:
- source:
    kind: Deployment
    name: captf-controller-manager
    fieldPath: spec.template.spec.containers.[name=manager].image
  targets:
  - select:
      kind: Deployment
      name: captf-controller-manager
    fieldPaths:
    - spec.template.spec.containers.[name=manager].env.[name=CAPTF_MANAGER_IMAGE].value
YAML
"$KUBECTL" kustomize "$work/overlay" >"$dist/infrastructure-components.yaml"
grep -q "image: $image" "$dist/infrastructure-components.yaml" || die "the rendered components do not pin $image"
grep -q "value: $image" "$dist/infrastructure-components.yaml" || die "CAPTF_MANAGER_IMAGE is not $image"

stage "metadata, templates, tfcapi-lint"
cp "$ROOT/metadata.yaml" "$dist/"
cp "$ROOT"/templates/cluster-template*.yaml "$ROOT"/templates/clusterclass-*.yaml "$ROOT/templates/identity.yaml" "$dist/"
install -m 0755 "$lint" "$dist/tfcapi-lint"
(cd "$dist" && sha256sum -- * >checksums.txt)

repo_dir=$out/repository/infrastructure-terraform/$version
rm -rf "$repo_dir" && mkdir -p "$repo_dir"
cp "$dist"/infrastructure-components.yaml "$dist"/metadata.yaml "$dist"/cluster-template*.yaml "$dist"/clusterclass-*.yaml "$repo_dir/"
cat >"$out/clusterctl.yaml" <<YAML
# clusterctl init --config $out/clusterctl.yaml --infrastructure terraform
providers:
- name: terraform
  type: InfrastructureProvider
  url: file://$repo_dir/infrastructure-components.yaml
YAML
stage "done: $dist (image $image)"
echo "$dist"
