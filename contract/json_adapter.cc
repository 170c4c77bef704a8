#include "contract/json_adapter.h"

#include "absl/status/status.h"
#include "contract/json_error.h"
#include "contract/strings.h"

namespace captf::contract {

absl::StatusOr<nlohmann::json> parseJson(std::string_view text, std::string_view what) {
  try {
    return nlohmann::json::parse(text.begin(), text.end());
  } catch (const nlohmann::json::exception& error) {
    return absl::InvalidArgumentError(strCat(what, ": ", jsonErrorText(error)));
  }
}

bool saxParseJson(std::istream& in, nlohmann::json_sax<nlohmann::json>& handler) {
  try {
    return nlohmann::json::sax_parse(in, &handler);
  } catch (const nlohmann::json::exception& error) {
    // The JSON reader reports its errors through the handler; should it
    // throw all the same, the handler hears of it the same way.
    return handler.parse_error(0, std::string(), error);
  }
}

absl::StatusOr<std::string> dumpJson(const nlohmann::json& value, JsonLayout layout,
                                     std::string_view what) {
  try {
    return value.dump(layout == JsonLayout::kIndented ? 2 : -1, ' ', /*ensure_ascii=*/false,
                      nlohmann::json::error_handler_t::strict);
  } catch (const nlohmann::json::exception& error) {
    // type_error.316 quotes the offending byte; say only what is wrong.
    return absl::InvalidArgumentError(
        strCat(what, ": cannot serialize: ",
               error.id == 316 ? "a string is not valid UTF-8" : "not serializable"));
  }
}

} // namespace captf::contract
