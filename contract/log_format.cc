#include "contract/log_format.h"

#include <chrono>
#include <utility>

#include <spdlog/details/log_msg.h>
#include <spdlog/pattern_formatter.h>

namespace captf::contract {
namespace {

std::string_view payloadOf(const spdlog::details::log_msg& message) {
  return {message.payload.data(), message.payload.size()};
}

std::string dumpJson(const LogValues& value) {
  return value.dump(-1, ' ', false, LogValues::error_handler_t::replace);
}

// One JSON object per line: "ts" (unix seconds), "msg", and "v" or, for
// errors, "err"; a record's key/values follow as members.
class JsonFormatter final : public spdlog::formatter {
public:
  void format(const spdlog::details::log_msg& message, spdlog::memory_buf_t& dest) override {
    const double ts = std::chrono::duration<double>(message.time.time_since_epoch()).count();
    const std::string_view payload = payloadOf(message);
    std::string out;
    if (isLogRecord(payload)) {
      // The record is one well-formed object with "msg" first: "ts" goes
      // in front of its members, nothing is parsed or rebuilt.
      const std::string_view members = payload.substr(2);
      out = "{\"ts\":" + nlohmann::json(ts).dump() + (members == "}" ? "" : ",");
      out.append(members);
    } else {
      // A line written straight through spdlog: its text is the message.
      LogValues line = LogValues::object();
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
  [[nodiscard]] std::unique_ptr<spdlog::formatter> clone() const override {
    return std::make_unique<JsonFormatter>();
  }
};

// A value as klog's text format writes it: strings quoted and escaped, an
// objectRef as "namespace/name", anything else as JSON.
std::string textValue(const LogValues& value) {
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
    const auto record = parseLogRecord(payloadOf(message));
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
  [[nodiscard]] std::unique_ptr<spdlog::formatter> clone() const override {
    return std::make_unique<TextFormatter>();
  }

private:
  spdlog::pattern_formatter pattern_{"%L%m%d %H:%M:%S.%f %t] %v", spdlog::pattern_time_type::utc};
};

// Each line to the sink of the stream contract::logStream names.
class SplitSink final : public spdlog::sinks::sink {
public:
  SplitSink(LogFormat format, spdlog::sink_ptr infos, spdlog::sink_ptr errors)
      : format_(format), infos_(std::move(infos)), errors_(std::move(errors)) {}
  void log(const spdlog::details::log_msg& message) override {
    const LogSeverity severity = message.level >= spdlog::level::err    ? LogSeverity::kError
                                 : message.level == spdlog::level::warn ? LogSeverity::kWarning
                                                                        : LogSeverity::kInfo;
    const bool to_stderr = logStream(format_, severity, SplitStream::kOn) == LogStream::kStderr;
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
  const LogFormat format_;
  spdlog::sink_ptr infos_;
  spdlog::sink_ptr errors_;
};

} // namespace

std::string logRecord(const LogValues& record) {
  return kLogRecordPrefix + dumpJson(record);
}

bool isLogRecord(std::string_view payload) {
  return payload.size() >= 2 && payload[0] == kLogRecordPrefix && payload[1] == '{' &&
         LogValues::accept(payload.substr(1));
}

std::optional<LogValues> parseLogRecord(std::string_view payload) {
  if (payload.size() < 2 || payload[0] != kLogRecordPrefix || payload[1] != '{') {
    return std::nullopt;
  }
  LogValues record = LogValues::parse(payload.substr(1), nullptr, /*allow_exceptions=*/false);
  if (!record.is_object()) {
    return std::nullopt;
  }
  return record;
}

std::unique_ptr<spdlog::formatter> makeLogFormatter(LogFormat format) {
  if (format == LogFormat::kJson) {
    return std::make_unique<JsonFormatter>();
  }
  return std::make_unique<TextFormatter>();
}

spdlog::sink_ptr makeSplitSink(LogFormat format, spdlog::sink_ptr infos, spdlog::sink_ptr errors) {
  return std::make_shared<SplitSink>(format, std::move(infos), std::move(errors));
}

} // namespace captf::contract
