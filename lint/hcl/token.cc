#include "lint/hcl/token.h"

#include "lint/strings.h"

namespace captf::lint::hcl {

std::string describeToken(const Token& token) {
  switch (token.type) {
  case TokenType::kNewline:
    return "newline";
  case TokenType::kEOF:
    return "end of file";
  case TokenType::kIdent:
    return concat("identifier \"", token.text, "\"");
  case TokenType::kNumberLit:
    return concat("number ", token.text);
  case TokenType::kOQuote:
    return "opening quote";
  case TokenType::kCQuote:
    return "closing quote";
  case TokenType::kOHeredoc:
    return "heredoc";
  case TokenType::kCHeredoc:
    return "heredoc end marker";
  case TokenType::kQuotedLit:
  case TokenType::kStringLit:
    return "string literal";
  case TokenType::kTemplateInterp:
    return "'${'";
  case TokenType::kTemplateControl:
    return "'%{'";
  case TokenType::kTemplateSeqEnd:
    return "'}'";
  default:
    return concat("'", token.text, "'");
  }
}

} // namespace captf::lint::hcl
