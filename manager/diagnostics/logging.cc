#include "manager/diagnostics/logging.h"

#include <algorithm>
#include <cstdio>
#include <utility>

#include <nlohmann/json.hpp>
#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include "absl/strings/numbers.h"
#include "manager/diagnostics/server.h"

namespace captf::diagnostics {

namespace {

// One JSON object per line, with the runner's keys: "ts" (unix seconds),
// "msg", and "v" (0 info, 4 debug, 5 trace) or, for errors, "err".
class JsonFormatter final : public spdlog::formatter {
public:
  void format(const spdlog::details::log_msg& message, spdlog::memory_buf_t& dest) override {
    nlohmann::json line = nlohmann::json::object();
    line["ts"] = std::chrono::duration<double>(message.time.time_since_epoch()).count();
    const std::string text(message.payload.data(), message.payload.size());
    line["msg"] = text;
    if (message.level >= spdlog::level::err) {
      line["err"] = text;
    } else {
      line["v"] = message.level == spdlog::level::trace   ? 5
                  : message.level == spdlog::level::debug ? 4
                                                          : 0;
    }
    const std::string out =
        line.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
    dest.append(out.data(), out.data() + out.size());
  }
  std::unique_ptr<spdlog::formatter> clone() const override {
    return std::make_unique<JsonFormatter>();
  }
};

// Errors and above to one sink, the rest to the other.
class SplitSink final : public spdlog::sinks::sink {
public:
  SplitSink(spdlog::sink_ptr infos, spdlog::sink_ptr errors)
      : infos_(std::move(infos)), errors_(std::move(errors)) {}
  void log(const spdlog::details::log_msg& message) override {
    (message.level >= spdlog::level::err ? errors_ : infos_)->log(message);
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
  spdlog::sink_ptr infos_;
  spdlog::sink_ptr errors_;
};

} // namespace

absl::StatusOr<std::size_t> parseBufferSize(std::string_view flag, std::string_view quantity) {
  static constexpr std::pair<std::string_view, std::size_t> kSuffixes[] = {
      {"Ki", 1ULL << 10}, {"Mi", 1ULL << 20}, {"Gi", 1ULL << 30},
      {"k", 1000},        {"M", 1000000},     {"G", 1000000000}};
  std::string_view digits = quantity;
  std::size_t unit = 1;
  for (const auto& [suffix, factor] : kSuffixes) {
    if (digits.ends_with(suffix)) {
      digits.remove_suffix(suffix.size());
      unit = factor;
      break;
    }
  }
  std::uint64_t value = 0;
  if (digits.empty() || !absl::SimpleAtoi(std::string(digits), &value) ||
      value > (std::size_t{1} << 32) / unit) {
    return absl::InvalidArgumentError(fmt::format(
        "{}: want a size in bytes such as 0, 4096, 64Ki or 1Mi, got \"{}\"", flag, quantity));
  }
  return static_cast<std::size_t>(value * unit);
}

std::shared_ptr<spdlog::logger> makeLogger(const LogOptions& options, spdlog::sink_ptr infos,
                                           spdlog::sink_ptr errors) {
  spdlog::sink_ptr sink;
  if (options.split_stream) {
    sink = std::make_shared<SplitSink>(std::move(infos), std::move(errors));
  } else {
    // component-base: klog text on stderr, JSON on stdout.
    sink = options.json ? std::move(infos) : std::move(errors);
  }
  auto logger = std::make_shared<spdlog::logger>("manager", std::move(sink));
  if (options.json) {
    logger->set_formatter(std::make_unique<JsonFormatter>());
  } else {
    logger->set_formatter(std::make_unique<spdlog::pattern_formatter>(
        "%L%m%d %H:%M:%S.%f %t] %v", spdlog::pattern_time_type::utc));
  }
  logger->set_level(levelForVerbosity(options.verbosity));
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
