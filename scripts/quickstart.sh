#!/usr/bin/env bash
# Brings up a local control plane of real components (etcd, kube-apiserver,
# kube-controller-manager, a process kubelet, an OCI registry) and prints how
# to reach it with kubectl. Stop it with: test/rig/rig down --dir DIR
set -euo pipefail
cd "$(dirname "$0")/.."
DIR=${CAPTF_RIG_DIR:-$HOME/.captf/rig}
bash scripts/bootstrap.sh
test/rig/rig up --dir "$DIR" --tier e2e
cat <<MSG

The control plane is up. To use it:
  source $DIR/env
  \$CAPTF_RIG_KUBECTL get nodes
Stop it with:
  test/rig/rig down --dir $DIR
MSG
