#pragma once

// The ref watcher (docs/decisions/git-sources.md): resolves the branches
// and tags of Git sources to commits outside the reconcile path. Objects
// follow a ref from their reconcile (follow()), which answers at once from
// what the watcher last saw; the watcher lists each remote (URL plus
// credentials Secret) once per interval however many objects share it, on
// its own schedule with jitter and a small worker pool (the most overdue
// remote first; each listing bounded by the timeout), and wakes the
// followers whose resolution changed. Credentials are read from the Secret
// for each call only, never kept.

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <random>
#include <set>
#include <stop_token>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "contract/git.h"
#include "contract/git_source.h"

namespace captf::controllers {

// One object following a ref; `kind` names its controller's queue.
struct RefFollower {
  std::string kind;
  std::string ns;
  std::string name;

  friend auto operator<=>(const RefFollower&, const RefFollower&) = default;
};

// What one ls-remote is for: the URL and the Secret whose credentials it
// uses ("" for none). Two objects with the same URL and Secret share it.
struct GitRemote {
  std::string url; // canonical (GitUrl::canonical)
  std::string ns;  // of the Secret
  std::string secret;

  friend auto operator<=>(const GitRemote&, const GitRemote&) = default;
};

struct RefResolution {
  // OK, or why the ref cannot be resolved (contract/git.h's codes; NotFound
  // for a branch or tag the remote does not have).
  absl::Status status;
  std::string commit;
  // When the remote was last listed (successfully or not).
  std::chrono::system_clock::time_point at{};

  friend bool operator==(const RefResolution& a, const RefResolution& b) {
    return a.status == b.status && a.commit == b.commit;
  }
};

class RefWatcher {
public:
  struct Options {
    std::chrono::milliseconds interval{std::chrono::minutes(1)};
    // Each remote's next listing is interval × (1 ± jitter).
    double jitter = 0.1;
    int workers = 2;
    std::chrono::milliseconds timeout{std::chrono::seconds(30)};
    // The wall time a listing is stamped with (RefResolution::at): the
    // manager's clock, which is the API server's
    // (docs/decisions/kube-client.md, "Whose clock").
    std::function<std::chrono::system_clock::time_point()> wall_now = [] {
      return std::chrono::system_clock::now();
    };
  };
  // The Secret's decoded data; NotFound when it does not exist.
  using ReadSecret = std::function<absl::StatusOr<std::map<std::string, std::string>>(
      const std::string& ns, const std::string& name)>;
  using ListRemote = std::function<absl::StatusOr<std::vector<contract::git::RemoteRef>>(
      const contract::GitUrl& url, const contract::git::Credentials& credentials,
      std::chrono::milliseconds timeout)>;
  // Called (from a worker, without the watcher's lock) for each follower
  // whose resolution changed, and for each follower of a remote when its
  // first listing is done.
  using Notify = std::function<void(const RefFollower&)>;
  // Called once per ls-remote with its outcome ("ok" or the status code).
  using Observe = std::function<void(const GitRemote&, const absl::Status&)>;

  RefWatcher(Options options, ReadSecret read_secret, ListRemote list_remote);
  ~RefWatcher();
  RefWatcher(const RefWatcher&) = delete;
  RefWatcher& operator=(const RefWatcher&) = delete;

  void setNotify(Notify notify);
  void setObserve(Observe observe);

  // `who` follows `ref` at `url` with credentials from Secret `secret` in
  // its namespace ("" for none). Returns the current resolution, or nullopt
  // while the remote's first listing is pending (it is scheduled now; the
  // follower is notified when it is done). A commit ref resolves to itself
  // and starts no listing. Replaces what `who` followed before.
  std::optional<RefResolution> follow(const RefFollower& who, const contract::GitUrl& url,
                                      const std::string& secret, const contract::GitRef& ref);
  // `who` follows nothing any more (deleted, or no Git source).
  void forget(const RefFollower& who);
  // Lists `who`'s remote at once (its Secret changed, or a fetch failed).
  void refresh(const RefFollower& who);

  // The schedule and the workers, until `stop`.
  absl::Status run(std::stop_token stop);

  // For tests and metrics.
  std::size_t remotes() const;
  std::uint64_t listings() const;

private:
  using Clock = std::chrono::steady_clock;
  struct Followed {
    GitRemote remote;
    contract::GitUrl url;
    contract::GitRef ref;
    std::optional<RefResolution> reported;
  };
  struct Remote {
    contract::GitUrl url;
    std::set<RefFollower> followers;
    bool listed = false;
    bool in_flight = false;
    Clock::time_point due{};
    absl::Status status;
    std::vector<contract::git::RemoteRef> refs;
    std::chrono::system_clock::time_point at{};
  };

  RefResolution resolveLocked(const Remote& remote, const contract::GitRef& ref) const;
  void attachLocked(const RefFollower& who, Followed followed);
  void detachLocked(const RefFollower& who);
  void listOne(const GitRemote& key, const contract::GitUrl& url);
  void worker(std::stop_token stop);
  Clock::duration nextInterval();
  // Wakes the workers (with mu_ held): the schedule changed.
  void poke();

  const Options options_;
  ReadSecret read_secret_;
  ListRemote list_remote_;
  Notify notify_;
  Observe observe_;
  mutable std::mutex mu_;
  std::condition_variable_any wake_;
  std::map<GitRemote, Remote> remotes_;
  std::map<RefFollower, Followed> followed_;
  std::mt19937_64 random_{std::random_device{}()};
  std::uint64_t listings_ = 0;
  std::uint64_t generation_ = 0;
};

// The default ListRemote: contract::git::listRemote.
RefWatcher::ListRemote gitListRemote();

} // namespace captf::controllers
