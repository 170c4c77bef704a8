#include "lint/checks/module_checks.h"

#include <algorithm>
#include <array>
#include <set>
#include <string>

#include "absl/strings/ascii.h"
#include "contract/strings.h"
#include "lint/module/type_constraint.h"

namespace captf::lint {

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

// `ignore_changes = all`, or a list whose source text names the desired
// capacity (matchesDesiredCapacity).
bool ignoresDesiredCapacity(const ModuleFile& file, const hcl::Body& resource) {
  for (const hcl::Block& lifecycle : resource.blocks) {
    if (lifecycle.type != "lifecycle") {
      continue;
    }
    const hcl::Attribute* ignore = lifecycle.body.attribute("ignore_changes");
    if (ignore == nullptr || ignore->expr == nullptr) {
      continue;
    }
    if (const auto* t = ignore->expr->as<hcl::ScopeTraversalExpr>();
        t != nullptr && t->root == "all" && t->steps.empty()) {
      return true;
    }
    if (matchesDesiredCapacity(file.valueText(*ignore))) {
      return true;
    }
  }
  return false;
}

bool isWordChar(char c) {
  return absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '_';
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

bool matchesDesiredCapacity(std::string_view text) {
  constexpr auto kWords = std::to_array<std::string_view>(
      {"desired_capacity", "desired_size", "target_size", "instance_count"});
  const auto word_ends_at = [&](std::size_t end) {
    return end == text.size() || !isWordChar(text[end]);
  };
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (i > 0 && isWordChar(text[i - 1])) {
      continue; // no word boundary before position i
    }
    const std::string_view rest = text.substr(i);
    for (std::string_view word : kWords) {
      if (rest.starts_with(word) && word_ends_at(i + word.size())) {
        return true;
      }
    }
    if (!rest.starts_with("sku")) {
      continue;
    }
    std::size_t j = i + 3;
    if (j < text.size() && text[j] == '[') {
      std::size_t k = j + 1;
      while (k < text.size() && absl::ascii_isdigit(static_cast<unsigned char>(text[k]))) {
        ++k;
      }
      if (k > j + 1 && k < text.size() && text[k] == ']') {
        j = k + 1;
      }
    }
    constexpr std::string_view kCapacity = ".capacity";
    if (text.substr(j).starts_with(kCapacity) && word_ends_at(j + kCapacity.size())) {
      return true;
    }
  }
  return false;
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
    bool handled = false;
    for (const Resource& r : module->expressions().resources) {
      if (r.mode != Resource::Mode::kManaged || !bodyReferences(r.block->body, kAutoscaling)) {
        continue;
      }
      // A JSON resource's ignore_changes is not read: it counts as unknown,
      // which is accepted.
      if (r.file->syntax == Syntax::kJson || ignoresDesiredCapacity(*r.file, r.block->body)) {
        handled = true;
        break;
      }
    }
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
