#include "lint/checks/module_checks.h"

#include <algorithm>
#include <array>
#include <optional>
#include <set>
#include <string>

#include "absl/strings/ascii.h"
#include "contract/strings.h"
#include "lint/module/type_constraint.h"

namespace captf::lint {

using contract::isAsciiDigits;
using contract::strCat;

namespace {

constexpr std::string_view kReservedPrefix = "captf_";
constexpr std::string_view kTags = "captf_tags";
constexpr std::string_view kClusterOutputs = "captf_cluster_outputs";
constexpr std::string_view kBootstrapData = "bootstrap_data";
constexpr std::string_view kHealth = "health";
constexpr std::string_view kProviderIdList = "provider_id_list";
constexpr std::string_view kControlPlaneEndpoint = "control_plane_endpoint";
constexpr std::string_view kAutoscaling = "autoscaling";

// Arguments of a module block that configure the call rather than pass a
// value to the child.
constexpr auto kModuleMetaArguments = std::to_array<std::string_view>(
    {"source", "version", "providers", "count", "for_each", "depends_on"});

Finding finding(std::string_view id, Severity severity, const SourceLocation& at,
                std::string message) {
  return Finding{std::string(id), severity, at.file, at.line, std::move(message)};
}

// "The module as a whole": no file, line 0.
SourceLocation wholeModule() {
  return {};
}

// A location inside a nested module with no line: its directory path.
SourceLocation moduleLocation(const LoadedModule& module) {
  return {module.path, 0};
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    c = absl::ascii_tolower(static_cast<unsigned char>(c));
  }
  return out;
}

bool refersTo(const hcl::ScopeTraversalExpr& ref, std::string_view name) {
  return ref.root == "var" && !ref.steps.empty() &&
         ref.steps[0].kind == hcl::TraversalStep::Kind::kAttr && ref.steps[0].name == name;
}

bool expressionReferences(const hcl::Expression& expr, std::string_view name) {
  const auto refs = hcl::references(expr);
  return std::any_of(refs.begin(), refs.end(),
                     [&](const hcl::ScopeTraversalExpr* r) { return refersTo(*r, name); });
}

bool bodyReferences(const hcl::Body& body, std::string_view name) {
  bool found = false;
  hcl::forEachExpression(
      body, [&](const hcl::Expression& e) { found = found || expressionReferences(e, name); });
  return found;
}

bool referencesVariableImpl(const LoadedModule& module, std::string_view name,
                            Forwarding forwarding, std::set<const LoadedModule*>& visiting) {
  if (!visiting.insert(&module).second) {
    return false;
  }
  const Module& set = module.expressions();
  for (const ModuleFile* file : set.files) {
    for (const hcl::Attribute& attr : file->file.body.attributes) {
      if (attr.expr != nullptr && expressionReferences(*attr.expr, name)) {
        return true;
      }
    }
    for (const hcl::Block& block : file->file.body.blocks) {
      if (block.type != "module" && bodyReferences(block.body, name)) {
        return true;
      }
    }
  }
  if (forwarding == Forwarding::kIgnore) {
    return false;
  }
  // Forwarding into a local module counts when the child uses the argument.
  for (const ModuleCall& call : set.module_calls) {
    const auto child = module.children.find(call.name);
    if (child == module.children.end()) {
      continue;
    }
    for (const hcl::Attribute& attr : call.block->body.attributes) {
      const bool meta = std::find(std::begin(kModuleMetaArguments), std::end(kModuleMetaArguments),
                                  attr.name) != std::end(kModuleMetaArguments);
      if (!meta && attr.expr != nullptr && expressionReferences(*attr.expr, name) &&
          referencesVariableImpl(*child->second, attr.name, forwarding, visiting)) {
        return true;
      }
    }
  }
  return false;
}

bool isCall(const hcl::Expression& expr, std::string_view name, const hcl::FunctionCallExpr** out) {
  const auto* call = expr.as<hcl::FunctionCallExpr>();
  if (call == nullptr || call->name != name) {
    return false;
  }
  *out = call;
  return true;
}

// A string literal, or an attribute/index name in a traversal, mentions a
// health or state word.
bool mentionsHealthOrState(const hcl::Expression& condition) {
  const auto mentions = [](std::string_view text) {
    const std::string l = lower(text);
    return l.find("running") != std::string::npos || l.find("healthy") != std::string::npos;
  };
  const auto steps_mention = [&](const std::vector<hcl::TraversalStep>& steps) {
    return std::any_of(steps.begin(), steps.end(),
                       [&](const hcl::TraversalStep& s) { return mentions(s.name); });
  };
  bool found = false;
  hcl::walk(condition, [&](const hcl::Expression& e) {
    if (found) {
      return;
    }
    if (const auto* t = e.as<hcl::TemplateExpr>()) {
      for (const hcl::TemplateNode& part : t->parts) {
        found = found || (part.kind == hcl::TemplateNode::Kind::kLiteral && mentions(part.literal));
      }
    } else if (const auto* s = e.as<hcl::ScopeTraversalExpr>()) {
      found = steps_mention(s->steps);
    } else if (const auto* r = e.as<hcl::RelativeTraversalExpr>()) {
      found = steps_mention(r->steps);
    }
  });
  return found;
}

bool filtersOnHealth(const hcl::Expression& value) {
  bool found = false;
  hcl::walk(value, [&](const hcl::Expression& e) {
    const auto* f = e.as<hcl::ForExpr>();
    if (!found && f != nullptr && f->condition != nullptr) {
      found = mentionsHealthOrState(*f->condition);
    }
  });
  return found;
}

// A literal null, possibly in parentheses, a "${...}" wrapper or both
// branches of a conditional.
bool isLiteralNull(const hcl::Expression& expr) {
  if (const auto* lit = expr.as<hcl::LiteralExpr>()) {
    return lit->type == hcl::LiteralType::kNull;
  }
  if (const auto* p = expr.as<hcl::ParenthesesExpr>()) {
    return isLiteralNull(*p->inner);
  }
  if (const auto* t = expr.as<hcl::TemplateExpr>()) {
    const hcl::Expression* wrapped = t->wrappedExpression();
    return wrapped != nullptr && isLiteralNull(*wrapped);
  }
  if (const auto* c = expr.as<hcl::ConditionalExpr>()) {
    return isLiteralNull(*c->true_result) && isLiteralNull(*c->false_result);
  }
  return false;
}

bool hasVariableReference(const hcl::Expression& expr) {
  const auto refs = hcl::references(expr);
  return std::any_of(refs.begin(), refs.end(),
                     [](const hcl::ScopeTraversalExpr* r) { return r->root == "var"; });
}

void checkProviderBody(const ModuleFile& file, const hcl::Body& body, std::vector<Finding>& out);

void checkProviderValue(const ModuleFile& file, std::string_view name, const hcl::Expression& value,
                        uint32_t line, std::vector<Finding>& out) {
  if (credentialArgumentNames().contains(lower(name))) {
    if (const auto* t = value.as<hcl::TemplateExpr>()) {
      const auto literal = t->literalValue();
      if (literal.has_value() && !literal->empty()) {
        const std::string file_path = file.file.filename;
        out.push_back(finding("module/provider-config", Severity::kWarning, {file_path, line},
                              strCat("provider argument ", name,
                                     " is a literal: credentials come from the identity, never "
                                     "from the module")));
        return;
      }
    }
  }
  if (const auto* object = value.as<hcl::ObjectExpr>()) {
    for (const hcl::ObjectItem& item : object->items) {
      if (auto key = item.literalKey()) {
        checkProviderValue(file, *key, *item.value, item.key->range().start.line, out);
      }
    }
  } else if (const auto* tuple = value.as<hcl::TupleExpr>()) {
    for (const hcl::ExprPtr& element : tuple->elements) {
      checkProviderValue(file, "", *element, element->range().start.line, out);
    }
  }
}

void checkProviderBody(const ModuleFile& file, const hcl::Body& body, std::vector<Finding>& out) {
  for (const hcl::Attribute& attr : body.attributes) {
    if (attr.expr != nullptr) {
      checkProviderValue(file, attr.name, *attr.expr, attr.range.start.line, out);
    }
  }
  for (const hcl::Block& block : body.blocks) {
    checkProviderBody(file, block.body, out);
  }
}

// The capacity table of pool/autoscaling-ignore-changes, as docs/lint.md#capacity-attributes
// lists it: keep the two in step.
constexpr auto kCapacityAttributes = std::to_array<CapacityAttribute>({
    {"aws_autoscaling_group", "desired_capacity", ""},
    {"aws_eks_node_group", "scaling_config[0].desired_size", ""},
    {"azurerm_linux_virtual_machine_scale_set", "instances", ""},
    {"azurerm_windows_virtual_machine_scale_set", "instances", ""},
    {"azurerm_orchestrated_virtual_machine_scale_set", "instances", ""},
    {"azurerm_virtual_machine_scale_set", "sku[0].capacity", ""},
    {"azurerm_kubernetes_cluster_node_pool", "node_count", ""},
    {"google_compute_instance_group_manager", "target_size", "google_compute_autoscaler"},
    {"google_compute_region_instance_group_manager", "target_size",
     "google_compute_region_autoscaler"},
    {"google_container_node_pool", "node_count", ""},
    {"oci_core_instance_pool", "size", ""},
    {"oci_containerengine_node_pool", "node_config_details[0].size", ""},
    {"openstack_containerinfra_nodegroup_v1", "node_count", ""},
    {"ibm_is_instance_group", "instance_count", ""},
});

// `expr` without parentheses or a "${...}" wrapper (a pointer: the result
// is `expr` itself or an expression inside it).
const hcl::Expression* unwrap(const hcl::Expression* expr) {
  if (const auto* p = expr->as<hcl::ParenthesesExpr>()) {
    return unwrap(p->inner.get());
  }
  if (const auto* t = expr->as<hcl::TemplateExpr>()) {
    if (const hcl::Expression* wrapped = t->wrappedExpression()) {
      return unwrap(wrapped);
    }
  }
  return expr;
}

// The block and attribute names of a path as ignore_changes writes it, without index steps:
// "sku[0].capacity" and the legacy "sku.0.capacity" are both {sku, capacity}.
std::vector<std::string> pathNames(std::string_view path) {
  std::vector<std::string> names;
  std::size_t start = 0;
  while (start <= path.size()) {
    const std::size_t dot = std::min(path.find('.', start), path.size());
    std::string_view part = path.substr(start, dot - start);
    part = part.substr(0, part.find('['));
    if (!part.empty() && !isAsciiDigits(part)) {
      names.emplace_back(part);
    }
    start = dot + 1;
  }
  return names;
}

// The names an ignore_changes element refers to (a reference such as `sku[0].capacity`, or a
// legacy string), without index steps; empty for any other expression.
std::vector<std::string> elementNames(const hcl::Expression& element) {
  const hcl::Expression& e = *unwrap(&element);
  if (const auto* t = e.as<hcl::ScopeTraversalExpr>()) {
    std::vector<std::string> names{t->root};
    for (const hcl::TraversalStep& step : t->steps) {
      if (step.kind == hcl::TraversalStep::Kind::kAttr) {
        names.push_back(step.name);
      }
    }
    return names;
  }
  if (const auto* t = e.as<hcl::TemplateExpr>()) {
    if (const auto literal = t->literalValue()) {
      return pathNames(*literal);
    }
  }
  return {};
}

// What a boolean condition is while autoscaling is on, when var.autoscaling.enabled decides it:
// that reference, bool literals, and !, ==, !=, && and || of such conditions. nullopt when it
// depends on anything else (a local is not followed).
std::optional<bool> whileAutoscaling(const hcl::Expression& condition) {
  const hcl::Expression& e = *unwrap(&condition);
  if (const auto* t = e.as<hcl::ScopeTraversalExpr>()) {
    if (refersTo(*t, kAutoscaling) && t->steps.size() == 2 && t->steps[1].name == "enabled") {
      return true;
    }
    return std::nullopt;
  }
  if (const auto* lit = e.as<hcl::LiteralExpr>();
      lit != nullptr && lit->type == hcl::LiteralType::kBool) {
    return lit->bool_value;
  }
  if (const auto* u = e.as<hcl::UnaryOpExpr>(); u != nullptr && u->op == hcl::UnaryOp::kNot) {
    const auto operand = whileAutoscaling(*u->operand);
    return operand.has_value() ? std::optional<bool>(!*operand) : std::nullopt;
  }
  const auto* b = e.as<hcl::BinaryOpExpr>();
  if (b == nullptr) {
    return std::nullopt;
  }
  const auto l = whileAutoscaling(*b->lhs);
  const auto r = whileAutoscaling(*b->rhs);
  if (b->op == hcl::BinaryOp::kAnd) {
    if (l == false || r == false) {
      return false;
    }
    return l.has_value() && r.has_value() ? std::optional<bool>(true) : std::nullopt;
  }
  if (b->op == hcl::BinaryOp::kOr) {
    if (l == true || r == true) {
      return true;
    }
    return l.has_value() && r.has_value() ? std::optional<bool>(false) : std::nullopt;
  }
  if ((b->op == hcl::BinaryOp::kEqual || b->op == hcl::BinaryOp::kNotEqual) && l.has_value() &&
      r.has_value()) {
    return (*l == *r) == (b->op == hcl::BinaryOp::kEqual);
  }
  return std::nullopt;
}

// The branch `expr` takes while autoscaling is on, through conditionals whose condition
// whileAutoscaling decides; `expr` itself (unwrapped) otherwise.
const hcl::Expression& valueWhileAutoscaling(const hcl::Expression& expr) {
  const hcl::Expression& e = *unwrap(&expr);
  if (const auto* c = e.as<hcl::ConditionalExpr>()) {
    if (const auto on = whileAutoscaling(*c->condition)) {
      return valueWhileAutoscaling(*on ? *c->true_result : *c->false_result);
    }
  }
  return e;
}

// [], {}, or toset/tolist/tomap of one.
bool isEmptyCollection(const hcl::Expression& expr) {
  const hcl::Expression& e = *unwrap(&expr);
  if (const auto* t = e.as<hcl::TupleExpr>()) {
    return t->elements.empty();
  }
  if (const auto* o = e.as<hcl::ObjectExpr>()) {
    return o->items.empty();
  }
  const hcl::FunctionCallExpr* call = nullptr;
  if (isCall(e, "toset", &call) || isCall(e, "tolist", &call) || isCall(e, "tomap", &call)) {
    return call->args.size() == 1 && !call->expand_final && isEmptyCollection(*call->args[0]);
  }
  return false;
}

// A resource whose `count` is 0, or whose `for_each` is empty, while autoscaling is on: it
// exists only while autoscaling is off (docs/lint.md#capacity-attributes).
bool existsOnlyWhileAutoscalingOff(const hcl::Body& resource) {
  if (const hcl::Attribute* count = resource.attribute("count");
      count != nullptr && count->expr != nullptr) {
    const auto* lit = valueWhileAutoscaling(*count->expr).as<hcl::LiteralExpr>();
    return lit != nullptr && lit->type == hcl::LiteralType::kNumber && lit->text == "0";
  }
  if (const hcl::Attribute* each = resource.attribute("for_each");
      each != nullptr && each->expr != nullptr) {
    return isEmptyCollection(valueWhileAutoscaling(*each->expr));
  }
  return false;
}

// Whether the resource leaves the table attribute unset while autoscaling is on: omitted, or
// null in the branch taken then. A dynamic block on the path counts as setting it.
bool capacityUnsetWhileAutoscaling(const hcl::Body& resource, std::string_view attribute) {
  const std::vector<std::string> names = pathNames(attribute);
  if (names.empty()) {
    return false;
  }
  const hcl::Body* body = &resource;
  for (std::size_t i = 0; i + 1 < names.size(); ++i) {
    const auto named = [&](const hcl::Block& b) { return b.type == names[i]; };
    const auto block = std::find_if(body->blocks.begin(), body->blocks.end(), named);
    if (block == body->blocks.end()) {
      return std::none_of(body->blocks.begin(), body->blocks.end(), [&](const hcl::Block& b) {
        return b.type == "dynamic" && !b.labels.empty() && b.labels[0].value == names[i];
      });
    }
    body = &block->body;
  }
  const hcl::Attribute* attr = body->attribute(names.back());
  return attr == nullptr || attr->expr == nullptr ||
         isLiteralNull(valueWhileAutoscaling(*attr->expr));
}

// Whether a resource of type `autoscaler_type` has a `target` that references `pool`.
bool targetedByAutoscaler(const Resource& pool, std::string_view autoscaler_type,
                          const std::vector<Resource>& resources) {
  return std::any_of(resources.begin(), resources.end(), [&](const Resource& r) {
    if (r.mode != Resource::Mode::kManaged || r.type != autoscaler_type) {
      return false;
    }
    const hcl::Attribute* target = r.block->body.attribute("target");
    if (target == nullptr || target->expr == nullptr) {
      return false;
    }
    const auto refs = hcl::references(*target->expr);
    return std::any_of(refs.begin(), refs.end(), [&](const hcl::ScopeTraversalExpr* ref) {
      return ref->root == pool.type && !ref->steps.empty() &&
             ref->steps[0].kind == hcl::TraversalStep::Kind::kAttr &&
             ref->steps[0].name == pool.name;
    });
  });
}

// Whether a lifecycle block of the resource ignores changes to `row`'s attribute or, without a
// row, to the attribute of any row.
bool ignoresCapacity(const hcl::Body& resource, const CapacityAttribute* row) {
  for (const hcl::Block& lifecycle : resource.blocks) {
    const hcl::Attribute* ignore =
        lifecycle.type == "lifecycle" ? lifecycle.body.attribute("ignore_changes") : nullptr;
    if (ignore == nullptr || ignore->expr == nullptr) {
      continue;
    }
    if (row != nullptr ? ignoresAttribute(*ignore->expr, row->attribute)
                       : std::any_of(kCapacityAttributes.begin(), kCapacityAttributes.end(),
                                     [&](const CapacityAttribute& any) {
                                       return ignoresAttribute(*ignore->expr, any.attribute);
                                     })) {
      return true;
    }
  }
  return false;
}

// The accepted patterns of docs/lint.md#capacity-attributes: the capacity is ignored, the
// resource exists only while autoscaling is off, or the capacity is unset while autoscaling
// and the row's autoscaler targets the resource.
bool leavesCapacityToAutoscaler(const Resource& pool, const CapacityAttribute& row,
                                const std::vector<Resource>& resources) {
  const hcl::Body& body = pool.block->body;
  if (ignoresCapacity(body, &row) || existsOnlyWhileAutoscalingOff(body)) {
    return true;
  }
  return !row.autoscaler_type.empty() && capacityUnsetWhileAutoscaling(body, row.attribute) &&
         targetedByAutoscaler(pool, row.autoscaler_type, resources);
}

} // namespace

const std::set<std::string_view>& credentialArgumentNames() {
  static const std::set<std::string_view> kNames = {"access_key",
                                                    "secret_key",
                                                    "secret_access_key",
                                                    "session_token",
                                                    "token",
                                                    "access_token",
                                                    "auth_token",
                                                    "bearer_token",
                                                    "api_token",
                                                    "api_key",
                                                    "apikey",
                                                    "password",
                                                    "passphrase",
                                                    "client_secret",
                                                    "client_certificate",
                                                    "client_certificate_password",
                                                    "client_key",
                                                    "private_key",
                                                    "private_key_password",
                                                    "ssh_private_key",
                                                    "secret"};
  return kNames;
}

std::span<const CapacityAttribute> capacityAttributes() {
  return kCapacityAttributes;
}

const CapacityAttribute* capacityAttribute(std::string_view resource_type) {
  const auto it = std::find_if(
      kCapacityAttributes.begin(), kCapacityAttributes.end(),
      [&](const CapacityAttribute& row) { return row.resource_type == resource_type; });
  return it == kCapacityAttributes.end() ? nullptr : &*it;
}

bool ignoresAttribute(const hcl::Expression& ignore_changes, std::string_view attribute) {
  const hcl::Expression& value = *unwrap(&ignore_changes);
  if (const auto* t = value.as<hcl::ScopeTraversalExpr>();
      t != nullptr && t->root == "all" && t->steps.empty()) {
    return true;
  }
  const auto* list = value.as<hcl::TupleExpr>();
  if (list == nullptr) {
    return false;
  }
  const std::vector<std::string> wanted = pathNames(attribute);
  return std::any_of(list->elements.begin(), list->elements.end(), [&](const hcl::ExprPtr& e) {
    const std::vector<std::string> names = elementNames(*e);
    return !names.empty() && names.size() <= wanted.size() &&
           std::equal(names.begin(), names.end(), wanted.begin());
  });
}

bool referencesVariable(const LoadedModule& module, std::string_view name, Forwarding forwarding) {
  std::set<const LoadedModule*> visiting;
  return referencesVariableImpl(module, name, forwarding, visiting);
}

bool isSorted(const hcl::Expression& expr) {
  const hcl::FunctionCallExpr* call = nullptr;
  if (isCall(expr, "sort", &call)) {
    return true;
  }
  if (const auto* p = expr.as<hcl::ParenthesesExpr>()) {
    return isSorted(*p->inner);
  }
  if (isCall(expr, "tolist", &call) || isCall(expr, "distinct", &call)) {
    return call->args.size() == 1 && !call->expand_final && isSorted(*call->args[0]);
  }
  if (isCall(expr, "concat", &call)) {
    return !call->args.empty() && !call->expand_final &&
           std::all_of(call->args.begin(), call->args.end(),
                       [](const hcl::ExprPtr& a) { return isSorted(*a); });
  }
  if (const auto* c = expr.as<hcl::ConditionalExpr>()) {
    return isSorted(*c->true_result) && isSorted(*c->false_result);
  }
  return false;
}

void checkInputs(const LoadedModule& root, const RoleContract& contract,
                 std::vector<Finding>& out) {
  const Module& decls = root.declarations();

  std::vector<const ContractInput*> sorted;
  sorted.reserve(contract.inputs.size());
  for (const ContractInput& in : contract.inputs) {
    sorted.push_back(&in);
  }
  std::sort(sorted.begin(), sorted.end(),
            [](const ContractInput* a, const ContractInput* b) { return a->name < b->name; });
  for (const ContractInput* in : sorted) {
    if (in->name != kTags && decls.variable(in->name) == nullptr) {
      out.push_back(finding("input/required", Severity::kError, wholeModule(),
                            strCat("contract input ", in->name, " is not declared as a variable")));
    }
  }
  if (decls.variable(kTags) == nullptr) {
    out.push_back(finding("input/tags-declared", Severity::kError, wholeModule(),
                          "variable captf_tags is not declared: every module must accept the "
                          "contract's tags"));
  }

  for (const Variable& v : decls.variables) {
    const ContractInput* in = contract.input(v.name);
    const bool reserved = v.name.starts_with(kReservedPrefix);
    if (in == nullptr && !reserved && !v.has_default) {
      out.push_back(finding("input/user-variable-default", Severity::kWarning, v.location,
                            strCat("variable ", v.name,
                                   " is not a contract input and has no default: an object that "
                                   "does not set it in spec.variables or variablesFrom fails to "
                                   "apply")));
    }
    if (in == nullptr && reserved && !(v.name == kClusterOutputs && v.has_default)) {
      out.push_back(finding("input/reserved", Severity::kError, v.location,
                            strCat("variable ", v.name,
                                   " uses the reserved captf_ prefix but is not a contract "
                                   "input")));
    }
    if (in == nullptr) {
      continue;
    }
    // input/type
    if (!v.has_type) {
      out.push_back(
          finding("input/type", Severity::kWarning, v.location,
                  strCat("variable ", v.name, " has no type; the contract passes ", in->type)));
    } else {
      const auto contract_type = parseTypeConstraint(in->type);
      const auto declared = parseTypeConstraint(v.type_text);
      if (!declared.ok()) {
        const absl::string_view err = declared.status().message();
        out.push_back(
            finding("input/type", Severity::kWarning, v.location,
                    strCat("variable ", v.name, ": cannot check type ", v.type_text, " against ",
                           in->type, ": ", std::string_view(err.data(), err.size()))));
      } else if (contract_type.ok() && !compatible(*declared, *contract_type)) {
        out.push_back(finding("input/type", Severity::kError, v.location,
                              strCat("variable ", v.name, " is declared as ", v.type_text,
                                     ", which does not accept the contract's ", in->type)));
      }
    }
    if (v.name == kBootstrapData && !v.sensitive) {
      out.push_back(finding("input/sensitive", Severity::kWarning, v.location,
                            "variable bootstrap_data should be sensitive = true: it carries the "
                            "bootstrap payload"));
    }
    if (v.has_default && !in->nullable && v.name != kClusterOutputs) {
      out.push_back(finding("input/default", Severity::kWarning, v.location,
                            strCat("contract input ", v.name,
                                   " has a default; the controller always sets it, so a default "
                                   "only hides a missing value")));
    }
  }
}

void checkTagsUnused(const LoadedModule& root, std::vector<Finding>& out) {
  const Variable* tags = root.declarations().variable(kTags);
  if (tags != nullptr && !referencesVariable(root, kTags, Forwarding::kFollow)) {
    out.push_back(finding("input/tags-unused", Severity::kWarning, tags->location,
                          "variable captf_tags is never referenced: the module should tag what "
                          "it creates with it"));
  }
}

void checkOutputs(const LoadedModule& root, const RoleContract& contract,
                  std::vector<Finding>& out) {
  const Module& decls = root.declarations();
  const bool pool = contract.role == "machinepool";
  std::vector<std::string> required = contract.outputs;
  std::sort(required.begin(), required.end());
  for (const std::string& name : required) {
    if (name == kHealth || (pool && name == kProviderIdList)) {
      continue;
    }
    if (decls.output(name) == nullptr) {
      out.push_back(finding("output/required", Severity::kError, wholeModule(),
                            strCat("contract output ", name, " is not declared")));
    }
  }
  if (decls.output(kHealth) == nullptr) {
    out.push_back(finding("output/health", Severity::kError, wholeModule(),
                          "output health is not declared: every module must report its health"));
  }
  for (const Output& o : decls.outputs) {
    if (o.name.starts_with(kReservedPrefix)) {
      out.push_back(finding("output/reserved", Severity::kWarning, o.location,
                            strCat("output ", o.name,
                                   " uses the captf_ prefix, which is reserved for the "
                                   "contract")));
    }
  }

  const Module& exprs = root.expressions();
  if (pool) {
    if (decls.output(kProviderIdList) == nullptr) {
      out.push_back(finding("output/provider-id-list-shape", Severity::kError, wholeModule(),
                            "output provider_id_list is not declared: a pool reports every "
                            "non-terminated member"));
    }
    const Output* list = exprs.output(kProviderIdList);
    if (list != nullptr && list->value != nullptr && list->file->syntax == Syntax::kNative) {
      const SourceLocation at{list->location.file, list->value_line};
      if (filtersOnHealth(*list->value)) {
        out.push_back(finding("output/provider-id-list-shape", Severity::kWarning, at,
                              "output provider_id_list filters on health or state: it must list "
                              "every non-terminated member"));
      }
      if (!isSorted(*list->value)) {
        out.push_back(finding("output/provider-id-list-shape", Severity::kWarning, at,
                              "output provider_id_list is not sorted with sort(): its order "
                              "churns between runs"));
      }
    }
  }
  if (contract.role == "cluster") {
    const Output* endpoint = exprs.output(kControlPlaneEndpoint);
    if (endpoint != nullptr && endpoint->value != nullptr &&
        !hasVariableReference(*endpoint->value) && isLiteralNull(*endpoint->value)) {
      out.push_back(finding("output/endpoint-never-set", Severity::kWarning,
                            {endpoint->location.file, endpoint->value_line},
                            "output control_plane_endpoint is always null: without a user-set "
                            "endpoint the cluster never gets one"));
    }
  }
}

void checkAutoscalingIgnoreChanges(const ModuleTree& tree, std::vector<Finding>& out) {
  for (const auto& module : tree.modules) {
    if (!referencesVariable(*module, kAutoscaling, Forwarding::kIgnore)) {
      continue;
    }
    const std::vector<Resource>& resources = module->expressions().resources;
    // Every resource of the capacity table must leave its capacity to the autoscaler. A JSON
    // resource is not read: it counts as unknown, which is accepted.
    bool has_table_resource = false;
    const Resource* resets = nullptr;
    const CapacityAttribute* resets_row = nullptr;
    for (const Resource& r : resources) {
      const CapacityAttribute* row =
          r.mode == Resource::Mode::kManaged ? capacityAttribute(r.type) : nullptr;
      if (row == nullptr) {
        continue;
      }
      has_table_resource = true;
      if (resets == nullptr && r.file->syntax == Syntax::kNative &&
          !leavesCapacityToAutoscaler(r, *row, resources)) {
        resets = &r;
        resets_row = row;
      }
    }
    if (resets != nullptr) {
      out.push_back(finding("pool/autoscaling-ignore-changes", Severity::kWarning,
                            moduleLocation(*module),
                            strCat("the module uses var.autoscaling, but resource ", resets->type,
                                   ".", resets->name, " manages its desired capacity ",
                                   resets_row->attribute, ": every apply resets the autoscaler")));
      continue;
    }
    if (has_table_resource) {
      continue;
    }
    // No resource of the table: one that uses var.autoscaling must ignore a capacity attribute
    // of the table.
    const bool handled = std::any_of(resources.begin(), resources.end(), [](const Resource& r) {
      return r.mode == Resource::Mode::kManaged && bodyReferences(r.block->body, kAutoscaling) &&
             (r.file->syntax == Syntax::kJson || ignoresCapacity(r.block->body, nullptr));
    });
    if (!handled) {
      out.push_back(finding("pool/autoscaling-ignore-changes", Severity::kWarning,
                            moduleLocation(*module),
                            "the module uses var.autoscaling, but no resource that uses it "
                            "ignores changes to its desired capacity: every apply resets the "
                            "autoscaler"));
    }
  }
}

void checkStateBlocks(const ModuleTree& tree, std::vector<Finding>& out) {
  for (const auto& module : tree.modules) {
    const Module& exprs = module->expressions();
    for (const StateBlock& b : exprs.backends) {
      out.push_back(finding("module/backend", Severity::kError, b.location,
                            "terraform { backend } in the module: the generated root owns the "
                            "backend, a module must not declare one"));
    }
    for (const StateBlock& c : exprs.clouds) {
      out.push_back(finding("module/cloud", Severity::kError, c.location,
                            "terraform { cloud } in the module: state lives in the generated "
                            "root's backend"));
    }
  }
}

void checkProviderConfig(const ModuleTree& tree, std::vector<Finding>& out) {
  for (const auto& module : tree.modules) {
    for (const ProviderConfig& p : module->expressions().providers) {
      checkProviderBody(*p.file, p.block->body, out);
    }
  }
}

void checkSourceEscape(const ModuleTree& tree, std::vector<Finding>& out) {
  for (const auto& module : tree.modules) {
    for (const SourceProblem& p : module->source_problems) {
      std::string message;
      switch (p.kind) {
      case SourceProblem::Kind::kCallEscapes:
        message = strCat("module \"", p.name, "\" source \"", p.source,
                         "\" escapes the module directory; it is never linted and would not "
                         "ship with the module");
        break;
      case SourceProblem::Kind::kCallSymlinkOutside:
        message =
            strCat("module \"", p.name, "\" source \"", p.source, "\" is a symlink to ", p.detail,
                   ", outside the module directory; it is never linted and would not ship "
                   "with the module");
        break;
      case SourceProblem::Kind::kCallUnresolvable:
        message = strCat("module \"", p.name, "\" source \"", p.source,
                         "\" cannot be resolved: ", p.detail);
        break;
      case SourceProblem::Kind::kFileSymlinkOutside:
        message = strCat("module file ", p.name, " is a symlink to ", p.detail,
                         ", outside the module directory; it would not ship with the module");
        break;
      case SourceProblem::Kind::kFileUnresolvable:
        message =
            strCat("module file ", p.name, " is a symlink that cannot be resolved: ", p.detail);
        break;
      }
      out.push_back(finding("module/source-escape", Severity::kError, p.location, message));
    }
  }
}

void checkTofuShadow(const LoadedModule& root, std::vector<Finding>& out) {
  if (!root.has_tf_files || !root.has_tofu_files) {
    return;
  }
  const auto& tf = root.terraform.declarations;
  const auto& tofu = root.opentofu.declarations;
  constexpr std::string_view kTail = "; the contract checks read Terraform's files";
  for (const auto& [key, decl] : tofu) {
    const auto it = tf.find(key);
    if (it == tf.end()) {
      out.push_back(finding("module/tofu-shadow", Severity::kWarning, decl.location,
                            strCat(key,
                                   " is declared only in a .tofu file: Terraform does not "
                                   "see it",
                                   kTail)));
    } else if (it->second.content != decl.content) {
      out.push_back(
          finding("module/tofu-shadow", Severity::kWarning, decl.location,
                  strCat(key, " differs between OpenTofu's files and Terraform's", kTail)));
    }
  }
  for (const auto& [key, decl] : tf) {
    if (!tofu.contains(key)) {
      out.push_back(finding("module/tofu-shadow", Severity::kWarning, decl.location,
                            strCat(key,
                                   " is declared for Terraform, but a .tofu file shadows it and "
                                   "OpenTofu does not see it",
                                   kTail)));
    }
  }
}

void checkVersion(const LoadedModule& root, std::vector<Finding>& out) {
  if (root.declarations().required_version.empty()) {
    out.push_back(finding("module/version", Severity::kInfo, wholeModule(),
                          "no required_version: declare the runtime versions the module was "
                          "tested with"));
  }
}

std::vector<Finding> runModuleChecks(const ModuleTree& tree, const RoleContract& contract) {
  std::vector<Finding> out;
  const LoadedModule& root = tree.root();
  checkInputs(root, contract, out);
  checkTagsUnused(root, out);
  checkOutputs(root, contract, out);
  if (contract.role == "machinepool") {
    checkAutoscalingIgnoreChanges(tree, out);
  }
  checkStateBlocks(tree, out);
  checkProviderConfig(tree, out);
  checkSourceEscape(tree, out);
  checkTofuShadow(root, out);
  checkVersion(root, out);
  return out;
}

} // namespace captf::lint
