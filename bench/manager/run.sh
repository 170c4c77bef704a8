#!/usr/bin/env bash
# The manager benchmark (issue 5): N TerraformClusters, each with its Cluster
# API Cluster, created at once on the rig's capi tier; reports the seconds
# until every apply Job exists and until every TerraformCluster is Ready, the
# manager's peak RSS and CPU seconds, and its API requests per object. See
# README.md.
#
#   bench/manager/run.sh [N] [BUILD_DIR] [-- MANAGER_BENCH_ARGS...]
#
# N defaults to 500; BUILD_DIR to build/release-bench, configured with the
# release preset when missing (a dev build works, but ASan inflates the
# manager's RSS and CPU). The rig is private to the run and stopped at its
# end. Figures: stdout and BUILD_DIR/bench/manager/out-N/result.json.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
positional=()
while [[ $# -gt 0 && "$1" != "--" ]]; do positional+=("$1"); shift; done
[[ "${1:-}" == "--" ]] && shift
objects="${positional[0]:-500}"
build="$(realpath -m "${positional[1]:-$root/build/release-bench}")"

if [[ ! -f "$build/CMakeCache.txt" ]]; then
  (cd "$root" && cmake --preset release -B "$build" >/dev/null)
fi
cmake --build "$build" -j2 --target manager_bench manager >/dev/null
out="$build/bench/manager/out-$objects"
rm -rf "$out"
CAPTF_SOURCE_DIR="$root" "$build/bench/manager/manager_bench" \
  --objects "$objects" --out "$out" "$@"
