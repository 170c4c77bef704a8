#!/usr/bin/env bash
# The whole test suite, as CI runs it: installs what is missing, builds the
# rig's components (once per version, cached under ~/.cache/captf-rig), checks
# the format of every C++ file, builds the project with the dev preset
# (ASan + UBSan, -Werror), makes the docs site's MkDocs venv and runs every tier.
#   scripts/test.sh                 every tier
#   scripts/test.sh -L unit         any extra arguments go to ctest
set -euo pipefail
cd "$(dirname "$0")/.."
start=$(date +%s)
stage() { printf '== %s (%ds)\n' "$1" "$(( $(date +%s) - start ))"; }

stage "bootstrap: Debian packages"
bash scripts/bootstrap.sh
# The rig's Go builds and the C++ build run side by side: on a cold machine
# each leaves a core idle at times (module downloads, links).
stage "rig: etcd, kube-apiserver, kube-controller-manager, kubectl, tofu, prometheus, cluster-api, cert-manager (in the background)"
rig_log="$(mktemp)"
setsid test/rig/rig build capi > "$rig_log" 2>&1 &
rig_pid=$!
trap 'kill -- -"$rig_pid" 2>/dev/null || true' EXIT
stage "format: clang-format on every C++ file"
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  git ls-files -z '*.cc' '*.h' | xargs -0 clang-format --dry-run -Werror
else
  find contract runner lint webhooks manager test bench \( -name '*.cc' -o -name '*.h' \) -print0 |
    xargs -0 clang-format --dry-run -Werror
fi
stage "build: cmake --preset dev"
cmake --preset dev >/dev/null
cmake --build --preset dev
# clang-tidy (scripts/tidy.sh) is not a CI stage yet: the tree is not clean
# under it (docs/decisions/tidy.md, "Status").
stage "rig: waiting for the build"
if ! wait "$rig_pid"; then
  cat "$rig_log"
  echo "the rig build failed" >&2
  exit 1
fi
cat "$rig_log"
stage "docs: the MkDocs venv (captf_docs_site needs it)"
bash scripts/docs.sh --venv
stage "test: ctest"
# The Terraform runtime cases (label terraform) need a Terraform the Go
# module proxy cannot build (docs/runner.md, "Testing with Terraform"): left
# out here, said so; `ctest --preset dev -L terraform` with CAPTF_TERRAFORM
# set runs them.
echo "test: leaving out label terraform (needs CAPTF_TERRAFORM; docs/runner.md, \"Testing with Terraform\")"
ctest --preset dev -j2 -LE terraform "$@"
stage "done"
