#include "manager/diagnostics/logging.h"

#include <algorithm>
#include <cstdio>
#include <utility>

#include <nlohmann/json.hpp>
#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include "contract/logging.h"
#include "manager/kube/logging.h"

namespace captf::diagnostics {

namespace {

std::string_view payloadOf(const spdlog::details::log_msg& message) {
  return {message.payload.data(), message.payload.size()};
}

std::string dumpJson(const nlohmann::ordered_json& value) {
  return value.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

// One JSON object per line, with the runner's keys: "ts" (unix seconds),
// "msg", and "v" or, for errors, "err"; a record's key/values follow as
// members.
class JsonFormatter final : public spdlog::formatter {
public:
  void format(const spdlog::details::log_msg& message, spdlog::memory_buf_t& dest) override {
    const double ts = std::chrono::duration<double>(message.time.time_since_epoch()).count();
    const std::string_view payload = payloadOf(message);
    std::string out;
    if (kube::isLogRecord(payload)) {
      // The record is one well-formed object with "msg" first: "ts" goes
      // in front of its members, nothing is parsed or rebuilt.
      const std::string_view members = payload.substr(2);
      out = "{\"ts\":" + nlohmann::json(ts).dump() + (members == "}" ? "" : ",");
      out.append(members);
    } else {
      // A line written straight through spdlog: its text is the message.
      nlohmann::ordered_json line = nlohmann::ordered_json::object();
      line["ts"] = ts;
      const std::string text(payload);
      line["msg"] = text;
      if (message.level >= spdlog::level::err) {
        line["err"] = text;
      } else {
        line["v"] = message.level == spdlog::level::trace   ? 5
                    : message.level == spdlog::level::debug ? 4
                                                            : 0;
      }
      out = dumpJson(line);
    }
    out += '\n';
    dest.append(out.data(), out.data() + out.size());
  }
  std::unique_ptr<spdlog::formatter> clone() const override {
    return std::make_unique<JsonFormatter>();
  }
};

// A value as klog's text format writes it: strings quoted and escaped, an
// objectRef as "namespace/name", anything else as JSON.
std::string textValue(const nlohmann::ordered_json& value) {
  if (value.is_object() && (value.size() == 1 || value.size() == 2)) {
    const auto name = value.find("name");
    const auto ns = value.find("namespace");
    const bool ref = name != value.end() && name->is_string() &&
                     (value.size() == 1 || (ns != value.end() && ns->is_string()));
    if (ref) {
      const std::string text = value.size() == 1
                                   ? name->get<std::string>()
                                   : ns->get<std::string>() + "/" + name->get<std::string>();
      return dumpJson(text);
    }
  }
  return dumpJson(value);
}

// klog text: the header, then for a record `"msg" key=value ...`.
class TextFormatter final : public spdlog::formatter {
public:
  void format(const spdlog::details::log_msg& message, spdlog::memory_buf_t& dest) override {
    const auto record = kube::parseLogRecord(payloadOf(message));
    if (!record) {
      pattern_.format(message, dest);
      return;
    }
    std::string text = textValue(record->value("msg", std::string()));
    for (const auto& [key, value] : record->items()) {
      if (key != "msg" && key != "v") {
        text += ' ';
        text += key;
        text += '=';
        text += textValue(value);
      }
    }
    spdlog::details::log_msg rendered = message;
    rendered.payload = spdlog::string_view_t(text.data(), text.size());
    pattern_.format(rendered, dest);
  }
  std::unique_ptr<spdlog::formatter> clone() const override {
    return std::make_unique<TextFormatter>();
  }

private:
  spdlog::pattern_formatter pattern_{"%L%m%d %H:%M:%S.%f %t] %v", spdlog::pattern_time_type::utc};
};

// Each line to the sink of the stream contract::logStream names.
class SplitSink final : public spdlog::sinks::sink {
public:
  SplitSink(contract::LogFormat format, spdlog::sink_ptr infos, spdlog::sink_ptr errors)
      : format_(format), infos_(std::move(infos)), errors_(std::move(errors)) {}
  void log(const spdlog::details::log_msg& message) override {
    const contract::LogSeverity severity =
        message.level >= spdlog::level::err    ? contract::LogSeverity::kError
        : message.level == spdlog::level::warn ? contract::LogSeverity::kWarning
                                               : contract::LogSeverity::kInfo;
    const bool to_stderr = contract::logStream(format_, severity, contract::SplitStream::kOn) ==
                           contract::LogStream::kStderr;
    (to_stderr ? errors_ : infos_)->log(message);
  }
  void flush() override {
    infos_->flush();
    errors_->flush();
  }
  void set_pattern(const std::string& pattern) override {
    infos_->set_pattern(pattern);
    errors_->set_pattern(pattern);
  }
  void set_formatter(std::unique_ptr<spdlog::formatter> formatter) override {
    infos_->set_formatter(formatter->clone());
    errors_->set_formatter(std::move(formatter));
  }

private:
  const contract::LogFormat format_;
  spdlog::sink_ptr infos_;
  spdlog::sink_ptr errors_;
};

} // namespace

absl::StatusOr<std::size_t> parseBufferSize(std::string_view flag, std::string_view quantity) {
  const std::optional<std::int64_t> bytes = contract::parseByteQuantity(quantity);
  if (!bytes) {
    return absl::InvalidArgumentError(fmt::format(
        "{}: want a size in bytes such as 0, 4096, 64Ki or 1Mi, got \"{}\"", flag, quantity));
  }
  return static_cast<std::size_t>(std::min(*bytes, contract::kMaxInfoBufferBytes));
}

std::shared_ptr<spdlog::logger> makeLogger(const LogOptions& options, spdlog::sink_ptr infos,
                                           spdlog::sink_ptr errors) {
  const contract::LogFormat format =
      options.json ? contract::LogFormat::kJson : contract::LogFormat::kText;
  spdlog::sink_ptr sink;
  if (options.split_stream) {
    sink = std::make_shared<SplitSink>(format, std::move(infos), std::move(errors));
  } else {
    sink = std::move(errors);
  }
  auto logger = std::make_shared<spdlog::logger>("manager", std::move(sink));
  if (options.json) {
    logger->set_formatter(std::make_unique<JsonFormatter>());
  } else {
    logger->set_formatter(std::make_unique<TextFormatter>());
  }
  logger->set_level(kube::spdlogLevel(options.verbosity));
  const bool buffered = options.split_stream && options.info_buffer_bytes > 0;
  logger->flush_on(buffered ? spdlog::level::err : spdlog::level::trace);
  return logger;
}

std::shared_ptr<spdlog::logger> makeLogger(const LogOptions& options) {
  const bool buffered = options.split_stream && options.info_buffer_bytes > 0;
  if (buffered) {
    // Before anything is written to stdout.
    std::setvbuf(stdout, nullptr, _IOFBF, options.info_buffer_bytes);
  }
  auto logger = makeLogger(options, std::make_shared<spdlog::sinks::stdout_sink_mt>(),
                           std::make_shared<spdlog::sinks::stderr_sink_mt>());
  if (buffered) {
    spdlog::register_logger(logger);
    // spdlog's flusher counts whole seconds.
    spdlog::flush_every(std::max(std::chrono::seconds(1),
                                 std::chrono::ceil<std::chrono::seconds>(options.flush_frequency)));
  }
  return logger;
}

} // namespace captf::diagnostics
