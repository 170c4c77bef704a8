#include "runner/diagnostics.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <vector>

#include "contract/json_adapter.h"
#include "contract/result.h"
#include "contract/strings.h"
#include "contract/text.h"
#include "runner/json_fields.h"

namespace captf::runner {
namespace {

namespace pb = ::captf::runner::v1alpha1;

constexpr char kEscape = '\x1b';
// The runtimes' diagnostic gutter: ╷ (U+2577), │ (U+2502), ╵ (U+2575).
constexpr std::string_view kBoxTop = "\xE2\x95\xB7";
constexpr std::string_view kBoxSide = "\xE2\x94\x82";
constexpr std::string_view kBoxBottom = "\xE2\x95\xB5";
constexpr std::string_view kErrorPrefix = "Error: ";
constexpr std::string_view kWarningPrefix = "Warning: ";

std::string_view trimRight(std::string_view text) {
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back())) != 0) {
    text.remove_suffix(1);
  }
  return text;
}

std::string_view trim(std::string_view text) {
  text = trimRight(text);
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front())) != 0) {
    text.remove_prefix(1);
  }
  return text;
}

std::string stripEscapes(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] != kEscape) {
      out += text[i];
      continue;
    }
    if (i + 1 >= text.size()) {
      break;
    }
    const char kind = text[i + 1];
    if (kind == '[') {
      // CSI: parameters and intermediates, then one final byte in @..~.
      std::size_t j = i + 2;
      while (j < text.size() && (text[j] < '@' || text[j] > '~')) {
        ++j;
      }
      i = j;
    } else if (kind == ']') {
      // OSC: up to BEL or ESC backslash.
      std::size_t j = i + 2;
      while (j < text.size() && text[j] != '\a' &&
             !(text[j] == kEscape && j + 1 < text.size() && text[j + 1] == '\\')) {
        ++j;
      }
      i = (j < text.size() && text[j] == kEscape) ? j + 1 : j;
    } else {
      ++i;
    }
  }
  return out;
}

// A line without its gutter; `closes` is set for the bottom corner.
std::string_view stripGutter(std::string_view line, bool& closes) {
  closes = false;
  if (line.starts_with(kBoxBottom)) {
    closes = true;
    return {};
  }
  if (line.starts_with(kBoxTop)) {
    return {};
  }
  if (line.starts_with(kBoxSide)) {
    line.remove_prefix(kBoxSide.size());
    if (!line.empty() && line.front() == ' ') {
      line.remove_prefix(1);
    }
  }
  return line;
}

std::vector<std::string_view> splitLines(std::string_view text) {
  std::vector<std::string_view> lines;
  std::size_t start = 0;
  while (start < text.size()) {
    const auto end = std::min(text.find('\n', start), text.size());
    lines.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return lines;
}

// "on main.tf line 3, in resource ...:" → "main.tf line 3".
std::string locationOf(std::string_view line) {
  line = trim(line);
  if (!line.starts_with("on ")) {
    return {};
  }
  line.remove_prefix(3);
  const auto marker = line.find(" line ");
  if (marker == std::string_view::npos) {
    return {};
  }
  std::size_t end = marker + 6;
  while (end < line.size() && std::isdigit(static_cast<unsigned char>(line[end])) != 0) {
    ++end;
  }
  if (end == marker + 6) {
    return {};
  }
  return std::string(line.substr(0, end));
}

void addDistinct(std::vector<std::string>& entries, std::string entry) {
  if (std::find(entries.begin(), entries.end(), entry) == entries.end()) {
    entries.push_back(std::move(entry));
  }
}

std::uint32_t parseCount(std::string_view digits, bool& ok) {
  std::uint32_t value = 0;
  const auto result = std::from_chars(digits.data(), digits.data() + digits.size(), value);
  ok = result.ec == std::errc() && result.ptr == digits.data() + digits.size();
  return value;
}

} // namespace

std::string stripTerminalDecoration(std::string_view text) {
  const std::string plain = stripEscapes(text);
  std::string out;
  out.reserve(plain.size());
  for (const std::string_view line : splitLines(plain)) {
    bool closes = false;
    out.append(stripGutter(line, closes));
    out += '\n';
  }
  return out;
}

DiagnosticText diagnosticsFromStderr(std::string_view stderr_text) {
  const std::string plain = stripEscapes(stderr_text);
  std::vector<std::string> summaries;
  std::vector<std::string> blocks;
  std::string header;
  std::string location;
  std::string body;
  bool in_block = false;
  const auto close_block = [&] {
    if (!in_block) {
      return;
    }
    addDistinct(summaries,
                location.empty() ? header : contract::strCat(header, " (", location, ")"));
    blocks.push_back(contract::strCat("Error: ", header, "\n", trimRight(body)));
    in_block = false;
  };
  for (const std::string_view raw : splitLines(plain)) {
    bool closes = false;
    const std::string_view line = stripGutter(trimRight(raw), closes);
    if (line.starts_with(kErrorPrefix)) {
      close_block();
      in_block = true;
      header = std::string(trim(line.substr(kErrorPrefix.size())));
      location.clear();
      body.clear();
      continue;
    }
    if (closes || line.starts_with(kWarningPrefix)) {
      close_block();
      continue;
    }
    if (in_block) {
      if (location.empty()) {
        location = locationOf(line);
      }
      body.append(line);
      body += '\n';
    }
  }
  close_block();
  DiagnosticText text;
  text.summary = contract::strJoin(summaries, "; ");
  text.tail = contract::strJoin(blocks, "\n\n");
  return text;
}

DiagnosticText diagnosticsFromValidateJson(std::string_view json_text) {
  DiagnosticText text;
  auto parsed = contract::parseJson(json_text, "validate output");
  if (!parsed.ok()) {
    return text;
  }
  const nlohmann::json document = *std::move(parsed);
  const nlohmann::json& diagnostics = member(document, "diagnostics");
  if (!diagnostics.is_array()) {
    return text;
  }
  std::vector<std::string> summaries;
  std::vector<std::string> blocks;
  for (const nlohmann::json& diagnostic : diagnostics) {
    if (stringMember(diagnostic, "severity").value_or("") != "error") {
      continue;
    }
    const std::string summary = stringMember(diagnostic, "summary").value_or("");
    const std::string detail = stringMember(diagnostic, "detail").value_or("");
    const nlohmann::json& range = member(diagnostic, "range");
    const std::string filename = stringMember(range, "filename").value_or("");
    const std::int64_t line = integerMember(member(range, "start"), "line").value_or(0);
    std::string location;
    if (!filename.empty()) {
      location = line > 0 ? contract::strCat(filename, " line ", line) : filename;
    }
    addDistinct(summaries,
                location.empty() ? summary : contract::strCat(summary, " (", location, ")"));
    std::string block = contract::strCat("Error: ", summary);
    if (!location.empty()) {
      block += contract::strCat("\n  on ", location);
    }
    if (!detail.empty()) {
      block += contract::strCat("\n\n", detail);
    }
    blocks.push_back(std::move(block));
  }
  text.summary = contract::strJoin(summaries, "; ");
  text.tail = contract::strJoin(blocks, "\n\n");
  return text;
}

std::optional<pb::ResourceChanges> parseChangeSummary(std::string_view line) {
  line = trim(line);
  if (!line.starts_with("Apply complete!") && !line.starts_with("Destroy complete!")) {
    return std::nullopt;
  }
  const auto marker = line.find("Resources: ");
  if (marker == std::string_view::npos) {
    return std::nullopt;
  }
  std::string_view rest = line.substr(marker + 11);
  if (!rest.empty() && rest.back() == '.') {
    rest.remove_suffix(1);
  }
  pb::ResourceChanges changes;
  bool any = false;
  std::size_t start = 0;
  while (start < rest.size()) {
    const auto end = std::min(rest.find(',', start), rest.size());
    const std::string_view item = trim(rest.substr(start, end - start));
    start = end + 1;
    const auto space = item.find(' ');
    if (space == std::string_view::npos) {
      return std::nullopt;
    }
    bool ok = false;
    const std::uint32_t count = parseCount(item.substr(0, space), ok);
    if (!ok) {
      return std::nullopt;
    }
    const std::string_view what = item.substr(space + 1);
    if (what == "added") {
      changes.set_add(count);
    } else if (what == "changed") {
      changes.set_change(count);
    } else if (what == "destroyed") {
      changes.set_destroy(count);
    } else if (what == "imported") {
      changes.set_import(count);
    }
    // Other words (a newer runtime's "forgotten") are not counted.
    any = true;
  }
  if (!any) {
    return std::nullopt;
  }
  return changes;
}

Failure stepFailure(pb::Step step, int exit_code, const DiagnosticText& text,
                    const Redactor& redactor) {
  Failure failure;
  failure.summary = text.summary.empty() ? contract::fallbackSummary(step, exit_code)
                                         : boundedSummary(text.summary, redactor);
  failure.tail = contract::clipText(contract::sanitizeUtf8(redactor.redact(text.tail)),
                                    contract::kMaxTailBytes);
  return failure;
}

std::string boundedSummary(std::string_view summary, const Redactor& redactor) {
  return contract::clipText(contract::sanitizeUtf8(redactor.redact(summary)),
                            contract::kMaxSummaryBytes);
}

} // namespace captf::runner
