#pragma once

// The runner's own log: one line per event, a constant message and typed
// key/value fields, as text (klog style) or JSON (component-base style),
// through spdlog and the manager's line writer (contract/log_format.h). Never
// a secret value: fields carry names, steps, exit codes, durations and
// counts.

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <string>
#include <string_view>
#include <variant>

#include <spdlog/logger.h>

#include "contract/logging.h"

namespace captf::runner {

using contract::LogFormat;

struct LogField {
  LogField(std::string_view k, std::string_view v) : key(k), value(std::string(v)) {}
  LogField(std::string_view k, const std::string& v) : key(k), value(v) {}
  LogField(std::string_view k, const char* v) : key(k), value(std::string(v)) {}
  LogField(std::string_view k, std::int64_t v) : key(k), value(v) {}
  LogField(std::string_view k, int v) : key(k), value(std::int64_t{v}) {}
  LogField(std::string_view k, std::size_t v) : key(k), value(static_cast<std::int64_t>(v)) {}
  LogField(std::string_view k, bool v) : key(k), value(v) {}

  std::string_view key;
  std::variant<std::string, std::int64_t, bool> value;
};

class Log {
public:
  // `verbosity` is -v: V(n) lines are written when n <= verbosity.
  Log(std::shared_ptr<spdlog::logger> logger, LogFormat format, int verbosity);

  void info(std::string_view message, std::initializer_list<LogField> fields = {});
  void warning(std::string_view message, std::initializer_list<LogField> fields = {});
  void error(std::string_view message, std::initializer_list<LogField> fields = {});
  // A V(level) info line.
  void verbose(int level, std::string_view message, std::initializer_list<LogField> fields = {});

  // The formatted line, without writing it (for tests).
  std::string format(char severity, int level, std::string_view message,
                     std::initializer_list<LogField> fields) const;

private:
  // The line as a record of contract/log_format.h.
  static std::string record(char severity, int level, std::string_view message,
                            std::initializer_list<LogField> fields);
  void write(spdlog::level::level_enum level, char severity, int v, std::string_view message,
             std::initializer_list<LogField> fields);

  std::shared_ptr<spdlog::logger> logger_;
  LogFormat format_;
  int verbosity_;
};

// A logger writing to stderr, or with `split` each line to the stream
// contract::logStream names for `format` (the manager's rule: text warnings
// and errors to stderr, JSON errors only). Lines are flushed as written: the
// runner logs little, and a killed pod must not lose its last lines.
std::shared_ptr<spdlog::logger> makeStderrLogger(LogFormat format, contract::SplitStream split);

// A logger writing every line to `sink` in `format` (makeStderrLogger's
// lines; tests capture them with an ostream sink).
std::shared_ptr<spdlog::logger> makeLogger(LogFormat format, spdlog::sink_ptr sink);

} // namespace captf::runner
