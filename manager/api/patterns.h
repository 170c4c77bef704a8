#pragma once

#include <string_view>

namespace captf::api {

// RFC 1123 subdomain: the names of Secrets, ConfigMaps and most objects.
inline constexpr std::string_view kDnsSubdomainPattern =
    R"(^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$)";
// RFC 1123 label: namespace names.
inline constexpr std::string_view kDnsLabelPattern = R"(^[a-z0-9]([-a-z0-9]*[a-z0-9])?$)";
// A Terraform identifier: the names of module input variables.
inline constexpr std::string_view kTerraformIdentifierPattern = R"(^[a-zA-Z_][a-zA-Z0-9_-]*$)";

} // namespace captf::api
