#pragma once

// The one JSON-to-YAML emitter of the tree (yaml-cpp underneath): the
// generated CRDs (manager/api/crd.h) and the webhook configuration
// (webhooks/registrations.h) are JSON documents written as YAML.

#include <string>

#include <nlohmann/json.hpp>

namespace captf::api {

// How toYaml writes strings.
enum class YamlStrings {
  // Plain where a YAML 1.1 or 1.2 reader reads a string back; double-quoted
  // where it would take the plain scalar for a boolean, a null or a number.
  kPlainWhereUnambiguous,
  // Always double-quoted.
  kDoubleQuoted,
};

// `doc` as one YAML document: block style with a two-space indent, keys in
// the JSON's order (nlohmann::json sorts them), empty maps and sequences as
// `{}` and `[]`, ending in a newline.
[[nodiscard]] std::string toYaml(const nlohmann::json& doc, YamlStrings strings);

} // namespace captf::api
