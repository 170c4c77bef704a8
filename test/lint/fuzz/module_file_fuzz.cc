// libFuzzer target for module loading: a native or JSON configuration file is
// read into the module model and every module check runs over it. Built and
// run like hcl_parser_fuzz.cc (target captf_lint_module_file_fuzz).
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "lint/checks/module_checks.h"
#include "lint/contract_view.h"
#include "lint/module/loader.h"
#include "lint/module/type_constraint.h"

namespace {

using namespace captf::lint;

// A synthetic role table that reaches every check (it is fuzz scaffolding,
// not the contract: the checks only need names, types and nullability).
RoleContract fuzzContract() {
  RoleContract c;
  c.version = "v1alpha1";
  c.role = "machinepool";
  c.inputs = {{"captf_tags", "map(string)", false},
              {"bootstrap_data", "string", false},
              {"kubernetes_version", "string", true},
              {"autoscaling", "object({enabled=bool, min=number, max=number})", false},
              {"failure_domains", "list(string)", false}};
  c.outputs = {"provider_id", "provider_id_list", "health"};
  return c;
}

void lintOne(const std::string& name, const std::string& content, const RoleContract& contract) {
  auto file = parseModuleFile(name, name, content);
  if (!file.ok()) {
    return;
  }
  auto module = std::make_unique<LoadedModule>();
  const ModuleFile* raw = file->get();
  module->files.push_back(std::move(*file));
  const ModuleFile* const files[] = {raw};
  module->terraform = buildModule(files, "");
  module->opentofu = buildModule(files, "");
  (raw->tofu ? module->has_tofu_files : module->has_tf_files) = true;
  for (const Variable& v : module->terraform.variables) {
    (void)parseTypeConstraint(v.type_text);
  }
  ModuleTree tree;
  tree.modules.push_back(std::move(module));
  (void)runModuleChecks(tree, contract);
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  static const RoleContract kContract = fuzzContract();
  const std::string input(reinterpret_cast<const char*>(data), size);
  lintOne("main.tf", input, kContract);
  lintOne("main.tf.json", input, kContract);
  (void)parseTypeConstraint(input);
  return 0;
}
