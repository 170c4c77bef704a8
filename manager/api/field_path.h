#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace captf::api {

// A path to a field of an API object in the notation Kubernetes uses in
// field errors and Status causes: "spec.jobs.env[2].name",
// "spec.variables[region]". Values are cheap to copy; every operation returns
// a new path and never changes the receiver.
class FieldPath {
public:
  FieldPath() = default;
  explicit FieldPath(std::string_view root) : path_(root) {}

  // "a" -> "a.b"; the empty path -> "b".
  [[nodiscard]] FieldPath child(std::string_view name) const;
  // "a" -> "a[3]".
  [[nodiscard]] FieldPath index(std::size_t i) const;
  // "a" -> "a[key]": a map key, written verbatim as Kubernetes does.
  [[nodiscard]] FieldPath key(std::string_view k) const;

  [[nodiscard]] const std::string& str() const { return path_; }
  [[nodiscard]] bool empty() const { return path_.empty(); }

  friend bool operator==(const FieldPath&, const FieldPath&) = default;

private:
  std::string path_;
};

} // namespace captf::api
