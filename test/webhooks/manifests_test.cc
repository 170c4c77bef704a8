// Replays the admission cases of test/webhooks/manifests/cases.yaml against
// the validators, with an in-memory object store standing in for the API
// server. Cases rejected `by: schema` need the real API server (CRD schema
// and CEL); here their manifests are only checked to parse. The
// integration suite applies every case to a real API server.
#include <cstdlib>
#include <map>

#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include "manager/api/codec.h"
#include "manager/api/keys.h"
#include "test/manager/api/yaml_json.h"
#include "webhooks/admission.h"

namespace captf::webhooks {
namespace {

using captf::api::testing::yamlToJson;
using nlohmann::json;

const std::string kNoSecretsUser = "captf-test-no-secrets";

std::string manifestDir() {
  const char* dir = std::getenv("CAPTF_SOURCE_DIR");
  return std::string(dir != nullptr ? dir : ".") + "/test/webhooks/manifests/";
}

std::vector<json> loadManifest(const std::string& file) {
  std::vector<json> docs;
  for (const YAML::Node& n : YAML::LoadAllFromFile(manifestDir() + file)) {
    if (!n.IsNull()) {
      docs.push_back(yamlToJson(n));
    }
  }
  return docs;
}

std::string keyOf(const std::string& kind, const std::string& ns, const std::string& name) {
  return kind + "/" + ns + "/" + name;
}

std::string keyOf(const json& obj) {
  const json& m = obj.at("metadata");
  return keyOf(obj.at("kind").get<std::string>(), m.value("namespace", ""),
               m.at("name").get<std::string>());
}

// An API server of sorts: stores objects, assigns UIDs, sends the
// infrastructure kinds through the admission handler.
class Store : public AdmissionLookups, public AccessReviewer {
public:
  absl::StatusOr<std::optional<OwnerMachine>> getMachine(std::string_view ns,
                                                         std::string_view name) override {
    const auto it = objects_.find(keyOf("Machine", std::string(ns), std::string(name)));
    if (it == objects_.end()) {
      return std::optional<OwnerMachine>();
    }
    absl::StatusOr<OwnerMachine> m = ownerMachineFromJson(it->second);
    if (!m.ok()) {
      return m.status();
    }
    return std::optional<OwnerMachine>(*m);
  }
  absl::StatusOr<std::optional<ClusterInfo>> getCluster(std::string_view ns,
                                                        std::string_view name) override {
    const auto it = objects_.find(keyOf("Cluster", std::string(ns), std::string(name)));
    if (it == objects_.end()) {
      return std::optional<ClusterInfo>();
    }
    absl::StatusOr<ClusterInfo> c = clusterInfoFromJson(it->second);
    if (!c.ok()) {
      return c.status();
    }
    return std::optional<ClusterInfo>(*c);
  }
  absl::StatusOr<IdentityUsageSnapshot> identityUsage() override {
    IdentityUsageSnapshot s;
    for (const auto& [key, obj] : objects_) {
      const std::string kind = obj.at("kind").get<std::string>();
      if (kind == api::kKindTerraformCluster) {
        s.clusters.push_back(*api::fromJson<api::TerraformCluster>(obj));
      } else if (kind == api::kKindTerraformMachine) {
        s.machines.push_back(*api::fromJson<api::TerraformMachine>(obj));
      } else if (kind == api::kKindTerraformMachinePool) {
        s.pools.push_back(*api::fromJson<api::TerraformMachinePool>(obj));
      } else if (kind == "Cluster") {
        s.capi_clusters.push_back(*clusterInfoFromJson(obj));
      }
    }
    return s;
  }
  absl::StatusOr<AccessDecision> review(const json& sar) override {
    const bool allowed = sar.at("spec").at("user") != kNoSecretsUser;
    return AccessDecision{allowed, false, allowed ? "" : "RBAC: no rule grants get", ""};
  }

  // Runs one step; returns the admission response of its last request.
  AdmissionResponse run(const json& step) {
    AdmissionResponse last{"", true, nullptr, {}};
    if (step.contains("apply")) {
      for (json obj : loadManifest(step.at("apply").get<std::string>())) {
        substituteUids(obj);
        last = apply(obj, step.value("as", std::string("kubernetes-admin")),
                     step.value("dryRun", false));
        if (!last.allowed) {
          return last;
        }
      }
    } else {
      const json& d = step.at("delete");
      const std::string key = keyOf(d.at("kind").get<std::string>(), d.value("namespace", ""),
                                    d.at("name").get<std::string>());
      const auto it = objects_.find(key);
      EXPECT_NE(it, objects_.end()) << "delete of a missing object " << key;
      if (it == objects_.end()) {
        return last;
      }
      AdmissionRequest r = request(it->second, AdmissionOperation::kDelete, "kubernetes-admin");
      r.old_object = it->second;
      last = handler_.handle(r);
      if (last.allowed) {
        objects_.erase(it);
      }
    }
    return last;
  }

private:
  static AdmissionRequest request(const json& obj, AdmissionOperation op, const std::string& user) {
    AdmissionRequest r;
    r.uid = "req-1";
    const std::string api_version = obj.at("apiVersion").get<std::string>();
    r.group = api_version.substr(0, api_version.find('/'));
    r.version = api_version.substr(api_version.find('/') + 1);
    r.kind = obj.at("kind").get<std::string>();
    r.name = obj.at("metadata").at("name").get<std::string>();
    r.namespace_ = obj.at("metadata").value("namespace", "");
    r.operation = op;
    r.user_info.username = user;
    return r;
  }

  AdmissionResponse apply(json obj, const std::string& user, bool dry_run) {
    const std::string key = keyOf(obj);
    const auto existing = objects_.find(key);
    if (existing != objects_.end()) {
      obj["metadata"]["uid"] = existing->second["metadata"]["uid"];
    } else {
      obj["metadata"]["uid"] = "uid-" + std::to_string(++next_uid_);
    }
    AdmissionResponse resp{"", true, nullptr, {}};
    if (obj.at("apiVersion").get<std::string>().starts_with(std::string(api::kGroup) + "/")) {
      AdmissionRequest r = request(obj,
                                   existing == objects_.end() ? AdmissionOperation::kCreate
                                                              : AdmissionOperation::kUpdate,
                                   user);
      r.object = obj;
      r.dry_run = dry_run;
      if (existing != objects_.end()) {
        r.old_object = existing->second;
      }
      resp = handler_.handle(r);
    }
    if (resp.allowed && !dry_run) {
      objects_[key] = obj;
    }
    return resp;
  }

  void substituteUids(json& v) {
    if (v.is_string()) {
      const std::string s = v.get<std::string>();
      if (s.starts_with("${UID:") && s.ends_with('}')) {
        const std::string ref = s.substr(6, s.size() - 7);
        const std::string kind = ref.substr(0, ref.find('/'));
        const std::string name = ref.substr(ref.find('/') + 1);
        const auto it = objects_.find(keyOf(kind, "captf-webhook-test", name));
        EXPECT_NE(it, objects_.end()) << s;
        if (it != objects_.end()) {
          v = it->second["metadata"]["uid"];
        }
      }
    } else if (v.is_structured()) {
      for (auto& item : v) {
        substituteUids(item);
      }
    }
  }

  std::map<std::string, json> objects_;
  int next_uid_ = 0;
  AdmissionHandler handler_{*this, *this};
};

std::vector<json> asList(const json& v) {
  if (v.is_array()) {
    return v.get<std::vector<json>>();
  }
  return {v};
}

TEST(ManifestsTest, WebhookCasesBehaveAsDocumented) {
  const std::vector<YAML::Node> docs = YAML::LoadAllFromFile(manifestDir() + "cases.yaml");
  ASSERT_EQ(docs.size(), 1U);
  const json cases = yamlToJson(docs[0]).at("cases");
  ASSERT_GE(cases.size(), 15U);
  int replayed = 0;
  for (const json& c : cases) {
    const std::string name = c.at("name").get<std::string>();
    for (const bool accepted : {true, false}) {
      for (const json& expect : asList(c.at(accepted ? "accepted" : "rejected"))) {
        const json& steps = expect.at("steps");
        if (!accepted && expect.at("by") == "schema") {
          for (const json& step : steps) {
            if (step.contains("apply")) {
              EXPECT_FALSE(loadManifest(step.at("apply").get<std::string>()).empty()) << name;
            }
          }
          continue;
        }
        Store store;
        AdmissionResponse last{"", true, nullptr, {}};
        for (std::size_t i = 0; i < steps.size(); ++i) {
          last = store.run(steps[i]);
          if (i + 1 < steps.size()) {
            ASSERT_TRUE(last.allowed) << name << " step " << i << ": " << last.status.dump();
          }
        }
        ++replayed;
        if (accepted) {
          EXPECT_TRUE(last.allowed) << name << ": " << last.status.dump();
          continue;
        }
        ASSERT_FALSE(last.allowed) << name << " (" << expect.at("field") << ")";
        bool found = false;
        for (const json& cause : last.status.at("details").at("causes")) {
          if (cause.at("field") == expect.at("field") &&
              cause.at("message").get<std::string>().find(
                  expect.at("message").get<std::string>()) != std::string::npos) {
            found = true;
          }
        }
        EXPECT_TRUE(found) << name << ": want " << expect.at("field") << " / "
                           << expect.at("message") << "\n got " << last.status.dump(2);
      }
    }
  }
  EXPECT_GE(replayed, 25);
}

} // namespace
} // namespace captf::webhooks
