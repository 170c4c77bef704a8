#include "lint/hcl/ast.h"

#include <algorithm>

namespace captf::lint::hcl {

Expression::~Expression() = default;

std::string_view binaryOpSymbol(BinaryOp op) {
  switch (op) {
  case BinaryOp::kOr:
    return "||";
  case BinaryOp::kAnd:
    return "&&";
  case BinaryOp::kEqual:
    return "==";
  case BinaryOp::kNotEqual:
    return "!=";
  case BinaryOp::kLessThan:
    return "<";
  case BinaryOp::kLessThanOrEqual:
    return "<=";
  case BinaryOp::kGreaterThan:
    return ">";
  case BinaryOp::kGreaterThanOrEqual:
    return ">=";
  case BinaryOp::kAdd:
    return "+";
  case BinaryOp::kSubtract:
    return "-";
  case BinaryOp::kMultiply:
    return "*";
  case BinaryOp::kDivide:
    return "/";
  case BinaryOp::kModulo:
    return "%";
  }
  return "?";
}

std::optional<std::string> ObjectItem::literalKey() const {
  if (key == nullptr) {
    return std::nullopt;
  }
  if (const auto* t = key->as<ScopeTraversalExpr>(); t != nullptr && t->steps.empty()) {
    return t->root;
  }
  if (const auto* t = key->as<TemplateExpr>()) {
    return t->literalValue();
  }
  if (const auto* l = key->as<LiteralExpr>(); l != nullptr && l->type == LiteralType::kNumber) {
    return l->text;
  }
  return std::nullopt;
}

std::optional<std::string> TemplateExpr::literalValue() const {
  std::string out;
  for (const TemplateNode& part : parts) {
    if (part.kind != TemplateNode::Kind::kLiteral) {
      return std::nullopt;
    }
    out += part.literal;
  }
  return out;
}

const Expression* TemplateExpr::wrappedExpression() const {
  if (parts.size() == 1 && parts[0].kind == TemplateNode::Kind::kInterpolation) {
    return parts[0].expr.get();
  }
  return nullptr;
}

const Attribute* Body::attribute(std::string_view name) const {
  const auto it = std::find_if(attributes.begin(), attributes.end(),
                               [&](const Attribute& a) { return a.name == name; });
  return it == attributes.end() ? nullptr : &*it;
}

namespace {

void forEachTemplateChild(const std::vector<TemplateNode>& parts,
                          const std::function<void(const Expression&)>& fn) {
  for (const TemplateNode& part : parts) {
    if (part.expr != nullptr) {
      fn(*part.expr);
    }
    forEachTemplateChild(part.body, fn);
    forEachTemplateChild(part.else_body, fn);
  }
}

void visitIf(const ExprPtr& e, const std::function<void(const Expression&)>& fn) {
  if (e != nullptr) {
    fn(*e);
  }
}

} // namespace

void forEachChild(const Expression& expr, const std::function<void(const Expression&)>& fn) {
  switch (expr.kind()) {
  case ExprKind::kLiteral:
  case ExprKind::kScopeTraversal:
  case ExprKind::kAnonSymbol:
    return;
  case ExprKind::kTemplate:
    forEachTemplateChild(expr.cast<TemplateExpr>().parts, fn);
    return;
  case ExprKind::kRelativeTraversal:
    visitIf(expr.cast<RelativeTraversalExpr>().source, fn);
    return;
  case ExprKind::kIndex: {
    const auto* e = &expr.cast<IndexExpr>();
    visitIf(e->collection, fn);
    visitIf(e->key, fn);
    return;
  }
  case ExprKind::kSplat: {
    const auto* e = &expr.cast<SplatExpr>();
    visitIf(e->source, fn);
    visitIf(e->each, fn);
    return;
  }
  case ExprKind::kFunctionCall:
    for (const ExprPtr& arg : expr.cast<FunctionCallExpr>().args) {
      visitIf(arg, fn);
    }
    return;
  case ExprKind::kConditional: {
    const auto* e = &expr.cast<ConditionalExpr>();
    visitIf(e->condition, fn);
    visitIf(e->true_result, fn);
    visitIf(e->false_result, fn);
    return;
  }
  case ExprKind::kBinaryOp: {
    const auto* e = &expr.cast<BinaryOpExpr>();
    visitIf(e->lhs, fn);
    visitIf(e->rhs, fn);
    return;
  }
  case ExprKind::kUnaryOp:
    visitIf(expr.cast<UnaryOpExpr>().operand, fn);
    return;
  case ExprKind::kTuple:
    for (const ExprPtr& e : expr.cast<TupleExpr>().elements) {
      visitIf(e, fn);
    }
    return;
  case ExprKind::kObject:
    for (const ObjectItem& item : expr.cast<ObjectExpr>().items) {
      visitIf(item.key, fn);
      visitIf(item.value, fn);
    }
    return;
  case ExprKind::kFor: {
    const auto* e = &expr.cast<ForExpr>();
    visitIf(e->collection, fn);
    visitIf(e->key, fn);
    visitIf(e->value, fn);
    visitIf(e->condition, fn);
    return;
  }
  case ExprKind::kParentheses:
    visitIf(expr.cast<ParenthesesExpr>().inner, fn);
    return;
  }
}

void walk(const Expression& expr, const std::function<void(const Expression&)>& fn) {
  fn(expr);
  forEachChild(expr, [&](const Expression& child) { walk(child, fn); });
}

namespace {

class ReferenceCollector {
public:
  std::vector<const ScopeTraversalExpr*> out;

  void visit(const Expression& expr) {
    switch (expr.kind()) {
    case ExprKind::kScopeTraversal: {
      const auto* t = &expr.cast<ScopeTraversalExpr>();
      if (std::find(scope_.begin(), scope_.end(), t->root) == scope_.end()) {
        out.push_back(t);
      }
      return;
    }
    case ExprKind::kObject:
      for (const ObjectItem& item : expr.cast<ObjectExpr>().items) {
        const auto* key = item.key == nullptr ? nullptr : item.key->as<ScopeTraversalExpr>();
        if (key == nullptr || !key->steps.empty()) {
          visitIf(item.key);
        }
        visitIf(item.value);
      }
      return;
    case ExprKind::kFor: {
      const auto* f = &expr.cast<ForExpr>();
      visitIf(f->collection);
      const std::size_t mark = bind(f->key_var, f->value_var);
      visitIf(f->key);
      visitIf(f->value);
      visitIf(f->condition);
      scope_.resize(mark);
      return;
    }
    case ExprKind::kTemplate:
      visitParts(expr.cast<TemplateExpr>().parts);
      return;
    default:
      forEachChild(expr, [this](const Expression& child) { visit(child); });
      return;
    }
  }

private:
  void visitIf(const ExprPtr& e) {
    if (e != nullptr) {
      visit(*e);
    }
  }

  std::size_t bind(const std::string& key_var, const std::string& value_var) {
    const std::size_t mark = scope_.size();
    if (!key_var.empty()) {
      scope_.push_back(key_var);
    }
    scope_.push_back(value_var);
    return mark;
  }

  void visitParts(const std::vector<TemplateNode>& parts) {
    for (const TemplateNode& part : parts) {
      switch (part.kind) {
      case TemplateNode::Kind::kLiteral:
        break;
      case TemplateNode::Kind::kInterpolation:
        visitIf(part.expr);
        break;
      case TemplateNode::Kind::kIf:
        visitIf(part.expr);
        visitParts(part.body);
        visitParts(part.else_body);
        break;
      case TemplateNode::Kind::kFor: {
        visitIf(part.expr);
        const std::size_t mark = bind(part.key_var, part.value_var);
        visitParts(part.body);
        scope_.resize(mark);
        break;
      }
      }
    }
  }

  std::vector<std::string> scope_;
};

void forEachBodyExpression(const Body& body, const std::function<void(const Expression&)>& fn) {
  for (const Attribute& attr : body.attributes) {
    if (attr.expr != nullptr) {
      fn(*attr.expr);
    }
  }
  for (const Block& block : body.blocks) {
    forEachBodyExpression(block.body, fn);
  }
}

void appendQuoted(std::string& out, std::string_view s) {
  out += '"';
  for (const char c : s) {
    switch (c) {
    case '\n':
      out += "\\n";
      break;
    case '\t':
      out += "\\t";
      break;
    case '"':
      out += "\\\"";
      break;
    case '\\':
      out += "\\\\";
      break;
    default:
      out += c;
    }
  }
  out += '"';
}

void appendSteps(std::string& out, const std::vector<TraversalStep>& steps) {
  for (const TraversalStep& step : steps) {
    out += ' ';
    if (step.kind == TraversalStep::Kind::kAttr) {
      out += '.';
      out += step.name;
    } else if (step.key_is_number) {
      out += '[';
      out += step.name;
      out += ']';
    } else {
      out += '[';
      appendQuoted(out, step.name);
      out += ']';
    }
  }
}

void appendDebug(std::string& out, const Expression& expr);

void appendParts(std::string& out, const std::vector<TemplateNode>& parts) {
  for (const TemplateNode& part : parts) {
    out += ' ';
    switch (part.kind) {
    case TemplateNode::Kind::kLiteral:
      appendQuoted(out, part.literal);
      break;
    case TemplateNode::Kind::kInterpolation:
      out += "(interp ";
      appendDebug(out, *part.expr);
      out += ')';
      break;
    case TemplateNode::Kind::kIf:
      out += "(if ";
      appendDebug(out, *part.expr);
      out += " (then";
      appendParts(out, part.body);
      out += ')';
      if (part.has_else) {
        out += " (else";
        appendParts(out, part.else_body);
        out += ')';
      }
      out += ')';
      break;
    case TemplateNode::Kind::kFor:
      out += "(for ";
      out += part.key_var.empty() ? "_" : part.key_var;
      out += ' ';
      out += part.value_var;
      out += ' ';
      appendDebug(out, *part.expr);
      out += " (do";
      appendParts(out, part.body);
      out += "))";
      break;
    }
  }
}

void appendDebug(std::string& out, const Expression& expr) {
  const auto child = [&](const ExprPtr& e) {
    out += ' ';
    if (e == nullptr) {
      out += "<null>";
    } else {
      appendDebug(out, *e);
    }
  };
  switch (expr.kind()) {
  case ExprKind::kLiteral: {
    const auto* e = &expr.cast<LiteralExpr>();
    out += e->type == LiteralType::kNull   ? "null"
           : e->type == LiteralType::kBool ? (e->bool_value ? "true" : "false")
                                           : e->text;
    return;
  }
  case ExprKind::kTemplate:
    out += expr.cast<TemplateExpr>().heredoc ? "(heredoc" : "(tmpl";
    appendParts(out, expr.cast<TemplateExpr>().parts);
    out += ')';
    return;
  case ExprKind::kScopeTraversal:
    out += "(trav ";
    out += expr.cast<ScopeTraversalExpr>().root;
    appendSteps(out, expr.cast<ScopeTraversalExpr>().steps);
    out += ')';
    return;
  case ExprKind::kRelativeTraversal:
    out += "(rel";
    child(expr.cast<RelativeTraversalExpr>().source);
    appendSteps(out, expr.cast<RelativeTraversalExpr>().steps);
    out += ')';
    return;
  case ExprKind::kIndex:
    out += "(index";
    child(expr.cast<IndexExpr>().collection);
    child(expr.cast<IndexExpr>().key);
    out += ')';
    return;
  case ExprKind::kSplat:
    out += expr.cast<SplatExpr>().full ? "(splat[*]" : "(splat.*";
    child(expr.cast<SplatExpr>().source);
    child(expr.cast<SplatExpr>().each);
    out += ')';
    return;
  case ExprKind::kAnonSymbol:
    out += '*';
    return;
  case ExprKind::kFunctionCall: {
    const auto* e = &expr.cast<FunctionCallExpr>();
    out += "(call ";
    out += e->name;
    for (const ExprPtr& arg : e->args) {
      child(arg);
    }
    if (e->expand_final) {
      out += " ...";
    }
    out += ')';
    return;
  }
  case ExprKind::kConditional:
    out += "(?";
    child(expr.cast<ConditionalExpr>().condition);
    child(expr.cast<ConditionalExpr>().true_result);
    child(expr.cast<ConditionalExpr>().false_result);
    out += ')';
    return;
  case ExprKind::kBinaryOp:
    out += '(';
    out += binaryOpSymbol(expr.cast<BinaryOpExpr>().op);
    child(expr.cast<BinaryOpExpr>().lhs);
    child(expr.cast<BinaryOpExpr>().rhs);
    out += ')';
    return;
  case ExprKind::kUnaryOp:
    out += expr.cast<UnaryOpExpr>().op == UnaryOp::kNegate ? "(neg" : "(not";
    child(expr.cast<UnaryOpExpr>().operand);
    out += ')';
    return;
  case ExprKind::kTuple:
    out += "(tuple";
    for (const ExprPtr& e : expr.cast<TupleExpr>().elements) {
      child(e);
    }
    out += ')';
    return;
  case ExprKind::kObject:
    out += "(object";
    for (const ObjectItem& item : expr.cast<ObjectExpr>().items) {
      out += " (";
      if (auto key = item.literalKey()) {
        out += *key;
      } else {
        appendDebug(out, *item.key);
      }
      child(item.value);
      out += ')';
    }
    out += ')';
    return;
  case ExprKind::kFor: {
    const auto* e = &expr.cast<ForExpr>();
    out += e->object ? "(for{} " : "(for[] ";
    out += e->key_var.empty() ? "_" : e->key_var;
    out += ' ';
    out += e->value_var;
    child(e->collection);
    if (e->object) {
      child(e->key);
    }
    child(e->value);
    if (e->grouped) {
      out += " ...";
    }
    if (e->condition != nullptr) {
      out += " if";
      child(e->condition);
    }
    out += ')';
    return;
  }
  case ExprKind::kParentheses:
    out += "(paren";
    child(expr.cast<ParenthesesExpr>().inner);
    out += ')';
    return;
  }
}

} // namespace

std::string debugString(const Expression& expr) {
  std::string out;
  appendDebug(out, expr);
  return out;
}

std::vector<const ScopeTraversalExpr*> references(const Expression& expr) {
  ReferenceCollector collector;
  collector.visit(expr);
  return std::move(collector.out);
}

void forEachExpression(const Body& body, const std::function<void(const Expression&)>& fn) {
  forEachBodyExpression(body, fn);
}

} // namespace captf::lint::hcl
