#!/usr/bin/env bash
# tfcapi-lint: lint time and peak RSS for a generated 200-file module, and
# HCL/JSON parser throughput in MB/s. See README.md.
#
#   bench/lint/run.sh [BUILD_DIR] [FILES] [RUNS]
#
# BUILD_DIR holds lint/tfcapi-lint and test/lint/captf_lint_hcl_bench
# (default build/release; build them with
#   cmake --preset release -B build/release
#   cmake --build build/release -j2 --target tfcapi-lint captf_lint_hcl_bench
# a dev build works, but ASan and -O0 inflate every figure).
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
build="${1:-$root/build/release}"
files="${2:-200}"
runs="${3:-7}"
lint="$build/lint/tfcapi-lint"
bench="$build/test/lint/captf_lint_hcl_bench"
[[ -x "$lint" ]] || { echo "no $lint: build tfcapi-lint first" >&2; exit 1; }
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

python3 "$root/bench/lint/gen_module.py" "$work/module" "$files"
bytes=$(find "$work/module" -type f -name '*.tf' -exec cat {} + | wc -c)
echo "module: $files files, $bytes bytes ($work/module from bench/lint/gen_module.py)"

# Each run: wall seconds and max RSS (KiB) of one `tfcapi-lint module`,
# measured by the parent through wait4's rusage; the median is reported.
python3 - "$lint" "$work/module" "$runs" <<'PY'
import os, statistics, subprocess, sys, time
lint, module, runs = sys.argv[1], sys.argv[2], int(sys.argv[3])
walls, rss = [], []
for _ in range(runs):
    start = time.perf_counter()
    p = subprocess.Popen([lint, "module", module, "--role", "machine"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(p.pid, 0)
    walls.append(time.perf_counter() - start)
    rss.append(usage.ru_maxrss)
    code = os.waitstatus_to_exitcode(status)
    if code not in (0, 1):
        sys.exit(f"tfcapi-lint exited {code}: {p.stderr.read().decode()}")
print(f"lint: median {statistics.median(walls) * 1000:.1f} ms wall "
      f"(min {min(walls) * 1000:.1f}, max {max(walls) * 1000:.1f}) over {runs} runs; "
      f"peak RSS median {statistics.median(rss) / 1024:.1f} MiB (max {max(rss) / 1024:.1f})")
PY

if [[ -x "$bench" ]]; then
  # Google Benchmark: 5 repetitions, the median's bytes_per_second.
  "$bench" --benchmark_repetitions=5 --benchmark_report_aggregates_only=true \
    --benchmark_format=json --benchmark_out="$work/parser.json" --benchmark_out_format=json \
    >/dev/null 2>&1
  python3 - "$work/parser.json" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
for b in doc["benchmarks"]:
    if b.get("aggregate_name") == "median":
        print(f"parser: {b['run_name']}: {b['bytes_per_second'] / 1e6:.1f} MB/s (median of 5)")
PY
else
  echo "no $bench: build captf_lint_hcl_bench for parser throughput" >&2
fi
