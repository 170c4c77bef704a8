#pragma once

// A small Prometheus registry: counters, gauges and histograms with label
// sets, rendered in the text exposition format 0.0.4. Families are created
// once at start-up; children (one per label-value tuple) are found with
// withLabels() and updated lock-free.

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace captf::kube {

class Counter {
public:
  // Adds `delta` (must be >= 0).
  void inc(double delta = 1);
  double value() const { return value_.load(std::memory_order_relaxed); }

private:
  std::atomic<double> value_{0};
};

class Gauge {
public:
  void set(double value) { value_.store(value, std::memory_order_relaxed); }
  void add(double delta);
  double value() const { return value_.load(std::memory_order_relaxed); }

private:
  std::atomic<double> value_{0};
};

class Histogram {
public:
  explicit Histogram(const std::vector<double>* bounds);
  void observe(double value);
  uint64_t count() const { return count_.load(std::memory_order_relaxed); }
  double sum() const { return sum_.load(std::memory_order_relaxed); }
  // Cumulative count of observations <= bounds[i].
  uint64_t bucketCount(size_t i) const;

private:
  const std::vector<double>* bounds_;
  std::unique_ptr<std::atomic<uint64_t>[]> buckets_;
  std::atomic<uint64_t> count_{0};
  std::atomic<double> sum_{0};
};

enum class MetricType { kCounter, kGauge, kHistogram };

// "counter", "gauge" or "histogram", as the exposition's # TYPE line says.
const char* metricTypeName(MetricType type);

// A registered family without its samples: what docs/reference/metrics.md
// is generated from (test/docs/reference_pages.cc).
struct MetricDescription {
  std::string name;
  MetricType type = MetricType::kCounter;
  std::string help;
  std::vector<std::string> labels;
  std::vector<double> buckets; // histograms only
};

// A named metric with fixed label names. Thread-safe. References returned by
// withLabels() stay valid until remove() of those labels or the family dies.
template <class T> class Family {
public:
  Family(std::string name, std::string help, std::vector<std::string> label_names,
         std::vector<double> bounds = {})
      : name_(std::move(name)), help_(std::move(help)), label_names_(std::move(label_names)),
        bounds_(std::move(bounds)) {}

  // Precondition: values.size() == number of label names.
  T& withLabels(const std::vector<std::string>& values);
  // Drops a child (per-object gauges of deleted objects).
  void remove(const std::vector<std::string>& values);

  const std::string& name() const { return name_; }
  const std::string& help() const { return help_; }
  const std::vector<std::string>& labelNames() const { return label_names_; }
  const std::vector<double>& bounds() const { return bounds_; }
  // Calls fn(label values, child) for each child in label order.
  void forEach(const std::function<void(const std::vector<std::string>&, const T&)>& fn) const;

private:
  const std::string name_;
  const std::string help_;
  const std::vector<std::string> label_names_;
  const std::vector<double> bounds_;
  mutable std::mutex mu_;
  std::map<std::vector<std::string>, std::unique_ptr<T>> children_;
};

using CounterFamily = Family<Counter>;
using GaugeFamily = Family<Gauge>;
using HistogramFamily = Family<Histogram>;

// Thread-safe. Registering a name twice returns the first family when the
// type and labels agree (so components sharing a registry may each ask for
// workqueue_depth) and aborts in debug builds otherwise.
class MetricsRegistry {
public:
  CounterFamily& counter(const std::string& name, const std::string& help,
                         std::vector<std::string> labels);
  GaugeFamily& gauge(const std::string& name, const std::string& help,
                     std::vector<std::string> labels);
  HistogramFamily& histogram(const std::string& name, const std::string& help,
                             std::vector<std::string> labels, std::vector<double> bounds);
  // Families whose values are computed at scrape time (cache sizes, the
  // process's CPU time). `collect` appends (label values, value) pairs; it
  // runs on the scraping thread under the registry's lock, so it must not
  // call back into the registry. Appending nothing leaves the family
  // without samples. Registering a name again replaces its collector.
  using Collector = std::function<void(std::vector<std::pair<std::vector<std::string>, double>>&)>;
  void gaugeFunc(const std::string& name, const std::string& help, std::vector<std::string> labels,
                 Collector collect);
  // A counter's collector must never report less than it did before.
  void counterFunc(const std::string& name, const std::string& help,
                   std::vector<std::string> labels, Collector collect);

  // The whole registry in the text exposition format, families sorted by
  // name, children by label values.
  std::string render() const;

  // Every registered family, sorted by name.
  std::vector<MetricDescription> describe() const;

private:
  struct Entry {
    MetricType type;
    std::unique_ptr<CounterFamily> counter;
    std::unique_ptr<GaugeFamily> gauge;
    std::unique_ptr<HistogramFamily> histogram;
    std::string help;
    std::vector<std::string> labels;
    Collector collector;
  };
  void collectedFamily(MetricType type, const std::string& name, const std::string& help,
                       std::vector<std::string> labels, Collector collect);
  mutable std::mutex mu_;
  std::map<std::string, Entry> entries_;
};

// Bucket helpers (Prometheus client_golang names).
std::vector<double> exponentialBuckets(double start, double factor, int count);
// controller-runtime's controller_runtime_reconcile_time_seconds buckets.
std::vector<double> reconcileTimeBuckets();

// Escapes a label value for the text format (\\, \", \n).
std::string escapeLabelValue(const std::string& value);

} // namespace captf::kube
