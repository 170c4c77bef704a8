#!/usr/bin/env bash
# Webhook admission throughput and latency over loopback with keep-alive,
# against a Go net/http baseline driven the same way in the same run,
# and the server's RSS under that load. See README.md.
#
#   bench/webhooks/run.sh [--slow-clients N] [BUILD_DIR] [RATE] [SECONDS] [CONNECTIONS]
#
# BUILD_DIR holds webhooks/webhook-server (default build/release; a dev
# build works but ASan inflates RSS and latency). With --slow-clients N the
# Go baseline is not run; instead webhook-server is driven twice, without
# and then with N slow clients trickling their headers, and the ratio of
# the two latencies is printed.
set -euo pipefail
slow_clients=0
if [[ "${1:-}" == "--slow-clients" ]]; then
  slow_clients="$2"
  shift 2
fi
root="$(cd "$(dirname "$0")/../.." && pwd)"
build="${1:-$root/build/release}"
rate="${2:-1000}"
seconds="${3:-30}"
connections="${4:-8}"
work="$(mktemp -d)"
server_pid=""
cleanup() {
  if [[ -n "$server_pid" ]]; then kill "$server_pid" 2>/dev/null || true; wait "$server_pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

# The slow clients hold a socket each in the load client, and the server as
# many as its connection cap (1,024): raise the soft limit on open files
# when it is below what that takes (the hard limit is the ceiling).
if (( slow_clients > 0 )); then
  need=$(( slow_clients + connections + 256 ))
  if (( $(ulimit -n) < need )); then
    ulimit -n "$need" 2>/dev/null || { echo "ulimit -n is $(ulimit -n) (hard $(ulimit -Hn)); $need open files are needed"; exit 1; }
  fi
  echo "ulimit -n $(ulimit -n)"
fi

# The load client: Boost.Beast and OpenSSL, header-only Beast.
g++ -O2 -std=c++20 -o "$work/load_client" "$root/bench/webhooks/load_client.cc" -lssl -lcrypto -pthread

# A test CA and a serving certificate for 127.0.0.1.
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 -subj /CN=bench-ca \
  -keyout "$work/ca.key" -out "$work/ca.crt" 2>/dev/null
openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj /CN=localhost \
  -keyout "$work/tls.key" -out "$work/tls.csr" 2>/dev/null
printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n' > "$work/ext"
openssl x509 -req -in "$work/tls.csr" -CA "$work/ca.crt" -CAkey "$work/ca.key" -CAcreateserial \
  -days 1 -extfile "$work/ext" -out "$work/tls.crt" 2>/dev/null

# TerraformCluster validation reads nothing from the API server, so a
# kubeconfig pointing nowhere is enough.
cat > "$work/kubeconfig" <<KC
apiVersion: v1
kind: Config
clusters: [{name: none, cluster: {server: "https://127.0.0.1:1", insecure-skip-tls-verify: true}}]
users: [{name: none, user: {token: none}}]
contexts: [{name: none, context: {cluster: none, user: none}}]
current-context: none
KC

cat > "$work/review.json" <<'JSON'
{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"bench-0001","kind":{"group":"infrastructure.cluster.x-k8s.io","version":"v1alpha1","kind":"TerraformCluster"},"resource":{"group":"infrastructure.cluster.x-k8s.io","version":"v1alpha1","resource":"terraformclusters"},"name":"c1","namespace":"bench","operation":"CREATE","userInfo":{"username":"admin","groups":["system:masters"]},"object":{"apiVersion":"infrastructure.cluster.x-k8s.io/v1alpha1","kind":"TerraformCluster","metadata":{"name":"c1","namespace":"bench","labels":{"cluster.x-k8s.io/cluster-name":"c1"}},"spec":{"identityRef":{"name":"prod"},"source":{"image":"registry.example.com/modules/cluster:v1.0.0"},"variables":{"region":"eu-west-1","instance_type":"m5.large","tags":{"team":"platform"}},"jobs":{"lockTimeoutSeconds":60,"activeDeadlineSeconds":600}}}}}
JSON

if (( slow_clients == 0 )); then
  go build -o "$work/baseline_server" "$root/bench/webhooks/baseline_server.go"
fi

# bench NAME SLOW_CLIENTS COMMAND...: starts one server, drives it with the
# load client (and SLOW_CLIENTS slow clients), prints the client's lines
# plus the server's peak RSS and CPU share (over the load client's whole
# run, the slow clients' ramp included).
bench() {
  local name="$1"
  local slow="$2"
  shift 2
  "$@" > "$work/$name.out" &
  server_pid=$!
  for _ in $(seq 100); do grep -q "listening on port" "$work/$name.out" 2>/dev/null && break; sleep 0.1; done
  local port
  port="$(sed -n 's/.*listening on port \([0-9]*\).*/\1/p' "$work/$name.out" | head -1)"
  # Sample the server's RSS every 200 ms during the run.
  echo 0 > "$work/peak"
  ( peak=0; while kill -0 "$server_pid" 2>/dev/null; do
      rss=$(awk '/VmRSS/{print $2}' /proc/$server_pid/status 2>/dev/null || echo 0)
      (( rss > peak )) && peak=$rss && echo "$peak" > "$work/peak"
      sleep 0.2
    done ) &
  local sampler=$!
  local cpu_before cpu_after
  cpu_before=$(awk '{print $14+$15}' /proc/$server_pid/stat)
  local t_before t_after
  t_before=$(date +%s%N)
  local line
  line="$("$work/load_client" 127.0.0.1 "$port" "$work/ca.crt" \
    /validate-infrastructure-cluster-x-k8s-io-v1alpha1-terraformcluster "$work/review.json" \
    "$rate" "$seconds" "$connections" --slow-clients "$slow")" ||
    { echo "$name: the load client saw errors: $line"; exit 1; }
  cpu_after=$(awk '{print $14+$15}' /proc/$server_pid/stat)
  t_after=$(date +%s%N)
  kill "$sampler" 2>/dev/null || true
  kill "$server_pid"; wait "$server_pid" 2>/dev/null || true
  server_pid=""
  printf '%-15s %s\n%-15s RSS peak %s kB; CPU %s%% of one core\n' "$name" "$line" "" "$(cat "$work/peak")" \
    "$(( (cpu_after - cpu_before) * 100 * 1000 / $(getconf CLK_TCK) / ((t_after - t_before) / 1000000) ))"
  echo "$line" | sed -n 's/.*p50 \([0-9.]*\) ms.*/\1/p' > "$work/$name.p50"
  echo "$line" | sed -n 's/.*p99 \([0-9.]*\) ms.*/\1/p' > "$work/$name.p99"
}

server=("$build/webhooks/webhook-server" --webhook-port=0 --webhook-bind-address=127.0.0.1
  --webhook-cert-dir="$work" --kubeconfig="$work/kubeconfig" --log-level=warn)
echo "rate $rate/s for ${seconds}s over $connections keep-alive TLS connections"
if (( slow_clients > 0 )); then
  bench quiet 0 "${server[@]}"
  bench slow-clients "$slow_clients" "${server[@]}"
  awk -v a50="$(cat "$work/slow-clients.p50")" -v b50="$(cat "$work/quiet.p50")" \
    -v a99="$(cat "$work/slow-clients.p99")" -v b99="$(cat "$work/quiet.p99")" \
    'BEGIN { printf "ratio with / without %d slow clients: p50 %.2f, p99 %.2f\n", '"$slow_clients"', a50 / b50, a99 / b99 }'
  exit 0
fi
bench webhook-server 0 "${server[@]}"
bench go-baseline 0 "$work/baseline_server" "$work"
awk -v a="$(cat "$work/webhook-server.p99")" -v b="$(cat "$work/go-baseline.p99")" \
  'BEGIN { printf "p99 ratio webhook-server / go-baseline: %.2f\n", a / b }'
