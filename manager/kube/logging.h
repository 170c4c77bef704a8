#pragma once

// Structured logging in logr's shape (docs/reference/logs.md). A Logger is a
// value, cheap to copy, holding key/values that every line it writes carries
// as fields; withValues() makes a child with more. A message is a constant
// ("Reconciler error", "run Job created"); what varies goes into key/values,
// never into the message.
//
// A line crosses the process's spdlog logger as a record of
// contract/log_format.h ({"msg": ..., "v": N} or {"msg": ..., "err": ...},
// then the key/values in the order they were added), which the formatter
// there writes as a component-base JSON line or as klog text (`"msg"
// key="value"`); another spdlog formatter shows the record as it is.
//
// Thread-safety: a Logger is immutable; copies may be used from any thread
// (the spdlog logger is the thread-safe part).

#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>
#include <spdlog/logger.h>

#include "absl/status/status.h"
#include "contract/log_format.h"

namespace captf::kube {

// Key/values: a JSON object whose members keep their insertion order.
using contract::LogValues;

using contract::isLogRecord;
using contract::kLogRecordPrefix;
using contract::parseLogRecord;

// klog.KRef: {"name": ..., "namespace": ...}, the namespace left out when
// empty (cluster-scoped). The text format writes it as "namespace/name".
LogValues objectRef(std::string_view ns, std::string_view name);

// -v to spdlog's level, as the manager's -v and PUT /debug/flags/v map it
// (manager/diagnostics/server.h): 0-2 info, 3-4 debug, 5 and more trace.
spdlog::level::level_enum spdlogLevel(int verbosity);

class Logger {
public:
  // Writes nothing (logr.Discard()).
  Logger() = default;
  explicit Logger(std::shared_ptr<spdlog::logger> sink);

  // A child whose lines also carry `values` (a JSON object; anything else
  // is ignored). A key already present takes the new value in its old
  // place. The keys "ts", "msg", "v" and "err" belong to the line and are
  // dropped. A Kubernetes object given as a value (a JSON object with
  // "metadata") is written as its objectRef, never its content: a Secret
  // passed by mistake shows its name, not its data.
  [[nodiscard]] Logger withValues(const LogValues& values) const;

  // Whether a V(level) line would be written now (the level can change at
  // run time).
  [[nodiscard]] bool enabled(int level) const;
  // A V(0) info line.
  void info(std::string_view message, const LogValues& values = LogValues::object()) const;
  // A V(level) info line, written when -v is at least `level`.
  void verbose(int level, std::string_view message,
               const LogValues& values = LogValues::object()) const;
  // An error line: "err" holds the status's message (its code and payloads
  // are not written).
  void error(std::string_view message, const absl::Status& error,
             const LogValues& values = LogValues::object()) const;

  // The key/values this logger adds to every line.
  [[nodiscard]] const LogValues& values() const;
  // The record of a line, without writing it (tests): `error` null for an
  // info line of V(`level`).
  [[nodiscard]] std::string record(int level, std::string_view message, const absl::Status* error,
                                   const LogValues& values) const;

private:
  void write(spdlog::level::level_enum level, std::string_view record) const;

  std::shared_ptr<spdlog::logger> sink_;
  std::shared_ptr<const LogValues> values_;
};

} // namespace captf::kube
