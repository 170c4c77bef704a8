#pragma once

// Reading the JSON documents the API server sends (AdmissionReview,
// SubjectAccessReview, TokenReview): shape errors that name the field path.
// Shared by the delegated authorization here and the webhooks' decoding.

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "absl/status/status.h"

namespace captf::kube {

// InvalidArgument "<field>: expected <want>".
absl::Status jsonShapeError(std::string_view field, std::string_view want);

// Reads the optional string member `key` of `obj` (at `path`) into `out`;
// absent or null leaves `out` as it is; any other type is a shape error.
absl::Status readOptionalString(const nlohmann::json& obj, const char* key, std::string_view path,
                                std::string& out);

} // namespace captf::kube
