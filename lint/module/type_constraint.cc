#include "lint/module/type_constraint.h"

#include <algorithm>

#include "contract/status_macros.h"
#include "contract/strings.h"
#include "lint/hcl/parser.h"

namespace captf::lint {

using contract::strCat;

namespace {

using Kind = TypeConstraint::Kind;

TypeConstraint ofKind(Kind kind) {
  TypeConstraint type;
  type.kind = kind;
  return type;
}

TypeConstraint collection(Kind kind, TypeConstraint element) {
  TypeConstraint type = ofKind(kind);
  type.elements.push_back(std::move(element));
  return type;
}

absl::Status typeError(std::string_view message) {
  return absl::InvalidArgumentError(std::string(message));
}

// The keyword a type expression is spelled with: a bare identifier, or the
// name of a call.
std::string_view keywordOf(const hcl::Expression& expr) {
  if (const auto* t = expr.as<hcl::ScopeTraversalExpr>(); t != nullptr && t->steps.empty()) {
    return t->root;
  }
  if (const auto* c = expr.as<hcl::FunctionCallExpr>()) {
    return c->name;
  }
  return {};
}

absl::StatusOr<TypeConstraint> parseType(const hcl::Expression& expr, bool allow_optional,
                                         bool* optional);

absl::StatusOr<TypeConstraint> parseObject(const hcl::FunctionCallExpr& call) {
  if (call.args.size() != 1 || call.args[0]->kind() != hcl::ExprKind::kObject) {
    return typeError("the object type constructor requires one argument, an object of "
                     "attribute names and types, as in object({name = string})");
  }
  TypeConstraint type = ofKind(Kind::kObject);
  for (const hcl::ObjectItem& item : call.args[0]->as<hcl::ObjectExpr>()->items) {
    const auto name = item.literalKey();
    if (!name.has_value()) {
      return typeError("object type attribute names must be identifiers or literal strings");
    }
    if (std::any_of(type.attributes.begin(), type.attributes.end(),
                    [&](const TypeConstraint::Attribute& a) { return a.name == *name; })) {
      return typeError(strCat("the object type attribute \"", *name, "\" is defined twice"));
    }
    bool optional = false;
    CAPTF_ASSIGN_OR_RETURN(TypeConstraint attr_type, parseType(*item.value, true, &optional));
    type.attributes.push_back({*name, std::move(attr_type), optional});
  }
  return type;
}

absl::StatusOr<TypeConstraint> parseType(const hcl::Expression& expr, bool allow_optional,
                                         bool* optional) {
  if (const auto* paren = expr.as<hcl::ParenthesesExpr>()) {
    return parseType(*paren->inner, allow_optional, optional);
  }
  const std::string_view keyword = keywordOf(expr);
  const auto* call = expr.as<hcl::FunctionCallExpr>();
  if (keyword.empty()) {
    return typeError("a type must be a keyword such as string, or a type constructor such as "
                     "list(string)");
  }
  if (call == nullptr) {
    if (keyword == "string") {
      return ofKind(Kind::kString);
    }
    if (keyword == "number") {
      return ofKind(Kind::kNumber);
    }
    if (keyword == "bool") {
      return ofKind(Kind::kBool);
    }
    if (keyword == "any") {
      return ofKind(Kind::kAny);
    }
    if (keyword == "list" || keyword == "set" || keyword == "map" || keyword == "tuple" ||
        keyword == "object" || keyword == "optional") {
      return typeError(strCat("the ", keyword, " type constructor requires an argument, as in ",
                              keyword, "(...)"));
    }
    return typeError(strCat("unknown type keyword \"", keyword, "\""));
  }
  if (call->expand_final) {
    return typeError("a type constructor cannot take an argument expanded with \"...\"");
  }
  if (keyword == "list" || keyword == "set" || keyword == "map") {
    if (call->args.size() != 1) {
      return typeError(strCat("the ", keyword,
                              " type constructor requires one argument specifying the element "
                              "type"));
    }
    CAPTF_ASSIGN_OR_RETURN(TypeConstraint element, parseType(*call->args[0], false, nullptr));
    const Kind kind = keyword == "list" ? Kind::kList : keyword == "set" ? Kind::kSet : Kind::kMap;
    return collection(kind, std::move(element));
  }
  if (keyword == "tuple") {
    if (call->args.size() != 1 || call->args[0]->kind() != hcl::ExprKind::kTuple) {
      return typeError("the tuple type constructor requires one argument, a list of element "
                       "types, as in tuple([string, number])");
    }
    TypeConstraint type = ofKind(Kind::kTuple);
    for (const hcl::ExprPtr& e : call->args[0]->as<hcl::TupleExpr>()->elements) {
      CAPTF_ASSIGN_OR_RETURN(TypeConstraint element, parseType(*e, false, nullptr));
      type.elements.push_back(std::move(element));
    }
    return type;
  }
  if (keyword == "object") {
    return parseObject(*call);
  }
  if (keyword == "optional") {
    if (!allow_optional) {
      return typeError("optional() is only valid for an attribute of an object type");
    }
    if (call->args.empty() || call->args.size() > 2) {
      return typeError("optional() takes a type and, optionally, a default value");
    }
    *optional = true;
    return parseType(*call->args[0], false, nullptr);
  }
  return typeError(strCat("unknown type constructor \"", keyword, "\""));
}

void appendType(std::string& out, const TypeConstraint& type) {
  switch (type.kind) {
  case Kind::kString:
    out += "string";
    return;
  case Kind::kNumber:
    out += "number";
    return;
  case Kind::kBool:
    out += "bool";
    return;
  case Kind::kAny:
    out += "any";
    return;
  case Kind::kList:
  case Kind::kSet:
  case Kind::kMap:
    out += type.kind == Kind::kList ? "list(" : type.kind == Kind::kSet ? "set(" : "map(";
    appendType(out, type.elements.front());
    out += ')';
    return;
  case Kind::kTuple:
    out += "tuple([";
    for (std::size_t i = 0; i < type.elements.size(); ++i) {
      out += i > 0 ? ", " : "";
      appendType(out, type.elements[i]);
    }
    out += "])";
    return;
  case Kind::kObject:
    out += "object({";
    for (std::size_t i = 0; i < type.attributes.size(); ++i) {
      const TypeConstraint::Attribute& attr = type.attributes[i];
      out += i > 0 ? ", " : "";
      out += attr.name;
      out += '=';
      if (attr.optional) {
        out += "optional(";
      }
      appendType(out, attr.type);
      if (attr.optional) {
        out += ')';
      }
    }
    out += "})";
    return;
  }
}

} // namespace

absl::StatusOr<TypeConstraint> parseTypeConstraint(const hcl::Expression& expr) {
  return parseType(expr, false, nullptr);
}

absl::StatusOr<TypeConstraint> parseTypeConstraint(std::string_view text) {
  auto expr = hcl::parseExpression(text, "type");
  if (!expr.ok()) {
    // Drop the "type:1:2: " position prefix: the caller positions the finding.
    const absl::string_view raw = expr.status().message();
    std::string_view message(raw.data(), raw.size());
    for (int i = 0; i < 3; ++i) {
      message.remove_prefix(std::min(message.size(), message.find(':') + 1));
    }
    if (!message.empty() && message.front() == ' ') {
      message.remove_prefix(1);
    }
    return typeError(message);
  }
  return parseTypeConstraint(**expr);
}

bool compatible(const TypeConstraint& declared, const TypeConstraint& contract) {
  if (declared.kind == Kind::kAny || contract.kind == Kind::kAny) {
    return true;
  }
  if (declared.isSequence() && contract.isSequence()) {
    if (declared.kind == Kind::kTuple) {
      if (contract.kind != Kind::kTuple || contract.elements.size() != declared.elements.size()) {
        return false;
      }
      for (std::size_t i = 0; i < declared.elements.size(); ++i) {
        if (!compatible(declared.elements[i], contract.elements[i])) {
          return false;
        }
      }
      return true;
    }
    if (contract.kind == Kind::kTuple) {
      return std::all_of(
          contract.elements.begin(), contract.elements.end(),
          [&](const TypeConstraint& e) { return compatible(declared.elements.front(), e); });
    }
    return compatible(declared.elements.front(), contract.elements.front());
  }
  if (declared.kind != contract.kind) {
    return false;
  }
  switch (declared.kind) {
  case Kind::kMap:
    return compatible(declared.elements.front(), contract.elements.front());
  case Kind::kObject:
    // An optional attribute may be missing from the contract type, but when
    // the contract does pass it, its type must still be accepted.
    for (const TypeConstraint::Attribute& attr : declared.attributes) {
      const auto it =
          std::find_if(contract.attributes.begin(), contract.attributes.end(),
                       [&](const TypeConstraint::Attribute& c) { return c.name == attr.name; });
      if (it == contract.attributes.end() ? !attr.optional : !compatible(attr.type, it->type)) {
        return false;
      }
    }
    return true;
  default:
    return true;
  }
}

std::string toString(const TypeConstraint& type) {
  std::string out;
  appendType(out, type);
  return out;
}

} // namespace captf::lint
