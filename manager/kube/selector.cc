#include "manager/kube/selector.h"

#include <algorithm>
#include <cctype>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "contract/status_macros.h"
#include "manager/kube/strings.h"

namespace captf::kube {
namespace {

using Operator = LabelSelector::Operator;

bool isKeyChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '-' || c == '_' || c == '.' ||
         c == '/';
}

// A small tokenizer over the selector grammar of k8s.io/apimachinery.
class Lexer {
public:
  explicit Lexer(std::string_view text) : text_(text) {}

  void skipSpace() {
    while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_])) != 0) {
      ++pos_;
    }
  }
  bool atEnd() {
    skipSpace();
    return pos_ >= text_.size();
  }
  bool consume(std::string_view token) {
    skipSpace();
    if (text_.substr(pos_, token.size()) == token) {
      pos_ += token.size();
      return true;
    }
    return false;
  }
  // Consumes a keyword ("in", "notin") only when followed by space or '('.
  bool consumeWord(std::string_view word) {
    skipSpace();
    if (text_.substr(pos_, word.size()) != word) {
      return false;
    }
    size_t end = pos_ + word.size();
    if (end < text_.size() && isKeyChar(text_[end])) {
      return false;
    }
    pos_ = end;
    return true;
  }
  std::string identifier() {
    skipSpace();
    size_t start = pos_;
    while (pos_ < text_.size() && isKeyChar(text_[pos_])) {
      ++pos_;
    }
    return std::string(text_.substr(start, pos_ - start));
  }
  size_t pos() const { return pos_; }

private:
  std::string_view text_;
  size_t pos_ = 0;
};

absl::Status syntaxError(std::string_view text, size_t pos, std::string_view what) {
  return absl::InvalidArgumentError(
      absl::StrCat("invalid label selector \"", av(text), "\" at ", pos, ": ", av(what)));
}

absl::Status validateKey(std::string_view key) {
  if (key.empty() || key.size() > 317) {
    return absl::InvalidArgumentError(absl::StrCat("invalid label key \"", av(key), "\""));
  }
  return absl::OkStatus();
}

const char* operatorText(Operator op) {
  switch (op) {
  case Operator::kEquals:
    return "=";
  case Operator::kNotEquals:
    return "!=";
  case Operator::kIn:
    return " in ";
  case Operator::kNotIn:
    return " notin ";
  case Operator::kExists:
  case Operator::kDoesNotExist:
    return "";
  }
  return "";
}

} // namespace

LabelSelector& LabelSelector::add(Requirement requirement) {
  std::sort(requirement.values.begin(), requirement.values.end());
  requirement.values.erase(std::unique(requirement.values.begin(), requirement.values.end()),
                           requirement.values.end());
  requirements_.push_back(std::move(requirement));
  std::stable_sort(requirements_.begin(), requirements_.end(),
                   [](const Requirement& a, const Requirement& b) { return a.key < b.key; });
  return *this;
}

absl::StatusOr<LabelSelector> LabelSelector::parse(std::string_view text) {
  LabelSelector selector;
  Lexer lexer(text);
  if (lexer.atEnd()) {
    return selector;
  }
  while (true) {
    Requirement requirement;
    if (lexer.consume("!")) {
      requirement.key = lexer.identifier();
      requirement.op = Operator::kDoesNotExist;
      if (auto status = validateKey(requirement.key); !status.ok()) {
        return syntaxError(text, lexer.pos(), sv(status.message()));
      }
    } else {
      requirement.key = lexer.identifier();
      if (auto status = validateKey(requirement.key); !status.ok()) {
        return syntaxError(text, lexer.pos(), sv(status.message()));
      }
      if (lexer.consume("==") || lexer.consume("=")) {
        requirement.op = Operator::kEquals;
        requirement.values.push_back(lexer.identifier());
      } else if (lexer.consume("!=")) {
        requirement.op = Operator::kNotEquals;
        requirement.values.push_back(lexer.identifier());
      } else if (bool not_in = lexer.consumeWord("notin"); not_in || lexer.consumeWord("in")) {
        requirement.op = not_in ? Operator::kNotIn : Operator::kIn;
        if (!lexer.consume("(")) {
          return syntaxError(text, lexer.pos(), "expected '('");
        }
        if (!lexer.consume(")")) {
          while (true) {
            requirement.values.push_back(lexer.identifier());
            if (lexer.consume(")")) {
              break;
            }
            if (!lexer.consume(",")) {
              return syntaxError(text, lexer.pos(), "expected ',' or ')'");
            }
          }
        }
        if (requirement.op == Operator::kIn && requirement.values.empty()) {
          return syntaxError(text, lexer.pos(), "'in' needs at least one value");
        }
      } else {
        requirement.op = Operator::kExists;
      }
    }
    selector.add(std::move(requirement));
    if (lexer.atEnd()) {
      break;
    }
    if (!lexer.consume(",")) {
      return syntaxError(text, lexer.pos(), "expected ','");
    }
  }
  return selector;
}

absl::StatusOr<LabelSelector> LabelSelector::fromJson(const Json& selector) {
  LabelSelector out;
  if (selector.is_null()) {
    return out;
  }
  if (!selector.is_object()) {
    return absl::InvalidArgumentError("label selector must be an object");
  }
  if (auto it = selector.find("matchLabels"); it != selector.end() && it->is_object()) {
    for (const auto& [key, value] : it->items()) {
      if (!value.is_string()) {
        return absl::InvalidArgumentError(absl::StrCat("matchLabels[", key, "] is not a string"));
      }
      out.add({key, Operator::kEquals, {value.get<std::string>()}});
    }
  }
  if (auto it = selector.find("matchExpressions"); it != selector.end() && it->is_array()) {
    for (const auto& expression : *it) {
      Requirement requirement;
      requirement.key = expression.value("key", "");
      std::string op = expression.value("operator", "");
      if (op == "In") {
        requirement.op = Operator::kIn;
      } else if (op == "NotIn") {
        requirement.op = Operator::kNotIn;
      } else if (op == "Exists") {
        requirement.op = Operator::kExists;
      } else if (op == "DoesNotExist") {
        requirement.op = Operator::kDoesNotExist;
      } else {
        return absl::InvalidArgumentError(absl::StrCat("unknown selector operator \"", op, "\""));
      }
      if (auto values = expression.find("values"); values != expression.end()) {
        for (const auto& value : *values) {
          requirement.values.push_back(value.get<std::string>());
        }
      }
      bool needs_values = requirement.op == Operator::kIn || requirement.op == Operator::kNotIn;
      if (needs_values == requirement.values.empty()) {
        return absl::InvalidArgumentError(absl::StrCat(
            "selector operator ", op, needs_values ? " needs" : " takes no", " values"));
      }
      CAPTF_RETURN_IF_ERROR(validateKey(requirement.key));
      out.add(std::move(requirement));
    }
  }
  return out;
}

bool LabelSelector::matches(const Json& labels) const {
  for (const auto& requirement : requirements_) {
    const Json* value = nullptr;
    if (labels.is_object()) {
      auto it = labels.find(requirement.key);
      if (it != labels.end() && it->is_string()) {
        value = &*it;
      }
    }
    auto contains = [&] {
      return value != nullptr &&
             std::binary_search(requirement.values.begin(), requirement.values.end(),
                                value->get_ref<const std::string&>());
    };
    switch (requirement.op) {
    case Operator::kEquals:
    case Operator::kIn:
      if (!contains()) {
        return false;
      }
      break;
    case Operator::kNotEquals:
    case Operator::kNotIn:
      // As in apimachinery: a missing key satisfies != and notin.
      if (contains()) {
        return false;
      }
      break;
    case Operator::kExists:
      if (value == nullptr) {
        return false;
      }
      break;
    case Operator::kDoesNotExist:
      if (value != nullptr) {
        return false;
      }
      break;
    }
  }
  return true;
}

std::string LabelSelector::str() const {
  std::vector<std::string> parts;
  for (const auto& requirement : requirements_) {
    switch (requirement.op) {
    case Operator::kExists:
      parts.push_back(requirement.key);
      break;
    case Operator::kDoesNotExist:
      parts.push_back(absl::StrCat("!", requirement.key));
      break;
    case Operator::kEquals:
    case Operator::kNotEquals:
      parts.push_back(
          absl::StrCat(requirement.key, operatorText(requirement.op), requirement.values.front()));
      break;
    case Operator::kIn:
    case Operator::kNotIn:
      parts.push_back(absl::StrCat(requirement.key, operatorText(requirement.op), "(",
                                   absl::StrJoin(requirement.values, ","), ")"));
      break;
    }
  }
  return absl::StrJoin(parts, ",");
}

absl::StatusOr<FieldSelector> FieldSelector::parse(std::string_view text) {
  FieldSelector selector;
  if (absl::StripAsciiWhitespace(av(text)).empty()) {
    return selector;
  }
  for (absl::string_view part : absl::StrSplit(av(text), ',')) {
    part = absl::StripAsciiWhitespace(part);
    Requirement requirement;
    size_t op = part.find("!=");
    size_t op_len = 2;
    requirement.equals = false;
    if (op == absl::string_view::npos) {
      requirement.equals = true;
      op = part.find("==");
      if (op == std::string_view::npos) {
        op = part.find('=');
        op_len = 1;
      }
    }
    if (op == absl::string_view::npos || op == 0) {
      return absl::InvalidArgumentError(absl::StrCat("invalid field selector \"", av(text), "\""));
    }
    requirement.field = std::string(absl::StripAsciiWhitespace(part.substr(0, op)));
    requirement.value = std::string(absl::StripAsciiWhitespace(part.substr(op + op_len)));
    selector.requirements_.push_back(std::move(requirement));
  }
  return selector;
}

bool FieldSelector::matches(const Json& object) const {
  for (const auto& requirement : requirements_) {
    const Json* field = fieldAt(object, requirement.field);
    std::string value;
    if (field != nullptr) {
      if (field->is_string()) {
        value = field->get<std::string>();
      } else if (!field->is_null()) {
        value = field->dump();
      }
    }
    if ((value == requirement.value) != requirement.equals) {
      return false;
    }
  }
  return true;
}

std::string FieldSelector::str() const {
  std::vector<std::string> parts;
  parts.reserve(requirements_.size());
  for (const auto& requirement : requirements_) {
    parts.push_back(
        absl::StrCat(requirement.field, requirement.equals ? "=" : "!=", requirement.value));
  }
  return absl::StrJoin(parts, ",");
}

} // namespace captf::kube
