#include "manager/diagnostics/logging.h"

#include <algorithm>
#include <cstdio>
#include <utility>

#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include "contract/log_format.h"
#include "contract/logging.h"
#include "manager/kube/logging.h"

namespace captf::diagnostics {

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
    sink = contract::makeSplitSink(format, std::move(infos), std::move(errors));
  } else {
    sink = std::move(errors);
  }
  auto logger = std::make_shared<spdlog::logger>("manager", std::move(sink));
  logger->set_formatter(contract::makeLogFormatter(format));
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
