#include "runner/redact.h"

#include <algorithm>

namespace captf::runner {

void Redactor::addOne(std::string_view value) {
  if (value.size() < kMinSecretBytes) {
    return;
  }
  const auto position =
      std::lower_bound(secrets_.begin(), secrets_.end(), value,
                       [](const std::string& existing, std::string_view candidate) {
                         if (existing.size() != candidate.size()) {
                           return existing.size() > candidate.size();
                         }
                         return existing < candidate;
                       });
  if (position != secrets_.end() && *position == value) {
    return;
  }
  secrets_.insert(position, std::string(value));
}

void Redactor::addSecret(std::string_view value) {
  // Trailing newlines (files) are not part of what a tool echoes back.
  while (!value.empty() && (value.back() == '\n' || value.back() == '\r')) {
    value.remove_suffix(1);
  }
  addOne(value);
  if (value.find('\n') == std::string_view::npos) {
    return;
  }
  std::size_t start = 0;
  while (start <= value.size()) {
    const auto end = std::min(value.find('\n', start), value.size());
    std::string_view line = value.substr(start, end - start);
    if (!line.empty() && line.back() == '\r') {
      line.remove_suffix(1);
    }
    if (line.size() >= kMinSecretLineBytes) {
      addOne(line);
    }
    start = end + 1;
  }
}

std::string Redactor::redact(std::string_view text) const {
  std::string out(text);
  for (const std::string& secret : secrets_) {
    std::size_t at = out.find(secret);
    while (at != std::string::npos) {
      out.replace(at, secret.size(), kMarker);
      at = out.find(secret, at + kMarker.size());
    }
  }
  return out;
}

} // namespace captf::runner
