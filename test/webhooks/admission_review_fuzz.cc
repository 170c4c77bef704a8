// libFuzzer target: an AdmissionReview body from the network is decoded,
// routed to the validators and answered, and must never crash, hang or
// leak. Built only with Clang (-fsanitize=fuzzer); see test/webhooks/CMakeLists.txt.
//
//   build/<preset>/test/webhooks/admission_review_fuzz test/webhooks/manifests
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "webhooks/admission.h"

namespace {

// Lookups and reviews answer without I/O so the fuzzer reaches every path.
class NoLookups : public captf::webhooks::AdmissionLookups, public captf::webhooks::AccessReviewer {
public:
  absl::StatusOr<std::optional<captf::webhooks::OwnerMachine>>
  getMachine(std::string_view, std::string_view name) override {
    return std::optional<captf::webhooks::OwnerMachine>(
        captf::webhooks::OwnerMachine{std::string(name), "uid", "c", false, {}});
  }
  absl::StatusOr<std::optional<captf::webhooks::ClusterInfo>>
  getCluster(std::string_view ns, std::string_view name) override {
    return std::optional<captf::webhooks::ClusterInfo>(
        captf::webhooks::ClusterInfo{std::string(ns), std::string(name), true, {}});
  }
  absl::StatusOr<captf::webhooks::IdentityUsageSnapshot> identityUsage() override {
    return captf::webhooks::IdentityUsageSnapshot{};
  }
  absl::StatusOr<captf::webhooks::AccessDecision> review(const nlohmann::json&) override {
    return captf::webhooks::AccessDecision{false, false, "fuzz", ""};
  }
};

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  NoLookups lookups;
  const captf::webhooks::AdmissionHandler handler(lookups, lookups);
  const std::string_view body(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<captf::webhooks::AdmissionRequest> request =
      captf::webhooks::parseAdmissionReview(body);
  const captf::webhooks::AdmissionResponse response =
      request.ok() ? handler.handle(*request)
                   : captf::webhooks::badRequest("", std::string(request.status().message()));
  (void)captf::webhooks::encodeAdmissionReview(response);
  return 0;
}
