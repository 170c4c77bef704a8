#!/usr/bin/env bash
# The whole test suite, as CI runs it: installs what is missing, builds the
# rig's components (once per version, cached under ~/.cache/captf-rig), builds
# the project with the dev preset (ASan + UBSan, -Werror) and runs every tier.
#   scripts/test.sh                 every tier
#   scripts/test.sh -L unit         any extra arguments go to ctest
set -euo pipefail
cd "$(dirname "$0")/.."
start=$(date +%s)
stage() { printf '== %s (%ds)\n' "$1" "$(( $(date +%s) - start ))"; }

stage "bootstrap: Debian packages"
bash scripts/bootstrap.sh
stage "rig: etcd, kube-apiserver, kube-controller-manager, kubectl, tofu, cluster-api"
test/rig/rig build capi
stage "build: cmake --preset dev"
cmake --preset dev >/dev/null
cmake --build --preset dev
stage "test: ctest"
ctest --preset dev -j2 "$@"
stage "done"
