#pragma once

#include <set>
#include <span>
#include <string_view>
#include <vector>

#include "lint/contract_view.h"
#include "lint/finding.h"
#include "lint/hcl/ast.h"
#include "lint/module/loader.h"

// The module checks of docs/lint.md#module-checks. Each check is a pure function of the loaded
// module tree and the role's contract table; runModuleChecks runs them all.
namespace captf::lint {

// Every check of docs/lint.md#module-checks for `contract.role`, in the order of the spec's
// table. Findings are not sorted (see sortFindings).
std::vector<Finding> runModuleChecks(const ModuleTree& tree, const RoleContract& contract);

// The individual checks, exposed for tests. Root-only checks read
// tree.root(); tree checks visit every module.
void checkInputs(const LoadedModule& root, const RoleContract& contract, std::vector<Finding>& out);
void checkTagsUnused(const LoadedModule& root, std::vector<Finding>& out);
void checkOutputs(const LoadedModule& root, const RoleContract& contract,
                  std::vector<Finding>& out);
void checkAutoscalingIgnoreChanges(const ModuleTree& tree, std::vector<Finding>& out);
void checkStateBlocks(const ModuleTree& tree, std::vector<Finding>& out);
void checkProviderConfig(const ModuleTree& tree, std::vector<Finding>& out);
void checkSourceEscape(const ModuleTree& tree, std::vector<Finding>& out);
void checkTofuShadow(const LoadedModule& root, std::vector<Finding>& out);
void checkVersion(const LoadedModule& root, std::vector<Finding>& out);

// Whether passing a variable into a local module call counts as using it.
enum class Forwarding {
  kIgnore, // module blocks are not scanned (docs/lint.md#module-loading "Reference scan")
  kFollow, // an argument that carries var.<name> counts if the child uses it
};

// Whether the module references var.<name> in any block except module
// blocks; with Forwarding::kFollow, also when it passes var.<name> as an
// argument to a loaded local module that (recursively) references that
// argument (input/tags-unused).
bool referencesVariable(const LoadedModule& module, std::string_view name, Forwarding forwarding);

// The "sorted" rule of output/provider-id-list-shape: sort(...); parentheses,
// tolist() or distinct() around a sorted expression; concat() of sorted
// expressions; a conditional with both branches sorted.
bool isSorted(const hcl::Expression& expr);

// One row of the capacity table of pool/autoscaling-ignore-changes
// (docs/lint.md#capacity-attributes): a scaling resource type, the attribute that holds its
// desired capacity as `ignore_changes` names it, and the autoscaler resource type whose `target`
// may point at it (empty when the provider has none the check knows).
struct CapacityAttribute {
  std::string_view resource_type;
  std::string_view attribute;
  std::string_view autoscaler_type;
};

// The capacity table, in the order of docs/lint.md#capacity-attributes.
std::span<const CapacityAttribute> capacityAttributes();

// The table's row for `resource_type`, or nullptr.
const CapacityAttribute* capacityAttribute(std::string_view resource_type);

// Whether the value of `lifecycle { ignore_changes = ... }` covers `attribute` (a table
// attribute such as "scaling_config[0].desired_size"): `all`, or a list with an element that
// names the attribute or a block or attribute containing it, as a reference or a legacy string;
// index steps are not compared.
bool ignoresAttribute(const hcl::Expression& ignore_changes, std::string_view attribute);

// The credential argument names of module/provider-config, lower case.
const std::set<std::string_view>& credentialArgumentNames();

} // namespace captf::lint
