#include "contract/json_adapter.h"

#include "absl/status/status.h"
#include "contract/strings.h"

namespace captf::contract {

absl::StatusOr<nlohmann::json> parseJson(std::string_view text, std::string_view what) {
  try {
    return nlohmann::json::parse(text.begin(), text.end());
  } catch (const nlohmann::json::parse_error& error) {
    // nlohmann's message already says "parse error at line L, column C: ...".
    return absl::InvalidArgumentError(
        strCat(what, ": invalid JSON at byte ", error.byte, ": ", error.what()));
  } catch (const nlohmann::json::exception& error) {
    return absl::InvalidArgumentError(strCat(what, ": invalid JSON: ", error.what()));
  }
}

absl::StatusOr<std::string> dumpJson(const nlohmann::json& value, JsonLayout layout,
                                     std::string_view what) {
  try {
    return value.dump(layout == JsonLayout::kIndented ? 2 : -1, ' ', /*ensure_ascii=*/false,
                      nlohmann::json::error_handler_t::strict);
  } catch (const nlohmann::json::exception& error) {
    return absl::InvalidArgumentError(strCat(what, ": cannot serialize: ", error.what()));
  }
}

} // namespace captf::contract
