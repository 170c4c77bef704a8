#include "runner/logging.h"

#include <utility>
#include <variant>

#include <spdlog/details/log_msg.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include "contract/log_format.h"

namespace captf::runner {

Log::Log(std::shared_ptr<spdlog::logger> logger, LogFormat format, int verbosity)
    : logger_(std::move(logger)), format_(format), verbosity_(verbosity) {}

std::string Log::record(char severity, int level, std::string_view message,
                        std::initializer_list<LogField> fields) {
  contract::LogValues line = contract::LogValues::object();
  line["msg"] = std::string(message);
  if (severity == 'E') {
    line["err"] = std::string(message);
  } else {
    line["v"] = level;
  }
  for (const LogField& field : fields) {
    std::visit([&](const auto& value) { line[std::string(field.key)] = value; }, field.value);
  }
  return contract::logRecord(line);
}

std::string Log::format(char severity, int level, std::string_view message,
                        std::initializer_list<LogField> fields) const {
  const std::string payload = record(severity, level, message, fields);
  const spdlog::level::level_enum spd_level = severity == 'E'   ? spdlog::level::err
                                              : severity == 'W' ? spdlog::level::warn
                                                                : spdlog::level::info;
  const spdlog::details::log_msg msg("runner", spd_level,
                                     spdlog::string_view_t(payload.data(), payload.size()));
  spdlog::memory_buf_t out;
  contract::makeLogFormatter(format_)->format(msg, out);
  std::string line(out.data(), out.size());
  if (!line.empty() && line.back() == '\n') {
    line.pop_back();
  }
  return line;
}

void Log::write(spdlog::level::level_enum level, char severity, int v, std::string_view message,
                std::initializer_list<LogField> fields) {
  if (v > verbosity_) {
    return;
  }
  const std::string payload = record(severity, v, message, fields);
  logger_->log(level, spdlog::string_view_t(payload.data(), payload.size()));
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
  spdlog::sink_ptr sink = std::make_shared<spdlog::sinks::stderr_sink_st>();
  if (split == contract::SplitStream::kOn) {
    sink = contract::makeSplitSink(format, std::make_shared<spdlog::sinks::stdout_sink_st>(),
                                   std::move(sink));
  }
  return makeLogger(format, std::move(sink));
}

std::shared_ptr<spdlog::logger> makeLogger(LogFormat format, spdlog::sink_ptr sink) {
  auto logger = std::make_shared<spdlog::logger>("runner", std::move(sink));
  logger->set_formatter(contract::makeLogFormatter(format));
  logger->set_level(spdlog::level::trace);
  logger->flush_on(spdlog::level::trace);
  return logger;
}

} // namespace captf::runner
