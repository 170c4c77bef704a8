#include "lint/git_module.h"

#include <cstdlib>
#include <system_error>
#include <utility>

#include "contract/strings.h"

namespace captf::lint {

using contract::strCat;

namespace {

namespace git = contract::git;

absl::Status withRemote(const contract::GitUrl& url, const absl::Status& status) {
  return {status.code(), strCat(url.canonical, ": ", status.message())};
}

} // namespace

GitCheckout::GitCheckout(std::filesystem::path root, std::filesystem::path module_dir,
                         std::string commit)
    : root_(std::move(root)), module_dir_(std::move(module_dir)), commit_(std::move(commit)) {}

GitCheckout::~GitCheckout() {
  std::error_code ignored;
  std::filesystem::remove_all(root_, ignored);
}

absl::StatusOr<std::unique_ptr<GitCheckout>>
fetchGitModule(const contract::GitModuleAddress& address, const git::Credentials& credentials,
               const GitEnvironment& env) {
  const git::LibGit2Client libgit2;
  const git::Client& client = env.client != nullptr ? *env.client : libgit2;

  auto listing = client.listRemote(address.url, credentials, env.timeout);
  if (!listing.ok()) {
    return listing.status();
  }
  contract::GitRef ref;
  if (address.ref) {
    auto named = git::resolveName(listing->refs, *address.ref);
    if (!named.ok()) {
      return withRemote(address.url, named.status());
    }
    ref = *std::move(named);
  } else if (listing->head.starts_with("refs/heads/")) {
    ref = contract::GitRef{contract::GitRefKind::kBranch, listing->head.substr(11)};
  } else {
    return absl::NotFoundError(strCat(address.url.canonical,
                                      ": the remote names no default branch; add ?ref=<tag, "
                                      "branch or commit>"));
  }
  auto commit = git::resolve(listing->refs, ref);
  if (!commit.ok()) {
    return withRemote(address.url, commit.status());
  }

  std::error_code error;
  const std::filesystem::path base =
      env.temp_dir.empty() ? std::filesystem::temp_directory_path(error) : env.temp_dir;
  std::string pattern = (base / "tfcapi-lint-git-XXXXXX").string();
  if (::mkdtemp(pattern.data()) == nullptr) {
    return absl::InternalError(strCat("cannot create a temporary directory in ", base.string()));
  }
  const std::filesystem::path root(pattern);
  std::filesystem::path module_dir = root / "repo";
  if (!address.path.empty()) {
    module_dir /= address.path;
  }
  auto checkout = std::make_unique<GitCheckout>(root, module_dir, *commit);

  git::FetchOptions options;
  options.max_bytes = env.max_bytes;
  options.timeout = env.timeout;
  if (ref.kind != contract::GitRefKind::kCommit) {
    options.ref_hint = contract::fullRefName(ref);
  }
  auto fetched =
      client.fetchCommit(address.url, credentials, *commit, (root / "repo").string(), options);
  if (!fetched.ok()) {
    return fetched.status();
  }
  if (!std::filesystem::is_directory(checkout->moduleDir(), error)) {
    return absl::NotFoundError(strCat(address.url.canonical, ": ", address.path,
                                      " is not a directory in ", contract::describeGitRef(ref),
                                      " (commit ", commit->substr(0, 12), ")"));
  }
  return checkout;
}

} // namespace captf::lint
