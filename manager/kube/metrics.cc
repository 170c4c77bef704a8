#include "manager/kube/metrics.h"

#include <array>
#include <cassert>
#include <charconv>
#include <cmath>
#include <limits>

#include "absl/strings/str_cat.h"

namespace captf::kube {
namespace {

void atomicAdd(std::atomic<double>& target, double delta) {
  double current = target.load(std::memory_order_relaxed);
  while (!target.compare_exchange_weak(current, current + delta, std::memory_order_relaxed)) {
  }
}

std::string formatValue(double value) {
  if (std::isnan(value)) {
    return "NaN";
  }
  if (std::isinf(value)) {
    return value > 0 ? "+Inf" : "-Inf";
  }
  if (value == std::floor(value) && std::fabs(value) < 1e15) {
    return absl::StrCat(static_cast<int64_t>(value));
  }
  // The shortest text that reads back as the same double, as client_golang
  // writes it: six significant digits (absl::StrCat) would turn a start
  // time of 1700000012.34 into 1.7e+09.
  std::array<char, 32> text{};
  const auto [end, error] = std::to_chars(text.data(), text.data() + text.size(), value);
  return error == std::errc() ? std::string(text.data(), end) : absl::StrCat(value);
}

std::string escapeHelp(const std::string& help) {
  std::string out;
  for (char c : help) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

std::string labelText(const std::vector<std::string>& names, const std::vector<std::string>& values,
                      const std::string& extra_name = {}, const std::string& extra_value = {}) {
  std::string out;
  for (size_t i = 0; i < names.size(); ++i) {
    absl::StrAppend(&out, out.empty() ? "" : ",", names[i], "=\"", escapeLabelValue(values[i]),
                    "\"");
  }
  if (!extra_name.empty()) {
    absl::StrAppend(&out, out.empty() ? "" : ",", extra_name, "=\"", extra_value, "\"");
  }
  return out.empty() ? out : absl::StrCat("{", out, "}");
}

} // namespace

const char* metricTypeName(MetricType type) {
  switch (type) {
  case MetricType::kCounter:
    return "counter";
  case MetricType::kGauge:
    return "gauge";
  case MetricType::kHistogram:
    return "histogram";
  }
  return "untyped";
}

void Counter::inc(double delta) {
  assert(delta >= 0);
  atomicAdd(value_, delta);
}

void Gauge::add(double delta) {
  atomicAdd(value_, delta);
}

Histogram::Histogram(const std::vector<double>* bounds)
    : bounds_(bounds), buckets_(std::make_unique<std::atomic<uint64_t>[]>(bounds->size())) {}

void Histogram::observe(double value) {
  for (size_t i = 0; i < bounds_->size(); ++i) {
    if (value <= (*bounds_)[i]) {
      buckets_[i].fetch_add(1, std::memory_order_relaxed);
      break;
    }
  }
  count_.fetch_add(1, std::memory_order_relaxed);
  atomicAdd(sum_, value);
}

uint64_t Histogram::bucketCount(size_t i) const {
  uint64_t total = 0;
  for (size_t j = 0; j <= i && j < bounds_->size(); ++j) {
    total += buckets_[j].load(std::memory_order_relaxed);
  }
  return total;
}

template <class T> T& Family<T>::withLabels(const std::vector<std::string>& values) {
  assert(values.size() == label_names_.size());
  std::scoped_lock lock(mu_);
  auto& child = children_[values];
  if (!child) {
    if constexpr (std::is_same_v<T, Histogram>) {
      child = std::make_unique<Histogram>(&bounds_);
    } else {
      child = std::make_unique<T>();
    }
  }
  return *child;
}

template <class T> void Family<T>::remove(const std::vector<std::string>& values) {
  std::scoped_lock lock(mu_);
  children_.erase(values);
}

template <class T>
void Family<T>::forEach(
    const std::function<void(const std::vector<std::string>&, const T&)>& fn) const {
  std::scoped_lock lock(mu_);
  for (const auto& [labels, child] : children_) {
    fn(labels, *child);
  }
}

template class Family<Counter>;
template class Family<Gauge>;
template class Family<Histogram>;

CounterFamily& MetricsRegistry::counter(const std::string& name, const std::string& help,
                                        std::vector<std::string> labels) {
  std::scoped_lock lock(mu_);
  auto& entry = entries_[name];
  if (!entry.counter) {
    assert(!entry.gauge && !entry.histogram && !entry.collector);
    entry.type = MetricType::kCounter;
    entry.counter = std::make_unique<CounterFamily>(name, help, std::move(labels));
  } else {
    assert(entry.counter->labelNames() == labels || labels.empty());
  }
  return *entry.counter;
}

GaugeFamily& MetricsRegistry::gauge(const std::string& name, const std::string& help,
                                    std::vector<std::string> labels) {
  std::scoped_lock lock(mu_);
  auto& entry = entries_[name];
  if (!entry.gauge) {
    assert(!entry.counter && !entry.histogram && !entry.collector);
    entry.type = MetricType::kGauge;
    entry.gauge = std::make_unique<GaugeFamily>(name, help, std::move(labels));
  }
  return *entry.gauge;
}

HistogramFamily& MetricsRegistry::histogram(const std::string& name, const std::string& help,
                                            std::vector<std::string> labels,
                                            std::vector<double> bounds) {
  std::scoped_lock lock(mu_);
  auto& entry = entries_[name];
  if (!entry.histogram) {
    assert(!entry.counter && !entry.gauge && !entry.collector);
    entry.type = MetricType::kHistogram;
    entry.histogram =
        std::make_unique<HistogramFamily>(name, help, std::move(labels), std::move(bounds));
  }
  return *entry.histogram;
}

void MetricsRegistry::gaugeFunc(const std::string& name, const std::string& help,
                                std::vector<std::string> labels, Collector collect) {
  collectedFamily(MetricType::kGauge, name, help, std::move(labels), std::move(collect));
}

void MetricsRegistry::counterFunc(const std::string& name, const std::string& help,
                                  std::vector<std::string> labels, Collector collect) {
  collectedFamily(MetricType::kCounter, name, help, std::move(labels), std::move(collect));
}

void MetricsRegistry::collectedFamily(MetricType type, const std::string& name,
                                      const std::string& help, std::vector<std::string> labels,
                                      Collector collect) {
  std::scoped_lock lock(mu_);
  auto& entry = entries_[name];
  assert(!entry.counter && !entry.gauge && !entry.histogram);
  assert(!entry.collector || entry.type == type);
  entry.type = type;
  entry.help = help;
  entry.labels = std::move(labels);
  entry.collector = std::move(collect);
}

std::string MetricsRegistry::render() const {
  std::scoped_lock lock(mu_);
  std::string out;
  for (const auto& item : entries_) { // NOLINT(modernize-use-structured-binding): see below
    // References, not a structured binding: the lambdas below capture them,
    // which clang 14 (the fuzz preset) does not allow for a binding.
    const auto& name = item.first;
    const auto& entry = item.second;
    std::string help = entry.counter     ? entry.counter->help()
                       : entry.gauge     ? entry.gauge->help()
                       : entry.histogram ? entry.histogram->help()
                                         : entry.help;
    absl::StrAppend(&out, "# HELP ", name, " ", escapeHelp(help), "\n# TYPE ", name, " ",
                    metricTypeName(entry.type), "\n");
    if (entry.counter) {
      entry.counter->forEach([&](const auto& labels, const Counter& c) {
        absl::StrAppend(&out, name, labelText(entry.counter->labelNames(), labels), " ",
                        formatValue(c.value()), "\n");
      });
    } else if (entry.gauge) {
      entry.gauge->forEach([&](const auto& labels, const Gauge& g) {
        absl::StrAppend(&out, name, labelText(entry.gauge->labelNames(), labels), " ",
                        formatValue(g.value()), "\n");
      });
    } else if (entry.histogram) {
      const auto& family = *entry.histogram;
      family.forEach([&](const auto& labels, const Histogram& h) {
        for (size_t i = 0; i < family.bounds().size(); ++i) {
          absl::StrAppend(
              &out, name, "_bucket",
              labelText(family.labelNames(), labels, "le", formatValue(family.bounds()[i])), " ",
              h.bucketCount(i), "\n");
        }
        absl::StrAppend(&out, name, "_bucket", labelText(family.labelNames(), labels, "le", "+Inf"),
                        " ", h.count(), "\n");
        absl::StrAppend(&out, name, "_sum", labelText(family.labelNames(), labels), " ",
                        formatValue(h.sum()), "\n");
        absl::StrAppend(&out, name, "_count", labelText(family.labelNames(), labels), " ",
                        h.count(), "\n");
      });
    } else if (entry.collector) {
      std::vector<std::pair<std::vector<std::string>, double>> samples;
      entry.collector(samples);
      std::sort(samples.begin(), samples.end());
      for (const auto& [labels, value] : samples) {
        absl::StrAppend(&out, name, labelText(entry.labels, labels), " ", formatValue(value), "\n");
      }
    }
  }
  return out;
}

std::vector<MetricDescription> MetricsRegistry::describe() const {
  std::scoped_lock lock(mu_);
  std::vector<MetricDescription> out;
  out.reserve(entries_.size());
  for (const auto& [name, entry] : entries_) {
    MetricDescription d{name, entry.type, entry.help, entry.labels, {}};
    if (entry.counter) {
      d.help = entry.counter->help();
      d.labels = entry.counter->labelNames();
    } else if (entry.gauge) {
      d.help = entry.gauge->help();
      d.labels = entry.gauge->labelNames();
    } else if (entry.histogram) {
      d.help = entry.histogram->help();
      d.labels = entry.histogram->labelNames();
      d.buckets = entry.histogram->bounds();
    }
    out.push_back(std::move(d));
  }
  return out;
}

std::vector<double> exponentialBuckets(double start, double factor, int count) {
  std::vector<double> out;
  double value = start;
  for (int i = 0; i < count; ++i) {
    out.push_back(value);
    value *= factor;
  }
  return out;
}

std::vector<double> reconcileTimeBuckets() {
  return {0.005, 0.01, 0.025, 0.05, 0.1,  0.15, 0.2,  0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6,
          0.7,   0.8,  0.9,   1.0,  1.25, 1.5,  1.75, 2.0,  2.5, 3.0,  3.5, 4.0,  4.5, 5,
          6,     7,    8,     9,    10,   15,   20,   25,   30,  40,   50,  60};
}

std::string escapeLabelValue(const std::string& value) {
  std::string out;
  for (char c : value) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '"') {
      out += "\\\"";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

} // namespace captf::kube
