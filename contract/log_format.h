#pragma once

// The one writer of log lines, for the manager and the runner alike
// (docs/reference/logs.md): klog text or component-base JSON lines, and the
// split of lines between stdout and stderr (contract::logStream).
//
// A line crosses spdlog as a record: the byte RS (0x1E, the prefix of a
// JSON text sequence, RFC 7464) followed by one JSON object, {"msg": ...,
// "v": N} or {"msg": ..., "err": ...}, then the line's key/values in order.
// The formatter below writes a record as a JSON line ({"ts": <unix
// seconds>, then the record's members}) or as klog text (the header, then
// `"msg" key=value ...`); a payload that is not a record (a line written
// straight through spdlog) is the message itself.

#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>
#include <spdlog/formatter.h>
#include <spdlog/sinks/sink.h>

#include "contract/logging.h"

namespace captf::contract {

// A record's members, in the order they were added.
using LogValues = nlohmann::ordered_json;

inline constexpr char kLogRecordPrefix = '\x1e';

// `record` (a JSON object) as an spdlog payload. Invalid UTF-8 becomes
// U+FFFD: a record is always valid JSON.
std::string logRecord(const LogValues& record);

// The record in an spdlog payload, as a JSON object; nullopt when `payload`
// is not a record or does not parse.
std::optional<LogValues> parseLogRecord(std::string_view payload);
// Whether `payload` is a record (prefix and well-formed JSON), without
// building it.
bool isLogRecord(std::string_view payload);

// The formatter of every line, for `format`.
std::unique_ptr<spdlog::formatter> makeLogFormatter(LogFormat format);

// A sink sending each line to `infos` (stdout) or `errors` (stderr) as
// contract::logStream says for `format` with split stream on.
spdlog::sink_ptr makeSplitSink(LogFormat format, spdlog::sink_ptr infos, spdlog::sink_ptr errors);

} // namespace captf::contract
