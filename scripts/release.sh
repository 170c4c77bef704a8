#!/usr/bin/env bash
# Builds the release artifacts (docs/decisions/release.md):
#   OUT/VERSION/infrastructure-components.yaml  config/default, image pinned by digest
#   OUT/VERSION/metadata.yaml                   release series -> contract
#   OUT/VERSION/cluster-template*.yaml          templates/ (the flavors)
#   OUT/VERSION/identity.yaml                   templates/identity.yaml
#   OUT/VERSION/tfcapi-lint                     the linter
#   OUT/VERSION/checksums.txt                   sha256 of every file above
#   OUT/repository/infrastructure-terraform/VERSION/  clusterctl's local repository
#   OUT/clusterctl.yaml                         registers it: clusterctl init --config OUT/clusterctl.yaml --infrastructure terraform
# and pushes the manager image (/manager, the static /runner, CA
# certificates; user 65532; no shell) to REGISTRY, without a container
# engine.
#
#   scripts/release.sh --registry HOST:PORT [--version vX.Y.Z] [--out DIR]
#                      [--manager BIN] [--runner BIN] [--lint BIN]
#
# --manager/--runner/--lint take binaries already built (the tests pass the
# dev build's); by default the release presets build them.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
START=$SECONDS
stage() { printf '[%4ds] %s\n' $((SECONDS - START)) "$*" >&2; }
die() { echo "release: $*" >&2; exit 1; }

version=v$(sed -n 's/^project(captf VERSION \([0-9.]*\).*/\1/p' "$ROOT/CMakeLists.txt")
registry="" out="$ROOT/build/release-artifacts" manager="" runner="" lint=""
while [ $# -gt 0 ]; do
  case "$1" in
    --registry) registry=$2; shift 2 ;;
    --version) version=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --manager) manager=$2; shift 2 ;;
    --runner) runner=$2; shift 2 ;;
    --lint) lint=$2; shift 2 ;;
    *) die "unknown argument $1 (see the header of $0)" ;;
  esac
done
[ -n "$registry" ] || die "--registry HOST:PORT is required (the image is pushed there)"
[[ "$version" =~ ^v[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?$ ]] || die "version $version is not vMAJOR.MINOR.PATCH"
KUBECTL=${KUBECTL:-$(command -v kubectl || true)}
if [ -z "$KUBECTL" ]; then
  KUBECTL=$("$ROOT/test/rig/build/kube.sh")/kubectl
fi

if [ -z "$manager" ] || [ -z "$lint" ]; then
  stage "building the manager and tfcapi-lint (release preset)"
  cmake --preset release -B "$ROOT/build/release" >/dev/null
  cmake --build "$ROOT/build/release" -j2 --target manager tfcapi-lint >/dev/null
  manager=${manager:-$ROOT/build/release/manager/controllers/manager}
  lint=${lint:-$ROOT/build/release/lint/tfcapi-lint}
fi
if [ -z "$runner" ]; then
  stage "building the static runner (release-static preset)"
  cmake --preset release-static -B "$ROOT/build/release-static" >/dev/null
  cmake --build "$ROOT/build/release-static" -j2 --target runner >/dev/null
  runner=$ROOT/build/release-static/runner/runner
fi
for f in "$manager" "$runner" "$lint"; do [ -x "$f" ] || die "$f is not an executable"; done

dist=$out/$version
rm -rf "$dist" && mkdir -p "$dist"
work=$(mktemp -d) && trap 'rm -rf "$work"' EXIT

stage "assembling the image filesystem"
rootfs=$work/rootfs
"$ROOT/scripts/image-rootfs.sh" --manager "$manager" --runner "$runner" --out "$rootfs"

stage "pushing the manager image to $registry"
repo=$registry/captf/cluster-api-provider-terraform
pushed=$("$ROOT/test/rig/rig" image push --rootfs "$rootfs" --ref "$repo:$version" \
  --user 65532:65532 --entrypoint /manager \
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
cp "$ROOT"/templates/cluster-template*.yaml "$ROOT/templates/identity.yaml" "$dist/"
install -m 0755 "$lint" "$dist/tfcapi-lint"
(cd "$dist" && sha256sum -- * >checksums.txt)

repo_dir=$out/repository/infrastructure-terraform/$version
rm -rf "$repo_dir" && mkdir -p "$repo_dir"
cp "$dist"/infrastructure-components.yaml "$dist"/metadata.yaml "$dist"/cluster-template*.yaml "$repo_dir/"
cat >"$out/clusterctl.yaml" <<YAML
# clusterctl init --config $out/clusterctl.yaml --infrastructure terraform
providers:
- name: terraform
  type: InfrastructureProvider
  url: file://$repo_dir/infrastructure-components.yaml
YAML
stage "done: $dist (image $image)"
echo "$dist"
