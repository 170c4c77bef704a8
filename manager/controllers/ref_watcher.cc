#include "manager/controllers/ref_watcher.h"

#include <algorithm>
#include <thread>
#include <utility>

#include "absl/time/time.h"

namespace captf::controllers {

RefWatcher::RefWatcher(Options options, ReadSecret read_secret, ListRemote list_remote)
    : options_(std::move(options)), read_secret_(std::move(read_secret)),
      list_remote_(std::move(list_remote)) {}

RefWatcher::~RefWatcher() = default;

void RefWatcher::poke() {
  ++generation_;
  wake_.notify_all();
}

void RefWatcher::setNotify(Notify notify) {
  std::scoped_lock lock(mu_);
  notify_ = std::move(notify);
}

void RefWatcher::setObserve(Observe observe) {
  std::scoped_lock lock(mu_);
  observe_ = std::move(observe);
}

std::optional<RefResolution> RefWatcher::follow(const RefFollower& who, const contract::GitUrl& url,
                                                const std::string& secret,
                                                const contract::GitRef& ref) {
  if (ref.kind == contract::GitRefKind::kCommit) {
    forget(who);
    return RefResolution{absl::OkStatus(), ref.name, options_.wall_now()};
  }
  GitRemote key{url.canonical, secret.empty() ? std::string() : who.ns, secret};
  std::scoped_lock lock(mu_);
  auto it = followed_.find(who);
  if (it == followed_.end() || it->second.remote != key || it->second.ref != ref) {
    detachLocked(who);
    attachLocked(who, Followed{key, url, ref, std::nullopt});
    it = followed_.find(who);
  }
  const Remote& remote = remotes_.at(key);
  if (!remote.listed) {
    it->second.reported.reset();
    return std::nullopt;
  }
  RefResolution resolution = resolveLocked(remote, ref);
  it->second.reported = resolution;
  return resolution;
}

void RefWatcher::forget(const RefFollower& who) {
  std::scoped_lock lock(mu_);
  detachLocked(who);
}

void RefWatcher::refresh(const RefFollower& who) {
  std::scoped_lock lock(mu_);
  auto it = followed_.find(who);
  if (it == followed_.end()) {
    return;
  }
  Remote& remote = remotes_.at(it->second.remote);
  remote.due = Clock::now();
  poke();
}

std::size_t RefWatcher::remotes() const {
  std::scoped_lock lock(mu_);
  return remotes_.size();
}

std::uint64_t RefWatcher::listings() const {
  std::scoped_lock lock(mu_);
  return listings_;
}

void RefWatcher::attachLocked(const RefFollower& who, Followed followed) {
  auto [it, created] = remotes_.try_emplace(followed.remote);
  Remote& remote = it->second;
  if (created) {
    remote.url = followed.url;
    remote.due = Clock::now();
    poke();
  }
  remote.followers.insert(who);
  followed_[who] = std::move(followed);
}

void RefWatcher::detachLocked(const RefFollower& who) {
  auto it = followed_.find(who);
  if (it == followed_.end()) {
    return;
  }
  auto remote = remotes_.find(it->second.remote);
  if (remote != remotes_.end()) {
    remote->second.followers.erase(who);
    // A remote nobody follows is dropped (after its listing, if one runs).
    if (remote->second.followers.empty() && !remote->second.in_flight) {
      remotes_.erase(remote);
    }
  }
  followed_.erase(it);
}

RefResolution RefWatcher::resolveLocked(const Remote& remote, const contract::GitRef& ref) const {
  if (!remote.status.ok()) {
    return RefResolution{remote.status, "", remote.at};
  }
  auto commit = contract::git::resolve(remote.refs, ref);
  if (!commit.ok()) {
    return RefResolution{commit.status(), "", remote.at};
  }
  return RefResolution{absl::OkStatus(), *std::move(commit), remote.at};
}

RefWatcher::Clock::duration RefWatcher::nextInterval() {
  const double jitter = std::clamp(options_.jitter, 0.0, 0.9);
  std::uniform_real_distribution<double> spread(1.0 - jitter, 1.0 + jitter);
  const auto base = std::chrono::duration<double, std::milli>(options_.interval);
  return std::chrono::duration_cast<Clock::duration>(base * spread(random_));
}

void RefWatcher::listOne(const GitRemote& key, const contract::GitUrl& url) {
  absl::StatusOr<std::vector<contract::git::RemoteRef>> listed;
  contract::git::Credentials credentials;
  absl::Status credentials_status;
  if (!key.secret.empty()) {
    auto data = read_secret_(key.ns, key.secret);
    if (!data.ok()) {
      credentials_status = absl::InvalidArgumentError(
          "credentials Secret " + key.ns + "/" + key.secret +
          (absl::IsNotFound(data.status()) ? " not found"
                                           : ": " + std::string(data.status().message())));
    } else if (auto parsed = contract::git::credentialsFromData(*data); !parsed.ok()) {
      credentials_status =
          absl::InvalidArgumentError("credentials Secret " + key.ns + "/" + key.secret + ": " +
                                     std::string(parsed.status().message()));
    } else {
      credentials = *std::move(parsed);
    }
  }
  if (credentials_status.ok()) {
    listed = list_remote_(url, credentials, options_.timeout);
  } else {
    listed = credentials_status;
  }
  // The credentials go out of scope here; nothing keeps them.

  // Read before the refs are moved out of it below.
  const absl::Status list_status = listed.status();
  std::vector<RefFollower> wake;
  Notify notify;
  Observe observe;
  {
    std::scoped_lock lock(mu_);
    ++listings_;
    notify = notify_;
    observe = observe_;
    auto it = remotes_.find(key);
    if (it == remotes_.end()) {
      return;
    }
    Remote& remote = it->second;
    remote.in_flight = false;
    if (remote.followers.empty()) {
      remotes_.erase(it);
    } else {
      const bool first = !remote.listed;
      remote.listed = true;
      remote.at = options_.wall_now();
      remote.status = list_status;
      remote.refs = listed.ok() ? *std::move(listed) : std::vector<contract::git::RemoteRef>{};
      remote.due = Clock::now() + nextInterval();
      for (const RefFollower& who : remote.followers) {
        Followed& followed = followed_.at(who);
        RefResolution resolution = resolveLocked(remote, followed.ref);
        if (first || !followed.reported || !(*followed.reported == resolution)) {
          followed.reported = resolution;
          wake.push_back(who);
        }
      }
    }
  }
  if (observe) {
    observe(key, list_status);
  }
  if (notify) {
    for (const RefFollower& who : wake) {
      notify(who);
    }
  }
}

void RefWatcher::worker(std::stop_token stop) {
  std::unique_lock lock(mu_);
  while (!stop.stop_requested()) {
    // The most overdue remote first: when listings take longer than the
    // workers have (remotes that answer slowly or not at all, each costing
    // up to the timeout), every remote's interval stretches alike instead of
    // the remotes that sort first taking every turn.
    auto next = remotes_.end();
    for (auto it = remotes_.begin(); it != remotes_.end(); ++it) {
      if (!it->second.in_flight && (next == remotes_.end() || it->second.due < next->second.due)) {
        next = it;
      }
    }
    if (next == remotes_.end() || next->second.due > Clock::now()) {
      const std::uint64_t seen = generation_;
      const auto changed = [this, seen] { return generation_ != seen; };
      if (next == remotes_.end()) {
        wake_.wait(lock, stop, changed);
      } else {
        // A copy: the wait reads its deadline again at every wake-up, with
        // the lock taken back, and the remote may have been dropped (its
        // last follower gone) meanwhile.
        const Clock::time_point due = next->second.due;
        wake_.wait_until(lock, stop, due, changed);
      }
      continue;
    }
    next->second.in_flight = true;
    const GitRemote key = next->first;
    const contract::GitUrl url = next->second.url;
    lock.unlock();
    listOne(key, url);
    lock.lock();
  }
}

absl::Status RefWatcher::run(std::stop_token stop) {
  std::vector<std::jthread> workers;
  const int count = std::max(1, options_.workers);
  workers.reserve(static_cast<std::size_t>(count));
  for (int i = 0; i < count; ++i) {
    workers.emplace_back([this, stop] { worker(stop); });
  }
  workers.clear(); // joins; the workers end when `stop` is requested
  return absl::OkStatus();
}

RefWatcher::ListRemote gitListRemote() {
  return [](const contract::GitUrl& url, const contract::git::Credentials& credentials,
            std::chrono::milliseconds timeout) {
    return contract::git::listRemote(url, credentials, absl::Milliseconds(timeout.count()));
  };
}

} // namespace captf::controllers
