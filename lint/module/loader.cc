#include "lint/module/loader.h"

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdio>
#include <memory>
#include <optional>
#include <set>
#include <system_error>

#include "contract/status_macros.h"
#include "contract/strings.h"
#include "lint/hcl/json.h"
#include "lint/module/json_config.h"

namespace captf::lint {

using contract::strAppend;
using contract::strCat;

namespace fs = std::filesystem;

namespace {

bool isConfigName(std::string_view name) {
  if (name.empty() || name.front() == '.' || name.back() == '~' ||
      (name.size() >= 2 && name.front() == '#' && name.back() == '#')) {
    return false;
  }
  return name.ends_with(".tf") || name.ends_with(".tf.json") || name.ends_with(".tofu") ||
         name.ends_with(".tofu.json");
}

bool isJsonName(std::string_view name) {
  return name.ends_with(".json");
}
bool isTofuName(std::string_view name) {
  return name.ends_with(".tofu") || name.ends_with(".tofu.json");
}

std::string prefixed(std::string_view path, std::string_view name) {
  return path.empty() ? std::string(name) : strCat(path, "/", name);
}

// Whether `p` is `root` or below it (both canonical).
bool within(const fs::path& root, const fs::path& p) {
  const fs::path rel = p.lexically_relative(root);
  return !rel.empty() && *rel.begin() != "..";
}

std::optional<std::string> literalString(const hcl::Expression* expr) {
  if (expr == nullptr) {
    return std::nullopt;
  }
  if (const auto* t = expr->as<hcl::TemplateExpr>()) {
    return t->literalValue();
  }
  return std::nullopt;
}

bool isLiteralBool(const hcl::Expression* expr, bool value) {
  const auto* lit = expr == nullptr ? nullptr : expr->as<hcl::LiteralExpr>();
  return lit != nullptr && lit->type == hcl::LiteralType::kBool && lit->bool_value == value;
}

const hcl::Expression* attrExpr(const hcl::Body& body, std::string_view name) {
  const hcl::Attribute* attr = body.attribute(name);
  return attr == nullptr ? nullptr : attr->expr.get();
}

std::string collapseWhitespace(std::string_view text) {
  std::string out;
  bool space = false;
  for (const char c : text) {
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
      space = !out.empty();
      continue;
    }
    if (space) {
      out.push_back(' ');
      space = false;
    }
    out.push_back(c);
  }
  return out;
}

// Sorted `name=<collapsed value>` lines, then nested blocks in order.
std::string canonicalBody(const ModuleFile& file, const hcl::Body& body) {
  std::vector<std::string> lines;
  lines.reserve(body.attributes.size());
  for (const hcl::Attribute& attr : body.attributes) {
    lines.push_back(strCat(attr.name, "=", collapseWhitespace(file.valueText(attr))));
  }
  std::sort(lines.begin(), lines.end());
  std::string out;
  for (const std::string& line : lines) {
    strAppend(out, line, "\n");
  }
  for (const hcl::Block& block : body.blocks) {
    strAppend(out, block.type);
    for (const hcl::BlockLabel& label : block.labels) {
      strAppend(out, " \"", label.value, "\"");
    }
    strAppend(out, " {\n", canonicalBody(file, block.body), "}\n");
  }
  return out;
}

// The number of labels each known top-level block takes.
std::optional<std::size_t> expectedLabels(std::string_view type) {
  if (type == "variable" || type == "output" || type == "provider" || type == "module" ||
      type == "check") {
    return 1;
  }
  if (type == "resource" || type == "data" || type == "ephemeral") {
    return 2;
  }
  if (type == "terraform" || type == "locals" || type == "moved" || type == "import" ||
      type == "removed") {
    return 0;
  }
  return std::nullopt;
}

absl::Status labelError(const hcl::File& file, const hcl::Block& block, std::size_t want) {
  const std::string_view what = want == 0   ? "no labels"
                                : want == 1 ? "exactly one label (its name)"
                                            : "exactly two labels (its type and name)";
  return hcl::syntaxError(
      file.filename, block.range.start,
      strCat("a ", block.type, " block takes ", what, ", but this one has ", block.labels.size()));
}

// The top-level block schema: known blocks must have the right number of
// labels, and so must the backend blocks the checks read.
absl::Status validateTopLevel(const hcl::File& file) {
  for (const hcl::Block& block : file.body.blocks) {
    const auto want = expectedLabels(block.type);
    if (want.has_value() && block.labels.size() != *want) {
      return labelError(file, block, *want);
    }
    if (block.type != "terraform") {
      continue;
    }
    for (const hcl::Block& nested : block.body.blocks) {
      if (nested.type == "backend" && nested.labels.size() != 1) {
        return labelError(file, nested, 1);
      }
      if ((nested.type == "cloud" || nested.type == "required_providers") &&
          !nested.labels.empty()) {
        return labelError(file, nested, 0);
      }
    }
  }
  return absl::OkStatus();
}

std::string providerOf(const hcl::Block& block) {
  const hcl::Expression* provider = attrExpr(block.body, "provider");
  if (provider != nullptr) {
    if (const auto* t = provider->as<hcl::ScopeTraversalExpr>()) {
      return t->root;
    }
    if (auto s = literalString(provider)) {
      return s->substr(0, s->find('.'));
    }
  }
  const std::string& type = block.labels[0].value;
  return type.substr(0, type.find('_'));
}

template <class T> void putUnique(std::vector<T>& list, T item) {
  const auto it = std::find_if(list.begin(), list.end(),
                               [&](const T& existing) { return existing.name == item.name; });
  if (it == list.end()) {
    list.push_back(std::move(item));
  } else {
    *it = std::move(item);
  }
}

void addRequiredProviders(Module& module, const ModuleFile& file, const hcl::Block& block,
                          std::string_view path) {
  for (const hcl::Attribute& attr : block.body.attributes) {
    RequiredProvider rp;
    rp.name = attr.name;
    rp.location = {prefixed(path, file.name), attr.range.start.line};
    if (auto version = literalString(attr.expr.get())) {
      rp.version_constraints.push_back(*version);
    } else if (const auto* object = attr.expr->as<hcl::ObjectExpr>()) {
      for (const hcl::ObjectItem& item : object->items) {
        const auto key = item.literalKey();
        if (key == "source") {
          rp.source = literalString(item.value.get()).value_or("");
        } else if (key == "version") {
          if (auto v = literalString(item.value.get())) {
            rp.version_constraints.push_back(*v);
          }
        }
      }
    }
    module.declarations[strCat("required_providers.", attr.name)] = {
        rp.location, collapseWhitespace(file.valueText(attr))};
    putUnique(module.required_providers, std::move(rp));
  }
}

void addTerraformBlock(Module& module, const ModuleFile& file, const hcl::Block& block,
                       std::string_view path) {
  const std::string file_path = prefixed(path, file.name);
  if (const hcl::Attribute* rv = block.body.attribute("required_version")) {
    if (auto v = literalString(rv->expr.get())) {
      module.required_version.push_back(*v);
    } else {
      module.required_version.emplace_back(file.valueText(*rv));
    }
    module.required_version_location = {file_path, rv->range.start.line};
    module.declarations["required_version"] = {module.required_version_location,
                                               collapseWhitespace(file.valueText(*rv))};
  }
  for (const hcl::Block& nested : block.body.blocks) {
    const SourceLocation location{file_path, nested.range.start.line};
    if (nested.type == "required_providers") {
      addRequiredProviders(module, file, nested, path);
    } else if (nested.type == "backend") {
      module.backends.push_back({nested.labels[0].value, location, &file, &nested});
      module.declarations[strCat("backend.", nested.labels[0].value)] = {
          location, canonicalBody(file, nested.body)};
    } else if (nested.type == "cloud") {
      module.clouds.push_back({"cloud", location, &file, &nested});
      module.declarations["cloud"] = {location, canonicalBody(file, nested.body)};
    }
  }
}

void addBlock(Module& module, const ModuleFile& file, const hcl::Block& block,
              std::string_view path) {
  const SourceLocation location{prefixed(path, file.name), block.range.start.line};
  const hcl::Body& body = block.body;
  const auto declare = [&](const std::string& key) {
    module.declarations[key] = {location, canonicalBody(file, body)};
  };
  if (block.type == "variable") {
    Variable v;
    v.name = block.labels[0].value;
    v.location = location;
    v.file = &file;
    v.block = &block;
    if (const hcl::Attribute* type = body.attribute("type")) {
      v.has_type = true;
      if (file.syntax == Syntax::kJson) {
        v.type_text = literalString(type->expr.get()).value_or(std::string(file.valueText(*type)));
      } else {
        v.type_text = std::string(file.valueText(*type));
      }
    }
    v.default_value = attrExpr(body, "default");
    v.has_default = v.default_value != nullptr;
    v.sensitive = isLiteralBool(attrExpr(body, "sensitive"), true);
    v.nullable = !isLiteralBool(attrExpr(body, "nullable"), false);
    declare(strCat("variable.", v.name));
    putUnique(module.variables, std::move(v));
  } else if (block.type == "output") {
    Output o;
    o.name = block.labels[0].value;
    o.location = location;
    o.file = &file;
    o.block = &block;
    if (const hcl::Attribute* value = body.attribute("value")) {
      o.value = value->expr.get();
      o.value_line = value->range.start.line;
    }
    o.sensitive = isLiteralBool(attrExpr(body, "sensitive"), true);
    declare(strCat("output.", o.name));
    putUnique(module.outputs, std::move(o));
  } else if (block.type == "resource" || block.type == "data" || block.type == "ephemeral") {
    Resource r;
    r.mode = block.type == "resource" ? Resource::Mode::kManaged
             : block.type == "data"   ? Resource::Mode::kData
                                      : Resource::Mode::kEphemeral;
    r.type = block.labels[0].value;
    r.name = block.labels[1].value;
    r.location = location;
    r.file = &file;
    r.block = &block;
    r.provider = providerOf(block);
    if (r.mode != Resource::Mode::kEphemeral) {
      declare(strCat(block.type, ".", r.type, ".", r.name));
    }
    module.resources.push_back(std::move(r));
  } else if (block.type == "module") {
    ModuleCall call;
    call.name = block.labels[0].value;
    call.location = location;
    call.file = &file;
    call.block = &block;
    call.source = literalString(attrExpr(body, "source")).value_or("");
    call.version = literalString(attrExpr(body, "version")).value_or("");
    declare(strCat("module.", call.name));
    putUnique(module.module_calls, std::move(call));
  } else if (block.type == "provider") {
    ProviderConfig p;
    p.name = block.labels[0].value;
    p.alias = literalString(attrExpr(body, "alias")).value_or("");
    p.location = location;
    p.file = &file;
    p.block = &block;
    declare(p.alias.empty() ? strCat("provider.", p.name)
                            : strCat("provider.", p.name, ".", p.alias));
    module.providers.push_back(std::move(p));
  } else if (block.type == "locals") {
    for (const hcl::Attribute& attr : body.attributes) {
      Local l{attr.name, {location.file, attr.range.start.line}, &file, &attr};
      module.declarations[strCat("local.", attr.name)] = {l.location,
                                                          collapseWhitespace(file.valueText(attr))};
      putUnique(module.locals, std::move(l));
    }
  } else if (block.type == "terraform") {
    addTerraformBlock(module, file, block, path);
  }
}

struct FileCloser {
  void operator()(std::FILE* f) const { std::fclose(f); }
};

// Reads a whole file, refusing more than `max_bytes` (checked while reading,
// so a file that grows after a size check cannot slip past the limit).
absl::StatusOr<std::string> readFile(const fs::path& path, std::string_view display,
                                     std::uintmax_t max_bytes) {
  const std::unique_ptr<std::FILE, FileCloser> file(std::fopen(path.c_str(), "rb"));
  if (file == nullptr) {
    return absl::InvalidArgumentError(strCat(
        display,
        ": cannot open the file: ", std::error_code(errno, std::generic_category()).message()));
  }
  std::string content;
  std::array<char, std::size_t{64} * 1024> buffer{};
  while (true) {
    const std::size_t n = std::fread(buffer.data(), 1, buffer.size(), file.get());
    content.append(buffer.data(), n);
    if (content.size() > max_bytes) {
      return absl::InvalidArgumentError(strCat(display, ": the file is larger than ", max_bytes,
                                               " bytes; no configuration file is this large"));
    }
    if (n < buffer.size()) {
      break;
    }
  }
  if (std::ferror(file.get()) != 0) {
    return absl::InvalidArgumentError(strCat(display, ": read error"));
  }
  return content;
}

bool isLocalSource(std::string_view source) {
  return source == "." || source == ".." || source.starts_with("./") || source.starts_with("../");
}

class TreeLoader {
public:
  TreeLoader(const LoadOptions& options, ModuleTree& tree) : options_(options), tree_(tree) {}

  absl::Status loadRoot(const fs::path& dir) {
    std::error_code ec;
    root_ = fs::canonical(dir, ec);
    if (ec) {
      return absl::InvalidArgumentError(
          strCat(dir.string(), ": cannot read the module directory: ", ec.message()));
    }
    if (!fs::is_directory(root_, ec)) {
      return absl::InvalidArgumentError(strCat(dir.string(), ": not a directory"));
    }
    return load(root_).status();
  }

private:
  absl::StatusOr<LoadedModule*> load(const fs::path& dir) {
    auto owned = std::make_unique<LoadedModule>();
    LoadedModule* module = owned.get();
    module->dir = dir;
    const fs::path rel = dir.lexically_relative(root_);
    module->path = rel == "." ? "" : rel.generic_string();
    tree_.modules.push_back(std::move(owned));
    loaded_[dir] = module;
    CAPTF_RETURN_IF_ERROR(readFiles(*module));
    buildSets(*module);
    stack_.push_back(dir);
    CAPTF_RETURN_IF_ERROR(loadChildren(*module));
    stack_.pop_back();
    return module;
  }

  absl::Status readFiles(LoadedModule& module) {
    std::error_code ec;
    std::vector<fs::directory_entry> entries;
    for (fs::directory_iterator it(module.dir, ec), end; !ec && it != end; it.increment(ec)) {
      entries.push_back(*it);
    }
    if (ec) {
      return absl::InvalidArgumentError(
          strCat(module.dir.string(), ": cannot list the directory: ", ec.message()));
    }
    std::sort(entries.begin(), entries.end(),
              [](const fs::directory_entry& a, const fs::directory_entry& b) {
                return a.path().filename() < b.path().filename();
              });
    for (const fs::directory_entry& entry : entries) {
      const std::string name = entry.path().filename().string();
      if (!isConfigName(name)) {
        continue;
      }
      const std::string display = prefixed(module.path, name);
      if (entry.is_symlink(ec)) {
        const fs::path real = fs::canonical(entry.path(), ec);
        if (ec) {
          module.source_problems.push_back(
              {SourceProblem::Kind::kFileUnresolvable, display, "", ec.message(), {display, 0}});
          continue;
        }
        if (!within(root_, real)) {
          std::error_code target_ec;
          const fs::path target = fs::read_symlink(entry.path(), target_ec);
          module.source_problems.push_back({SourceProblem::Kind::kFileSymlinkOutside,
                                            display,
                                            "",
                                            target_ec ? real.string() : target.string(),
                                            {display, 0}});
        }
      }
      if (!fs::is_regular_file(entry.path(), ec)) {
        continue;
      }
      CAPTF_ASSIGN_OR_RETURN(std::string content,
                             readFile(entry.path(), display, options_.max_file_bytes));
      CAPTF_ASSIGN_OR_RETURN(auto file,
                             parseModuleFile(name, display, std::move(content), options_.parse));
      (file->tofu ? module.has_tofu_files : module.has_tf_files) = true;
      module.files.push_back(std::move(file));
    }
    return absl::OkStatus();
  }

  static void buildSets(LoadedModule& module) {
    std::vector<const ModuleFile*> tf;
    std::vector<const ModuleFile*> tofu;
    std::set<std::pair<std::string_view, bool>> tofu_stems; // (stem, json)
    for (const auto& file : module.files) {
      if (file->tofu) {
        tofu_stems.emplace(file->stem(), file->syntax == Syntax::kJson);
      }
    }
    for (const auto& file : module.files) {
      if (file->tofu) {
        tofu.push_back(file.get());
        continue;
      }
      tf.push_back(file.get());
      // x.tofu shadows x.tf; x.tofu.json shadows x.tf.json.
      if (!tofu_stems.contains({file->stem(), file->syntax == Syntax::kJson})) {
        tofu.push_back(file.get());
      }
    }
    module.terraform = buildModule(tf, module.path);
    module.opentofu = buildModule(tofu, module.path);
  }

  absl::Status loadChildren(LoadedModule& module) {
    for (const ModuleCall& call : module.declarations().module_calls) {
      if (!isLocalSource(call.source)) {
        continue;
      }
      const fs::path lexical = (module.dir / call.source).lexically_normal();
      fs::path normal = lexical;
      if (!normal.has_filename() && normal.has_parent_path()) {
        normal = normal.parent_path();
      }
      if (!within(root_, normal)) {
        module.source_problems.push_back(
            {SourceProblem::Kind::kCallEscapes, call.name, call.source, "", call.location});
        continue;
      }
      std::error_code ec;
      const fs::path real = fs::canonical(lexical, ec);
      if (ec) {
        module.source_problems.push_back({SourceProblem::Kind::kCallUnresolvable, call.name,
                                          call.source, ec.message(), call.location});
        continue;
      }
      if (!within(root_, real)) {
        module.source_problems.push_back({SourceProblem::Kind::kCallSymlinkOutside, call.name,
                                          call.source, real.string(), call.location});
        continue;
      }
      if (!fs::is_directory(real, ec)) {
        module.source_problems.push_back({SourceProblem::Kind::kCallUnresolvable, call.name,
                                          call.source, "not a directory", call.location});
        continue;
      }
      if (std::find(stack_.begin(), stack_.end(), real) != stack_.end()) {
        continue; // a cycle
      }
      if (const auto it = loaded_.find(real); it != loaded_.end()) {
        module.children[call.name] = it->second;
        continue;
      }
      CAPTF_ASSIGN_OR_RETURN(LoadedModule * child, load(real));
      module.children[call.name] = child;
    }
    return absl::OkStatus();
  }

  const LoadOptions& options_;
  ModuleTree& tree_;
  fs::path root_;
  std::vector<fs::path> stack_;
  std::map<fs::path, LoadedModule*> loaded_;
};

} // namespace

absl::StatusOr<std::unique_ptr<ModuleFile>> parseModuleFile(std::string name,
                                                            std::string display_name,
                                                            std::string content,
                                                            const hcl::ParseOptions& options) {
  auto file = std::make_unique<ModuleFile>();
  file->syntax = isJsonName(name) ? Syntax::kJson : Syntax::kNative;
  file->tofu = isTofuName(name);
  file->name = std::move(name);
  if (file->syntax == Syntax::kNative) {
    CAPTF_ASSIGN_OR_RETURN(file->file, hcl::parseFile(display_name, std::move(content), options));
  } else {
    CAPTF_ASSIGN_OR_RETURN(hcl::JsonValue document,
                           hcl::parseJson(content, display_name, options.max_nesting_depth));
    CAPTF_ASSIGN_OR_RETURN(JsonConfigBody converted, jsonConfigBody(document, display_name));
    file->file.filename = std::move(display_name);
    file->file.source = std::move(content);
    file->file.body = std::move(converted.body);
    file->json_text = std::move(converted.value_text);
  }
  CAPTF_RETURN_IF_ERROR(validateTopLevel(file->file));
  return file;
}

Module buildModule(std::span<const ModuleFile* const> files, std::string_view path) {
  Module module;
  module.files.assign(files.begin(), files.end());
  for (const ModuleFile* file : files) {
    for (const hcl::Block& block : file->file.body.blocks) {
      addBlock(module, *file, block, path);
    }
  }
  for (const Resource& r : module.resources) {
    const bool known =
        std::any_of(module.required_providers.begin(), module.required_providers.end(),
                    [&](const RequiredProvider& p) { return p.name == r.provider; });
    if (!known) {
      module.required_providers.push_back({r.provider, "", {}, r.location, true});
    }
  }
  return module;
}

absl::StatusOr<ModuleTree> loadModuleTree(const fs::path& dir, const LoadOptions& options) {
  ModuleTree tree;
  TreeLoader loader(options, tree);
  CAPTF_RETURN_IF_ERROR(loader.loadRoot(dir));
  return tree;
}

} // namespace captf::lint
