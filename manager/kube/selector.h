#pragma once

// Label and field selectors with the API server's grammar and semantics, so
// the same selector string filters server-side (list/watch) and in the cache.

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "manager/kube/object.h"

namespace captf::kube {

class LabelSelector {
public:
  enum class Operator { kEquals, kNotEquals, kIn, kNotIn, kExists, kDoesNotExist };
  struct Requirement {
    std::string key;
    Operator op = Operator::kEquals;
    std::vector<std::string> values; // sorted
    bool operator==(const Requirement&) const = default;
  };

  // The empty selector matches everything.
  LabelSelector() = default;

  // Parses the string form: "a=b,c!=d,e in (x,y),f notin (z),g,!h".
  static absl::StatusOr<LabelSelector> parse(std::string_view text);
  // Converts a metav1.LabelSelector object (matchLabels, matchExpressions).
  // A null/absent selector matches everything, like an empty one.
  static absl::StatusOr<LabelSelector> fromJson(const Json& selector);

  bool empty() const { return requirements_.empty(); }
  bool matches(const Json& labels) const;
  const std::vector<Requirement>& requirements() const { return requirements_; }
  // Canonical string form (requirements sorted by key), for query parameters.
  std::string str() const;

  LabelSelector& add(Requirement requirement);

private:
  std::vector<Requirement> requirements_;
};

// Field selectors: comma-separated "path=value", "path==value", "path!=value".
class FieldSelector {
public:
  struct Requirement {
    std::string field; // e.g. "metadata.name", "spec.nodeName"
    bool equals = true;
    std::string value;
  };

  static absl::StatusOr<FieldSelector> parse(std::string_view text);
  bool empty() const { return requirements_.empty(); }
  // Compares each field as the API server does: a missing field reads as "".
  bool matches(const Json& object) const;
  const std::vector<Requirement>& requirements() const { return requirements_; }
  std::string str() const;

private:
  std::vector<Requirement> requirements_;
};

} // namespace captf::kube
