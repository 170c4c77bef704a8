#!/usr/bin/env bash
# ThreadSanitizer over the client runtime (manager/kube: informers, work
# queue, controller, leader election, the HTTPS server) and the webhook
# server: builds their test binaries with the tsan preset and runs them, unit
# tier by default, the integration tier too with --integration (a rig API
# server per binary, built like scripts/test.sh builds it). Any data race
# fails the run (halt_on_error). The last result is in bench/tsan/README.md.
#   scripts/tsan.sh [--integration]
set -euo pipefail
cd "$(dirname "$0")/.."
unit=(kube_unit_test captf_webhook_server_test captf_webhooks_test captf_diagnostics_test)
integration=()
if [ "${1:-}" = --integration ]; then
  integration=(kube_integration_test captf_webhooks_integration_test)
  test/rig/rig build integration >/dev/null
fi
start=$(date +%s)
cmake --preset tsan >/dev/null
cmake --build --preset tsan --target "${unit[@]}" "${integration[@]}"
export TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1 history_size=4"
export CAPTF_SOURCE_DIR=$PWD
status=0
for t in "${unit[@]}" "${integration[@]}"; do
  bin=$(find build/tsan -type f -name "$t" -perm -u+x | head -1)
  printf '== %s (%ds)\n' "$t" "$(( $(date +%s) - start ))"
  if ! (cd "$(dirname "$bin")" && "./$t" --gtest_brief=1); then
    echo "tsan: $t failed" >&2
    status=1
  fi
done
printf '== done (%ds)\n' "$(( $(date +%s) - start ))"
exit $status
