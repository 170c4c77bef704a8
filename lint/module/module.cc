#include "lint/module/module.h"

#include <algorithm>

namespace captf::lint {

std::string_view ModuleFile::stem() const {
  std::string_view n = name;
  for (std::string_view ext : {".tofu.json", ".tf.json", ".tofu", ".tf"}) {
    if (n.ends_with(ext)) {
      n.remove_suffix(ext.size());
      return n;
    }
  }
  return n;
}

std::string_view ModuleFile::valueText(const hcl::Attribute& attr) const {
  if (syntax == Syntax::kJson) {
    const auto it = json_text.find(attr.expr.get());
    return it == json_text.end() ? std::string_view() : std::string_view(it->second);
  }
  return attr.expr == nullptr ? std::string_view() : file.text(attr.expr->range());
}

const Variable* Module::variable(std::string_view name) const {
  const auto it = std::find_if(variables.begin(), variables.end(),
                               [&](const Variable& v) { return v.name == name; });
  return it == variables.end() ? nullptr : &*it;
}

const Output* Module::output(std::string_view name) const {
  const auto it =
      std::find_if(outputs.begin(), outputs.end(), [&](const Output& o) { return o.name == name; });
  return it == outputs.end() ? nullptr : &*it;
}

} // namespace captf::lint
