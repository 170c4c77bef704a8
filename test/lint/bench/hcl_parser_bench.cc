// Parser throughput on realistic configuration: the fixture modules of
// test/lint/testdata, repeated to about 1 MiB. The reproducible command
// (release build, median of 5 repetitions, MB/s) is bench/lint/run.sh.
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <benchmark/benchmark.h>

#include "lint/hcl/json.h"
#include "lint/hcl/parser.h"

namespace {

std::string readFixture(const char* relative) {
  const char* root = std::getenv("CAPTF_SOURCE_DIR");
  const std::filesystem::path path =
      std::filesystem::path(root != nullptr ? root : CAPTF_LINT_SOURCE_DIR) / "test/lint/testdata" /
      relative;
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string repeated(std::initializer_list<const char*> fixtures, std::size_t target) {
  std::string unit;
  for (const char* f : fixtures) {
    unit += readFixture(f);
    unit += '\n';
  }
  std::string out;
  while (out.size() < target) {
    out += unit;
  }
  return out;
}

void bmParseNative(benchmark::State& state) {
  const std::string src = repeated({"cluster-aws/main.tf", "cluster-aws/outputs.tf",
                                    "machinepool-aws/main.tf", "machine-gcp/main.tofu"},
                                   1u << 20);
  for (auto _ : state) {
    auto file = captf::lint::hcl::parseFile("bench.tf", src);
    if (!file.ok()) {
      state.SkipWithError(std::string(file.status().message()).c_str());
      break;
    }
    benchmark::DoNotOptimize(file->body.blocks.data());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) *
                          static_cast<int64_t>(src.size()));
}
BENCHMARK(bmParseNative)->Unit(benchmark::kMillisecond);

void bmParseJson(benchmark::State& state) {
  const std::string unit = readFixture("machinepool-aws/variables.tf.json");
  std::string src = "[";
  while (src.size() < (1u << 20)) {
    src += unit;
    src += ',';
  }
  src.back() = ']';
  for (auto _ : state) {
    auto doc = captf::lint::hcl::parseJson(src, "bench.tf.json");
    if (!doc.ok()) {
      state.SkipWithError(std::string(doc.status().message()).c_str());
      break;
    }
    benchmark::DoNotOptimize(doc->elements.data());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) *
                          static_cast<int64_t>(src.size()));
}
BENCHMARK(bmParseJson)->Unit(benchmark::kMillisecond);

} // namespace

BENCHMARK_MAIN();
