#include "manager/api/field_path.h"

namespace captf::api {

FieldPath FieldPath::child(std::string_view name) const {
  FieldPath out(*this);
  if (!out.path_.empty()) {
    out.path_ += '.';
  }
  out.path_ += name;
  return out;
}

FieldPath FieldPath::index(std::size_t i) const {
  FieldPath out(*this);
  out.path_ += '[';
  out.path_ += std::to_string(i);
  out.path_ += ']';
  return out;
}

FieldPath FieldPath::key(std::string_view k) const {
  FieldPath out(*this);
  out.path_ += '[';
  out.path_ += k;
  out.path_ += ']';
  return out;
}

} // namespace captf::api
