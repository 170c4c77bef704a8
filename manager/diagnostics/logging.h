#pragma once

// The manager's log as component-base writes it (docs/reference/flags.md logging flags,
// docs/reference/logs.md): klog text, or JSON lines (`{"ts":<unix
// seconds>,"msg":...,"v":N}`, errors with "err" instead of "v", the runner's
// keys). A structured record of kube::Logger (manager/kube/logging.h) adds
// its key/values as fields: top-level JSON members, or `key="value"` after
// the quoted message in text. Every line goes to stderr unless split stream
// is on; then contract::logStream picks the stream (the runner's rule too),
// and an info buffer holds stdout lines until it fills, an error is
// written, or the flush frequency elapses.

#include <chrono>
#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

#include <spdlog/logger.h>

#include "absl/status/statusor.h"

namespace captf::diagnostics {

struct LogOptions {
  bool json = false;                               // --logging-format=json
  int verbosity = 2;                               // -v
  bool split_stream = false;                       // --log-{json,text}-split-stream
  std::size_t info_buffer_bytes = 0;               // --log-{json,text}-info-buffer-size
  std::chrono::milliseconds flush_frequency{5000}; // --log-flush-frequency
};

// Parses a Kubernetes quantity of bytes as the info buffer flags take it
// (contract::parseByteQuantity, the runner's parser): "0", "4096", "64Ki",
// "1Mi", "100k", "1M"; more than 2 GiB is taken as 2 GiB, as component-base
// does. InvalidArgument naming `flag` otherwise.
absl::StatusOr<std::size_t> parseBufferSize(std::string_view flag, std::string_view quantity);

// The manager's logger, writing to the process's stdout and stderr as
// `options` say. Lines are flushed as written unless an info buffer is set;
// then a background thread flushes every `flush_frequency`.
std::shared_ptr<spdlog::logger> makeLogger(const LogOptions& options);

// The same logger over the given sinks (tests): `infos` stands for stdout,
// `errors` for stderr.
std::shared_ptr<spdlog::logger> makeLogger(const LogOptions& options, spdlog::sink_ptr infos,
                                           spdlog::sink_ptr errors);

} // namespace captf::diagnostics
