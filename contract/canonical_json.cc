#include "contract/canonical_json.h"

#include <algorithm>
#include <cstdint>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "absl/status/status.h"
#include "contract/strings.h"
#include "contract/text.h"

namespace captf::contract {
namespace {

class Writer {
public:
  absl::Status write(const nlohmann::json& value, const std::string& path) {
    switch (value.type()) {
    case nlohmann::json::value_t::null:
      out_ += "null";
      return absl::OkStatus();
    case nlohmann::json::value_t::boolean:
      out_ += value.get<bool>() ? "true" : "false";
      return absl::OkStatus();
    case nlohmann::json::value_t::number_integer:
      out_ += std::to_string(value.get<std::int64_t>());
      return absl::OkStatus();
    case nlohmann::json::value_t::number_unsigned:
      out_ += std::to_string(value.get<std::uint64_t>());
      return absl::OkStatus();
    case nlohmann::json::value_t::number_float:
      return absl::InvalidArgumentError(strCat(
          displayPath(path), ": fractional or exponent number; only integers can be hashed (export "
                             "numbers as integers or strings)"));
    case nlohmann::json::value_t::string:
      return writeString(value.get_ref<const std::string&>(), path);
    case nlohmann::json::value_t::array: {
      out_ += '[';
      std::size_t index = 0;
      for (const auto& element : value) {
        if (index > 0) {
          out_ += ',';
        }
        if (auto status = write(element, strCat(path, "[", index, "]")); !status.ok()) {
          return status;
        }
        ++index;
      }
      out_ += ']';
      return absl::OkStatus();
    }
    case nlohmann::json::value_t::object: {
      std::vector<const std::string*> keys;
      keys.reserve(value.size());
      for (const auto& item : value.items()) {
        keys.push_back(&item.key());
      }
      // std::string compares bytes as unsigned char: UTF-8 byte order.
      std::sort(keys.begin(), keys.end(),
                [](const std::string* a, const std::string* b) { return *a < *b; });
      out_ += '{';
      bool first = true;
      for (const std::string* key : keys) {
        if (!first) {
          out_ += ',';
        }
        first = false;
        const std::string child = path.empty() ? *key : strCat(path, ".", *key);
        if (auto status = writeString(*key, child); !status.ok()) {
          return status;
        }
        out_ += ':';
        if (auto status = write(value.at(*key), child); !status.ok()) {
          return status;
        }
      }
      out_ += '}';
      return absl::OkStatus();
    }
    case nlohmann::json::value_t::binary:
    case nlohmann::json::value_t::discarded:
      break;
    }
    return absl::InvalidArgumentError(
        strCat(displayPath(path), ": value has no JSON representation"));
  }

  std::string take() { return std::move(out_); }

private:
  static std::string displayPath(const std::string& path) {
    return path.empty() ? std::string("value") : path;
  }

  absl::Status writeString(std::string_view text, const std::string& path) {
    static constexpr std::string_view kHex = "0123456789abcdef";
    out_ += '"';
    std::size_t i = 0;
    while (i < text.size()) {
      const auto byte = static_cast<unsigned char>(text[i]);
      if (byte >= 0x80U) {
        const std::size_t length = utf8SequenceLength(text, i);
        if (length == 0) {
          return absl::InvalidArgumentError(
              strCat(displayPath(path), ": invalid UTF-8 at byte ", i, " of a string"));
        }
        out_.append(text.substr(i, length));
        i += length;
        continue;
      }
      switch (byte) {
      case '"':
        out_ += "\\\"";
        break;
      case '\\':
        out_ += "\\\\";
        break;
      case '\b':
        out_ += "\\b";
        break;
      case '\f':
        out_ += "\\f";
        break;
      case '\n':
        out_ += "\\n";
        break;
      case '\r':
        out_ += "\\r";
        break;
      case '\t':
        out_ += "\\t";
        break;
      default:
        if (byte < 0x20U) {
          out_ += "\\u00";
          out_ += kHex[byte >> 4U];
          out_ += kHex[byte & 0x0FU];
        } else {
          out_ += static_cast<char>(byte);
        }
      }
      ++i;
    }
    out_ += '"';
    return absl::OkStatus();
  }

  std::string out_;
};

} // namespace

absl::StatusOr<std::string> canonicalJson(const nlohmann::json& value) {
  Writer writer;
  if (auto status = writer.write(value, ""); !status.ok()) {
    return status;
  }
  return writer.take();
}

} // namespace captf::contract
