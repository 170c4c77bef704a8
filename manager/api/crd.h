#pragma once

// CustomResourceDefinitions of the seven kinds, generated from the API type
// descriptions (see describe.h). crdgen writes them to config/crd/bases; a
// unit test fails when the committed files differ from this output.

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "manager/api/schema.h"

namespace captf::api {

struct PrinterColumn {
  std::string name;
  std::string type; // string, integer, boolean, date
  std::string json_path;
  std::string description;
  std::int32_t priority = 0; // 0: default view; 1: only with -o wide
};

enum class Scope { kNamespaced, kCluster };

struct CrdInfo {
  std::string kind;
  std::string plural;
  std::vector<std::string> short_names;
  Scope scope = Scope::kNamespaced;
  bool status_subresource = false;
  std::vector<PrinterColumn> columns;
  // Labels beyond the ones every CRD carries (provider and contract labels).
  std::vector<std::pair<std::string, std::string>> extra_labels;
  Schema schema;
};

// The seven CRDs, in a fixed order.
[[nodiscard]] std::vector<CrdInfo> allCrds();

// The CustomResourceDefinition object.
[[nodiscard]] nlohmann::json crdToJson(const CrdInfo& crd);

// The CRD as a YAML document, with a generated-file header.
[[nodiscard]] std::string renderCrdYaml(const CrdInfo& crd);

// "infrastructure.cluster.x-k8s.io_<plural>.yaml".
[[nodiscard]] std::string crdFileName(const CrdInfo& crd);

// config/crd/kustomization.yaml listing every CRD file.
[[nodiscard]] std::string renderKustomization(const std::vector<CrdInfo>& crds);

// docs/reference/api.md: every field of every kind with its type,
// constraints and description, from the same schemas as the CRDs.
[[nodiscard]] std::string renderApiReference(const std::vector<CrdInfo>& crds);

} // namespace captf::api
