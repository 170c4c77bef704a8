#pragma once

// YAML documents as the API server reads them, for the tests that compare
// shipped manifests and generated CRDs with JSON (test/manager/api,
// test/webhooks).

#include <nlohmann/json.hpp>
#include <yaml-cpp/yaml.h>

namespace captf::api::testing {

// Plain scalars resolve to bool, integer or null; quoted scalars stay
// strings.
nlohmann::json yamlToJson(const YAML::Node& n);

} // namespace captf::api::testing
