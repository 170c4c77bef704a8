#pragma once

// Helpers of the manager/workspace tests: test data and state Secrets built
// the way the `kubernetes` backend writes them.

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "contract/digest.h"
#include "manager/workspace/names.h"
#include "test/contract/test_util.h"

namespace captf::workspace::testing {

inline std::string testdata(std::string_view name) {
  return contract::testing::readFile(std::filesystem::path(contract::testing::sourceDir()) /
                                     "test/manager/workspace/testdata" / std::string(name));
}

using contract::testing::gzip;

// A Secret as the backend stores chunk `index` of the state of `suffix`.
inline nlohmann::json stateSecret(std::string_view suffix, std::size_t index,
                                  std::string_view payload, std::string_view inputs_hash = {}) {
  nlohmann::json secret = {{"apiVersion", "v1"},
                           {"kind", "Secret"},
                           {"metadata",
                            {{"name", stateChunkName(suffix, index)},
                             {"namespace", "ns"},
                             {"resourceVersion", "17"},
                             {"labels",
                              {{"tfstate", "true"},
                               {"tfstateSecretSuffix", suffix},
                               {"tfstateWorkspace", "default"},
                               {"captf.io/managed", "true"}}}}},
                           {"type", "Opaque"},
                           {"data", {{"tfstate", contract::base64Encode(payload)}}}};
  if (!inputs_hash.empty()) {
    secret["metadata"]["annotations"]["captf.io/inputs-hash"] = inputs_hash;
  }
  return secret;
}

// `state_json` gzipped and split into `pieces` chunk Secrets.
inline std::vector<nlohmann::json> stateSecrets(std::string_view suffix,
                                                std::string_view state_json, std::size_t pieces = 1,
                                                std::string_view inputs_hash = {}) {
  const std::string compressed = gzip(state_json);
  std::vector<nlohmann::json> out;
  const std::size_t size = (compressed.size() + pieces - 1) / pieces;
  for (std::size_t i = 0; i < pieces; ++i) {
    const std::size_t at = std::min(i * size, compressed.size());
    out.push_back(stateSecret(suffix, i, std::string_view(compressed).substr(at, size),
                              i == 0 ? inputs_hash : std::string_view()));
  }
  return out;
}

} // namespace captf::workspace::testing
