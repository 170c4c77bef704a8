#pragma once

// The one reader of Kubernetes resource quantities (resource.Quantity's text
// form) in the tree. Image capacity labels (contract/image_labels.h,
// docs/contract.md "Image labels") and the byte sizes of the logging flags
// (contract/logging.h, docs/reference/logs.md) are views of it; the CRD
// schema's pattern (manager/api/quantity.cc) states the same grammar for
// the API server.

#include <optional>
#include <string_view>

namespace captf::contract {

// A quantity split into its parts, each a view into the parsed text:
// [sign] whole [. fraction] suffix, where at least one of whole and
// fraction has a digit and suffix is "", a binary suffix (Ki, Mi, Gi, Ti,
// Pi, Ei), a decimal one (n, u, m, k, M, G, T, P, E) or an exponent
// (e or E, an optional sign, digits).
struct QuantityParts {
  char sign = 0; // 0, '+' or '-'
  std::string_view whole;
  bool point = false; // a '.' was written ("1." has one and no fraction)
  std::string_view fraction;
  std::string_view suffix;
};

// nullopt when `text` is not a quantity (spaces, an unknown suffix, "1e").
std::optional<QuantityParts> parseQuantity(std::string_view text);

} // namespace captf::contract
