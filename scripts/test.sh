#!/usr/bin/env bash
# The whole test suite, as CI runs it: installs what is missing, builds the
# rig's components (once per version, cached under ~/.cache/captf-rig), checks
# the format of every C++ file, builds the project with the dev preset
# (ASan + UBSan, -Werror), runs clang-tidy on it, makes the docs site's MkDocs
# venv and runs every tier.
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
# clang-tidy runs beside the tests at the lowest CPU priority: the tests
# leave about half of the two cores idle (waiting on Jobs and API servers),
# which is enough for a cold run; a warm one (every TU cached) takes seconds.
# Its findings fail the run after ctest (docs/decisions/tidy.md, "In CI").
stage "tidy: clang-tidy on the first-party sources, in the background at nice 19 (scripts/tidy.sh)"
tidy_log="$(mktemp)"
setsid nice -n 19 bash scripts/tidy.sh build/dev > "$tidy_log" 2>&1 &
tidy_pid=$!
trap 'kill -- -"$rig_pid" 2>/dev/null || true; kill -- -"$tidy_pid" 2>/dev/null || true' EXIT
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
ctest_rc=0
ctest --preset dev -j2 -LE terraform "$@" || ctest_rc=$?
stage "tidy: waiting for clang-tidy"
tidy_rc=0
wait "$tidy_pid" || tidy_rc=$?
cat "$tidy_log"
if [ "$tidy_rc" -ne 0 ]; then
  echo "clang-tidy found problems (above); scripts/tidy.sh --only FILE... checks one file" >&2
fi
if [ "$ctest_rc" -ne 0 ] || [ "$tidy_rc" -ne 0 ]; then
  exit 1
fi
stage "done"
