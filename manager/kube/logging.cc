#include "manager/kube/logging.h"

#include <array>
#include <utility>

namespace captf::kube {
namespace {

constexpr std::array<std::string_view, 4> kLineKeys = {"ts", "msg", "v", "err"};

bool isLineKey(std::string_view key) {
  for (const std::string_view line_key : kLineKeys) {
    if (key == line_key) {
      return true;
    }
  }
  return false;
}

// What a value is written as: a Kubernetes object as its reference.
LogValues loggable(const LogValues& value) {
  if (!value.is_object()) {
    return value;
  }
  const auto metadata = value.find("metadata");
  if (metadata == value.end() || !metadata->is_object()) {
    return value;
  }
  const auto member = [&](const char* key) {
    const auto found = metadata->find(key);
    return found != metadata->end() && found->is_string() ? found->get<std::string>()
                                                          : std::string();
  };
  return objectRef(member("namespace"), member("name"));
}

void addValues(LogValues& into, const LogValues& values) {
  if (!values.is_object()) {
    return;
  }
  for (const auto& [key, value] : values.items()) {
    if (!isLineKey(key)) {
      into[key] = loggable(value);
    }
  }
}

const LogValues& noValues() {
  static const LogValues kEmpty = LogValues::object();
  return kEmpty;
}

} // namespace

LogValues objectRef(std::string_view ns, std::string_view name) {
  LogValues ref = LogValues::object();
  ref["name"] = std::string(name);
  if (!ns.empty()) {
    ref["namespace"] = std::string(ns);
  }
  return ref;
}

spdlog::level::level_enum spdlogLevel(int verbosity) {
  return verbosity >= 5   ? spdlog::level::trace
         : verbosity >= 3 ? spdlog::level::debug
                          : spdlog::level::info;
}

Logger::Logger(std::shared_ptr<spdlog::logger> sink) : sink_(std::move(sink)) {}

Logger Logger::withValues(const LogValues& values) const {
  auto merged = std::make_shared<LogValues>(this->values());
  addValues(*merged, values);
  Logger child(sink_);
  child.values_ = std::move(merged);
  return child;
}

const LogValues& Logger::values() const {
  return values_ ? *values_ : noValues();
}

bool Logger::enabled(int level) const {
  return sink_ != nullptr && sink_->should_log(spdlogLevel(level));
}

std::string Logger::record(int level, std::string_view message, const absl::Status* error,
                           const LogValues& values) const {
  LogValues line = LogValues::object();
  line["msg"] = std::string(message);
  if (error != nullptr) {
    line["err"] = std::string(error->message());
  } else {
    line["v"] = level;
  }
  for (const auto& [key, value] : this->values().items()) {
    line[key] = value;
  }
  addValues(line, values);
  return contract::logRecord(line);
}

void Logger::write(spdlog::level::level_enum level, std::string_view record) const {
  sink_->log(level, spdlog::string_view_t(record.data(), record.size()));
}

void Logger::info(std::string_view message, const LogValues& values) const {
  verbose(0, message, values);
}

void Logger::verbose(int level, std::string_view message, const LogValues& values) const {
  if (enabled(level)) {
    write(spdlogLevel(level), record(level, message, nullptr, values));
  }
}

void Logger::error(std::string_view message, const absl::Status& error,
                   const LogValues& values) const {
  if (sink_ != nullptr && sink_->should_log(spdlog::level::err)) {
    write(spdlog::level::err, record(0, message, &error, values));
  }
}

} // namespace captf::kube
