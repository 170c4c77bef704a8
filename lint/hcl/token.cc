#include "lint/hcl/token.h"

#include "contract/strings.h"

namespace captf::lint::hcl {

using contract::strCat;

std::string describeToken(const Token& token) {
  switch (token.type) {
  case TokenType::kNewline:
    return "newline";
  case TokenType::kEOF:
    return "end of file";
  case TokenType::kIdent:
    return strCat("identifier \"", token.text, "\"");
  case TokenType::kNumberLit:
    return strCat("number ", token.text);
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
    return strCat("'", token.text, "'");
  }
}

} // namespace captf::lint::hcl
