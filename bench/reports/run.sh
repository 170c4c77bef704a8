#!/usr/bin/env bash
# Run reports at load: reports per second one ReportServer takes from
# RUNNERS concurrent reporters and its CPU per report (the server process
# only; utime+stime from /proc before and after).
#   bench/reports/run.sh [BUILD_DIR] [RUNNERS] [EVENTS]
set -euo pipefail
build=${1:-build/release-bench}; runners=${2:-100}; events=${3:-2000}
bin=$build/bench/reports/report_bench
dir=$(mktemp -d); trap 'kill "$server" 2>/dev/null || true; rm -rf "$dir"' EXIT
openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=localhost \
  -addext subjectAltName=IP:127.0.0.1 -keyout "$dir/tls.key" -out "$dir/tls.crt" 2>/dev/null
"$bin" serve "$dir" & server=$!
until [ -s "$dir/port" ]; do sleep 0.1; done
ticks() { awk '{print $14 + $15}' "/proc/$server/stat"; }
before=$(ticks)
out=$("$bin" send "$dir" "$runners" "$events")
after=$(ticks)
echo "$out"
accepted=$(sed -n 's/.*accepted \([0-9]*\),.*/\1/p' <<<"$out")
hz=$(getconf CLK_TCK)
awk -v t=$((after - before)) -v hz="$hz" -v n="$accepted" \
  'BEGIN { printf "server CPU %.2f s, %.1f us per report\n", t / hz, 1e6 * t / hz / n }'
