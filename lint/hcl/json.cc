#include "lint/hcl/json.h"

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <optional>
#include <string>
#include <utility>

#include <nlohmann/json.hpp>

#include "contract/json_error.h"
#include "contract/status_macros.h"
#include "contract/strings.h"

namespace captf::lint::hcl {

using contract::strCat;

const JsonValue* JsonValue::find(std::string_view key) const {
  const auto it = std::find_if(members.begin(), members.end(),
                               [&](const JsonMember& m) { return m.key == key; });
  return it == members.end() ? nullptr : &it->value;
}

namespace {

// Maps byte offsets to positions. Columns are counted from the nearest
// earlier lookup on the same line, so that the mostly increasing lookups of
// a parse stay linear even for a minified document on one long line.
class LineIndex {
public:
  explicit LineIndex(std::string_view source) : source_(source) {
    starts_.push_back(0);
    for (std::size_t i = 0; i < source.size(); ++i) {
      if (source[i] == '\n') {
        starts_.push_back(i + 1);
      }
    }
  }

  Pos at(std::size_t offset) {
    offset = std::min(offset, source_.size());
    const auto it = std::upper_bound(starts_.begin(), starts_.end(), offset);
    const auto line = static_cast<std::size_t>(std::distance(starts_.begin(), it));
    const std::size_t begin = starts_[line - 1];
    Pos from{static_cast<uint32_t>(line), 1, static_cast<uint32_t>(begin)};
    if (cached_.line == from.line && cached_.byte <= offset) {
      from = cached_;
    }
    cached_ = advancePos(from, source_.substr(from.byte, offset - from.byte));
    return cached_;
  }

private:
  std::string_view source_;
  std::vector<std::size_t> starts_;
  Pos cached_{0, 1, 0};
};

// A character iterator that records how far the JSON lexer has read, so that
// SAX callbacks (which carry no positions) can be placed in the source.
class CountingIterator {
public:
  using iterator_category = std::input_iterator_tag;
  using value_type = char;
  using difference_type = std::ptrdiff_t;
  using pointer = const char*;
  using reference = const char&;

  CountingIterator(const char* base, const char* p, std::size_t* consumed)
      : base_(base), p_(p), consumed_(consumed) {}

  reference operator*() const { return *p_; }
  CountingIterator& operator++() {
    ++p_;
    *consumed_ = static_cast<std::size_t>(p_ - base_);
    return *this;
  }
  CountingIterator operator++(int) {
    CountingIterator old = *this;
    ++*this;
    return old;
  }
  friend bool operator!=(const CountingIterator& a, const CountingIterator& b) {
    return a.p_ != b.p_;
  }

private:
  const char* base_;
  const char* p_;
  std::size_t* consumed_;
};

bool isNumberChar(char c) {
  return (c >= '0' && c <= '9') || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E';
}

// The SAX interface of nlohmann/json; its method names are fixed by the
// library, hence the naming exemptions below.
class TreeBuilder {
public:
  using json = nlohmann::json;

  TreeBuilder(std::string_view source, std::string_view filename, int max_depth,
              const std::size_t* consumed)
      : source_(source), filename_(filename), max_depth_(max_depth), consumed_(consumed),
        lines_(source) {}

  bool null() { return add(JsonValue::Type::kNull, lastTokenStart(4)); }
  bool boolean(bool v) {
    JsonValue* value = addValue(JsonValue::Type::kBool, lastTokenStart(v ? 4 : 5));
    value->boolean = v;
    return true;
  }
  // NOLINTNEXTLINE(readability-identifier-naming)
  bool number_integer(json::number_integer_t /*unused*/) { return number(); }
  // NOLINTNEXTLINE(readability-identifier-naming)
  bool number_unsigned(json::number_unsigned_t /*unused*/) { return number(); }
  // NOLINTNEXTLINE(readability-identifier-naming)
  bool number_float(json::number_float_t /*unused*/, const json::string_t& /*unused*/) {
    return number();
  }
  bool string(json::string_t& s) {
    JsonValue* value = addValue(JsonValue::Type::kString, stringStart());
    value->text = std::move(s);
    return true;
  }
  bool binary(json::binary_t& /*unused*/) { return fail(*consumed_, "binary values are not JSON"); }
  // NOLINTNEXTLINE(readability-identifier-naming)
  bool start_object(std::size_t /*unused*/) { return open(JsonValue::Type::kObject); }
  // NOLINTNEXTLINE(readability-identifier-naming)
  bool end_object() {
    stack_.pop_back();
    return true;
  }
  // NOLINTNEXTLINE(readability-identifier-naming)
  bool start_array(std::size_t /*unused*/) { return open(JsonValue::Type::kArray); }
  // NOLINTNEXTLINE(readability-identifier-naming)
  bool end_array() {
    stack_.pop_back();
    return true;
  }
  bool key(json::string_t& k) {
    JsonValue* object = stack_.back();
    object->members.push_back(JsonMember{std::move(k), lines_.at(stringStart()), JsonValue{}});
    return true;
  }
  // NOLINTNEXTLINE(readability-identifier-naming)
  bool parse_error(std::size_t position, const std::string& /*last_token*/,
                   const nlohmann::detail::exception& ex) {
    // The kind only (the position is the diagnostic's): nlohmann's message
    // quotes what it read.
    return fail(position > 0 ? position - 1 : 0,
                strCat("invalid JSON: ", contract::jsonErrorKind(ex)));
  }

  absl::StatusOr<JsonValue> result() {
    if (!error_.ok()) {
      return error_;
    }
    return std::move(root_);
  }
  bool failed() const { return !error_.ok(); }

private:
  bool fail(std::size_t offset, std::string_view message) {
    if (error_.ok()) {
      error_ = syntaxError(filename_, lines_.at(offset), message);
    }
    return false;
  }

  // Offset of the keyword that ends at the last consumed byte.
  std::size_t lastTokenStart(std::size_t length) const {
    return *consumed_ >= length ? *consumed_ - length : 0;
  }

  // The opening quote of the string whose closing quote was just consumed.
  std::size_t stringStart() const {
    if (*consumed_ < 2) {
      return 0;
    }
    std::size_t i = *consumed_ - 2; // the byte before the closing quote
    while (true) {
      if (source_[i] == '"') {
        std::size_t backslashes = 0;
        while (i >= backslashes + 1 && source_[i - backslashes - 1] == '\\') {
          ++backslashes;
        }
        if (backslashes % 2 == 0) {
          return i;
        }
      }
      if (i == 0) {
        return 0;
      }
      --i;
    }
  }

  bool number() {
    // The lexer may have read one byte past the number.
    std::size_t end = *consumed_;
    if (end > 0 && !isNumberChar(source_[end - 1])) {
      --end;
    }
    std::size_t begin = end;
    while (begin > 0 && isNumberChar(source_[begin - 1])) {
      --begin;
    }
    JsonValue* value = addValue(JsonValue::Type::kNumber, begin);
    value->text = std::string(source_.substr(begin, end - begin));
    return true;
  }

  bool open(JsonValue::Type type) {
    if (std::cmp_greater_equal(stack_.size(), max_depth_)) {
      return fail(lastTokenStart(1),
                  strCat("JSON nesting is too deep: more than ", max_depth_, " levels"));
    }
    stack_.push_back(addValue(type, lastTokenStart(1)));
    return true;
  }

  bool add(JsonValue::Type type, std::size_t offset) {
    addValue(type, offset);
    return true;
  }

  // Places a new value: the root, the next array element, or the value of
  // the member whose key was just read.
  JsonValue* addValue(JsonValue::Type type, std::size_t offset) {
    JsonValue* slot = nullptr;
    if (stack_.empty()) {
      slot = &root_;
    } else if (JsonValue* parent = stack_.back(); parent->type == JsonValue::Type::kArray) {
      parent->elements.emplace_back();
      slot = &parent->elements.back();
    } else {
      slot = &parent->members.back().value;
    }
    slot->type = type;
    slot->pos = lines_.at(offset);
    return slot;
  }

  std::string_view source_;
  std::string_view filename_;
  int max_depth_;
  const std::size_t* consumed_;
  LineIndex lines_;
  JsonValue root_;
  std::vector<JsonValue*> stack_;
  absl::Status error_;
};

void appendJson(std::string& out, const JsonValue& v) {
  switch (v.type) {
  case JsonValue::Type::kNull:
    out += "null";
    return;
  case JsonValue::Type::kBool:
    out += v.boolean ? "true" : "false";
    return;
  case JsonValue::Type::kNumber:
    out += v.text;
    return;
  case JsonValue::Type::kString:
    out += nlohmann::json(v.text).dump();
    return;
  case JsonValue::Type::kArray:
    out += '[';
    for (std::size_t i = 0; i < v.elements.size(); ++i) {
      if (i > 0) {
        out += ',';
      }
      appendJson(out, v.elements[i]);
    }
    out += ']';
    return;
  case JsonValue::Type::kObject:
    out += '{';
    for (std::size_t i = 0; i < v.members.size(); ++i) {
      if (i > 0) {
        out += ',';
      }
      out += nlohmann::json(v.members[i].key).dump();
      out += ':';
      appendJson(out, v.members[i].value);
    }
    out += '}';
    return;
  }
}

} // namespace

absl::StatusOr<JsonValue> parseJson(std::string_view source, std::string_view filename,
                                    int max_depth) {
  CAPTF_RETURN_IF_ERROR(validateUtf8(source, filename, Pos{}));
  std::size_t consumed = 0;
  TreeBuilder builder(source, filename, max_depth, &consumed);
  const char* base = source.data();
  CountingIterator first(base, base, &consumed);
  CountingIterator last(base, base + source.size(), &consumed);
  bool ok = false;
  try {
    ok = nlohmann::json::sax_parse(first, last, &builder);
  } catch (const nlohmann::json::exception& e) {
    return syntaxError(filename, Pos{}, strCat("invalid JSON: ", contract::jsonErrorKind(e)));
  }
  if (!ok && !builder.failed()) {
    return syntaxError(filename, Pos{}, "invalid JSON");
  }
  return builder.result();
}

absl::StatusOr<ExprPtr> jsonToExpression(const JsonValue& value, std::string_view filename,
                                         const ParseOptions& options) {
  const SourceRange range{value.pos, value.pos};
  switch (value.type) {
  case JsonValue::Type::kNull:
    return std::make_unique<LiteralExpr>(range, LiteralType::kNull);
  case JsonValue::Type::kBool: {
    auto lit = std::make_unique<LiteralExpr>(range, LiteralType::kBool);
    lit->bool_value = value.boolean;
    return lit;
  }
  case JsonValue::Type::kNumber: {
    auto lit = std::make_unique<LiteralExpr>(range, LiteralType::kNumber);
    lit->text = value.text;
    return lit;
  }
  case JsonValue::Type::kString: {
    Pos start = value.pos;
    ++start.column; // past the opening quote
    ++start.byte;
    return parseTemplate(value.text, filename, options, start);
  }
  case JsonValue::Type::kArray: {
    auto tuple = std::make_unique<TupleExpr>(range);
    for (const JsonValue& element : value.elements) {
      CAPTF_ASSIGN_OR_RETURN(ExprPtr e, jsonToExpression(element, filename, options));
      tuple->elements.push_back(std::move(e));
    }
    return tuple;
  }
  case JsonValue::Type::kObject: {
    auto object = std::make_unique<ObjectExpr>(range);
    for (const JsonMember& member : value.members) {
      ObjectItem item;
      Pos key_start = member.pos;
      ++key_start.column;
      ++key_start.byte;
      CAPTF_ASSIGN_OR_RETURN(item.key, parseTemplate(member.key, filename, options, key_start));
      CAPTF_ASSIGN_OR_RETURN(item.value, jsonToExpression(member.value, filename, options));
      object->items.push_back(std::move(item));
    }
    return object;
  }
  }
  return absl::InternalError("unknown JSON value type");
}

std::string jsonToString(const JsonValue& value) {
  std::string out;
  appendJson(out, value);
  return out;
}

} // namespace captf::lint::hcl
