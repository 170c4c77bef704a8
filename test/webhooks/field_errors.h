#pragma once

#include <string>
#include <vector>

#include "webhooks/field_error.h"

namespace captf::webhooks::testing {

// Each error as the API server would print it, in order: what a validator
// test compares against its table.
inline std::vector<std::string> strings(const FieldErrorList& errors) {
  std::vector<std::string> out;
  for (const FieldError& e : errors) {
    out.push_back(toString(e));
  }
  return out;
}

} // namespace captf::webhooks::testing
