#include "lint/hcl/parser.h"

#include <cstdint>
#include <optional>
#include <unordered_map>
#include <utility>
#include <vector>

#include "contract/status_macros.h"
#include "contract/strings.h"
#include "lint/hcl/lexer.h"

namespace captf::lint::hcl {

using contract::strAppend;
using contract::strCat;

namespace {

bool isSpace(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

int hexValue(char c) {
  if (c >= '0' && c <= '9') {
    return c - '0';
  }
  if (c >= 'a' && c <= 'f') {
    return c - 'a' + 10;
  }
  if (c >= 'A' && c <= 'F') {
    return c - 'A' + 10;
  }
  return -1;
}

// Where a run of template parts ended.
enum class TemplateEnd { kEnd, kElse, kEndIf, kEndFor };

std::string_view directiveName(TemplateEnd end) {
  switch (end) {
  case TemplateEnd::kElse:
    return "%{ else }";
  case TemplateEnd::kEndIf:
    return "%{ endif }";
  case TemplateEnd::kEndFor:
    return "%{ endfor }";
  case TemplateEnd::kEnd:
    break;
  }
  return "the end of the template";
}

struct TemplateContext {
  TokenType end = TokenType::kCQuote;
  bool quoted = false; // backslash escapes apply
  bool flush = false;  // "<<-" heredoc
  uint32_t indent = 0;
  Pos opened;
};

class Parser {
public:
  Parser(std::vector<Token> tokens, std::string_view filename, const ParseOptions& options)
      : tokens_(std::move(tokens)), filename_(filename),
        max_depth_(options.max_nesting_depth > 0 ? options.max_nesting_depth : 1) {
    ignore_newlines_.push_back(false);
    last_end_ = tokens_.front().range.start;
  }

  absl::StatusOr<Body> parseFileBody() {
    CAPTF_ASSIGN_OR_RETURN(Body body, parseBody(TokenType::kEOF, nullptr));
    body.range = {tokens_.front().range.start, tokens_.back().range.end};
    return body;
  }

  absl::StatusOr<ExprPtr> parseStandaloneExpression() {
    ignore_newlines_.back() = true;
    CAPTF_ASSIGN_OR_RETURN(ExprPtr expr, parseExpression());
    if (const Token& t = peek(); t.type != TokenType::kEOF) {
      return error(t, strCat("extra characters after the expression: found ", describeToken(t)));
    }
    return expr;
  }

  absl::StatusOr<ExprPtr> parseStandaloneTemplate() {
    const Pos start = tokens_.front().range.start;
    TemplateContext ctx{.end = TokenType::kEOF, .opened = start};
    auto tmpl = std::make_unique<TemplateExpr>(SourceRange{start, start});
    CAPTF_ASSIGN_OR_RETURN(const TemplateEnd end, parseTemplateParts(tmpl->parts, ctx));
    CAPTF_RETURN_IF_ERROR(checkTopLevelEnd(end));
    return finish(std::move(tmpl), start);
  }

private:
  // ---- token access -------------------------------------------------------

  bool ignoringNewlines() const { return ignore_newlines_.back(); }

  // The next significant token. Newlines are skipped inside parentheses,
  // brackets and template sequences, and significant elsewhere.
  const Token& peek() {
    if (ignoringNewlines()) {
      while (tokens_[pos_].type == TokenType::kNewline) {
        ++pos_;
      }
    }
    return tokens_[pos_];
  }

  // The significant token after peek().
  const Token& lookahead() {
    peek();
    std::size_t i = pos_;
    if (tokens_[i].type == TokenType::kEOF) {
      return tokens_[i];
    }
    ++i;
    if (ignoringNewlines()) {
      while (tokens_[i].type == TokenType::kNewline) {
        ++i;
      }
    }
    return tokens_[i];
  }

  const Token& next() {
    const Token& t = peek();
    if (t.type != TokenType::kEOF) {
      ++pos_;
    }
    last_end_ = t.range.end;
    return t;
  }

  absl::Status error(const Token& at, std::string_view message) const {
    return syntaxError(filename_, at.range.start, message);
  }
  absl::Status error(const Pos& at, std::string_view message) const {
    return syntaxError(filename_, at, message);
  }

  absl::StatusOr<const Token*> expect(TokenType type, std::string_view what) {
    const Token& t = peek();
    if (t.type != type) {
      return error(t, strCat("expected ", what, ", but found ", describeToken(t)));
    }
    return &next();
  }

  absl::StatusOr<const Token*> expectKeyword(std::string_view keyword, std::string_view context) {
    const Token& t = peek();
    if (t.type != TokenType::kIdent || t.text != keyword) {
      return error(
          t, strCat("expected \"", keyword, "\" ", context, ", but found ", describeToken(t)));
    }
    return &next();
  }

  // Scoped newline mode: pushed when entering a bracketed construct.
  class NewlineMode {
  public:
    NewlineMode(Parser* parser, bool ignore) : parser_(parser) {
      parser_->ignore_newlines_.push_back(ignore);
    }
    ~NewlineMode() { parser_->ignore_newlines_.pop_back(); }
    NewlineMode(const NewlineMode&) = delete;
    NewlineMode& operator=(const NewlineMode&) = delete;

  private:
    Parser* parser_;
  };

  // Scoped nesting level. Chains add levels with extend(); all of them are
  // released when the scope ends.
  class Nesting {
  public:
    explicit Nesting(Parser* parser) : parser_(parser), saved_(parser->depth_) {}
    ~Nesting() { parser_->depth_ = saved_; }
    Nesting(const Nesting&) = delete;
    Nesting& operator=(const Nesting&) = delete;

    absl::Status extend(const Token& at) {
      if (++parser_->depth_ > parser_->max_depth_) {
        return parser_->error(at, strCat("nesting is too deep: more than ", parser_->max_depth_,
                                         " levels of blocks, expressions or directives"));
      }
      return absl::OkStatus();
    }

  private:
    Parser* parser_;
    int saved_;
  };

  template <class T> ExprPtr finish(std::unique_ptr<T> node, const Pos& start) {
    node->setRange({start, last_end_});
    return node;
  }

  // ---- bodies -------------------------------------------------------------

  absl::StatusOr<Body> parseBody(TokenType end, const Token* open) {
    Body body;
    std::unordered_map<std::string_view, uint32_t> seen;
    while (true) {
      const Token& t = peek();
      if (t.type == TokenType::kNewline) {
        next();
        continue;
      }
      if (t.type == end) {
        break;
      }
      if (t.type == TokenType::kEOF) {
        return error(*open, R"(unclosed block: this "{" has no matching "}")");
      }
      if (t.type != TokenType::kIdent) {
        return error(
            t, strCat("expected an argument or block definition, but found ", describeToken(t)));
      }
      const Token& name = next();
      const Token& after = peek();
      if (after.type == TokenType::kEqual) {
        CAPTF_ASSIGN_OR_RETURN(Attribute attr, parseAttribute(name));
        CAPTF_RETURN_IF_ERROR(checkDuplicate(seen, name));
        body.attributes.push_back(std::move(attr));
        CAPTF_RETURN_IF_ERROR(expectItemEnd("an argument definition"));
      } else if (after.type == TokenType::kIdent || after.type == TokenType::kOQuote ||
                 after.type == TokenType::kOBrace) {
        CAPTF_ASSIGN_OR_RETURN(Block block, parseBlock(name));
        body.blocks.push_back(std::move(block));
        CAPTF_RETURN_IF_ERROR(expectItemEnd("a block definition"));
      } else {
        return error(after, strCat(R"(expected "=" to set the argument ")", name.text,
                                   R"(", or a label or "{" to open a block, but found )",
                                   describeToken(after)));
      }
    }
    return body;
  }

  absl::Status checkDuplicate(std::unordered_map<std::string_view, uint32_t>& seen,
                              const Token& name) const {
    const auto [it, inserted] = seen.emplace(name.text, name.range.start.line);
    if (!inserted) {
      return error(name, strCat("the argument \"", name.text, "\" was already set at line ",
                                it->second, "; each argument may be set only once"));
    }
    return absl::OkStatus();
  }

  absl::Status expectItemEnd(std::string_view what) {
    const Token& t = peek();
    if (t.type == TokenType::kNewline) {
      next();
      return absl::OkStatus();
    }
    if (t.type == TokenType::kEOF) {
      return absl::OkStatus();
    }
    return error(t, strCat(what, " must end with a newline, but found ", describeToken(t)));
  }

  absl::StatusOr<Attribute> parseAttribute(const Token& name) {
    next(); // "="
    Attribute attr;
    attr.name = std::string(name.text);
    attr.name_range = name.range;
    CAPTF_ASSIGN_OR_RETURN(attr.expr, parseExpression());
    attr.range = {name.range.start, last_end_};
    return attr;
  }

  absl::StatusOr<Block> parseBlock(const Token& type) {
    Nesting nesting(this);
    CAPTF_RETURN_IF_ERROR(nesting.extend(type));
    Block block;
    block.type = std::string(type.text);
    block.type_range = type.range;
    while (true) {
      const Token& t = peek();
      if (t.type == TokenType::kOBrace) {
        break;
      }
      if (t.type == TokenType::kIdent) {
        next();
        block.labels.push_back(BlockLabel{std::string(t.text), t.range, false});
        continue;
      }
      if (t.type == TokenType::kOQuote) {
        CAPTF_ASSIGN_OR_RETURN(ExprPtr label, parseQuotedTemplate());
        const auto value = label->as<TemplateExpr>()->literalValue();
        if (!value.has_value()) {
          return error(t, "a block label must be a literal string: template sequences (\"${\" "
                          "or \"%{\") are not allowed here");
        }
        block.labels.push_back(BlockLabel{*value, label->range(), true});
        continue;
      }
      return error(t, strCat(R"(expected a quoted label or "{" for the ")", type.text,
                             "\" block, but found ", describeToken(t)));
    }
    const Token& open = next();
    block.open_brace = open.range;
    if (peek().type == TokenType::kNewline) {
      CAPTF_ASSIGN_OR_RETURN(block.body, parseBody(TokenType::kCBrace, &open));
    } else if (peek().type != TokenType::kCBrace) {
      // A single-line block: at most one argument, closed on the same line.
      const Token& name = peek();
      if (name.type != TokenType::kIdent || lookahead().type != TokenType::kEqual) {
        return error(name, "a single-line block may contain only one argument; to define a "
                           "nested block, or several arguments, put each on a line of its own");
      }
      next();
      CAPTF_ASSIGN_OR_RETURN(Attribute attr, parseAttribute(name));
      block.body.attributes.push_back(std::move(attr));
      if (const Token& t = peek(); t.type != TokenType::kCBrace) {
        return error(t, strCat("a single-line block must end with \"}\" right after its "
                               "one argument, but found ",
                               describeToken(t)));
      }
    }
    const Token& close = next();
    if (close.type != TokenType::kCBrace) {
      return error(close, "expected \"}\" to close the block");
    }
    block.close_brace = close.range;
    block.body.range = {open.range.start, close.range.end};
    block.range = {type.range.start, close.range.end};
    return block;
  }

  // ---- expressions ----------------------------------------------------------

  absl::StatusOr<ExprPtr> parseExpression() {
    Nesting nesting(this);
    const Token& start = peek();
    CAPTF_RETURN_IF_ERROR(nesting.extend(start));
    const Pos start_pos = start.range.start;
    CAPTF_ASSIGN_OR_RETURN(ExprPtr condition, parseBinary(0));
    if (peek().type != TokenType::kQuestion) {
      return condition;
    }
    next();
    auto cond = std::make_unique<ConditionalExpr>(SourceRange{});
    cond->condition = std::move(condition);
    CAPTF_ASSIGN_OR_RETURN(cond->true_result, parseExpression());
    CAPTF_RETURN_IF_ERROR(
        expect(TokenType::kColon, "\":\" in the conditional expression").status());
    CAPTF_ASSIGN_OR_RETURN(cond->false_result, parseExpression());
    return finish(std::move(cond), start_pos);
  }

  static std::optional<BinaryOp> binaryOpAt(TokenType type, int level) {
    switch (level) {
    case 0:
      return type == TokenType::kOr ? std::optional(BinaryOp::kOr) : std::nullopt;
    case 1:
      return type == TokenType::kAnd ? std::optional(BinaryOp::kAnd) : std::nullopt;
    case 2:
      if (type == TokenType::kEqualOp) {
        return BinaryOp::kEqual;
      }
      return type == TokenType::kNotEqual ? std::optional(BinaryOp::kNotEqual) : std::nullopt;
    case 3:
      switch (type) {
      case TokenType::kLessThan:
        return BinaryOp::kLessThan;
      case TokenType::kLessThanEq:
        return BinaryOp::kLessThanOrEqual;
      case TokenType::kGreaterThan:
        return BinaryOp::kGreaterThan;
      case TokenType::kGreaterThanEq:
        return BinaryOp::kGreaterThanOrEqual;
      default:
        return std::nullopt;
      }
    case 4:
      if (type == TokenType::kPlus) {
        return BinaryOp::kAdd;
      }
      return type == TokenType::kMinus ? std::optional(BinaryOp::kSubtract) : std::nullopt;
    case 5:
      switch (type) {
      case TokenType::kStar:
        return BinaryOp::kMultiply;
      case TokenType::kSlash:
        return BinaryOp::kDivide;
      case TokenType::kPercent:
        return BinaryOp::kModulo;
      default:
        return std::nullopt;
      }
    default:
      return std::nullopt;
    }
  }

  static constexpr int kBinaryLevels = 6;

  // Left-associative binary operators by HCL precedence, loosest first:
  // ||, &&, == !=, < <= > >=, + -, * / %.
  absl::StatusOr<ExprPtr> parseBinary(int level) {
    if (level == kBinaryLevels) {
      return parseUnary();
    }
    const Pos start = peek().range.start;
    CAPTF_ASSIGN_OR_RETURN(ExprPtr lhs, parseBinary(level + 1));
    Nesting nesting(this);
    while (true) {
      const Token& op_token = peek();
      const std::optional<BinaryOp> op = binaryOpAt(op_token.type, level);
      if (!op.has_value()) {
        return lhs;
      }
      next();
      CAPTF_RETURN_IF_ERROR(nesting.extend(op_token));
      auto node = std::make_unique<BinaryOpExpr>(SourceRange{}, *op);
      node->lhs = std::move(lhs);
      CAPTF_ASSIGN_OR_RETURN(node->rhs, parseBinary(level + 1));
      lhs = finish(std::move(node), start);
    }
  }

  absl::StatusOr<ExprPtr> parseUnary() {
    const Token& t = peek();
    if (t.type == TokenType::kMinus || t.type == TokenType::kBang) {
      Nesting nesting(this);
      CAPTF_RETURN_IF_ERROR(nesting.extend(t));
      const Pos start = t.range.start;
      const UnaryOp op = t.type == TokenType::kMinus ? UnaryOp::kNegate : UnaryOp::kNot;
      next();
      auto node = std::make_unique<UnaryOpExpr>(SourceRange{}, op);
      CAPTF_ASSIGN_OR_RETURN(node->operand, parseUnary());
      return finish(std::move(node), start);
    }
    CAPTF_ASSIGN_OR_RETURN(ExprPtr primary, parsePrimary());
    return parsePostfix(std::move(primary));
  }

  absl::StatusOr<ExprPtr> parsePrimary() {
    const Token& t = peek();
    const Pos start = t.range.start;
    switch (t.type) {
    case TokenType::kNumberLit: {
      next();
      auto lit = std::make_unique<LiteralExpr>(t.range, LiteralType::kNumber);
      lit->text = std::string(t.text);
      return lit;
    }
    case TokenType::kIdent:
      return parseIdentifierExpression();
    case TokenType::kOParen: {
      next();
      NewlineMode mode(this, true);
      auto paren = std::make_unique<ParenthesesExpr>(SourceRange{});
      CAPTF_ASSIGN_OR_RETURN(paren->inner, parseExpression());
      CAPTF_RETURN_IF_ERROR(expect(TokenType::kCParen, "\")\" to close the parentheses").status());
      return finish(std::move(paren), start);
    }
    case TokenType::kOBrack:
      return parseTupleOrFor();
    case TokenType::kOBrace:
      return parseObjectOrFor();
    case TokenType::kOQuote:
      return parseQuotedTemplate();
    case TokenType::kOHeredoc:
      return parseHeredocTemplate();
    default:
      return error(t, strCat("expected the start of an expression, but found ", describeToken(t)));
    }
  }

  absl::StatusOr<ExprPtr> parseIdentifierExpression() {
    const Token& name = next();
    const Pos start = name.range.start;
    const TokenType after = peek().type;
    if (after == TokenType::kOParen || after == TokenType::kDoubleColon) {
      auto call = std::make_unique<FunctionCallExpr>(SourceRange{});
      call->name = std::string(name.text);
      while (peek().type == TokenType::kDoubleColon) {
        next();
        CAPTF_ASSIGN_OR_RETURN(const Token* part,
                               expect(TokenType::kIdent, "a name after \"::\" in a function name"));
        strAppend(call->name, "::", part->text);
      }
      call->name_range = {start, last_end_};
      CAPTF_RETURN_IF_ERROR(expect(TokenType::kOParen, "\"(\" after the function name").status());
      CAPTF_RETURN_IF_ERROR(parseCallArguments(*call));
      return finish(std::move(call), start);
    }
    if (name.text == "true" || name.text == "false") {
      auto lit = std::make_unique<LiteralExpr>(name.range, LiteralType::kBool);
      lit->bool_value = name.text == "true";
      return lit;
    }
    if (name.text == "null") {
      return std::make_unique<LiteralExpr>(name.range, LiteralType::kNull);
    }
    auto traversal = std::make_unique<ScopeTraversalExpr>(name.range);
    traversal->root = std::string(name.text);
    traversal->root_range = name.range;
    return traversal;
  }

  absl::Status parseCallArguments(FunctionCallExpr& call) {
    NewlineMode mode(this, true);
    while (peek().type != TokenType::kCParen) {
      CAPTF_ASSIGN_OR_RETURN(ExprPtr arg, parseExpression());
      call.args.push_back(std::move(arg));
      const Token& t = peek();
      if (t.type == TokenType::kEllipsis) {
        next();
        call.expand_final = true;
        if (peek().type != TokenType::kCParen) {
          return error(peek(), "an argument expanded with \"...\" must be the last one: expected "
                               "\")\" right after it");
        }
        break;
      }
      if (t.type == TokenType::kComma) {
        next();
        continue;
      }
      if (t.type != TokenType::kCParen) {
        return error(t, strCat("expected \",\" or \")\" in the arguments of ", call.name,
                               "(), but found ", describeToken(t)));
      }
    }
    next();
    return absl::OkStatus();
  }

  // A literal index key (`[0]`, `["name"]`) becomes a static traversal step.
  static std::optional<TraversalStep> staticIndexStep(const Expression& key) {
    if (const auto* lit = key.as<LiteralExpr>();
        lit != nullptr && lit->type == LiteralType::kNumber) {
      return TraversalStep{TraversalStep::Kind::kIndex, lit->text, true, key.range()};
    }
    if (const auto* tmpl = key.as<TemplateExpr>(); tmpl != nullptr && !tmpl->heredoc) {
      if (auto value = tmpl->literalValue()) {
        return TraversalStep{TraversalStep::Kind::kIndex, std::move(*value), false, key.range()};
      }
    }
    return std::nullopt;
  }

  // Appends a static step to a traversal, or wraps `source` in a relative
  // traversal. Returns true if a new node was created (one more level).
  bool appendStep(ExprPtr& source, TraversalStep step) {
    const Pos end = step.range.end;
    if (source->kind() == ExprKind::kScopeTraversal) {
      auto* t = static_cast<ScopeTraversalExpr*>(source.get());
      t->steps.push_back(std::move(step));
      t->setRange({t->range().start, end});
      return false;
    }
    if (source->kind() == ExprKind::kRelativeTraversal) {
      auto* t = static_cast<RelativeTraversalExpr*>(source.get());
      t->steps.push_back(std::move(step));
      t->setRange({t->range().start, end});
      return false;
    }
    const Pos start = source->range().start;
    auto rel = std::make_unique<RelativeTraversalExpr>(SourceRange{start, end});
    rel->source = std::move(source);
    rel->steps.push_back(std::move(step));
    source = std::move(rel);
    return true;
  }

  // ".name", ".0" (legacy index), or ".0.1" (two legacy indexes, which the
  // lexer reads as one number).
  absl::Status parseDotStep(ExprPtr& source, Nesting& nesting) {
    const Token& t = peek();
    if (t.type == TokenType::kIdent) {
      next();
      if (appendStep(source, {TraversalStep::Kind::kAttr, std::string(t.text), false, t.range})) {
        CAPTF_RETURN_IF_ERROR(nesting.extend(t));
      }
      return absl::OkStatus();
    }
    if (t.type == TokenType::kNumberLit) {
      next();
      const std::string_view text = t.text;
      const std::size_t dot = text.find('.');
      const bool digits_only =
          text.find_first_not_of("0123456789.") == std::string_view::npos &&
          (dot == std::string_view::npos || text.find('.', dot + 1) == std::string_view::npos);
      if (!digits_only) {
        return error(
            t, strCat("invalid index \".", text, "\": a legacy index must be a whole number"));
      }
      for (std::string_view part :
           {text.substr(0, dot),
            dot == std::string_view::npos ? std::string_view() : text.substr(dot + 1)}) {
        if (part.empty()) {
          continue;
        }
        if (appendStep(source, {TraversalStep::Kind::kIndex, std::string(part), true, t.range})) {
          CAPTF_RETURN_IF_ERROR(nesting.extend(t));
        }
      }
      return absl::OkStatus();
    }
    return error(t, strCat("expected an attribute name after \".\", but found ", describeToken(t)));
  }

  // "[" key "]" after "[" has been consumed and when the key is not "*".
  absl::Status parseIndexStep(ExprPtr& source, const Token& open, Nesting& nesting) {
    ExprPtr key;
    {
      NewlineMode mode(this, true);
      CAPTF_ASSIGN_OR_RETURN(key, parseExpression());
      CAPTF_RETURN_IF_ERROR(expect(TokenType::kCBrack, "\"]\" to close the index").status());
    }
    if (auto step = staticIndexStep(*key)) {
      step->range = {open.range.start, last_end_};
      if (appendStep(source, std::move(*step))) {
        CAPTF_RETURN_IF_ERROR(nesting.extend(open));
      }
      return absl::OkStatus();
    }
    CAPTF_RETURN_IF_ERROR(nesting.extend(open));
    const Pos start = source->range().start;
    auto index = std::make_unique<IndexExpr>(SourceRange{});
    index->collection = std::move(source);
    index->key = std::move(key);
    source = finish(std::move(index), start);
    return absl::OkStatus();
  }

  absl::StatusOr<ExprPtr> parsePostfix(ExprPtr expr) {
    Nesting nesting(this);
    while (true) {
      const Token& t = peek();
      if (t.type == TokenType::kDot) {
        next();
        if (peek().type == TokenType::kStar) {
          next();
          CAPTF_RETURN_IF_ERROR(nesting.extend(t));
          CAPTF_ASSIGN_OR_RETURN(expr, parseSplat(std::move(expr), false));
          continue;
        }
        CAPTF_RETURN_IF_ERROR(parseDotStep(expr, nesting));
        continue;
      }
      if (t.type == TokenType::kOBrack) {
        next();
        if (peek().type == TokenType::kStar) {
          {
            NewlineMode mode(this, true);
            next();
            CAPTF_RETURN_IF_ERROR(expect(TokenType::kCBrack, "\"]\" after \"[*\"").status());
          }
          CAPTF_RETURN_IF_ERROR(nesting.extend(t));
          CAPTF_ASSIGN_OR_RETURN(expr, parseSplat(std::move(expr), true));
          continue;
        }
        CAPTF_RETURN_IF_ERROR(parseIndexStep(expr, t, nesting));
        continue;
      }
      return expr;
    }
  }

  // The traversal after ".*" (attribute steps only) or "[*]" (attribute and
  // index steps), applied to each element.
  absl::StatusOr<ExprPtr> parseSplat(ExprPtr source, bool full) {
    const Pos start = source->range().start;
    auto node = std::make_unique<SplatExpr>(SourceRange{});
    node->full = full;
    node->source = std::move(source);
    ExprPtr each = std::make_unique<AnonSymbolExpr>(SourceRange{last_end_, last_end_});
    Nesting nesting(this);
    while (true) {
      const Token& t = peek();
      if (t.type == TokenType::kDot &&
          (lookahead().type == TokenType::kIdent || lookahead().type == TokenType::kNumberLit)) {
        next();
        CAPTF_RETURN_IF_ERROR(parseDotStep(each, nesting));
        continue;
      }
      if (full && t.type == TokenType::kOBrack && lookahead().type != TokenType::kStar) {
        next();
        CAPTF_RETURN_IF_ERROR(parseIndexStep(each, t, nesting));
        continue;
      }
      break;
    }
    node->each = std::move(each);
    return finish(std::move(node), start);
  }

  absl::StatusOr<ExprPtr> parseTupleOrFor() {
    const Token& open = next();
    NewlineMode mode(this, true);
    if (peek().type == TokenType::kIdent && peek().text == "for" &&
        lookahead().type == TokenType::kIdent) {
      return parseFor(open, false);
    }
    auto tuple = std::make_unique<TupleExpr>(SourceRange{});
    while (peek().type != TokenType::kCBrack) {
      CAPTF_ASSIGN_OR_RETURN(ExprPtr element, parseExpression());
      tuple->elements.push_back(std::move(element));
      const Token& t = peek();
      if (t.type == TokenType::kComma) {
        next();
        continue;
      }
      if (t.type != TokenType::kCBrack) {
        return error(t,
                     strCat(R"(expected "," or "]" in the tuple, but found )", describeToken(t)));
      }
    }
    next();
    return finish(std::move(tuple), open.range.start);
  }

  absl::StatusOr<ExprPtr> parseObjectOrFor() {
    const Token& open = next();
    {
      NewlineMode mode(this, true);
      if (peek().type == TokenType::kIdent && peek().text == "for" &&
          lookahead().type == TokenType::kIdent) {
        return parseFor(open, true);
      }
    }
    NewlineMode mode(this, false);
    auto object = std::make_unique<ObjectExpr>(SourceRange{});
    while (true) {
      const Token& t = peek();
      if (t.type == TokenType::kNewline) {
        next();
        continue;
      }
      if (t.type == TokenType::kCBrace) {
        break;
      }
      if (t.type == TokenType::kEOF) {
        return error(open, R"(unclosed object: this "{" has no matching "}")");
      }
      ObjectItem item;
      CAPTF_ASSIGN_OR_RETURN(item.key, parseExpression());
      const Token& sep = peek();
      if (sep.type != TokenType::kEqual && sep.type != TokenType::kColon) {
        return error(sep, strCat(R"(expected "=" or ":" after the object key, but found )",
                                 describeToken(sep)));
      }
      next();
      CAPTF_ASSIGN_OR_RETURN(item.value, parseExpression());
      object->items.push_back(std::move(item));
      const Token& after = peek();
      if (after.type == TokenType::kComma || after.type == TokenType::kNewline) {
        next();
      } else if (after.type != TokenType::kCBrace) {
        return error(after, strCat("expected a newline or \",\" after the object item, but "
                                   "found ",
                                   describeToken(after)));
      }
    }
    next();
    return finish(std::move(object), open.range.start);
  }

  // After "[" or "{" (newlines ignored), at the "for" keyword.
  absl::StatusOr<ExprPtr> parseFor(const Token& open, bool object) {
    NewlineMode mode(this, true);
    next(); // "for"
    auto node = std::make_unique<ForExpr>(SourceRange{});
    node->object = object;
    CAPTF_ASSIGN_OR_RETURN(const Token* first,
                           expect(TokenType::kIdent, "a variable name after \"for\""));
    if (peek().type == TokenType::kComma) {
      next();
      CAPTF_ASSIGN_OR_RETURN(const Token* second,
                             expect(TokenType::kIdent, "a second variable name after \",\""));
      node->key_var = std::string(first->text);
      node->value_var = std::string(second->text);
    } else {
      node->value_var = std::string(first->text);
    }
    CAPTF_RETURN_IF_ERROR(expectKeyword("in", "after the for-expression variables").status());
    CAPTF_ASSIGN_OR_RETURN(node->collection, parseExpression());
    CAPTF_RETURN_IF_ERROR(
        expect(TokenType::kColon, "\":\" after the for-expression collection").status());
    if (object) {
      CAPTF_ASSIGN_OR_RETURN(node->key, parseExpression());
      CAPTF_RETURN_IF_ERROR(
          expect(TokenType::kFatArrow, "\"=>\" between the key and the value").status());
    }
    CAPTF_ASSIGN_OR_RETURN(node->value, parseExpression());
    if (object && peek().type == TokenType::kEllipsis) {
      next();
      node->grouped = true;
    }
    if (peek().type == TokenType::kIdent && peek().text == "if") {
      next();
      CAPTF_ASSIGN_OR_RETURN(node->condition, parseExpression());
    }
    const TokenType close = object ? TokenType::kCBrace : TokenType::kCBrack;
    CAPTF_RETURN_IF_ERROR(expect(close, object ? "\"}\" to close the for expression"
                                               : "\"]\" to close the for "
                                                 "expression")
                              .status());
    return finish(std::move(node), open.range.start);
  }

  // ---- templates ------------------------------------------------------------

  absl::StatusOr<ExprPtr> parseQuotedTemplate() {
    const Token& open = next();
    TemplateContext ctx{.end = TokenType::kCQuote, .quoted = true, .opened = open.range.start};
    auto tmpl = std::make_unique<TemplateExpr>(SourceRange{});
    CAPTF_ASSIGN_OR_RETURN(const TemplateEnd end, parseTemplateParts(tmpl->parts, ctx));
    CAPTF_RETURN_IF_ERROR(checkTopLevelEnd(end));
    next(); // closing quote
    return finish(std::move(tmpl), open.range.start);
  }

  absl::StatusOr<ExprPtr> parseHeredocTemplate() {
    const Token& open = next();
    TemplateContext ctx{.end = TokenType::kCHeredoc,
                        .flush = open.flush,
                        .indent = open.indent,
                        .opened = open.range.start};
    auto tmpl = std::make_unique<TemplateExpr>(SourceRange{});
    tmpl->heredoc = true;
    CAPTF_ASSIGN_OR_RETURN(const TemplateEnd end, parseTemplateParts(tmpl->parts, ctx));
    CAPTF_RETURN_IF_ERROR(checkTopLevelEnd(end));
    next(); // end marker
    return finish(std::move(tmpl), open.range.start);
  }

  absl::Status checkTopLevelEnd(TemplateEnd end) const {
    if (end != TemplateEnd::kEnd) {
      return error(last_directive_,
                   strCat(directiveName(end), " has no matching opening directive"));
    }
    return absl::OkStatus();
  }

  // Reads template parts until the context's end token (not consumed) or an
  // else/endif/endfor directive (consumed), which is reported to the caller.
  absl::StatusOr<TemplateEnd> parseTemplateParts(std::vector<TemplateNode>& parts,
                                                 const TemplateContext& ctx) {
    while (true) {
      const Token& t = tokens_[pos_];
      if (t.type == ctx.end) {
        return TemplateEnd::kEnd;
      }
      switch (t.type) {
      case TokenType::kQuotedLit:
      case TokenType::kStringLit: {
        next();
        CAPTF_ASSIGN_OR_RETURN(std::string text, decodeLiteral(t, ctx));
        if (strip_next_literal_) {
          std::size_t n = 0;
          while (n < text.size() && isSpace(text[n])) {
            ++n;
          }
          text.erase(0, n);
          // Stripping continues into the next literal token (the next
          // heredoc line) while only whitespace has been seen.
          strip_next_literal_ = text.empty();
        }
        if (text.empty()) {
          break;
        }
        // Adjacent literal tokens (heredoc lines) form one literal part.
        if (!parts.empty() && parts.back().kind == TemplateNode::Kind::kLiteral) {
          parts.back().literal += text;
          parts.back().range.end = t.range.end;
          break;
        }
        TemplateNode node;
        node.kind = TemplateNode::Kind::kLiteral;
        node.range = t.range;
        node.literal = std::move(text);
        parts.push_back(std::move(node));
        break;
      }
      case TokenType::kTemplateInterp: {
        Nesting nesting(this);
        CAPTF_RETURN_IF_ERROR(nesting.extend(t));
        next();
        beginSequence(parts, t);
        TemplateNode node;
        node.kind = TemplateNode::Kind::kInterpolation;
        node.strip_left = t.strip;
        {
          NewlineMode mode(this, true);
          CAPTF_ASSIGN_OR_RETURN(node.expr, parseExpression());
          CAPTF_ASSIGN_OR_RETURN(const Token* close, expect(TokenType::kTemplateSeqEnd,
                                                            "\"}\" to close the interpolation"));
          node.strip_right = close->strip;
          strip_next_literal_ = close->strip;
        }
        node.range = {t.range.start, last_end_};
        parts.push_back(std::move(node));
        break;
      }
      case TokenType::kTemplateControl: {
        Nesting nesting(this);
        CAPTF_RETURN_IF_ERROR(nesting.extend(t));
        next();
        beginSequence(parts, t);
        CAPTF_ASSIGN_OR_RETURN(std::optional<TemplateEnd> end, parseDirective(parts, t, ctx));
        if (end.has_value()) {
          return *end;
        }
        break;
      }
      case TokenType::kEOF:
        return error(ctx.opened, "unterminated template: expected the end of the string");
      default:
        return error(t, strCat("unexpected ", describeToken(t), " in a template"));
      }
    }
  }

  // "${~" and "%{~" remove the whitespace that ends the preceding literal.
  void beginSequence(std::vector<TemplateNode>& parts, const Token& opener) {
    strip_next_literal_ = false;
    if (opener.strip && !parts.empty() && parts.back().kind == TemplateNode::Kind::kLiteral) {
      std::string& text = parts.back().literal;
      std::size_t n = text.size();
      while (n > 0 && isSpace(text[n - 1])) {
        --n;
      }
      text.resize(n);
      if (text.empty()) {
        parts.pop_back();
      }
    }
  }

  absl::StatusOr<const Token*> closeDirective() {
    CAPTF_ASSIGN_OR_RETURN(const Token* close,
                           expect(TokenType::kTemplateSeqEnd, "\"}\" to close the directive"));
    strip_next_literal_ = close->strip;
    return close;
  }

  // After "%{": an if or for directive (parsed whole, nullopt returned), or
  // else/endif/endfor (returned to the caller).
  absl::StatusOr<std::optional<TemplateEnd>> parseDirective(std::vector<TemplateNode>& parts,
                                                            const Token& opener,
                                                            const TemplateContext& ctx) {
    std::optional<NewlineMode> mode(std::in_place, this, true);
    CAPTF_ASSIGN_OR_RETURN(const Token* keyword,
                           expect(TokenType::kIdent, "a directive keyword after \"%{\""));
    const std::string_view kw = keyword->text;
    if (kw == "else" || kw == "endif" || kw == "endfor") {
      CAPTF_RETURN_IF_ERROR(closeDirective().status());
      last_directive_ = opener.range.start;
      return std::optional(kw == "else"    ? TemplateEnd::kElse
                           : kw == "endif" ? TemplateEnd::kEndIf
                                           : TemplateEnd::kEndFor);
    }
    TemplateNode node;
    if (kw == "if") {
      node.kind = TemplateNode::Kind::kIf;
      CAPTF_ASSIGN_OR_RETURN(node.expr, parseExpression());
      CAPTF_RETURN_IF_ERROR(closeDirective().status());
      mode.reset();
      CAPTF_ASSIGN_OR_RETURN(TemplateEnd end, parseTemplateParts(node.body, ctx));
      if (end == TemplateEnd::kElse) {
        node.has_else = true;
        CAPTF_ASSIGN_OR_RETURN(end, parseTemplateParts(node.else_body, ctx));
      }
      if (end != TemplateEnd::kEndIf) {
        return error(end == TemplateEnd::kEnd ? opener.range.start : last_directive_,
                     strCat("expected %{ endif } to close the %{ if } at line ",
                            opener.range.start.line, ", but found ", directiveName(end)));
      }
    } else if (kw == "for") {
      node.kind = TemplateNode::Kind::kFor;
      CAPTF_ASSIGN_OR_RETURN(const Token* first,
                             expect(TokenType::kIdent, "a variable name after \"for\""));
      if (peek().type == TokenType::kComma) {
        next();
        CAPTF_ASSIGN_OR_RETURN(const Token* second,
                               expect(TokenType::kIdent, "a second variable name after \",\""));
        node.key_var = std::string(first->text);
        node.value_var = std::string(second->text);
      } else {
        node.value_var = std::string(first->text);
      }
      CAPTF_RETURN_IF_ERROR(expectKeyword("in", "after the for directive's variables").status());
      CAPTF_ASSIGN_OR_RETURN(node.expr, parseExpression());
      CAPTF_RETURN_IF_ERROR(closeDirective().status());
      mode.reset();
      CAPTF_ASSIGN_OR_RETURN(const TemplateEnd end, parseTemplateParts(node.body, ctx));
      if (end != TemplateEnd::kEndFor) {
        return error(end == TemplateEnd::kEnd ? opener.range.start : last_directive_,
                     strCat("expected %{ endfor } to close the %{ for } at line ",
                            opener.range.start.line, ", but found ", directiveName(end)));
      }
    } else {
      return error(*keyword, strCat("unknown template directive \"", kw,
                                    "\": expected if, else, endif, for or endfor"));
    }
    node.range = {opener.range.start, last_end_};
    parts.push_back(std::move(node));
    return std::optional<TemplateEnd>();
  }

  // Decodes a literal token: heredoc indentation, then "$${" and "%%{", then
  // (quoted strings only) backslash escapes.
  absl::StatusOr<std::string> decodeLiteral(const Token& t, const TemplateContext& ctx) const {
    std::string_view raw = t.text;
    Pos pos = t.range.start;
    if (ctx.flush && t.line_start) {
      std::size_t n = 0;
      while (n < raw.size() && n < ctx.indent && (raw[n] == ' ' || raw[n] == '\t')) {
        ++n;
      }
      pos = advancePos(pos, raw.substr(0, n));
      raw.remove_prefix(n);
    }
    std::string out;
    out.reserve(raw.size());
    for (std::size_t i = 0; i < raw.size();) {
      const char c = raw[i];
      if ((c == '$' || c == '%') && i + 2 < raw.size() && raw[i + 1] == c && raw[i + 2] == '{') {
        out.push_back(c);
        out.push_back('{');
        i += 3;
        continue;
      }
      if (c != '\\' || !ctx.quoted) {
        out.push_back(c);
        ++i;
        continue;
      }
      const Pos at = advancePos(pos, raw.substr(0, i));
      if (i + 1 >= raw.size()) {
        return error(at, "a backslash must be followed by an escape character");
      }
      const char e = raw[i + 1];
      switch (e) {
      case 'n':
        out.push_back('\n');
        i += 2;
        continue;
      case 'r':
        out.push_back('\r');
        i += 2;
        continue;
      case 't':
        out.push_back('\t');
        i += 2;
        continue;
      case '"':
        out.push_back('"');
        i += 2;
        continue;
      case '\\':
        out.push_back('\\');
        i += 2;
        continue;
      case 'u':
      case 'U': {
        const std::size_t digits = e == 'u' ? 4 : 8;
        if (i + 2 + digits > raw.size()) {
          return error(at, strCat("the escape \\", std::string(1, e), " needs ", digits,
                                  " hexadecimal digits"));
        }
        uint32_t cp = 0;
        for (std::size_t k = 0; k < digits; ++k) {
          const int v = hexValue(raw[i + 2 + k]);
          if (v < 0) {
            return error(at, strCat("the escape \\", std::string(1, e), " needs ", digits,
                                    " hexadecimal digits"));
          }
          cp = (cp << 4) | static_cast<uint32_t>(v);
        }
        if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) {
          return error(at, strCat("the escape ", raw.substr(i, 2 + digits),
                                  " is not a valid Unicode scalar value"));
        }
        appendUtf8(out, static_cast<char32_t>(cp));
        i += 2 + digits;
        continue;
      }
      default: {
        char32_t cp = 0;
        const std::size_t len = decodeUtf8(raw.substr(i + 1), cp);
        return error(at, strCat("invalid escape sequence \\",
                                len == 0 ? std::string(1, e) : std::string(raw.substr(i + 1, len)),
                                ": the valid escapes are \\n \\r \\t \\\" \\\\ \\uNNNN "
                                "\\UNNNNNNNN"));
      }
      }
    }
    return out;
  }

  std::vector<Token> tokens_;
  std::string_view filename_;
  int max_depth_;
  std::size_t pos_ = 0;
  int depth_ = 0;
  Pos last_end_;
  Pos last_directive_;
  bool strip_next_literal_ = false;
  std::vector<bool> ignore_newlines_;
};

} // namespace

absl::StatusOr<File> parseFile(std::string filename, std::string source,
                               const ParseOptions& options) {
  File file;
  {
    CAPTF_ASSIGN_OR_RETURN(std::vector<Token> tokens, tokenize(source, filename));
    Parser parser(std::move(tokens), filename, options);
    CAPTF_ASSIGN_OR_RETURN(file.body, parser.parseFileBody());
  }
  file.filename = std::move(filename);
  file.source = std::move(source);
  return file;
}

absl::StatusOr<ExprPtr> parseExpression(std::string_view source, std::string_view filename,
                                        const ParseOptions& options, Pos start) {
  CAPTF_ASSIGN_OR_RETURN(std::vector<Token> tokens,
                         tokenize(source, filename, LexMode::kNormal, start));
  return Parser(std::move(tokens), filename, options).parseStandaloneExpression();
}

absl::StatusOr<ExprPtr> parseTemplate(std::string_view source, std::string_view filename,
                                      const ParseOptions& options, Pos start) {
  CAPTF_ASSIGN_OR_RETURN(std::vector<Token> tokens,
                         tokenize(source, filename, LexMode::kTemplate, start));
  return Parser(std::move(tokens), filename, options).parseStandaloneTemplate();
}

} // namespace captf::lint::hcl
