#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "lint/hcl/lexer.h"

namespace captf::lint::hcl {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using T = TokenType;

std::vector<TokenType> types(std::string_view src, LexMode mode = LexMode::kNormal) {
  auto tokens = tokenize(src, "t.hcl", mode);
  EXPECT_TRUE(tokens.ok()) << tokens.status();
  std::vector<TokenType> out;
  if (tokens.ok()) {
    for (const Token& t : *tokens) {
      out.push_back(t.type);
    }
  }
  return out;
}

TEST(Lexer, OperatorsAndPunctuation) {
  EXPECT_THAT(types("== != <= >= < > && || ! => ... . , ? : :: = + - * / %"),
              ElementsAre(T::kEqualOp, T::kNotEqual, T::kLessThanEq, T::kGreaterThanEq,
                          T::kLessThan, T::kGreaterThan, T::kAnd, T::kOr, T::kBang, T::kFatArrow,
                          T::kEllipsis, T::kDot, T::kComma, T::kQuestion, T::kColon,
                          T::kDoubleColon, T::kEqual, T::kPlus, T::kMinus, T::kStar, T::kSlash,
                          T::kPercent, T::kEOF));
}

TEST(Lexer, NumbersStopWhereTheGrammarSays) {
  auto tokens = tokenize("1 2.5 3e10 4E-2 5. 6e a.0.1", "t.hcl");
  ASSERT_TRUE(tokens.ok()) << tokens.status();
  std::vector<std::string> texts;
  for (const Token& t : *tokens) {
    texts.emplace_back(t.text);
  }
  EXPECT_THAT(texts,
              ElementsAre("1", "2.5", "3e10", "4E-2", "5", ".", "6", "e", "a", ".", "0.1", ""));
}

TEST(Lexer, LineCommentsKeepTheirNewline) {
  EXPECT_THAT(types("a # c\nb // d\n/* e\n */ c"),
              ElementsAre(T::kIdent, T::kNewline, T::kIdent, T::kNewline, T::kIdent, T::kEOF));
}

TEST(Lexer, QuotedTemplateTokens) {
  EXPECT_THAT(types(R"("a${b}c%{~ if d ~}e")"),
              ElementsAre(T::kOQuote, T::kQuotedLit, T::kTemplateInterp, T::kIdent,
                          T::kTemplateSeqEnd, T::kQuotedLit, T::kTemplateControl, T::kIdent,
                          T::kIdent, T::kTemplateSeqEnd, T::kQuotedLit, T::kCQuote, T::kEOF));
  auto tokens = tokenize(R"("${~x~}")", "t.hcl");
  ASSERT_TRUE(tokens.ok());
  EXPECT_TRUE((*tokens)[1].strip);
  EXPECT_TRUE((*tokens)[3].strip);
  // An escaped quote does not end the string; "$${" is literal text.
  EXPECT_THAT(types(R"("a\"b$${c}")"), ElementsAre(T::kOQuote, T::kQuotedLit, T::kCQuote, T::kEOF));
}

TEST(Lexer, HeredocLinesAndIndentation) {
  auto tokens = tokenize("<<-EOT\n    a\n\n      b ${x}\n  EOT\n", "t.hcl");
  ASSERT_TRUE(tokens.ok()) << tokens.status();
  const std::vector<Token>& t = *tokens;
  ASSERT_EQ(t[0].type, T::kOHeredoc);
  EXPECT_EQ(t[0].text, "EOT");
  EXPECT_TRUE(t[0].flush);
  EXPECT_EQ(t[0].indent, 4u); // the blank line and the end marker do not count
  EXPECT_EQ(t[1].type, T::kStringLit);
  EXPECT_EQ(t[1].text, "    a\n");
  EXPECT_TRUE(t[1].line_start);
  EXPECT_EQ(t[2].text, "\n");
  EXPECT_EQ(t[3].text, "      b ");
  EXPECT_EQ(t[4].type, T::kTemplateInterp);
  EXPECT_EQ(t[6].type, T::kTemplateSeqEnd);
  EXPECT_EQ(t[7].text, "\n");
  EXPECT_FALSE(t[7].line_start);
  EXPECT_EQ(t[8].type, T::kCHeredoc);
  EXPECT_EQ(t[9].type, T::kNewline);
}

TEST(Lexer, BareTemplateMode) {
  EXPECT_THAT(types("a\n${b}\"c\"", LexMode::kTemplate),
              ElementsAre(T::kStringLit, T::kTemplateInterp, T::kIdent, T::kTemplateSeqEnd,
                          T::kStringLit, T::kEOF));
}

TEST(Lexer, TokenPositions) {
  auto tokens = tokenize("a =\n  \"é\" + b", "t.hcl");
  ASSERT_TRUE(tokens.ok());
  const Token& plus = (*tokens)[6];
  ASSERT_EQ(plus.type, T::kPlus);
  EXPECT_EQ(plus.range.start.line, 2u);
  EXPECT_EQ(plus.range.start.column, 7u);
  EXPECT_EQ(plus.range.start.byte, 11u);
  EXPECT_EQ(plus.range.end.column, 8u);
}

TEST(Lexer, Errors) {
  EXPECT_EQ(tokenize("a @ b", "t.hcl").status().message(), "t.hcl:1:3: invalid character '@'");
  EXPECT_EQ(tokenize("a\n \t\x01", "t.hcl").status().message(),
            "t.hcl:2:3: invalid character U+0001");
  EXPECT_THAT(tokenize("\"abc", "t.hcl").status().message(), HasSubstr("unterminated string"));
  EXPECT_THAT(tokenize("<<EOT\nx", "t.hcl").status().message(), HasSubstr("unterminated heredoc"));
  EXPECT_THAT(tokenize("a | b", "t.hcl").status().message(), HasSubstr("did you mean \"||\""));
}

} // namespace
} // namespace captf::lint::hcl
