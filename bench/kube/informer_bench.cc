// The C++ side of bench/kube/run.sh: the same measurement as the client-go
// baseline (bench/kube/clientgo), with the same flags and the same JSON line.
//   informer_bench --kubeconfig K --namespace NS --expect N [--updates U] [--workers W]
//                  [--ready-file F]
// RSS after syncing NS's BenchWidgets; then, with --updates, CPU seconds per
// 1,000 watch events processed end to end (informer → handler → work queue →
// no-op reconcile that reads the cache).
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>
#include <spdlog/sinks/null_sink.h>
#include <spdlog/spdlog.h>
#include <sys/resource.h>

#include "manager/kube/cache.h"
#include "manager/kube/client.h"
#include "manager/kube/config.h"
#include "manager/kube/discovery.h"
#include "manager/kube/metrics.h"
#include "manager/kube/rate_limiter.h"
#include "manager/kube/rest_client.h"
#include "manager/kube/workqueue.h"

namespace {

using namespace captf::kube;

long rssBytes() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.starts_with("VmRSS:")) {
      return std::stol(line.substr(6)) * 1024;
    }
  }
  return 0;
}

double cpuSeconds() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
         static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

std::string flag(const std::vector<std::string>& args, const std::string& name,
                 const std::string& fallback) {
  for (size_t i = 0; i + 1 < args.size(); ++i) {
    if (args[i] == "--" + name) {
      return args[i + 1];
    }
  }
  return fallback;
}

} // namespace

int main(int argc, char** argv) {
  const std::vector<std::string> args(argv + 1, argv + argc);
  const std::string kubeconfig = flag(args, "kubeconfig", "");
  const std::string ns = flag(args, "namespace", "bench");
  const size_t expect = std::stoul(flag(args, "expect", "0"));
  const long updates = std::stol(flag(args, "updates", "0"));
  const int workers = std::stoi(flag(args, "workers", "2"));
  const std::string ready_file = flag(args, "ready-file", "");

  auto logger =
      std::make_shared<spdlog::logger>("bench", std::make_shared<spdlog::sinks::null_sink_mt>());
  MetricsRegistry metrics;
  LoadOptions load;
  load.kubeconfig = kubeconfig;
  auto config = loadConfig(load);
  if (!config.ok()) {
    std::fprintf(stderr, "informer_bench: %s\n", config.status().ToString().c_str());
    return 1;
  }
  auto rest = RestClient::create(*config, realClock(), &metrics, logger);
  if (!rest.ok()) {
    std::fprintf(stderr, "informer_bench: %s\n", rest.status().ToString().c_str());
    return 1;
  }
  DiscoveryRestMapper mapper(**rest, realClock(), std::chrono::milliseconds(200));
  ApiClient client(**rest, mapper);
  const GroupVersionKind gvk{"bench.captf.io", "v1", "BenchWidget"};
  CacheOptions options;
  options.ns = ns;
  InformerCache cache(InformerCache::apiFactory(client), realClock(), options, &metrics, logger);
  auto informer = cache.informerFor(gvk);
  if (!informer.ok()) {
    std::fprintf(stderr, "informer_bench: %s\n", informer.status().ToString().c_str());
    return 1;
  }
  WorkQueue queue("bench", realClock(), defaultControllerRateLimiter(realClock()), &metrics);
  std::atomic<long> events{0};
  std::atomic<long> reconciled{0};
  (*informer)->addEventHandler(EventHandlers{
      .on_add =
          [&](const Json& o) {
            events.fetch_add(1);
            queue.add(meta::key(o));
          },
      .on_update =
          [&](const Json&, const Json& o) {
            events.fetch_add(1);
            queue.add(meta::key(o));
          },
      .on_delete =
          [&](const Json& o) {
            events.fetch_add(1);
            queue.add(meta::key(o));
          },
  });
  std::vector<std::jthread> pool;
  pool.reserve(static_cast<std::size_t>(std::max(workers, 0)));
  for (int i = 0; i < workers; ++i) {
    pool.emplace_back([&] {
      while (auto item = queue.get()) {
        if (cache.get(gvk, *item).ok()) {
          reconciled.fetch_add(1);
        }
        queue.forget(*item);
        queue.done(*item);
      }
    });
  }
  const auto start = std::chrono::steady_clock::now();
  cache.start();
  cache.waitForCacheSync(std::stop_token());
  while (cache.objectCount() < expect) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  const double sync_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  nlohmann::json res = {
      {"client", "captf"},
      {"objects", cache.objectCount()},
      {"sync_seconds", sync_seconds},
      {"rss_bytes", rssBytes()},
      {"cache_bytes_per_object", cache.objectBytes() / std::max<size_t>(expect, 1)}};
  if (!ready_file.empty()) {
    std::ofstream(ready_file).flush();
  }
  if (updates > 0) {
    const long base = events.load();
    const double cpu0 = cpuSeconds();
    std::chrono::steady_clock::time_point first{};
    while (events.load() - base < updates) {
      if (first == std::chrono::steady_clock::time_point{} && events.load() > base) {
        first = std::chrono::steady_clock::now();
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    while (queue.len() > 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    const double secs =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - first).count();
    const long n = events.load() - base;
    res["update_events"] = n;
    res["update_seconds"] = secs;
    res["events_per_second"] = static_cast<double>(n) / secs;
    res["cpu_seconds_per_1000_events"] = (cpuSeconds() - cpu0) * 1000 / static_cast<double>(n);
  }
  queue.shutDown();
  pool.clear();
  cache.stop();
  std::printf("%s\n", res.dump().c_str());
  return 0;
}
