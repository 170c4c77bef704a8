#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "lint/hcl/source.h"

namespace captf::lint::hcl {

enum class TokenType : uint8_t {
  kOBrace,          // {
  kCBrace,          // }
  kOBrack,          // [
  kCBrack,          // ]
  kOParen,          // (
  kCParen,          // )
  kOQuote,          // " opening a quoted template
  kCQuote,          // " closing a quoted template
  kOHeredoc,        // <<EOT or <<-EOT, with its newline
  kCHeredoc,        // the closing marker line (without its newline)
  kStar,            // *
  kSlash,           // /
  kPlus,            // +
  kMinus,           // -
  kPercent,         // %
  kEqual,           // =
  kEqualOp,         // ==
  kNotEqual,        // !=
  kLessThan,        // <
  kLessThanEq,      // <=
  kGreaterThan,     // >
  kGreaterThanEq,   // >=
  kAnd,             // &&
  kOr,              // ||
  kBang,            // !
  kDot,             // .
  kComma,           // ,
  kDoubleColon,     // :: (namespaced function names)
  kEllipsis,        // ...
  kFatArrow,        // =>
  kQuestion,        // ?
  kColon,           // :
  kTemplateInterp,  // ${ (or ${~)
  kTemplateControl, // %{ (or %{~)
  kTemplateSeqEnd,  // } (or ~}) closing a template sequence
  kQuotedLit,       // literal text of a quoted template, escapes not yet decoded
  kStringLit,       // literal text of a heredoc or bare template (at most one line)
  kNumberLit,
  kIdent,
  kNewline,
  kEOF,
};

struct Token {
  TokenType type = TokenType::kEOF;
  // kTemplateInterp / kTemplateControl: the opener is followed by "~";
  // kTemplateSeqEnd: the closer is preceded by "~".
  bool strip = false;
  // kStringLit: the literal starts at the beginning of a heredoc line.
  bool line_start = false;
  // kOHeredoc: the "<<-" form, whose common indentation is removed.
  bool flush = false;
  // kOHeredoc with `flush`: the common indentation, in characters, of the
  // body's non-blank lines.
  uint32_t indent = 0;
  // kOHeredoc: the delimiter name. Otherwise the token's source text.
  std::string_view text;
  SourceRange range;
};

// A short description of a token for error messages: `newline`, `end of
// file`, `'{'`, `identifier "foo"`.
std::string describeToken(const Token& token);

} // namespace captf::lint::hcl
