#pragma once

#include <array>
#include <optional>
#include <string_view>
#include <utility>

namespace captf::api {

// Specialized for every API enum with
//   static constexpr std::array<std::pair<E, std::string_view>, N> kValues;
// listing each enumerator with its wire name, in the order the CRD schema
// shows them. The wire names are the API; enumerators are C++ only.
template <class E> struct EnumNames;

template <class E> [[nodiscard]] constexpr std::string_view enumName(E v) {
  for (const auto& [e, name] : EnumNames<E>::kValues) {
    if (e == v) {
      return name;
    }
  }
  return {};
}

template <class E> [[nodiscard]] constexpr std::optional<E> parseEnum(std::string_view s) {
  for (const auto& [e, name] : EnumNames<E>::kValues) {
    if (name == s) {
      return e;
    }
  }
  return std::nullopt;
}

} // namespace captf::api
