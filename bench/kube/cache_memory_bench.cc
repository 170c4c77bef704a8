// Memory and decode cost of the informer cache's object representation.
//
//   kube_bench [--benchmark_filter=...]
//
// Builds 5000 ConfigMap-shaped objects (labels, annotations, owner
// references, managedFields, ~1 kB of data) and reports the heap bytes per
// object when kept as a nlohmann::json tree (what a naive cache keeps) and
// as a CachedObject (MessagePack without managedFields, what
// manager/kube/informer.h keeps), counted by a replaced operator new.

#include <atomic>
#include <cstdlib>
#include <new>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>

#include "manager/kube/informer.h"

namespace {

std::atomic<int64_t> g_live_bytes{0}; // NOLINT(cppcoreguidelines-avoid-non-const-global-variables)

struct Header {
  size_t size;
  size_t pad;
};

} // namespace

// Counting allocator: every allocation carries its size in a header.
void* operator new(size_t size) {
  auto* header = static_cast<Header*>(std::malloc(size + sizeof(Header)));
  if (header == nullptr) {
    throw std::bad_alloc();
  }
  header->size = size;
  g_live_bytes += static_cast<int64_t>(size);
  return header + 1;
}
void operator delete(void* p) noexcept {
  if (p == nullptr) {
    return;
  }
  auto* header = static_cast<Header*>(p) - 1;
  g_live_bytes -= static_cast<int64_t>(header->size);
  std::free(header);
}
void operator delete(void* p, size_t) noexcept {
  operator delete(p);
}

namespace {

using captf::kube::Json;

Json sampleObject(int i) {
  std::string name = "terraformmachine-" + std::to_string(i);
  Json managed = Json::array();
  for (const char* manager : {"manager", "kubectl-client-side-apply", "captf"}) {
    managed.push_back(
        {{"manager", manager},
         {"operation", "Update"},
         {"apiVersion", "v1"},
         {"time", "2026-01-01T00:00:00Z"},
         {"fieldsType", "FieldsV1"},
         {"fieldsV1",
          {{"f:data", {{"f:inputs", Json::object()}, {"f:outputs", Json::object()}}},
           {"f:metadata",
            {{"f:labels", {{"f:cluster.x-k8s.io/cluster-name", Json::object()}}}}}}}});
  }
  return {{"apiVersion", "v1"},
          {"kind", "ConfigMap"},
          {"metadata",
           {{"name", name},
            {"namespace", "team-" + std::to_string(i % 20)},
            {"uid", "3f1c2d4e-5a6b-4c7d-8e9f-" + std::to_string(100000000000 + i)},
            {"resourceVersion", std::to_string(1000000 + i)},
            {"creationTimestamp", "2026-01-01T00:00:00Z"},
            {"labels",
             {{"cluster.x-k8s.io/cluster-name", "cluster-" + std::to_string(i % 50)},
              {"captf.io/managed", "true"},
              {"app.kubernetes.io/name", "captf"}}},
            {"annotations", {{"captf.io/inputs-hash", std::string(64, 'a')}}},
            {"ownerReferences",
             Json::array({{{"apiVersion", "infrastructure.cluster.x-k8s.io/v1alpha1"},
                           {"kind", "TerraformMachine"},
                           {"name", name},
                           {"uid", "9a8b7c6d-5e4f-4a3b-2c1d-" + std::to_string(100000000000 + i)},
                           {"controller", true},
                           {"blockOwnerDeletion", true}}})},
            {"managedFields", managed}}},
          {"data",
           {{"inputs", std::string(600, 'i')},
            {"outputs", std::string(300, 'o')},
            {"phase", "Provisioned"}}}};
}

constexpr int kObjects = 5000;

void bmCacheAsJsonTree(benchmark::State& state) {
  std::vector<Json> source;
  source.reserve(kObjects);
  for (int i = 0; i < kObjects; ++i) {
    source.push_back(sampleObject(i));
  }
  for (auto _ : state) {
    int64_t before = g_live_bytes;
    std::vector<Json> cache;
    cache.reserve(kObjects);
    for (const auto& object : source) {
      cache.push_back(object);
    }
    state.counters["bytes_per_object"] = static_cast<double>(g_live_bytes - before) / kObjects;
    benchmark::DoNotOptimize(cache.data());
  }
}
BENCHMARK(bmCacheAsJsonTree)->Iterations(3)->Unit(benchmark::kMillisecond);

// The same tree without managedFields: what the compact form is really
// compared with.
void bmCacheAsStrippedJsonTree(benchmark::State& state) {
  std::vector<Json> source;
  for (int i = 0; i < kObjects; ++i) {
    Json object = sampleObject(i);
    captf::kube::stripManagedFields(object);
    source.push_back(std::move(object));
  }
  for (auto _ : state) {
    int64_t before = g_live_bytes;
    std::vector<Json> cache;
    cache.reserve(kObjects);
    for (const auto& object : source) {
      cache.push_back(object);
    }
    state.counters["bytes_per_object"] = static_cast<double>(g_live_bytes - before) / kObjects;
    benchmark::DoNotOptimize(cache.data());
  }
}
BENCHMARK(bmCacheAsStrippedJsonTree)->Iterations(3)->Unit(benchmark::kMillisecond);

void bmCacheAsCachedObject(benchmark::State& state) {
  std::vector<Json> source;
  for (int i = 0; i < kObjects; ++i) {
    Json object = sampleObject(i);
    captf::kube::stripManagedFields(object);
    source.push_back(std::move(object));
  }
  for (auto _ : state) {
    int64_t before = g_live_bytes;
    captf::kube::Store store;
    for (const auto& object : source) {
      store.put(captf::kube::makeCachedObject(object), object);
    }
    state.counters["bytes_per_object"] = static_cast<double>(g_live_bytes - before) / kObjects;
    state.counters["estimated_bytes_per_object"] = static_cast<double>(store.bytes()) / kObjects;
    benchmark::DoNotOptimize(store.size());
  }
}
BENCHMARK(bmCacheAsCachedObject)->Iterations(3)->Unit(benchmark::kMillisecond);

void bmDecodeCachedObject(benchmark::State& state) {
  Json object = sampleObject(1);
  captf::kube::stripManagedFields(object);
  auto cached = captf::kube::makeCachedObject(object);
  for (auto _ : state) {
    benchmark::DoNotOptimize(cached->object());
  }
}
BENCHMARK(bmDecodeCachedObject);

void bmParseJsonText(benchmark::State& state) {
  Json object = sampleObject(1);
  captf::kube::stripManagedFields(object);
  std::string text = object.dump();
  for (auto _ : state) {
    benchmark::DoNotOptimize(Json::parse(text));
  }
}
BENCHMARK(bmParseJsonText);

} // namespace

BENCHMARK_MAIN();
