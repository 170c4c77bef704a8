#pragma once

// Keeping secret values out of everything the runner writes: the failure
// summary and tail in the result document, and the runtime's output that it
// copies to the pod log.
//
// The secrets are the values the runner can know are secret: the variables
// the generated root declares sensitive (bootstrap data, Secret-sourced user
// variables) and the identity's credentials (the files of the credential
// mount and the environment variables of the same names). The runtimes
// redact sensitive values themselves; this catches what they echo anyway
// (a provider error quoting a credential, a validation message quoting a
// variable).

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace captf::runner {

class Redactor {
public:
  // Shorter values are not redacted: they would mangle ordinary output and a
  // value that short is not a meaningful secret.
  static constexpr std::size_t kMinSecretBytes = 4;
  // Each line of a multi-line secret (a PEM key) of at least this many bytes
  // is redacted on its own, because output is redacted line by line.
  static constexpr std::size_t kMinSecretLineBytes = 16;
  static constexpr std::string_view kMarker = "[redacted]";

  void addSecret(std::string_view value);
  // Every occurrence of every secret replaced by kMarker; longer secrets
  // first, so a secret containing another is replaced whole.
  std::string redact(std::string_view text) const;
  std::size_t secretCount() const { return secrets_.size(); }

private:
  void addOne(std::string_view value);

  // Longest first, no duplicates.
  std::vector<std::string> secrets_;
};

} // namespace captf::runner
