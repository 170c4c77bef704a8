#include "runner/logging.h"

#include <chrono>
#include <cstdio>
#include <ctime>

#include <nlohmann/json.hpp>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include "contract/strings.h"

namespace captf::runner {
namespace {

std::string textValue(const LogField& field) {
  if (const auto* text = std::get_if<std::string>(&field.value)) {
    return nlohmann::json(*text).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  }
  if (const auto* number = std::get_if<std::int64_t>(&field.value)) {
    return std::to_string(*number);
  }
  return std::get<bool>(field.value) ? "true" : "false";
}

// "I1129 21:55:00.123456" in UTC, like klog's header.
std::string klogHeader(char severity) {
  const auto now = std::chrono::system_clock::now();
  const std::time_t seconds = std::chrono::system_clock::to_time_t(now);
  const auto micros =
      std::chrono::duration_cast<std::chrono::microseconds>(now.time_since_epoch()).count() %
      1000000;
  std::tm utc{};
  ::gmtime_r(&seconds, &utc);
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%c%02d%02d %02d:%02d:%02d.%06lld", severity, utc.tm_mon + 1,
                utc.tm_mday, utc.tm_hour, utc.tm_min, utc.tm_sec, static_cast<long long>(micros));
  return buffer;
}

double epochSeconds() {
  const auto now = std::chrono::system_clock::now().time_since_epoch();
  return std::chrono::duration<double>(now).count();
}

// Routes each line to the stream contract::logStream names.
class SplitSink final : public spdlog::sinks::sink {
public:
  explicit SplitSink(LogFormat format) : format_(format) {}
  void log(const spdlog::details::log_msg& message) override {
    const contract::LogSeverity severity =
        message.level >= spdlog::level::err    ? contract::LogSeverity::kError
        : message.level == spdlog::level::warn ? contract::LogSeverity::kWarning
                                               : contract::LogSeverity::kInfo;
    if (contract::logStream(format_, severity, contract::SplitStream::kOn) ==
        contract::LogStream::kStderr) {
      errors_.log(message);
    } else {
      infos_.log(message);
    }
  }
  void flush() override {
    infos_.flush();
    errors_.flush();
  }
  void set_pattern(const std::string& pattern) override {
    infos_.set_pattern(pattern);
    errors_.set_pattern(pattern);
  }
  void set_formatter(std::unique_ptr<spdlog::formatter> formatter) override {
    infos_.set_formatter(formatter->clone());
    errors_.set_formatter(std::move(formatter));
  }

private:
  LogFormat format_;
  spdlog::sinks::stdout_sink_st infos_;
  spdlog::sinks::stderr_sink_st errors_;
};

} // namespace

Log::Log(std::shared_ptr<spdlog::logger> logger, LogFormat format, int verbosity)
    : logger_(std::move(logger)), format_(format), verbosity_(verbosity) {}

std::string Log::format(char severity, int level, std::string_view message,
                        std::initializer_list<LogField> fields) const {
  if (format_ == LogFormat::kJson) {
    nlohmann::json line = nlohmann::json::object();
    line["ts"] = epochSeconds();
    line["msg"] = std::string(message);
    if (severity == 'E') {
      line["err"] = std::string(message);
    } else {
      line["v"] = level;
    }
    for (const LogField& field : fields) {
      std::visit([&](const auto& value) { line[std::string(field.key)] = value; }, field.value);
    }
    return line.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  }
  std::string line =
      contract::strCat(klogHeader(severity), " ",
                       nlohmann::json(std::string(message))
                           .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
  for (const LogField& field : fields) {
    line += contract::strCat(" ", field.key, "=", textValue(field));
  }
  return line;
}

void Log::write(spdlog::level::level_enum level, char severity, int v, std::string_view message,
                std::initializer_list<LogField> fields) {
  if (v > verbosity_) {
    return;
  }
  logger_->log(level, "{}", format(severity, v, message, fields));
}

void Log::info(std::string_view message, std::initializer_list<LogField> fields) {
  write(spdlog::level::info, 'I', 0, message, fields);
}

void Log::warning(std::string_view message, std::initializer_list<LogField> fields) {
  write(spdlog::level::warn, 'W', 0, message, fields);
}

void Log::error(std::string_view message, std::initializer_list<LogField> fields) {
  write(spdlog::level::err, 'E', 0, message, fields);
}

void Log::verbose(int level, std::string_view message, std::initializer_list<LogField> fields) {
  write(spdlog::level::info, 'I', level, message, fields);
}

std::shared_ptr<spdlog::logger> makeStderrLogger(LogFormat format, contract::SplitStream split) {
  spdlog::sink_ptr sink;
  if (split == contract::SplitStream::kOn) {
    sink = std::make_shared<SplitSink>(format);
  } else {
    sink = std::make_shared<spdlog::sinks::stderr_sink_st>();
  }
  auto logger = std::make_shared<spdlog::logger>("runner", std::move(sink));
  logger->set_pattern("%v");
  logger->set_level(spdlog::level::trace);
  logger->flush_on(spdlog::level::trace);
  return logger;
}

} // namespace captf::runner
