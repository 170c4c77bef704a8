#pragma once

// The log rules the manager and the runner share, as component-base (the
// Kubernetes logging flags of docs/reference/flags.md) defines them: which stream a line is
// written to, and how an info buffer size is read. docs/reference/logs.md.

#include <cstdint>
#include <optional>
#include <string_view>

namespace captf::contract {

enum class LogFormat { kText, kJson }; // --logging-format
enum class LogSeverity { kInfo, kWarning, kError };
enum class LogStream { kStdout, kStderr };
enum class SplitStream { kOff, kOn }; // --log-{json,text}-split-stream

// Without split stream every line goes to stderr (klog's default, and
// component-base's JSON logger "to prevent mixing with normal program
// output"). With it errors go to stderr and info lines to stdout; warnings
// follow the format: klog text routes by the severity letter (only `I` lines
// to stdout), JSON has no warning level (klog writes a warning as an info
// line through logr), so they go to stdout.
LogStream logStream(LogFormat format, LogSeverity severity, SplitStream split);

// A Kubernetes quantity of bytes in integer form: digits with an optional
// suffix k, M, G, T, P, E (powers of 1000) or Ki, Mi, Gi, Ti, Pi, Ei (powers
// of 1024): "0", "4096", "64Ki", "1M". nullopt for anything else (signs,
// fractions, exponents, other suffixes) or a value beyond int64.
std::optional<std::int64_t> parseByteQuantity(std::string_view quantity);

// component-base caps --log-{json,text}-info-buffer-size at 2 GiB (a larger
// value is taken as 2 GiB, not refused).
inline constexpr std::int64_t kMaxInfoBufferBytes = std::int64_t{2} << 30;

} // namespace captf::contract
