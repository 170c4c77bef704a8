// libFuzzer target for the Git source grammar (contract/git_source.h): the
// URL, ref and path parsers the webhook, the manager, the runner and
// tfcapi-lint all run on user input. Build and run like the lint targets:
//
//   cmake --preset fuzz && cmake --build build/fuzz --target captf_contract_git_source_fuzz
//   build/fuzz/test/contract/captf_contract_git_source_fuzz -max_total_time=600
//       /tmp/git-corpus test/contract/fuzz/git_corpus
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "contract/git_source.h"

namespace {

using namespace captf::contract;

void check(bool invariant) {
  if (!invariant) {
    std::abort();
  }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  if (auto url = parseGitUrl(input); url.ok()) {
    // The canonical form is a fixed point.
    auto again = parseGitUrl(url->canonical);
    check(again.ok() && again->canonical == url->canonical);
    check(!url->host.empty() && !url->path.empty() && url->path.front() == '/');
  }
  for (GitRefKind kind : {GitRefKind::kBranch, GitRefKind::kTag, GitRefKind::kCommit}) {
    GitRef ref{kind, std::string(input)};
    if (validateGitRef(ref).ok()) {
      check(!fullRefName(ref).empty() && !describeGitRef(ref).empty());
      check(input.find("..") == std::string_view::npos);
    }
  }
  if (validateRepositoryPath(input).ok()) {
    check(input.empty() || (input.front() != '/' && input.find("..") == std::string_view::npos));
  }
  if (auto address = parseGitModuleAddress(input); address.ok()) {
    check(validateRepositoryPath(address->path).ok());
    check(parseGitUrl(address->url.canonical).ok());
  }
  return 0;
}
