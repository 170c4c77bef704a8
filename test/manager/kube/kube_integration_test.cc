// Integration tests of manager/kube against a real kube-apiserver (the rig).

#include <algorithm>
#include <atomic>
#include <cctype>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <set>
#include <thread>
#include <utility>

#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <spawn.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "absl/strings/str_cat.h"
#include "manager/kube/cache.h"
#include "manager/kube/client.h"
#include "manager/kube/config.h"
#include "manager/kube/controller.h"
#include "manager/kube/errors.h"
#include "manager/kube/events.h"
#include "manager/kube/manager.h"
#include "manager/kube/patch.h"
#include "manager/kube/read_through.h"
#include "manager/kube/rest_client.h"
#include "test/manager/kube/fakes.h"
#include "test/rig/fixture.h"

namespace captf::kube {
namespace {

namespace fs = std::filesystem;
using std::chrono::milliseconds;
using std::chrono::seconds;

using testing::kConfigMap;
using testing::kNamespace;
const GroupVersionKind kLease{"coordination.k8s.io", "v1", "Lease"};
const GroupVersionKind kCrd{"apiextensions.k8s.io", "v1", "CustomResourceDefinition"};
const GroupVersionKind kWidget{"test.captf.io", "v1", "Widget"};
const GroupVersionKind kEvent{"events.k8s.io", "v1", "Event"};

// Polls `done` until it holds or `timeout` passes (real time: the API server
// is real). Returns done().
bool eventually(const std::function<bool()>& done, Duration timeout = seconds(60)) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline) {
      return done();
    }
    std::this_thread::sleep_for(milliseconds(50));
  }
  return true;
}

std::string dnsName(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (std::isalnum(static_cast<unsigned char>(c)) != 0) {
      out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    } else if (!out.empty() && out.back() != '-') {
      out += '-';
    }
  }
  return out.substr(0, 40);
}

Json configMapObject(const std::string& ns, const std::string& name, Json data = Json::object()) {
  return {{"apiVersion", "v1"},
          {"kind", "ConfigMap"},
          {"metadata", {{"namespace", ns}, {"name", name}}},
          {"data", std::move(data)}};
}

// A TCP relay on 127.0.0.1 between a client and the API server, standing in
// for the load balancer or NAT gateway of a real network path: it can cut
// every connection it carries with a reset (the client learns of it at its
// next read or write), or silently (nothing more passes either way and
// neither end is told), as such a path does to a flow idle past its timeout.
class Relay {
public:
  explicit Relay(int upstream_port) : upstream_port_(upstream_port) {
    listener_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    if (::bind(listener_, reinterpret_cast<sockaddr*>(&addr), len) != 0 ||
        ::listen(listener_, 64) != 0 ||
        ::getsockname(listener_, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
      ADD_FAILURE() << "relay: cannot listen";
      return;
    }
    port_ = ntohs(addr.sin_port);
    acceptor_ = std::jthread([this](std::stop_token stop) { acceptLoop(stop); });
  }
  Relay(const Relay&) = delete;
  Relay& operator=(const Relay&) = delete;
  ~Relay() {
    acceptor_.request_stop();
    acceptor_.join();
    {
      std::scoped_lock lock(mu_);
      for (auto& link : links_) {
        link->cut(Mode::kClose);
      }
    }
    pumps_.clear(); // joins
    ::close(listener_);
  }

  int port() const { return port_; }
  int accepted() const { return accepted_.load(); }
  // Cuts every connection open now, with a reset.
  void resetAll() { cutAll(Mode::kReset); }
  // Stops relaying on every connection open now, telling neither end.
  void blackholeAll() { cutAll(Mode::kBlackhole); }

private:
  enum class Mode { kRelay, kReset, kBlackhole, kClose };
  struct Link {
    int client = -1;
    int upstream = -1;
    int wake = ::eventfd(0, EFD_CLOEXEC);
    std::atomic<Mode> mode{Mode::kRelay};
    Link() = default;
    Link(const Link&) = delete;
    Link& operator=(const Link&) = delete;
    // The wake descriptor outlives the pump: a cut may still write to it.
    ~Link() { ::close(wake); }
    void cut(Mode m) {
      mode = m;
      uint64_t one = 1;
      (void)!::write(wake, &one, sizeof one);
    }
  };

  void cutAll(Mode mode) {
    std::scoped_lock lock(mu_);
    for (auto& link : links_) {
      link->cut(mode);
    }
  }

  void acceptLoop(const std::stop_token& stop) {
    while (!stop.stop_requested()) {
      pollfd fd{listener_, POLLIN, 0};
      if (::poll(&fd, 1, 100) <= 0) {
        continue;
      }
      int client = ::accept4(listener_, nullptr, nullptr, SOCK_CLOEXEC);
      if (client < 0) {
        continue;
      }
      int upstream = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
      sockaddr_in addr{};
      addr.sin_family = AF_INET;
      addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      addr.sin_port = htons(static_cast<uint16_t>(upstream_port_));
      if (::connect(upstream, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
        ::close(client);
        ::close(upstream);
        continue;
      }
      auto link = std::make_shared<Link>();
      link->client = client;
      link->upstream = upstream;
      ++accepted_;
      std::scoped_lock lock(mu_);
      links_.push_back(link);
      pumps_.emplace_back([link] { pump(*link); });
    }
  }

  static void pump(Link& link) {
    std::array<char, 16384> buffer{};
    bool relaying = true;
    while (true) {
      // A negative descriptor is ignored by poll: a blackholed link waits
      // for its next cut alone.
      std::array<pollfd, 3> fds{{{link.wake, POLLIN, 0},
                                 {relaying ? link.client : -1, POLLIN, 0},
                                 {relaying ? link.upstream : -1, POLLIN, 0}}};
      if (::poll(fds.data(), fds.size(), -1) < 0) {
        break;
      }
      const Mode mode = link.mode.load();
      if (mode == Mode::kReset) {
        linger reset{1, 0};
        ::setsockopt(link.client, SOL_SOCKET, SO_LINGER, &reset, sizeof reset);
        ::setsockopt(link.upstream, SOL_SOCKET, SO_LINGER, &reset, sizeof reset);
        break;
      }
      if (mode == Mode::kClose) {
        break;
      }
      if (mode == Mode::kBlackhole) {
        uint64_t count = 0;
        (void)!::read(link.wake, &count, sizeof count);
        relaying = false;
        continue;
      }
      bool open = true;
      for (size_t i = 1; i <= 2 && open; ++i) {
        if ((fds[i].revents & (POLLIN | POLLHUP | POLLERR)) == 0) {
          continue;
        }
        const int from = i == 1 ? link.client : link.upstream;
        const int to = i == 1 ? link.upstream : link.client;
        const ssize_t n = ::read(from, buffer.data(), buffer.size());
        open = n > 0 && ::send(to, buffer.data(), static_cast<size_t>(n), MSG_NOSIGNAL) == n;
      }
      if (!open) {
        break;
      }
    }
    ::close(link.client);
    ::close(link.upstream);
  }

  int upstream_port_;
  int listener_ = -1;
  int port_ = 0;
  std::atomic<int> accepted_{0};
  std::mutex mu_;
  std::vector<std::shared_ptr<Link>> links_;
  std::vector<std::jthread> pumps_;
  std::jthread acceptor_;
};

// The port of an https://127.0.0.1:PORT server URL, or 0.
int loopbackPort(const std::string& server) {
  const std::string prefix = "https://127.0.0.1:";
  return server.starts_with(prefix) ? std::atoi(server.c_str() + prefix.size()) : 0;
}

class KubeIntegrationTest : public ::testing::Test {
protected:
  static const rig::Env& env() { return rig::shared(rig::Tier::kIntegration); }

  void SetUp() override {
    LoadOptions load;
    load.kubeconfig = env().kubeconfig;
    auto config = loadConfig(load);
    ASSERT_TRUE(config.ok()) << config.status();
    config_ = *config;
    client_ = makeClient(config_);
    ASSERT_NE(client_, nullptr);
    ns_ = makeNamespace(::testing::UnitTest::GetInstance()->current_test_info()->name());
  }

  ApiClient* makeClient(const RestConfig& config) {
    auto rest = RestClient::create(config, realClock(), &metrics_, logger_);
    EXPECT_TRUE(rest.ok()) << rest.status();
    if (!rest.ok()) {
      return nullptr;
    }
    rests_.push_back(*std::move(rest));
    mappers_.push_back(
        std::make_unique<DiscoveryRestMapper>(*rests_.back(), realClock(), milliseconds(200)));
    clients_.push_back(std::make_unique<ApiClient>(*rests_.back(), *mappers_.back()));
    return clients_.back().get();
  }

  std::string makeNamespace(const std::string& hint) {
    std::mt19937 rng(std::random_device{}());
    std::string name = absl::StrCat(dnsName(hint), "-", rng() % 100000);
    auto created = client_->create(
        {{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", name}}}});
    EXPECT_TRUE(created.ok()) << created.status();
    return name;
  }

  // Creates count ConfigMaps NAME-0..N-1 in `ns` with `threads` writers.
  void createConfigMaps(const std::string& ns, int count, const std::string& prefix,
                        int threads = 4) {
    std::atomic<int> next{0};
    std::atomic<int> failures{0};
    {
      std::vector<std::jthread> writers;
      writers.reserve(static_cast<std::size_t>(threads));
      for (int t = 0; t < threads; ++t) {
        writers.emplace_back([&] {
          for (int i = next++; i < count; i = next++) {
            auto created = client_->create(configMapObject(
                ns, absl::StrCat(prefix, "-", i), {{"v", "0"}, {"payload", std::string(64, 'x')}}));
            if (!created.ok()) {
              ++failures;
            }
          }
        });
      }
    }
    ASSERT_EQ(failures.load(), 0);
  }

  // Installs the Widget CRD (once per rig) and waits until it is served.
  void ensureWidgetCrd() {
    Json crd = Json::parse(R"({
      "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
      "metadata": {"name": "widgets.test.captf.io"},
      "spec": {"group": "test.captf.io", "scope": "Namespaced",
        "names": {"plural": "widgets", "singular": "widget", "kind": "Widget",
                  "listKind": "WidgetList"},
        "versions": [{"name": "v1", "served": true, "storage": true,
          "subresources": {"status": {}},
          "schema": {"openAPIV3Schema": {"type": "object", "properties": {
            "spec": {"type": "object", "properties": {
              "size": {"type": "integer", "minimum": 0}}},
            "status": {"type": "object", "properties": {
              "ready": {"type": "boolean"}}}}}}}]}})");
    auto created = client_->create(crd);
    ASSERT_TRUE(created.ok() || isAlreadyExists(created.status())) << created.status();
    ASSERT_TRUE(eventually([&] {
      auto got = client_->get(kCrd, {"", "widgets.test.captf.io"});
      if (!got.ok()) {
        return false;
      }
      for (const auto& condition : (*got)["status"].value("conditions", Json::array())) {
        if (condition.value("type", "") == "Established" &&
            condition.value("status", "") == "True") {
          return true;
        }
      }
      return false;
    }));
    // Discovery catches up with the CRD a little later; the mapper
    // refetches a group-version on a miss.
    ASSERT_TRUE(eventually([&] { return client_->mapper().resourceFor(kWidget).ok(); }));
  }

  // A client of `config` whose connections go through `relay`, once it
  // reads the ConfigMap "probe" of this test's namespace (which it
  // creates); nullptr when it cannot.
  ApiClient* throughRelay(const Relay& relay, RestConfig config) {
    if (relay.port() == 0 || loopbackPort(config_.server) == 0) {
      ADD_FAILURE() << "no relay to " << config_.server;
      return nullptr;
    }
    config.server = absl::StrCat("https://127.0.0.1:", relay.port());
    ApiClient* client = makeClient(config);
    if (client == nullptr || !client_->create(configMapObject(ns_, "probe")).ok()) {
      ADD_FAILURE() << "cannot create the probe";
      return nullptr;
    }
    auto probe = client->get(kConfigMap, {ns_, "probe"});
    EXPECT_TRUE(probe.ok()) << probe.status();
    return probe.ok() ? client : nullptr;
  }

  std::shared_ptr<spdlog::logger> logger_ = testing::quietLogger();
  MetricsRegistry metrics_;
  RestConfig config_;
  std::vector<std::unique_ptr<RestClient>> rests_;
  std::vector<std::unique_ptr<DiscoveryRestMapper>> mappers_;
  std::vector<std::unique_ptr<ApiClient>> clients_;
  ApiClient* client_ = nullptr;
  std::string ns_;
};

TEST_F(KubeIntegrationTest, ConflictingUpdateGetsConflict) {
  auto created = client_->create(configMapObject(ns_, "cm", {{"v", "1"}}));
  ASSERT_TRUE(created.ok()) << created.status();
  auto first = client_->get(kConfigMap, {ns_, "cm"});
  auto second = client_->get(kConfigMap, {ns_, "cm"});
  ASSERT_TRUE(first.ok() && second.ok());
  (*first)["data"]["v"] = "2";
  ASSERT_TRUE(client_->update(*first).ok());
  (*second)["data"]["v"] = "3";
  auto stale = client_->update(*second);
  EXPECT_TRUE(isConflict(stale.status())) << stale.status();
  EXPECT_EQ(stale.status().code(), absl::StatusCode::kAborted);

  // The same through a merge patch that carries the read version.
  Json modified = *second;
  modified["data"]["v"] = "4";
  auto patched = client_->patch(kConfigMap, {ns_, "cm"}, PatchType::kMerge,
                                createMergePatch(*second, modified, OptimisticLock::kYes));
  EXPECT_TRUE(isConflict(patched.status())) << patched.status();
  // And through a JSON patch guarded by a test operation.
  JsonPatch guarded;
  guarded.test("/metadata/resourceVersion", meta::resourceVersion(*second)).replace("/data/v", "5");
  EXPECT_FALSE(
      client_->patch(kConfigMap, {ns_, "cm"}, PatchType::kJsonPatch, guarded.document()).ok());
  EXPECT_EQ((*client_->get(kConfigMap, {ns_, "cm"}))["data"]["v"], "2");
}

TEST_F(KubeIntegrationTest, TypedErrorsFromTheServer) {
  ASSERT_TRUE(client_->create(configMapObject(ns_, "cm")).ok());
  EXPECT_TRUE(isAlreadyExists(client_->create(configMapObject(ns_, "cm")).status()));
  EXPECT_TRUE(isNotFound(client_->get(kConfigMap, {ns_, "absent"}).status()));
  auto invalid = client_->create(configMapObject(ns_, "Not_A_DNS_Name"));
  ASSERT_TRUE(isInvalid(invalid.status())) << invalid.status();
  auto error = apiError(invalid.status());
  ASSERT_TRUE(error.has_value());
  ASSERT_FALSE(error->causes.empty());
  EXPECT_EQ(error->causes[0].field, "metadata.name");

  auto nobody = loadConfig({.kubeconfig = rig::userKubeconfig(env(), "nobody"),
                            .context = "",
                            .env = processEnv(),
                            .in_cluster = {}});
  ASSERT_TRUE(nobody.ok()) << nobody.status();
  ApiClient* unprivileged = makeClient(*nobody);
  auto forbidden = unprivileged->get(kConfigMap, {ns_, "cm"});
  EXPECT_TRUE(isForbidden(forbidden.status())) << forbidden.status();
}

TEST_F(KubeIntegrationTest, DeleteHonoursPreconditionsDryRunAndPropagation) {
  auto created = client_->create(configMapObject(ns_, "cm"));
  ASSERT_TRUE(created.ok());
  DeleteOptions wrong_uid;
  wrong_uid.preconditions.uid = "00000000-0000-0000-0000-000000000000";
  EXPECT_TRUE(isConflict(client_->remove(kConfigMap, {ns_, "cm"}, wrong_uid)));
  DeleteOptions dry_run;
  dry_run.dry_run = DryRun::kAll;
  EXPECT_TRUE(client_->remove(kConfigMap, {ns_, "cm"}, dry_run).ok());
  EXPECT_TRUE(client_->get(kConfigMap, {ns_, "cm"}).ok());

  // Foreground deletion parks the object behind the foregroundDeletion
  // finalizer; the integration tier runs no garbage collector to lift it.
  DeleteOptions foreground;
  foreground.propagation = PropagationPolicy::kForeground;
  foreground.preconditions.uid = meta::uid(*created);
  ASSERT_TRUE(client_->remove(kConfigMap, {ns_, "cm"}, foreground).ok());
  auto parked = client_->get(kConfigMap, {ns_, "cm"});
  ASSERT_TRUE(parked.ok());
  EXPECT_TRUE(meta::isDeleting(*parked));
  EXPECT_EQ((*parked)["metadata"]["finalizers"], Json::array({"foregroundDeletion"}));
  ASSERT_TRUE(client_
                  ->patch(kConfigMap, {ns_, "cm"}, PatchType::kMerge,
                          {{"metadata", {{"finalizers", nullptr}}}})
                  .ok());
  EXPECT_TRUE(eventually([&] {
    return isNotFound(client_->get(kConfigMap, {ns_, "cm"}).status());
  }));
  EXPECT_TRUE(isNotFound(client_->remove(kConfigMap, {ns_, "cm"})));
}

TEST_F(KubeIntegrationTest, ServerSideApplyWithTwoFieldManagers) {
  ApplyOptions alpha{
      .field_manager = "alpha", .force = Force::kNo, .dry_run = DryRun::kNo, .subresource = ""};
  ApplyOptions beta = alpha;
  beta.field_manager = "beta";

  ASSERT_TRUE(client_->apply(configMapObject(ns_, "ssa", {{"a", "1"}, {"b", "2"}}), alpha).ok());
  // beta claims a field alpha owns with another value: a conflict naming it.
  auto conflict = client_->apply(configMapObject(ns_, "ssa", {{"a", "3"}}), beta);
  ASSERT_TRUE(isConflict(conflict.status())) << conflict.status();
  auto error = apiError(conflict.status());
  ASSERT_TRUE(error.has_value());
  ASSERT_FALSE(error->causes.empty());
  EXPECT_NE(error->causes[0].field.find("data.a"), std::string::npos) << error->causes[0].field;
  EXPECT_NE(error->causes[0].message.find("alpha"), std::string::npos);

  // Forced, beta takes the field over.
  beta.force = Force::kYes;
  auto forced = client_->apply(configMapObject(ns_, "ssa", {{"a", "3"}}), beta);
  ASSERT_TRUE(forced.ok()) << forced.status();
  EXPECT_EQ((*forced)["data"], Json({{"a", "3"}, {"b", "2"}}));
  std::set<std::string> managers;
  for (const auto& entry : (*forced)["metadata"]["managedFields"]) {
    managers.insert(entry.value("manager", ""));
  }
  EXPECT_EQ(managers, (std::set<std::string>{"alpha", "beta"}));

  // alpha no longer owns a: leaving it out of its config does not remove it.
  auto alpha_again = client_->apply(configMapObject(ns_, "ssa", {{"b", "2"}}), alpha);
  ASSERT_TRUE(alpha_again.ok()) << alpha_again.status();
  EXPECT_EQ((*alpha_again)["data"]["a"], "3");
  // beta, its only owner, drops it: now it goes.
  beta.force = Force::kNo;
  auto beta_drops = client_->apply(configMapObject(ns_, "ssa"), beta);
  ASSERT_TRUE(beta_drops.ok()) << beta_drops.status();
  EXPECT_EQ((*beta_drops)["data"], Json({{"b", "2"}}));

  // A dry-run apply answers with the result but stores nothing.
  ApplyOptions dry = alpha;
  dry.dry_run = DryRun::kAll;
  auto preview = client_->apply(configMapObject(ns_, "ssa", {{"b", "2"}, {"c", "9"}}), dry);
  ASSERT_TRUE(preview.ok()) << preview.status();
  EXPECT_EQ((*preview)["data"]["c"], "9");
  EXPECT_FALSE((*client_->get(kConfigMap, {ns_, "ssa"}))["data"].contains("c"));
}

TEST_F(KubeIntegrationTest, StatusSubresourceGenerationDryRunAndDiscovery) {
  ensureWidgetCrd();
  DiscoveryClient discovery(*rests_.front());
  auto version = discovery.serverVersion();
  ASSERT_TRUE(version.ok()) << version.status();
  EXPECT_EQ(version->value("gitVersion", ""), "v1.36.3");
  auto resources = discovery.serverResources("test.captf.io", "v1");
  ASSERT_TRUE(resources.ok()) << resources.status();
  ASSERT_EQ(resources->size(), 1U);
  EXPECT_EQ((*resources)[0].plural, "widgets");
  EXPECT_EQ((*resources)[0].subresources, std::vector<std::string>{"status"});
  auto groups = discovery.serverGroupVersions();
  ASSERT_TRUE(groups.ok());
  EXPECT_NE(std::find(groups->begin(), groups->end(), "test.captf.io/v1"), groups->end());

  Json widget = {{"apiVersion", "test.captf.io/v1"},
                 {"kind", "Widget"},
                 {"metadata", {{"namespace", ns_}, {"name", "w"}}},
                 {"spec", {{"size", 1}}}};
  auto dry = client_->create(widget, {DryRun::kAll, ""});
  ASSERT_TRUE(dry.ok()) << dry.status();
  EXPECT_TRUE(isNotFound(client_->get(kWidget, {ns_, "w"}).status()));

  auto created = client_->create(widget);
  ASSERT_TRUE(created.ok()) << created.status();
  EXPECT_EQ(meta::generation(*created), 1);
  Json status_change = *created;
  status_change["status"]["ready"] = true;
  status_change["spec"]["size"] = 7; // ignored by the status subresource
  auto with_status = client_->updateStatus(status_change);
  ASSERT_TRUE(with_status.ok()) << with_status.status();
  EXPECT_EQ((*with_status)["status"]["ready"], true);
  EXPECT_EQ((*with_status)["spec"]["size"], 1);
  EXPECT_EQ(meta::generation(*with_status), 1);

  auto patched_status = client_->patch(
      kWidget, {ns_, "w"}, PatchType::kMerge, {{"status", {{"ready", false}}}},
      {.dry_run = DryRun::kNo, .field_manager = "", .force = Force::kNo, .subresource = "status"});
  ASSERT_TRUE(patched_status.ok()) << patched_status.status();
  EXPECT_EQ((*patched_status)["status"]["ready"], false);

  Json spec_change = *patched_status;
  spec_change["spec"]["size"] = 2;
  auto updated = client_->update(spec_change);
  ASSERT_TRUE(updated.ok()) << updated.status();
  EXPECT_EQ(meta::generation(*updated), 2);

  spec_change = *updated;
  spec_change["spec"]["size"] = -1;
  auto invalid = client_->update(spec_change);
  ASSERT_TRUE(isInvalid(invalid.status())) << invalid.status();
  auto error = apiError(invalid.status());
  ASSERT_TRUE(error.has_value() && !error->causes.empty());
  EXPECT_EQ(error->causes[0].field, "spec.size");
}

TEST_F(KubeIntegrationTest, PaginationOver2000Objects) {
  createConfigMaps(ns_, 2000, "page");
  ListOptions first_page;
  first_page.ns = ns_;
  first_page.limit = 100;
  auto page = client_->list(kConfigMap, first_page);
  ASSERT_TRUE(page.ok()) << page.status();
  EXPECT_EQ(page->items.size(), 100U);
  EXPECT_FALSE(page->continue_token.empty());
  ASSERT_TRUE(page->remaining_item_count.has_value());
  EXPECT_EQ(*page->remaining_item_count, 1900);

  ListOptions options;
  options.ns = ns_;
  options.limit = 100;
  auto all = listAll(*client_, kConfigMap, options);
  ASSERT_TRUE(all.ok()) << all.status();
  std::set<std::string> names;
  for (const auto& item : all->items) {
    names.insert(meta::name(item));
  }
  EXPECT_EQ(all->items.size(), 2000U);
  EXPECT_EQ(names.size(), 2000U) << "no object twice, none missing";
  EXPECT_FALSE(all->resource_version.empty());
  // 20 pages of 100 (one GET each) for listAll, plus the single page above.
  std::string text = metrics_.render();
  EXPECT_NE(text.find("rest_client_requests_total{code=\"200\""), std::string::npos);
}

// Counts update events per object.
class UpdateCounter {
public:
  EventHandlers handlers() {
    return {nullptr,
            [this](const Json&, const Json& now) {
              std::scoped_lock lock(mu_);
              ++updates_[meta::name(now)];
              ++total_;
            },
            nullptr};
  }
  int64_t total() {
    std::scoped_lock lock(mu_);
    return total_;
  }

private:
  std::mutex mu_;
  std::map<std::string, int> updates_;
  int64_t total_ = 0;
};

TEST_F(KubeIntegrationTest, InformerOf5000ObjectsSyncsAndStaysInSyncUnder100UpdatesPerSecond) {
  constexpr int kObjects = 5000;
  createConfigMaps(ns_, kObjects, "obj");
  CacheOptions options;
  options.ns = ns_;
  InformerCache cache(InformerCache::apiFactory(*client_), realClock(), options, &metrics_,
                      logger_);
  auto informer = cache.informerFor(kConfigMap);
  ASSERT_TRUE(informer.ok());
  UpdateCounter counter;
  (*informer)->addEventHandler(counter.handlers());
  auto started = std::chrono::steady_clock::now();
  cache.start();
  ASSERT_TRUE(cache.waitForCacheSync(std::stop_token()));
  auto sync_ms =
      std::chrono::duration_cast<milliseconds>(std::chrono::steady_clock::now() - started);
  EXPECT_EQ(cache.objectCount(), static_cast<size_t>(kObjects));
  RecordProperty("sync_ms", std::to_string(sync_ms.count()));
  RecordProperty("cache_bytes_per_object", std::to_string(cache.objectBytes() / kObjects));
  std::cout << "synced " << kObjects << " objects in " << sync_ms.count() << " ms, "
            << cache.objectBytes() / kObjects << " bytes per cached object\n";

  // 100 updates per second for 10 s, paced by a token bucket; readers hit
  // the cache meanwhile.
  constexpr int kUpdates = 1000;
  std::map<std::string, std::string> final_rv;
  std::atomic<bool> writing{true};
  std::atomic<int64_t> reads{0};
  std::jthread reader([&] {
    std::mt19937 rng(1);
    while (writing) {
      auto got = cache.get(kConfigMap, {ns_, absl::StrCat("obj-", rng() % kObjects)});
      EXPECT_TRUE(got.ok()) << got.status();
      ++reads;
    }
  });
  {
    TokenBucket pace(100, 1, realClock());
    std::mt19937 rng(2);
    for (int i = 0; i < kUpdates; ++i) {
      pace.wait(std::stop_token());
      std::string name = absl::StrCat("obj-", rng() % kObjects);
      auto patched = client_->patch(kConfigMap, {ns_, name}, PatchType::kMerge,
                                    {{"data", {{"v", std::to_string(i + 1)}}}});
      ASSERT_TRUE(patched.ok()) << patched.status();
      final_rv[name] = meta::resourceVersion(*patched);
    }
  }
  writing = false;
  reader.join();

  // The cache converges on exactly what the server has, for every object.
  ASSERT_TRUE(eventually([&] {
    for (const auto& [name, rv] : final_rv) {
      auto cached = (*informer)->store().get({ns_, name});
      if (!cached || cached->resource_version != rv) {
        return false;
      }
    }
    return true;
  })) << "the informer fell behind";
  ListOptions list;
  list.ns = ns_;
  auto server = listAll(*client_, kConfigMap, list);
  ASSERT_TRUE(server.ok());
  ASSERT_EQ(server->items.size(), static_cast<size_t>(kObjects));
  for (const auto& item : server->items) {
    auto cached = (*informer)->store().get(meta::key(item));
    ASSERT_TRUE(cached) << meta::name(item);
    EXPECT_EQ(cached->resource_version, meta::resourceVersion(item)) << meta::name(item);
  }
  if ((*informer)->listCount() == 1) {
    EXPECT_EQ(counter.total(), kUpdates) << "one update event per update, none twice";
  } else {
    EXPECT_LE(counter.total(), kUpdates);
  }
  std::cout << "cache reads during updates: " << reads.load() << "\n";
  cache.stop();
}

// Secrets cached without their data (KindOptions::cache_data = false): the
// cache's bytes do not follow the Secrets' size, and reads through
// DataReadThrough return the API server's data, from a memo bounded in bytes.
TEST_F(KubeIntegrationTest, SecretsCachedWithoutDataAreReadThroughABoundedMemo) {
  const GroupVersionKind secret_kind{"", "v1", "Secret"};
  constexpr int kSecrets = 24;
  constexpr std::size_t kPayload = std::size_t{200} * 1024; // base64 of 150 KiB
  const auto secret = [&](int i, char fill) {
    return Json{{"apiVersion", "v1"},
                {"kind", "Secret"},
                {"metadata", {{"name", absl::StrCat("big-", i)}, {"namespace", ns_}}},
                {"data", {{"blob", std::string(kPayload, fill)}}}};
  };
  for (int i = 0; i < kSecrets; ++i) {
    ASSERT_TRUE(client_->create(secret(i, 'A')).ok());
  }
  CacheOptions options;
  options.ns = ns_;
  options.by_kind[secret_kind].cache_data = false;
  InformerCache cache(InformerCache::apiFactory(*client_), realClock(), options, &metrics_,
                      logger_);
  ASSERT_TRUE(cache.informerFor(secret_kind).ok());
  constexpr std::size_t kMemo = 1 << 20; // five of the Secrets
  DataReadThrough reader(cache, *client_, {secret_kind}, kMemo, &metrics_);
  cache.start();
  ASSERT_TRUE(cache.waitForCacheSync(std::stop_token()));

  // The cache holds metadata only: under 4 KiB a Secret, against 200 KiB
  // of data each.
  EXPECT_LT(cache.objectBytes(), kSecrets * 4096U);
  auto cached = cache.get(secret_kind, {ns_, "big-0"});
  ASSERT_TRUE(cached.ok()) << cached.status();
  EXPECT_FALSE(cached->contains("data"));
  EXPECT_EQ(cached->value("kind", ""), "Secret");

  // The informer lists and watches metadata only: the data never reaches
  // this process, not even in the list the cache syncs from (a page of
  // tenants' Secrets would be hundreds of MiB).
  ListOptions metadata_only;
  metadata_only.ns = ns_;
  metadata_only.metadata_only = true;
  auto partial = client_->list(secret_kind, metadata_only);
  ASSERT_TRUE(partial.ok()) << partial.status();
  ASSERT_EQ(partial->items.size(), static_cast<std::size_t>(kSecrets));
  for (const Json& item : partial->items) {
    EXPECT_FALSE(item.contains("data")) << meta::name(item);
    EXPECT_FALSE(item.contains("type")) << meta::name(item);
    EXPECT_EQ(item.value("apiVersion", ""), "v1");
    EXPECT_EQ(item.value("kind", ""), "Secret");
    EXPECT_FALSE(meta::resourceVersion(item).empty());
  }
  std::stop_source stop_watch;
  metadata_only.resource_version = partial->resource_version;
  metadata_only.timeout_seconds = 30;
  auto events = client_->watch(secret_kind, metadata_only, stop_watch.get_token());
  ASSERT_TRUE(events.ok()) << events.status();
  ASSERT_TRUE(client_->create(secret(kSecrets, 'C')).ok());
  auto event = (*events)->next();
  ASSERT_TRUE(event.ok() && event->has_value()) << event.status();
  EXPECT_EQ((*event)->type, WatchEventType::kAdded);
  EXPECT_EQ(meta::name((*event)->object), absl::StrCat("big-", kSecrets));
  EXPECT_EQ((*event)->object.value("kind", ""), "Secret");
  EXPECT_FALSE((*event)->object.contains("data"));
  stop_watch.request_stop();

  // A read returns the data; the second read of the same version is a memo
  // hit, not a GET.
  auto first = reader.get(secret_kind, {ns_, "big-0"});
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ((*first)["data"]["blob"], std::string(kPayload, 'A'));
  EXPECT_EQ(first->value("type", ""), "Opaque");
  const auto fetched = reader.fetched();
  auto again = reader.get(secret_kind, {ns_, "big-0"});
  ASSERT_TRUE(again.ok());
  EXPECT_EQ((*again)["data"]["blob"], std::string(kPayload, 'A'));
  EXPECT_EQ(reader.fetched(), fetched);

  // A list returns every Secret with its data; the memo stays in its bound.
  ListOptions all;
  all.ns = ns_;
  ASSERT_TRUE(eventually([&] {
    auto seen = cache.list(secret_kind, all);
    return seen.ok() && seen->items.size() == kSecrets + 1U;
  }));
  auto listed = reader.list(secret_kind, all);
  ASSERT_TRUE(listed.ok()) << listed.status();
  ASSERT_EQ(listed->items.size(), static_cast<std::size_t>(kSecrets + 1));
  for (const Json& item : listed->items) {
    EXPECT_EQ(item["data"]["blob"].get_ref<const std::string&>().size(), kPayload)
        << meta::name(item);
  }
  EXPECT_LE(reader.memoBytes(), kMemo);
  EXPECT_GT(reader.memoBytes(), kMemo / 2);

  // A new version is read as the API server has it, never the memo's.
  ASSERT_TRUE(client_
                  ->update([&] {
                    Json updated = *first;
                    updated["data"]["blob"] = std::string(kPayload, 'B');
                    return updated;
                  }())
                  .ok());
  ASSERT_TRUE(eventually([&] {
    auto read = reader.get(secret_kind, {ns_, "big-0"});
    return read.ok() && (*read)["data"]["blob"] == std::string(kPayload, 'B');
  }));
  // Deleted from the API server while the cache still lists it: gone from
  // a read at once.
  ASSERT_TRUE(client_->remove(secret_kind, {ns_, "big-1"}).ok());
  auto gone = reader.get(secret_kind, {ns_, "big-1"});
  EXPECT_TRUE(!gone.ok() && isNotFound(gone.status())) << gone.status();
  cache.stop();
}

// Counts reconciles per object and remembers the data each one saw.
class CountingReconciler final : public Reconciler {
public:
  explicit CountingReconciler(Reader& cache) : cache_(cache) {}
  absl::StatusOr<Result> reconcile(const ReconcileContext&, const Request& request) override {
    auto object = cache_.get(kConfigMap, request);
    std::scoped_lock lock(mu_);
    ++counts_[request.name];
    if (object.ok()) {
      seen_[request.name] = (*object)["data"].value("v", "");
    }
    cv_.notify_all();
    return Result{};
  }
  std::map<std::string, int> counts() {
    std::scoped_lock lock(mu_);
    return counts_;
  }
  void reset() {
    std::scoped_lock lock(mu_);
    counts_.clear();
  }
  // Waits until `name` was reconciled having seen data.v == `value`.
  bool awaitSeen(const std::string& name, const std::string& value, Duration timeout) {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, timeout, [&] {
      auto it = seen_.find(name);
      return it != seen_.end() && it->second == value;
    });
  }

private:
  Reader& cache_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::string, int> counts_;
  std::map<std::string, std::string> seen_;
};

TEST_F(KubeIntegrationTest, WatchSurvivesApiServerRestartAnd410WithoutLosingOrDuplicating) {
  constexpr int kObjects = 50;
  createConfigMaps(ns_, kObjects, "cm");
  ASSERT_TRUE(client_->create(configMapObject(ns_, "sentinel", {{"v", "0"}})).ok());
  CacheOptions options;
  options.ns = ns_;
  InformerCache cache(InformerCache::apiFactory(*client_), realClock(), options, &metrics_,
                      logger_);
  CountingReconciler reconciler(cache);
  // One worker: the queue is then processed in order, so once the sentinel
  // is reconciled every earlier event has been too.
  Controller controller("counting", reconciler, {}, realClock(), &metrics_, logger_);
  auto informer = cache.informerFor(kConfigMap);
  ASSERT_TRUE(informer.ok());
  controller.watchFor(**informer);
  cache.start();
  std::jthread runner(
      [&](std::stop_token stop) { EXPECT_TRUE(controller.run(std::move(stop)).ok()); });
  ASSERT_TRUE(reconciler.awaitSeen("sentinel", "0", seconds(60)));
  auto initial = reconciler.counts();
  EXPECT_EQ(initial.size(), static_cast<size_t>(kObjects + 1));
  for (const auto& [name, count] : initial) {
    EXPECT_EQ(count, 1) << name;
  }
  reconciler.reset();
  uint64_t lists_before = (*informer)->listCount();

  // Move etcd's revision past the informer's, so that the restarted server's
  // watch cache (which starts at the current revision) cannot resume the
  // old watch: the informer must see 410 Gone and relist.
  std::string other_ns = makeNamespace("elsewhere");
  ASSERT_TRUE(client_->create(configMapObject(other_ns, "bump")).ok());

  auto restart = rig::run({std::string(std::getenv("CAPTF_SOURCE_DIR")) + "/test/rig/rig",
                           "restart", "apiserver", "--dir", env().dir});
  ASSERT_EQ(restart.exit_code, 0) << restart.output;

  // Change 10 objects right away (the informer is most likely still
  // reconnecting: the changes must reach it through the relist).
  std::set<std::string> changed;
  for (int i = 0; i < 10; ++i) {
    std::string name = absl::StrCat("cm-", i * 5);
    ASSERT_TRUE(eventually(
        [&] {
          return client_
              ->patch(kConfigMap, {ns_, name}, PatchType::kMerge, {{"data", {{"v", "changed"}}}})
              .ok();
        },
        seconds(30)));
    changed.insert(name);
  }
  for (const auto& name : changed) {
    EXPECT_TRUE(reconciler.awaitSeen(name, "changed", seconds(90))) << name;
  }
  ASSERT_TRUE(
      client_->patch(kConfigMap, {ns_, "sentinel"}, PatchType::kMerge, {{"data", {{"v", "after"}}}})
          .ok());
  ASSERT_TRUE(reconciler.awaitSeen("sentinel", "after", seconds(60)));

  auto counts = reconciler.counts();
  for (const auto& name : changed) {
    EXPECT_EQ(counts[name], 1) << name << " must be reconciled exactly once";
  }
  for (const auto& [name, count] : counts) {
    if (name != "sentinel" && !changed.contains(name)) {
      ADD_FAILURE() << name << " did not change but was reconciled " << count << " times";
    }
  }
  EXPECT_GT((*informer)->listCount(), lists_before)
      << "the restart should have cost a relist (410)";
  runner.request_stop();
  runner.join();
  cache.stop();
}

// Requests from `threads` threads at once, `each` apiece: how many failed,
// with the first failure.
std::pair<int, std::string> hammer(ApiClient& client, const std::string& ns, int threads,
                                   int each) {
  std::atomic<int> failures{0};
  std::mutex mu;
  std::string first;
  {
    std::vector<std::jthread> workers;
    workers.reserve(static_cast<std::size_t>(threads));
    for (int t = 0; t < threads; ++t) {
      workers.emplace_back([&] {
        for (int i = 0; i < each; ++i) {
          auto got = client.get(kConfigMap, {ns, "probe"});
          if (!got.ok()) {
            std::scoped_lock lock(mu);
            if (failures++ == 0) {
              first = got.status().ToString();
            }
          }
        }
      });
    }
  }
  return {failures.load(), first};
}

// docs/decisions/kube-client.md, "Idle connections": a path that resets the
// pooled connections (a restarted proxy, a load balancer's idle timeout
// that answers with a reset) costs new connections, never a failed request.
TEST_F(KubeIntegrationTest, PooledConnectionsResetByThePathFailNoRequest) {
  Relay relay(loopbackPort(config_.server));
  RestConfig config = config_;
  ApiClient* client = throughRelay(relay, config);
  ASSERT_NE(client, nullptr);
  auto [warm_failures, warm_first] = hammer(*client, ns_, 8, 5);
  ASSERT_EQ(warm_failures, 0) << warm_first;
  int pooled = relay.accepted();
  ASSERT_GE(pooled, 3) << "the pool should hold several connections";

  for (int round = 0; round < 3; ++round) {
    relay.resetAll();
    auto [failures, first] = hammer(*client, ns_, 8, 5);
    EXPECT_EQ(failures, 0) << "round " << round << ": " << first;
  }
  EXPECT_GT(relay.accepted(), pooled) << "the reset connections were replaced";
}

// A path that drops idle flows without telling either end: a connection
// idle past the client's idle timeout is never reused, so nothing waits on
// a dead flow until its deadline.
TEST_F(KubeIntegrationTest, PooledConnectionsIdlePastTheTimeoutAreNotReused) {
  Relay relay(loopbackPort(config_.server));
  RestConfig config = config_;
  config.idle_connection_timeout = milliseconds(500);
  config.timeout = seconds(5);
  ApiClient* client = throughRelay(relay, config);
  ASSERT_NE(client, nullptr);
  auto [warm_failures, warm_first] = hammer(*client, ns_, 4, 5);
  ASSERT_EQ(warm_failures, 0) << warm_first;

  relay.blackholeAll();
  std::this_thread::sleep_for(milliseconds(800));
  auto started = std::chrono::steady_clock::now();
  auto [failures, first] = hammer(*client, ns_, 4, 5);
  EXPECT_EQ(failures, 0) << first;
  EXPECT_LT(std::chrono::steady_clock::now() - started, seconds(5))
      << "no request should have waited on a dead flow until its deadline";
}

TEST_F(KubeIntegrationTest, EventsAreRecordedAndRepeatsAggregated) {
  auto regarding = client_->create(configMapObject(ns_, "cm"));
  ASSERT_TRUE(regarding.ok());
  FakeClock clock;
  EventRecorderOptions options;
  options.reporting_controller = "captf.io/test";
  options.reporting_instance = "it";
  {
    KubeEventRecorder recorder(*client_, options, clock, &metrics_, logger_);
    for (int i = 0; i < 3; ++i) {
      recorder.event(*regarding, EventType::kWarning, "Failed", "Apply", "tofu apply exited 1");
      recorder.flush();
      clock.advance(seconds(1));
    }
  }
  ListOptions list;
  list.ns = ns_;
  auto events = client_->list(kEvent, list);
  ASSERT_TRUE(events.ok()) << events.status();
  ASSERT_EQ(events->items.size(), 1U);
  const Json& event = events->items[0];
  EXPECT_EQ(event["reason"], "Failed");
  EXPECT_EQ(event["regarding"]["uid"], meta::uid(*regarding));
  EXPECT_EQ(event["series"]["count"], 3);
}

TEST_F(KubeIntegrationTest, ExecCredentialPluginAuthenticates) {
  // The plugin hands out the admin's client certificate.
  fs::path dir = fs::path(env().dir) / ("exec-" + ns_);
  fs::create_directories(dir);
  Json credential = {{"apiVersion", "client.authentication.k8s.io/v1"},
                     {"kind", "ExecCredential"},
                     {"status",
                      {{"clientCertificateData", config_.client_cert_pem},
                       {"clientKeyData", config_.client_key_pem}}}};
  std::ofstream(dir / "credential.json") << credential.dump();
  std::ofstream(dir / "plugin.sh") << "#!/bin/sh\n"
                                      "case \"$KUBERNETES_EXEC_INFO\" in *ExecCredential*) ;; "
                                      "*) exit 9 ;; esac\n"
                                   << "cat " << (dir / "credential.json").string() << "\n";
  RestConfig config = config_;
  config.client_cert_pem.clear();
  config.client_key_pem.clear();
  config.exec = ExecConfig{"client.authentication.k8s.io/v1",
                           "/bin/sh",
                           {(dir / "plugin.sh").string()},
                           {},
                           false,
                           "Never",
                           ""};
  ApiClient* client = makeClient(config);
  auto got = client->get(kNamespace, {"", ns_});
  EXPECT_TRUE(got.ok()) << got.status();

  config.exec->args = {"-c", "echo broken >&2; exit 1"};
  ApiClient* broken = makeClient(config);
  auto failed = broken->get(kNamespace, {"", ns_});
  EXPECT_EQ(failed.status().code(), absl::StatusCode::kUnauthenticated) << failed.status();
}

TEST_F(KubeIntegrationTest, RotatedServiceAccountTokenIsPickedUpAfter401) {
  ASSERT_EQ(rig::kubectl(env(), {"create", "serviceaccount", "bot", "-n", ns_}).exit_code, 0);
  auto token = rig::kubectl(env(), {"create", "token", "bot", "-n", ns_});
  ASSERT_EQ(token.exit_code, 0) << token.output;
  fs::path file = fs::path(env().dir) / ("token-" + ns_);
  std::ofstream(file) << "not-a-valid-token";
  RestConfig config = config_;
  config.client_cert_pem.clear();
  config.client_key_pem.clear();
  config.bearer_token_file = file.string();
  ApiClient* client = makeClient(config);
  EXPECT_TRUE(isUnauthorized(client->get(kConfigMap, {ns_, "x"}).status()));
  std::ofstream(file) << token.output;
  // The 401 makes the client re-read the file: now authenticated (and
  // forbidden, since the account has no rights).
  auto status = client->get(kConfigMap, {ns_, "x"}).status();
  EXPECT_TRUE(isForbidden(status)) << status;
}

// Records what it reconciled (read through the manager's cached client) and
// emits an Event for each.
class SeeingReconciler final : public Reconciler {
public:
  explicit SeeingReconciler(Manager& manager) : manager_(manager) {}
  absl::StatusOr<Result> reconcile(const ReconcileContext&, const Request& request) override {
    auto object = manager_.client().get(kConfigMap, request);
    if (!object.ok()) {
      if (isNotFound(object.status())) {
        return Result{};
      }
      return object.status();
    }
    manager_.eventRecorder().event(*object, EventType::kNormal, "Seen", "Reconcile", "seen");
    {
      std::scoped_lock lock(mu_);
      seen_.insert(request.name);
    }
    cv_.notify_all();
    return Result{};
  }
  bool awaitSeen(const std::string& name) {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, seconds(60), [&] { return seen_.contains(name); });
  }

private:
  Manager& manager_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::set<std::string> seen_;
};

TEST_F(KubeIntegrationTest, ManagerRunsControllersWithoutLeaderElection) {
  ManagerOptions options;
  options.cache.ns = ns_;
  options.health_probe_address = "127.0.0.1:0";
  auto manager = Manager::create(config_, options, logger_);
  ASSERT_TRUE(manager.ok()) << manager.status();
  SeeingReconciler reconciler(**manager);
  auto informer = (*manager)->cache().informerFor(kConfigMap);
  ASSERT_TRUE(informer.ok());
  (*manager)->addController("seeing", reconciler).watchFor(**informer);
  std::jthread runner(
      [&](std::stop_token stop) { EXPECT_TRUE((*manager)->run(std::move(stop)).ok()); });

  ASSERT_TRUE(client_->create(configMapObject(ns_, "a")).ok());
  EXPECT_TRUE(reconciler.awaitSeen("a"));
  ListOptions list;
  list.ns = ns_;
  EXPECT_TRUE(eventually([&] {
    auto events = client_->list(kEvent, list);
    return events.ok() && events->items.size() == 1 && events->items[0]["reason"] == "Seen";
  }));
  std::string metrics = (*manager)->metrics().render();
  EXPECT_NE(
      metrics.find("controller_runtime_reconcile_total{controller=\"seeing\",result=\"success\"}"),
      std::string::npos);
  EXPECT_NE(metrics.find("captf_cache_objects{kind=\"ConfigMap\"} 1"), std::string::npos)
      << metrics;
  runner.request_stop();
  runner.join();
}

// A child process whose output goes to a file.
class Child {
public:
  Child(const std::vector<std::string>& argv, const std::string& output) : output_(output) {
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 1, output.c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                     0644);
    posix_spawn_file_actions_addopen(&actions, 2, (output + ".err").c_str(),
                                     O_WRONLY | O_CREAT | O_TRUNC, 0644);
    std::vector<char*> args;
    args.reserve(argv.size() + 1);
    for (const auto& arg : argv) {
      args.push_back(const_cast<char*>(arg.c_str()));
    }
    args.push_back(nullptr);
    int rc = posix_spawn(&pid_, args[0], &actions, nullptr, args.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    EXPECT_EQ(rc, 0);
  }
  ~Child() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      wait();
    }
  }
  void signal(int sig) { ::kill(pid_, sig); }
  int wait() {
    int status = 0;
    ::waitpid(pid_, &status, 0);
    pid_ = -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }
  std::string output() const {
    std::ifstream in(output_);
    return {std::istreambuf_iterator<char>(in), {}};
  }
  bool printed(const std::string& text) const { return output().find(text) != std::string::npos; }

private:
  pid_t pid_ = -1;
  std::string output_;
};

std::string holder(ApiClient& client, const std::string& ns) {
  auto lease = client.get(kLease, {ns, "captf-test-leader"});
  if (!lease.ok()) {
    return "<none>";
  }
  return (*lease)["spec"].value("holderIdentity", "");
}

TEST_F(KubeIntegrationTest, LeaderElectionBetweenTwoProcesses) {
  // The helper uses lease 4 s, renew deadline 3 s, retry period 0.5 s.
  constexpr auto kLeaseDuration = seconds(4);
  constexpr auto kRetry = milliseconds(500);
  std::string dir = env().dir;
  auto start = [&](const std::string& id) {
    return std::make_unique<Child>(std::vector<std::string>{CAPTF_KUBE_LEADER_HELPER,
                                                            env().kubeconfig, ns_,
                                                            "captf-test-leader", id},
                                   dir + "/" + ns_ + "-" + id + ".out");
  };
  auto a = start("a");
  auto b = start("b");
  ASSERT_TRUE(eventually([&] { return a->printed("STARTED a") && b->printed("STARTED b"); }));
  ASSERT_TRUE(eventually([&] { return a->printed("LEADING") || b->printed("LEADING"); }));
  bool a_leads = a->printed("LEADING a");
  auto& leader = a_leads ? a : b;
  auto& follower = a_leads ? b : a;
  std::string leader_id = a_leads ? "a" : "b";
  std::string follower_id = a_leads ? "b" : "a";
  EXPECT_EQ(holder(*client_, ns_), leader_id);
  EXPECT_FALSE(follower->printed("LEADING")) << "exactly one leads";

  // Killed without a chance to release: the follower takes over once it has
  // seen the lease unrenewed for a lease duration (about that plus two
  // jittered retry periods; printed, not asserted: tests do not assert on
  // wall-clock time on a loaded machine).
  auto killed_at = std::chrono::steady_clock::now();
  leader->signal(SIGKILL);
  EXPECT_EQ(leader->wait(), 128 + SIGKILL);
  ASSERT_TRUE(eventually([&] { return follower->printed("LEADING " + follower_id); }, seconds(30)));
  auto handover = std::chrono::steady_clock::now() - killed_at;
  std::cout << "handover after " << std::chrono::duration_cast<milliseconds>(handover).count()
            << " ms (lease " << std::chrono::duration_cast<milliseconds>(kLeaseDuration).count()
            << " ms, retry " << kRetry.count() << " ms)\n";
  EXPECT_EQ(holder(*client_, ns_), follower_id);
  auto lease = client_->get(kLease, {ns_, "captf-test-leader"});
  ASSERT_TRUE(lease.ok());
  EXPECT_EQ((*lease)["spec"]["leaseTransitions"], 1);

  // Someone else takes the lease: the leader cannot renew and exits (3).
  Json stolen = *lease;
  stolen["spec"]["holderIdentity"] = "intruder";
  stolen["spec"]["renewTime"] = formatMicroTime(std::chrono::system_clock::now() + seconds(60));
  ASSERT_TRUE(client_->update(stolen).ok());
  EXPECT_EQ(follower->wait(), 3) << follower->output();
  EXPECT_TRUE(follower->printed("EXIT " + follower_id + " ABORTED"));

  // A clean stop releases the lease at once.
  ASSERT_TRUE(client_->remove(kLease, {ns_, "captf-test-leader"}).ok());
  auto c = start("c");
  ASSERT_TRUE(eventually([&] { return c->printed("LEADING c"); }));
  c->signal(SIGTERM);
  EXPECT_EQ(c->wait(), 0) << c->output();
  EXPECT_EQ(holder(*client_, ns_), "");
}

// A leader runnable that, once stopped, returns only when the test lets it:
// a controller whose last pass is still running.
class SlowToStop {
public:
  std::unique_ptr<Runnable> runnable(ApiClient& client, const std::string& ns) {
    return std::make_unique<RunnableFunc>([this, &client, ns](std::stop_token stop) {
      {
        std::unique_lock lock(mu_);
        leading_ = true;
        cv_.notify_all();
        cv_.wait(lock, std::move(stop), [] { return false; });
      }
      // The Lease is still held while the work finishes.
      const std::string holder_then = holder(client, ns);
      std::unique_lock lock(mu_);
      holder_at_stop_ = holder_then;
      stopping_ = true;
      cv_.notify_all();
      cv_.wait(lock, [&] { return let_go_; });
      returned_ = true;
      return absl::OkStatus();
    });
  }
  bool awaitLeading() {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, seconds(60), [&] { return leading_; });
  }
  bool awaitStopping() {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, seconds(60), [&] { return stopping_; });
  }
  void letGo() {
    std::scoped_lock lock(mu_);
    let_go_ = true;
    cv_.notify_all();
  }
  std::string holderAtStop() {
    std::scoped_lock lock(mu_);
    return holder_at_stop_;
  }
  bool returned() {
    std::scoped_lock lock(mu_);
    return returned_;
  }

private:
  std::mutex mu_;
  std::condition_variable_any cv_;
  bool leading_ = false;
  bool stopping_ = false;
  bool let_go_ = false;
  bool returned_ = false;
  std::string holder_at_stop_;
};

ManagerOptions leaderOptions(const std::string& ns, const std::string& identity, Duration grace) {
  ManagerOptions options;
  options.cache.ns = ns;
  options.health_probe_address = "127.0.0.1:0";
  options.leader_election = LeaderElectionMode::kEnabled;
  options.leader_election_namespace = ns;
  options.leader_election_id = "captf-test-leader";
  options.leader_election_config.identity = identity;
  options.leader_election_config.lease_duration = seconds(4);
  options.leader_election_config.renew_deadline = seconds(3);
  options.leader_election_config.retry_period = milliseconds(500);
  options.graceful_shutdown_timeout = grace;
  return options;
}

// A stop lets the leader work finish, keeps the Lease while it does, then
// releases it and returns OK.
TEST_F(KubeIntegrationTest, ManagerStopsLeaderWorkBeforeReleasingTheLease) {
  auto manager = Manager::create(config_, leaderOptions(ns_, "steady", seconds(60)), logger_);
  ASSERT_TRUE(manager.ok()) << manager.status();
  SlowToStop work;
  (*manager)->add(work.runnable(*client_, ns_), NeedLeaderElection::kYes);
  std::stop_source stop;
  absl::Status result = absl::UnknownError("not returned");
  std::jthread runner([&] { result = (*manager)->run(stop.get_token()); });
  ASSERT_TRUE(work.awaitLeading());
  stop.request_stop();
  ASSERT_TRUE(work.awaitStopping());
  EXPECT_EQ(work.holderAtStop(), "steady");
  // Still renewed while the work finishes.
  auto renew_time = [&] {
    auto lease = client_->get(kLease, {ns_, "captf-test-leader"});
    return lease.ok() ? (*lease)["spec"].value("renewTime", "") : std::string();
  };
  const std::string at_stop = renew_time();
  EXPECT_TRUE(eventually([&] { return renew_time() != at_stop; })) << "the Lease is renewed";
  EXPECT_EQ(holder(*client_, ns_), "steady");
  work.letGo();
  runner.join();
  EXPECT_TRUE(result.ok()) << result;
  EXPECT_TRUE(work.returned());
  EXPECT_EQ(holder(*client_, ns_), "") << "released once the work returned";
}

// Work that outlives the graceful shutdown timeout: run() returns
// DeadlineExceeded with the work still running and the Lease kept, so no
// other replica leads beside it.
TEST_F(KubeIntegrationTest, ManagerGivesUpAtTheGracefulShutdownTimeoutAndKeepsTheLease) {
  auto manager = Manager::create(config_, leaderOptions(ns_, "stuck", seconds(1)), logger_);
  ASSERT_TRUE(manager.ok()) << manager.status();
  SlowToStop work;
  (*manager)->add(work.runnable(*client_, ns_), NeedLeaderElection::kYes);
  std::stop_source stop;
  absl::Status result;
  std::jthread runner([&] { result = (*manager)->run(stop.get_token()); });
  ASSERT_TRUE(work.awaitLeading());
  stop.request_stop();
  runner.join();
  EXPECT_TRUE(absl::IsDeadlineExceeded(result)) << result;
  EXPECT_FALSE(work.returned());
  EXPECT_EQ(holder(*client_, ns_), "stuck");
  // The destructor waits for the abandoned work (the binary exits instead).
  work.letGo();
  manager->reset();
  EXPECT_TRUE(work.returned());
}

} // namespace
} // namespace captf::kube
