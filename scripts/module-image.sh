#!/usr/bin/env bash
# Packages a module with its runtime as a CAPTF module image (docs/runner.md,
# the image contract): the module at /captf/module, the runtime binary at
# /captf/runtime, the mount points the runner's Job uses, and nothing else.
# Built without a container engine by the rig's image writer and pushed.
#   scripts/module-image.sh --module DIR --runtime BIN --ref HOST:PORT/REPO:TAG [--label K=V]...
# Prints REPO@DIGEST.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
module="" runtime="" ref="" labels=()
while [ $# -gt 0 ]; do
  case "$1" in
    --module) module=$2; shift 2 ;;
    --runtime) runtime=$2; shift 2 ;;
    --ref) ref=$2; shift 2 ;;
    --label) labels+=(--label "$2"); shift 2 ;;
    *) echo "module-image: unknown argument $1" >&2; exit 2 ;;
  esac
done
[ -d "$module" ] && [ -x "$runtime" ] && [ -n "$ref" ] ||
  { echo "module-image: --module DIR, --runtime BIN and --ref are required" >&2; exit 2; }
work=$(mktemp -d) && trap 'rm -rf "$work"' EXIT
mkdir -p "$work"/captf/{work,bin,config} "$work"/var/run/captf/credentials "$work"/{tmp,etc,dev,proc}
cp -r "$module" "$work/captf/module"
install -m 0755 "$runtime" "$work/captf/runtime"
exec "$ROOT/test/rig/rig" image push --rootfs "$work" --ref "$ref" "${labels[@]}"
