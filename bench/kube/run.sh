#!/usr/bin/env bash
# Informer benchmark: CAPTF's C++ informer against client-go's, in one run, on
# one rig, watching the same objects and the same stream of updates.
#   bench/kube/run.sh [OBJECTS=10000] [UPDATES=5000]
# Needs the C++ program's path in CAPTF_INFORMER_BENCH (built by the project:
# build/release/bench/kube/informer_bench); it takes the same flags as the Go
# baseline and prints the same JSON line.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
OBJECTS=${1:-10000}
UPDATES=${2:-5000}
CPP=${CAPTF_INFORMER_BENCH:-$ROOT/build/release/bench/kube/informer_bench}
. "$ROOT/test/rig/build/common.sh"
GO_BIN=$RIG_CACHE/bin/bench-clientgo
(cd "$HERE/clientgo" && go build -trimpath -o "$GO_BIN" .)
DIR=$(mktemp -d /tmp/captf-bench-XXXXXX)
trap '"$ROOT/test/rig/rig" down --dir "$DIR" >/dev/null; rm -rf "$DIR"' EXIT
"$ROOT/test/rig/rig" up --dir "$DIR" --tier integration --owner-pid $$ >/dev/null
. "$DIR/env"
K=$CAPTF_RIG_KUBECTL
$K apply -f "$HERE/crd.yaml" >/dev/null
$K create namespace bench >/dev/null
$K wait --for=condition=Established crd/benchwidgets.bench.captf.io >/dev/null
"$GO_BIN" --kubeconfig "$KUBECONFIG" --mode create --count "$OBJECTS" >/dev/null
echo "created $OBJECTS objects" >&2
run() { # NAME BIN: start an informer, wait for its ready file
  "$2" --kubeconfig "$KUBECONFIG" --namespace bench --expect "$OBJECTS" --updates "$UPDATES" \
    --ready-file "$DIR/$1.ready" >"$DIR/$1.json" &
}
run clientgo "$GO_BIN"
[ -x "$CPP" ] && run captf "$CPP"
for n in clientgo $([ -x "$CPP" ] && echo captf); do
  while [ ! -f "$DIR/$n.ready" ]; do sleep 0.2; done
done
"$GO_BIN" --kubeconfig "$KUBECONFIG" --mode update --count "$UPDATES" >/dev/null
wait
cat "$DIR"/*.json
