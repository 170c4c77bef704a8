// Least privilege on the rig's real kube-apiserver (RBAC on), as
// docs/behaviour/security.md states it:
// - the rights `kubectl auth can-i --list` reports for the runner's and the
//   manager's ServiceAccounts, less what every authenticated user gets, equal
//   the tables "Runner ClusterRole" and "Manager ClusterRole", parsed from the
//   page here so that the page and config/rbac cannot drift; the runner has
//   nothing beyond that default anywhere else;
// - the optional config/admission-policy refuses the manager's Jobs outside
//   tenant namespaces or as accounts that did not opt in, and its ConfigMap
//   writes other than run histories;
// - config/network-policy passes the API server's validation and lets Git
//   over SSH through.
// In the webhooks' integration binary: admission and authorization on the
// same API server, and one rig fewer to start than a binary of its own.
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <functional>
#include <iterator>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "test/rig/fixture.h"

namespace captf::access_test {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

constexpr char kTenant[] = "access-tenant";
constexpr char kOther[] = "access-other";
constexpr char kNotTenant[] = "access-not-tenant";
constexpr char kManagerNamespace[] = "captf-system";
constexpr char kManager[] = "system:serviceaccount:captf-system:captf-controller-manager";
constexpr char kRunner[] = "captf-runner";

const rig::Env& env() {
  return rig::shared(rig::Tier::kIntegration);
}

std::string sourceDir() {
  const char* dir = std::getenv("CAPTF_SOURCE_DIR");
  return dir != nullptr ? dir : ".";
}

std::string serviceAccountUser(const std::string& ns, const std::string& name) {
  return "system:serviceaccount:" + ns + ":" + name;
}

std::string trimmed(std::string_view s) {
  const auto first = s.find_first_not_of(" \t\r\n");
  if (first == std::string_view::npos) {
    return "";
  }
  const auto last = s.find_last_not_of(" \t\r\n");
  return std::string(s.substr(first, last - first + 1));
}

// One right: API group, resource (with its "/subresource"), resource name
// ("" for any), verb. A non-resource URL is group "nonResourceURL".
using Right = std::tuple<std::string, std::string, std::string, std::string>;
using Rights = std::set<Right>;

std::string describe(const Rights& rights) {
  std::ostringstream out;
  for (const auto& [group, resource, name, verb] : rights) {
    out << "\n  " << (group.empty() ? "core" : group) << " " << resource
        << (name.empty() ? "" : " [" + name + "]") << " " << verb;
  }
  return out.str();
}

Rights minus(const Rights& a, const Rights& b) {
  Rights out;
  std::set_difference(a.begin(), a.end(), b.begin(), b.end(), std::inserter(out, out.end()));
  return out;
}

// "[a b]" -> {a, b}; "[]" -> {}.
std::vector<std::string> bracketed(const std::string& cell) {
  std::vector<std::string> out;
  std::istringstream words(cell.size() >= 2 ? cell.substr(1, cell.size() - 2) : "");
  for (std::string w; words >> w;) {
    out.push_back(w);
  }
  return out;
}

// The table `kubectl auth can-i --list` prints (there is no -o json), by the
// columns of its header.
Rights parseCanIList(const std::string& output) {
  Rights rights;
  std::istringstream lines(output);
  std::string line;
  size_t urls = std::string::npos;
  size_t names = std::string::npos;
  size_t verbs = std::string::npos;
  while (std::getline(lines, line)) {
    if (urls == std::string::npos) {
      if (line.starts_with("Resources")) {
        urls = line.find("Non-Resource URLs");
        names = line.find("Resource Names");
        verbs = line.find("Verbs");
      }
      continue;
    }
    if (trimmed(line).empty() || line.size() <= verbs) {
      continue;
    }
    const std::string resource = trimmed(line.substr(0, urls));
    const std::vector<std::string> url_list = bracketed(trimmed(line.substr(urls, names - urls)));
    std::vector<std::string> name_list = bracketed(trimmed(line.substr(names, verbs - names)));
    const std::vector<std::string> verb_list = bracketed(trimmed(line.substr(verbs)));
    if (name_list.empty()) {
      name_list.emplace_back();
    }
    for (const std::string& verb : verb_list) {
      for (const std::string& url : url_list) {
        rights.emplace("nonResourceURL", url, "", verb);
      }
      if (resource.empty()) {
        continue;
      }
      // "jobs.batch/finalizers": resource "jobs", group "batch", "/finalizers".
      const size_t slash = resource.find('/');
      const std::string base = resource.substr(0, slash);
      const std::string sub = slash == std::string::npos ? "" : resource.substr(slash);
      const size_t dot = base.find('.');
      const std::string group = dot == std::string::npos ? "" : base.substr(dot + 1);
      for (const std::string& name : name_list) {
        rights.emplace(group, base.substr(0, dot) + sub, name, verb);
      }
    }
  }
  EXPECT_NE(urls, std::string::npos) << "no table in: " << output;
  return rights;
}

// The `backticked` words of a table cell, in order.
std::vector<std::string> backticked(const std::string& cell) {
  std::vector<std::string> out;
  for (size_t open = cell.find('`'); open != std::string::npos; open = cell.find('`', open)) {
    const size_t close = cell.find('`', open + 1);
    if (close == std::string::npos) {
      break;
    }
    out.push_back(cell.substr(open + 1, close - open - 1));
    open = close + 1;
  }
  return out;
}

std::vector<std::string> cells(const std::string& row) {
  std::vector<std::string> out;
  std::istringstream in(row.substr(1));
  for (std::string cell; std::getline(in, cell, '|');) {
    out.push_back(trimmed(cell));
  }
  return out;
}

// The rights of the first table under heading `heading` of
// docs/behaviour/security.md: columns API group ("core", `group`, or
// "core and `group`"), resources (`a`, `b`; "`/sub` of `a`, `b`"; "`/sub` of
// all of the above except `a`", the row above being "the above"; "`r`,
// resourceName `n`") and verbs (comma separated; "(...)" is a remark).
Rights documentedRights(const std::string& heading) {
  const std::string page = rig::readFile(sourceDir() + "/docs/behaviour/security.md");
  const size_t at = page.find("\n" + heading + "\n");
  EXPECT_NE(at, std::string::npos) << heading << " not in docs/behaviour/security.md";
  Rights rights;
  if (at == std::string::npos) {
    return rights;
  }
  std::istringstream lines(page.substr(at + heading.size() + 2));
  std::string line;
  int row = 0;
  std::vector<std::string> above;
  while (std::getline(lines, line)) {
    if (!line.starts_with('|')) {
      if (row > 0) {
        break; // the table ended
      }
      if (line.starts_with('#')) {
        break; // the next section, no table
      }
      continue;
    }
    if (row++ < 2) {
      continue; // header and separator
    }
    const std::vector<std::string> c = cells(line);
    EXPECT_GE(c.size(), 3U) << line;
    if (c.size() < 3) {
      continue;
    }
    std::vector<std::string> groups = backticked(c[0]);
    if (c[0].starts_with("core")) {
      groups.insert(groups.begin(), "");
    }
    std::vector<std::string> words = backticked(c[1]);
    std::vector<std::string> resources;
    std::vector<std::string> names{""};
    if (!words.empty() && words[0].starts_with('/')) {
      const std::string sub = words[0];
      const std::vector<std::string> listed(words.begin() + 1, words.end());
      if (c[1].find("all of the above except") != std::string::npos) {
        for (const std::string& r : above) {
          if (std::find(listed.begin(), listed.end(), r) == listed.end()) {
            resources.push_back(r + sub);
          }
        }
      } else {
        for (const std::string& r : listed) {
          resources.push_back(r + sub);
        }
      }
    } else if (const size_t rn = c[1].find("resourceName"); rn != std::string::npos) {
      resources = backticked(c[1].substr(0, rn));
      names = backticked(c[1].substr(rn));
    } else {
      resources = words;
      above = words;
    }
    std::string verb_cell = c[2];
    if (const size_t paren = verb_cell.find('('); paren != std::string::npos) {
      verb_cell.resize(paren);
    }
    std::vector<std::string> verbs;
    std::istringstream verb_in(verb_cell);
    for (std::string v; std::getline(verb_in, v, ',');) {
      verbs.push_back(trimmed(v));
    }
    EXPECT_FALSE(groups.empty() || resources.empty() || verbs.empty()) << "cannot read " << line;
    for (const auto& g : groups) {
      for (const auto& r : resources) {
        for (const auto& n : names) {
          for (const auto& v : verbs) {
            rights.emplace(g, r, n, v);
          }
        }
      }
    }
  }
  EXPECT_FALSE(rights.empty()) << "no table under " << heading;
  return rights;
}

Rights rightsOf(const std::string& user, const std::string& ns) {
  const rig::CommandResult r =
      rig::kubectl(env(), {"auth", "can-i", "--list", "--as=" + user, "-n", ns});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  return parseCanIList(r.output);
}

// Retries until `done` holds (the API server's RBAC and admission caches lag
// a write a little); false after about 20 s.
bool eventually(const std::function<bool()>& done) {
  for (int i = 0; i < 100; ++i) {
    if (done()) {
      return true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  return false;
}

void apply(const json& manifest) {
  const rig::CommandResult r =
      rig::kubectl(env(), {"apply", "--server-side", "-f", "-"}, manifest.dump());
  ASSERT_EQ(r.exit_code, 0) << r.output;
}

// Creates `manifest` as `as` (a POST, as the manager writes: it holds no
// `patch`, which a server-side apply needs); one already there is kept.
void createAs(const json& manifest, const std::string& as) {
  const rig::CommandResult r =
      rig::kubectl(env(), {"create", "-f", "-", "--as=" + as}, manifest.dump());
  if (r.output.find("AlreadyExists") == std::string::npos) {
    ASSERT_EQ(r.exit_code, 0) << r.output;
  }
}

json serviceAccount(const std::string& ns, const std::string& name, const json& labels) {
  return {{"apiVersion", "v1"},
          {"kind", "ServiceAccount"},
          {"metadata", {{"name", name}, {"namespace", ns}, {"labels", labels}}}};
}

// A run Job's shape as far as the policy looks: namespace and account.
json job(const std::string& ns, const json& pod_fields) {
  json pod = {{"restartPolicy", "Never"},
              {"containers", json::array({{{"name", "main"}, {"image", "registry.example/m:1"}}})}};
  pod.update(pod_fields);
  return {{"apiVersion", "batch/v1"},
          {"kind", "Job"},
          {"metadata", {{"name", "captf-access-test"}, {"namespace", ns}}},
          {"spec", {{"template", {{"spec", pod}}}}}};
}

// Creates `object` as `as` with --dry-run=server: admission runs, nothing
// is stored.
rig::CommandResult dryRunCreate(const json& object, const std::string& as) {
  return rig::kubectl(env(), {"create", "--dry-run=server", "-f", "-", "--as=" + as},
                      object.dump());
}

class AccessIntegrationTest : public ::testing::Test {
protected:
  static void SetUpTestSuite() {
    for (const char* ns : {kManagerNamespace, kTenant, kOther, kNotTenant}) {
      rig::kubectl(env(), {"create", "namespace", ns});
    }
    rig::CommandResult r = rig::kubectl(
        env(), {"label", "namespace", kNotTenant, "captf.io/tenant=false", "--overwrite"});
    ASSERT_EQ(r.exit_code, 0) << r.output;
    r = rig::kubectl(env(), {"apply", "--server-side", "-k", sourceDir() + "/config/rbac"});
    ASSERT_EQ(r.exit_code, 0) << r.output;
    ASSERT_TRUE(eventually([] {
      return rig::kubectl(env(), {"auth", "can-i", "bind", "clusterroles/captf-runner",
                                  std::string("--as=") + kManager})
                 .exit_code == 0;
    }));
    // The runner's objects in the tenant namespace, written as the manager
    // writes them and with its rights (docs/behaviour/security.md "Runner
    // ClusterRole"): binding ClusterRole captf-runner needs its `bind`.
    const json managed = {{"captf.io/managed", "true"}};
    createAs(serviceAccount(kTenant, kRunner, managed), kManager);
    createAs(
        {{"apiVersion", "rbac.authorization.k8s.io/v1"},
         {"kind", "RoleBinding"},
         {"metadata", {{"name", kRunner}, {"namespace", kTenant}, {"labels", managed}}},
         {"roleRef",
          {{"apiGroup", "rbac.authorization.k8s.io"}, {"kind", "ClusterRole"}, {"name", kRunner}}},
         {"subjects",
          json::array({{{"kind", "ServiceAccount"}, {"name", kRunner}, {"namespace", kTenant}}})}},
        kManager);
    ASSERT_TRUE(eventually([] {
      return rig::kubectl(env(), {"auth", "can-i", "list", "secrets", "-n", kTenant,
                                  "--as=" + serviceAccountUser(kTenant, kRunner)})
                 .exit_code == 0;
    }));
  }

  // What an account with no binding gets in `ns`: the rules every
  // authenticated user holds (self-subject reviews, discovery).
  static Rights everybody(const std::string& ns) {
    return rightsOf(serviceAccountUser(kTenant, "access-nobody"), ns);
  }
};

TEST_F(AccessIntegrationTest, TheRunnerHoldsExactlyTheDocumentedRightsInItsNamespace) {
  const Rights documented = documentedRights("### Runner ClusterRole");
  const Rights base = everybody(kTenant);
  const Rights held = rightsOf(serviceAccountUser(kTenant, kRunner), kTenant);
  EXPECT_TRUE(minus(base, held).empty())
      << "the default rules, missing:" << describe(minus(base, held));
  const Rights granted = minus(held, base);
  EXPECT_TRUE(minus(granted, documented).empty())
      << "granted but not in docs/behaviour/security.md:" << describe(minus(granted, documented));
  EXPECT_TRUE(minus(documented, granted).empty())
      << "documented but not granted:" << describe(minus(documented, granted));
}

TEST_F(AccessIntegrationTest, TheRunnerHoldsNothingElsewhereNorClusterWide) {
  const std::string runner = serviceAccountUser(kTenant, kRunner);
  // Namespaced rules from ClusterRoleBindings would show in every namespace.
  for (const char* ns : {kOther, kManagerNamespace, "default"}) {
    const Rights base = everybody(ns);
    const Rights held = rightsOf(runner, ns);
    EXPECT_EQ(held, base) << ns << ": beyond the default:" << describe(minus(held, base))
                          << "\nmissing:" << describe(minus(base, held));
  }
  for (const std::vector<std::string>& what :
       {std::vector<std::string>{"list", "secrets", "--all-namespaces"},
        {"get", "namespaces"},
        {"list", "nodes"},
        {"create", "clusterrolebindings"},
        {"create", "tokenreviews.authentication.k8s.io"}}) {
    std::vector<std::string> args = {"auth", "can-i"};
    args.insert(args.end(), what.begin(), what.end());
    args.push_back("--as=" + runner);
    EXPECT_NE(rig::kubectl(env(), args).exit_code, 0) << what[0] << " " << what[1];
  }
}

TEST_F(AccessIntegrationTest, TheManagerHoldsExactlyTheDocumentedClusterRole) {
  // In a tenant namespace the manager has its ClusterRole and nothing else
  // (its leader-election Role is in captf-system).
  const Rights documented = documentedRights("### Manager ClusterRole");
  const Rights base = everybody(kTenant);
  const Rights granted = minus(rightsOf(kManager, kTenant), base);
  EXPECT_TRUE(minus(granted, documented).empty())
      << "granted but not in docs/behaviour/security.md:" << describe(minus(granted, documented));
  EXPECT_TRUE(minus(documented, granted).empty())
      << "documented but not granted:" << describe(minus(documented, granted));
}

class AdmissionPolicyIntegrationTest : public AccessIntegrationTest {
protected:
  static void SetUpTestSuite() {
    AccessIntegrationTest::SetUpTestSuite();
    const rig::CommandResult r = rig::kubectl(
        env(), {"apply", "--server-side", "-k", sourceDir() + "/config/admission-policy"});
    ASSERT_EQ(r.exit_code, 0) << r.output;
    apply(serviceAccount(kTenant, "opted-in", {{"captf.io/runner", "true"}}));
    apply(serviceAccount(kTenant, "not-opted-in", json::object()));
    apply(serviceAccount(kNotTenant, kRunner, json::object()));
    apply(serviceAccount(kManagerNamespace, kRunner, json::object()));
    // In force once the API server refuses what it must refuse, and sees
    // the opted-in account among the params.
    ASSERT_TRUE(eventually([] {
      return dryRunCreate(job(kManagerNamespace, {{"serviceAccountName", kRunner}}), kManager)
                     .exit_code != 0 &&
             dryRunCreate(job(kTenant, {{"serviceAccountName", "opted-in"}}), kManager).exit_code ==
                 0;
    })) << "config/admission-policy not in force";
  }
};

TEST_F(AdmissionPolicyIntegrationTest, RefusesTheManagersJobsOutsideTenantsOrRunnerAccounts) {
  struct Case {
    const char* what;
    json job;
    const char* message;
  };
  const std::vector<Case> refused = {
      {"in captf-system", job(kManagerNamespace, {{"serviceAccountName", kRunner}}),
       "the manager creates no Job in namespace captf-system"},
      {"in a namespace labeled not a tenant", job(kNotTenant, {{"serviceAccountName", kRunner}}),
       "labeled captf.io/tenant=false"},
      {"as an account that did not opt in", job(kTenant, {{"serviceAccountName", "not-opted-in"}}),
       "not as not-opted-in"},
      {"as one through the deprecated alias", job(kTenant, {{"serviceAccount", "not-opted-in"}}),
       "not as not-opted-in"},
  };
  for (const Case& c : refused) {
    const rig::CommandResult r = dryRunCreate(c.job, kManager);
    EXPECT_NE(r.exit_code, 0) << c.what << ": admitted";
    EXPECT_THAT(r.output, HasSubstr("ValidatingAdmissionPolicy 'captf-manager-jobs'")) << c.what;
    EXPECT_THAT(r.output, HasSubstr(c.message)) << c.what;
    // Only the manager's account is held to it.
    const rig::CommandResult admin =
        rig::kubectl(env(), {"create", "--dry-run=server", "-f", "-"}, c.job.dump());
    EXPECT_EQ(admin.exit_code, 0) << c.what << " as the admin: " << admin.output;
  }
  for (const char* account : {kRunner, "opted-in"}) {
    const rig::CommandResult r =
        dryRunCreate(job(kTenant, {{"serviceAccountName", account}}), kManager);
    EXPECT_EQ(r.exit_code, 0) << account << ": " << r.output;
  }
}

TEST_F(AdmissionPolicyIntegrationTest, KeepsTheManagersConfigMapWritesToRunHistories) {
  const auto config_map = [](const std::string& name) {
    return json{{"apiVersion", "v1"},
                {"kind", "ConfigMap"},
                {"metadata", {{"name", name}, {"namespace", kTenant}}},
                {"data", {{"runs.json", "[]"}}}};
  };
  ASSERT_TRUE(eventually([&] {
    return dryRunCreate(config_map("coredns"), kManager).exit_code != 0;
  })) << "config/admission-policy not in force";
  const rig::CommandResult refused = dryRunCreate(config_map("coredns"), kManager);
  EXPECT_THAT(refused.output, HasSubstr("ValidatingAdmissionPolicy 'captf-manager-configmaps'"));
  EXPECT_THAT(refused.output, HasSubstr("not access-tenant/coredns"));
  const rig::CommandResult admitted = dryRunCreate(config_map("captf-runs-c-web"), kManager);
  EXPECT_EQ(admitted.exit_code, 0) << admitted.output;
}

// The egress ports of a NetworkPolicy as the API server stores it
// (validated by a server-side dry run).
std::set<std::pair<std::string, int>> egressPorts(const std::string& file, const std::string& ns) {
  const rig::CommandResult r = rig::kubectl(
      env(), {"create", "--dry-run=server", "-o", "json", "-n", ns, "-f", sourceDir() + file});
  EXPECT_EQ(r.exit_code, 0) << file << ": " << r.output;
  std::set<std::pair<std::string, int>> ports;
  const json policy = json::parse(r.output, nullptr, false);
  if (policy.is_discarded()) {
    ADD_FAILURE() << file << ": not JSON";
    return ports;
  }
  for (const json& rule : policy["spec"].value("egress", json::array())) {
    for (const json& port : rule.value("ports", json::array())) {
      if (port.contains("port") && port["port"].is_number_integer()) {
        ports.emplace(port.value("protocol", "TCP"), port["port"].get<int>());
      }
    }
  }
  return ports;
}

TEST_F(AccessIntegrationTest, NetworkPoliciesLetGitOverSshThrough) {
  // The runner fetches Git sources, the manager's ref watcher lists them
  // (docs/behaviour/security.md "Network").
  const auto manager = egressPorts("/config/network-policy/manager.yaml", kManagerNamespace);
  const auto jobs = egressPorts("/config/network-policy/job-egress-sample.yaml", kTenant);
  for (const auto* ports : {&manager, &jobs}) {
    EXPECT_TRUE(ports->contains({"TCP", 22})) << "no SSH";
    EXPECT_TRUE(ports->contains({"TCP", 443})) << "no HTTPS";
    EXPECT_TRUE(ports->contains({"UDP", 53})) << "no DNS";
  }
  EXPECT_TRUE(jobs.contains({"TCP", 9444})) << "no run reports";
}

} // namespace
} // namespace captf::access_test
