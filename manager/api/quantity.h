#pragma once

#include <string>

#include "manager/api/codec.h"

namespace captf::api {

// resource.Quantity ("250m", "512Mi", 2). Kept in its textual form: CAPTF
// only copies quantities into Job specs and never does arithmetic on them.
// A JSON number decodes to its decimal text.
struct Quantity {
  std::string value;

  friend bool operator==(const Quantity&, const Quantity&) = default;
};

CAPTF_API_DECLARE_CODEC(Quantity);

} // namespace captf::api
