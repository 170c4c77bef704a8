#pragma once

#include <cassert>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "lint/hcl/source.h"

// The syntax tree of HCL's native syntax. Every node keeps its source range.
// Nodes own their children through unique_ptr; trees are immutable once the
// parser returns them and may be read from any number of threads. The parser
// bounds the nesting depth, so recursive walks over a tree are safe.
namespace captf::lint::hcl {

enum class ExprKind {
  kLiteral,
  kTemplate,
  kScopeTraversal,
  kRelativeTraversal,
  kIndex,
  kSplat,
  kAnonSymbol,
  kFunctionCall,
  kConditional,
  kBinaryOp,
  kUnaryOp,
  kTuple,
  kObject,
  kFor,
  kParentheses,
};

class Expression {
public:
  virtual ~Expression();
  Expression(const Expression&) = delete;
  Expression& operator=(const Expression&) = delete;

  ExprKind kind() const { return kind_; }
  const SourceRange& range() const { return range_; }
  // For the parser, which learns a node's end only after its children.
  void setRange(const SourceRange& range) { range_ = range; }

  // The node as its concrete type, or nullptr if it is of another kind.
  template <class T> const T* as() const {
    return kind_ == T::kKind ? static_cast<const T*>(this) : nullptr;
  }
  // The node as its concrete type, which the caller has checked (kind()).
  template <class T> const T& cast() const {
    assert(kind_ == T::kKind);
    return static_cast<const T&>(*this);
  }

protected:
  Expression(ExprKind kind, SourceRange range) : kind_(kind), range_(range) {}

private:
  ExprKind kind_;
  SourceRange range_;
};

using ExprPtr = std::unique_ptr<Expression>;

enum class LiteralType { kNull, kBool, kNumber };

// null, true/false, or a number. `text` is the number as written (HCL numbers
// are arbitrary precision; nothing here rounds them).
struct LiteralExpr final : Expression {
  static constexpr ExprKind kKind = ExprKind::kLiteral;
  LiteralExpr(SourceRange r, LiteralType t) : Expression(kKind, r), type(t) {}
  LiteralType type;
  bool bool_value = false;
  std::string text;
};

// One static step of a traversal: `.name`, `[0]`, `["key"]` or the legacy
// `.0` index form.
struct TraversalStep {
  enum class Kind { kAttr, kIndex };
  Kind kind = Kind::kAttr;
  // kAttr: the attribute name. kIndex: the key, a number's text or a string.
  std::string name;
  bool key_is_number = false;
  SourceRange range;
};

// A variable and static steps from it: `var.name`, `aws_instance.web[0].id`,
// `each.value`. This is the form Terraform calls a reference.
struct ScopeTraversalExpr final : Expression {
  static constexpr ExprKind kKind = ExprKind::kScopeTraversal;
  explicit ScopeTraversalExpr(SourceRange r) : Expression(kKind, r) {}
  std::string root;
  SourceRange root_range;
  std::vector<TraversalStep> steps;
};

// Static steps applied to the value of another expression: `f(x).a[0]`.
struct RelativeTraversalExpr final : Expression {
  static constexpr ExprKind kKind = ExprKind::kRelativeTraversal;
  explicit RelativeTraversalExpr(SourceRange r) : Expression(kKind, r) {}
  ExprPtr source;
  std::vector<TraversalStep> steps;
};

// `collection[key]` where the key is not a literal.
struct IndexExpr final : Expression {
  static constexpr ExprKind kKind = ExprKind::kIndex;
  explicit IndexExpr(SourceRange r) : Expression(kKind, r) {}
  ExprPtr collection;
  ExprPtr key;
};

// `source.*.a` (attribute splat) or `source[*].a[0]` (full splat). `each` is
// the traversal applied to every element, rooted at an AnonSymbolExpr that
// stands for the element.
struct SplatExpr final : Expression {
  static constexpr ExprKind kKind = ExprKind::kSplat;
  explicit SplatExpr(SourceRange r) : Expression(kKind, r) {}
  ExprPtr source;
  ExprPtr each;
  bool full = false;
};

// The element placeholder inside SplatExpr::each.
struct AnonSymbolExpr final : Expression {
  static constexpr ExprKind kKind = ExprKind::kAnonSymbol;
  explicit AnonSymbolExpr(SourceRange r) : Expression(kKind, r) {}
};

// `name(args...)`. `name` keeps namespaces as written (`provider::aws::arn_parse`).
// `expand_final` is set when the last argument ends with "...".
struct FunctionCallExpr final : Expression {
  static constexpr ExprKind kKind = ExprKind::kFunctionCall;
  explicit FunctionCallExpr(SourceRange r) : Expression(kKind, r) {}
  std::string name;
  SourceRange name_range;
  std::vector<ExprPtr> args;
  bool expand_final = false;
};

struct ConditionalExpr final : Expression {
  static constexpr ExprKind kKind = ExprKind::kConditional;
  explicit ConditionalExpr(SourceRange r) : Expression(kKind, r) {}
  ExprPtr condition;
  ExprPtr true_result;
  ExprPtr false_result;
};

enum class BinaryOp {
  kOr,
  kAnd,
  kEqual,
  kNotEqual,
  kLessThan,
  kLessThanOrEqual,
  kGreaterThan,
  kGreaterThanOrEqual,
  kAdd,
  kSubtract,
  kMultiply,
  kDivide,
  kModulo,
};

// The operator's source spelling ("||", "+", ...).
std::string_view binaryOpSymbol(BinaryOp op);

struct BinaryOpExpr final : Expression {
  static constexpr ExprKind kKind = ExprKind::kBinaryOp;
  BinaryOpExpr(SourceRange r, BinaryOp o) : Expression(kKind, r), op(o) {}
  BinaryOp op;
  ExprPtr lhs;
  ExprPtr rhs;
};

enum class UnaryOp { kNegate, kNot };

struct UnaryOpExpr final : Expression {
  static constexpr ExprKind kKind = ExprKind::kUnaryOp;
  UnaryOpExpr(SourceRange r, UnaryOp o) : Expression(kKind, r), op(o) {}
  UnaryOp op;
  ExprPtr operand;
};

struct TupleExpr final : Expression {
  static constexpr ExprKind kKind = ExprKind::kTuple;
  explicit TupleExpr(SourceRange r) : Expression(kKind, r) {}
  std::vector<ExprPtr> elements;
};

struct ObjectItem {
  // A bare identifier key (`name = ...`) is a ScopeTraversalExpr without
  // steps that stands for the literal name; any other key is an expression.
  ExprPtr key;
  ExprPtr value;

  // The key as a constant string when it is one: a bare identifier, a string
  // without template sequences, or a number. Parenthesized keys are never
  // constant.
  std::optional<std::string> literalKey() const;
};

struct ObjectExpr final : Expression {
  static constexpr ExprKind kKind = ExprKind::kObject;
  explicit ObjectExpr(SourceRange r) : Expression(kKind, r) {}
  std::vector<ObjectItem> items;
};

// `[for k, v in coll : value if cond]` or `{for k, v in coll : key => value... if cond}`.
struct ForExpr final : Expression {
  static constexpr ExprKind kKind = ExprKind::kFor;
  explicit ForExpr(SourceRange r) : Expression(kKind, r) {}
  std::string key_var; // empty when only one variable is declared
  std::string value_var;
  ExprPtr collection;
  ExprPtr key; // object form only
  ExprPtr value;
  ExprPtr condition; // may be null
  bool object = false;
  bool grouped = false; // "..." after the value (object form only)
};

struct ParenthesesExpr final : Expression {
  static constexpr ExprKind kKind = ExprKind::kParentheses;
  explicit ParenthesesExpr(SourceRange r) : Expression(kKind, r) {}
  ExprPtr inner;
};

// One part of a template. Literals hold the decoded text after escapes,
// heredoc indentation and "~" strip markers have been applied.
struct TemplateNode {
  enum class Kind { kLiteral, kInterpolation, kIf, kFor };
  Kind kind = Kind::kLiteral;
  SourceRange range;
  std::string literal;            // kLiteral
  ExprPtr expr;                   // kInterpolation: the value; kIf: condition; kFor: collection
  std::string key_var;            // kFor, empty when only one variable is declared
  std::string value_var;          // kFor
  std::vector<TemplateNode> body; // kIf: the "then" part; kFor: the loop body
  std::vector<TemplateNode> else_body; // kIf
  bool has_else = false;
  bool strip_left = false;  // kInterpolation: "${~"
  bool strip_right = false; // kInterpolation: "~}"
};

// A quoted string, heredoc, or (from JSON) bare template.
struct TemplateExpr final : Expression {
  static constexpr ExprKind kKind = ExprKind::kTemplate;
  explicit TemplateExpr(SourceRange r) : Expression(kKind, r) {}
  std::vector<TemplateNode> parts;
  bool heredoc = false;

  // The string when the template has no sequences at all ("" for no parts).
  std::optional<std::string> literalValue() const;
  // The interpolated expression when the template is exactly "${expr}",
  // which HCL evaluates to the expression's own value and type.
  const Expression* wrappedExpression() const;
};

struct Attribute {
  std::string name;
  SourceRange name_range;
  ExprPtr expr;
  SourceRange range; // from the name to the end of the expression
};

struct BlockLabel {
  std::string value;
  SourceRange range;
  bool quoted = false;
};

struct Block;

// The contents of a file or block, in source order.
struct Body {
  std::vector<Attribute> attributes;
  std::vector<Block> blocks;
  SourceRange range;

  const Attribute* attribute(std::string_view name) const;
};

struct Block {
  std::string type;
  SourceRange type_range;
  std::vector<BlockLabel> labels;
  Body body;
  SourceRange range; // from the type to the closing brace
  SourceRange open_brace;
  SourceRange close_brace;
};

// A parsed native-syntax file. It owns its source so that ranges can be
// turned back into the exact text (for messages and declaration comparison).
struct File {
  std::string filename;
  std::string source;
  Body body;

  std::string_view text(const SourceRange& range) const { return sliceSource(source, range); }
};

// Calls `fn` for each direct child expression of `expr`, in source order,
// including expressions inside template parts.
void forEachChild(const Expression& expr, const std::function<void(const Expression&)>& fn);

// Calls `fn` for `expr` and every expression below it, parents first.
void walk(const Expression& expr, const std::function<void(const Expression&)>& fn);

// The references an expression makes: every ScopeTraversalExpr that is not a
// bare object key and whose root is not a for-expression or template-for
// variable in scope. Like HCL's Variables(); order is source order.
std::vector<const ScopeTraversalExpr*> references(const Expression& expr);

// Every expression of a body and its nested blocks, attribute by attribute.
void forEachExpression(const Body& body, const std::function<void(const Expression&)>& fn);

// A compact S-expression rendering of the tree, for tests and debugging:
// `(+ 1 (* 2 3))`, `(trav var .name [0])`, `(tmpl "a" (interp x))`. Stable:
// tests compare against it.
std::string debugString(const Expression& expr);

} // namespace captf::lint::hcl
