#include "contract/inputs_hash.h"

#include <algorithm>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "absl/status/status.h"
#include "contract/canonical_json.h"
#include "contract/digest.h"
#include "contract/strings.h"

namespace captf::contract {

absl::StatusOr<std::string> inputsHash(const RenderRequest& request, std::string_view image,
                                       HashView view) {
  if (image.empty()) {
    return absl::InvalidArgumentError("inputs hash: the image reference is empty");
  }
  if (auto status = validateRenderRequest(request); !status.ok()) {
    return status;
  }
  nlohmann::json inputs = request.inputs;
  if (request.role == Role::kMachinePool) {
    const std::string replicas(input::kReplicas);
    if (inputs.at(std::string(input::kAutoscaling)).at("enabled").get<bool>()) {
      inputs[replicas] = 0;
    }
    if (view == HashView::kApproval) {
      inputs[std::string(input::kBootstrapData)] = "";
    }
  }
  nlohmann::json document = {
      {"contract", kContractVersion}, {"image", image},
      {"inputs", std::move(inputs)},  {"role", roleSpec(request.role).name},
      {"scheme", kInputsHashScheme},
  };
  if (!request.variables.empty()) {
    std::vector<std::string> sensitive;
    nlohmann::json values = nlohmann::json::object();
    for (const UserVariable& user : request.variables) {
      values[user.name] = user.value;
      if (user.sensitivity == Sensitivity::kSensitive) {
        sensitive.push_back(user.name);
      }
    }
    std::sort(sensitive.begin(), sensitive.end());
    document["variables"] = {{"sensitive", sensitive}, {"values", std::move(values)}};
  }
  auto canonical = canonicalJson(document);
  if (!canonical.ok()) {
    return canonical.status();
  }
  return strCat(kInputsHashScheme, ":", sha256Hex(*canonical));
}

} // namespace captf::contract
