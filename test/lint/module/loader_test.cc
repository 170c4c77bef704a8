#include <filesystem>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "lint/module/loader.h"
#include "test/lint/test_util.h"

namespace captf::lint {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using testing::TempModule;

std::vector<std::string> fileNames(const Module& module) {
  std::vector<std::string> out;
  out.reserve(module.files.size());
  for (const ModuleFile* f : module.files) {
    out.push_back(f->name);
  }
  return out;
}

std::vector<std::string> keys(const Module& module) {
  std::vector<std::string> out;
  out.reserve(module.declarations.size());
  for (const auto& [key, decl] : module.declarations) {
    out.push_back(key);
  }
  return out;
}

TEST(LoadModuleTree, ReadsOnlyTopLevelConfigurationFiles) {
  TempModule m;
  m.write("main.tf", "variable \"a\" {}\n");
  m.write("extra.tf.json", R"({"variable": {"b": {}}})");
  m.write(".hidden.tf", "this is not parsed {");
  m.write("backup.tf~", "nor this {");
  m.write("#autosave.tf#", "nor this {");
  m.write("notes.txt", "nor this {");
  m.write("sub/ignored.tf", "nor this, no module calls it {");
  auto tree = loadModuleTree(m.path());
  ASSERT_TRUE(tree.ok()) << tree.status();
  ASSERT_EQ(tree->modules.size(), 1u);
  const LoadedModule& root = tree->root();
  EXPECT_EQ(root.path, "");
  EXPECT_THAT(fileNames(root.terraform), ElementsAre("extra.tf.json", "main.tf"));
  EXPECT_TRUE(root.has_tf_files);
  EXPECT_FALSE(root.has_tofu_files);
  EXPECT_EQ(root.fileSet(), "terraform");
  EXPECT_EQ(&root.declarations(), &root.terraform);
  EXPECT_EQ(&root.expressions(), &root.terraform);
}

TEST(LoadModuleTree, TofuFilesShadowTerraformFilesOfTheSameStem) {
  TempModule m;
  m.write("main.tf", "variable \"a\" {}\n");
  m.write("main.tofu", "variable \"a\" {\n  default = 1\n}\n");
  m.write("vars.tf.json", R"({"variable": {"j": {}}})");
  m.write("vars.tofu", "variable \"t\" {}\n"); // x.tofu shadows x.tf only, not x.tf.json
  m.write("other.tf", "output \"o\" {\n  value = 1\n}\n");
  auto tree = loadModuleTree(m.path());
  ASSERT_TRUE(tree.ok()) << tree.status();
  const LoadedModule& root = tree->root();
  EXPECT_THAT(fileNames(root.terraform), ElementsAre("main.tf", "other.tf", "vars.tf.json"));
  EXPECT_THAT(fileNames(root.opentofu),
              ElementsAre("main.tofu", "other.tf", "vars.tf.json", "vars.tofu"));
  EXPECT_EQ(root.fileSet(), "opentofu");
  // Declarations from the terraform set, expressions from the opentofu set.
  EXPECT_EQ(&root.declarations(), &root.terraform);
  EXPECT_EQ(&root.expressions(), &root.opentofu);
  EXPECT_FALSE(root.terraform.variable("a")->has_default);
  EXPECT_TRUE(root.opentofu.variable("a")->has_default);
}

TEST(LoadModuleTree, TofuOnlyModulesDeclareFromTheTofuSet) {
  TempModule m;
  m.write("main.tofu", "variable \"a\" {}\n");
  m.write("more.tofu.json", R"({"output": {"o": {"value": 1}}})");
  auto tree = loadModuleTree(m.path());
  ASSERT_TRUE(tree.ok()) << tree.status();
  const LoadedModule& root = tree->root();
  EXPECT_EQ(&root.declarations(), &root.opentofu);
  EXPECT_NE(root.declarations().variable("a"), nullptr);
  EXPECT_NE(root.declarations().output("o"), nullptr);
}

TEST(LoadModuleTree, NativeDeclarations) {
  TempModule m;
  m.write("main.tf", R"(terraform {
  required_version = ">= 1.6"
  required_providers {
    aws    = { source = "hashicorp/aws", version = "~> 5.0" }
    legacy = "1.2.3"
  }
  backend "s3" {}
}

variable "typed" {
  type = object({
    a = string
  })
  sensitive = true
  nullable  = false
}

variable "null_default" {
  default = null
}

provider "aws" {
  alias  = "west"
  region = "us-west-2"
}

resource "aws_instance" "web" {
  provider = aws.west
}

resource "google_compute_instance" "vm" {}

data "http" "ip" {}

module "net" {
  source  = "terraform-aws-modules/vpc/aws"
  version = "5.8.1"
}

locals {
  x = 1
}

output "out" {
  description = "d"
  value = {
    a = 1
  }
  sensitive = true
}
)");
  auto tree = loadModuleTree(m.path());
  ASSERT_TRUE(tree.ok()) << tree.status();
  const Module& mod = tree->root().declarations();

  const Variable* typed = mod.variable("typed");
  ASSERT_NE(typed, nullptr);
  EXPECT_EQ(typed->location, (SourceLocation{"main.tf", 10}));
  EXPECT_TRUE(typed->has_type);
  EXPECT_EQ(typed->type_text, "object({\n    a = string\n  })");
  EXPECT_FALSE(typed->has_default);
  EXPECT_TRUE(typed->sensitive);
  EXPECT_FALSE(typed->nullable);
  const Variable* null_default = mod.variable("null_default");
  EXPECT_TRUE(null_default->has_default); // default = null counts
  EXPECT_FALSE(null_default->has_type);
  EXPECT_TRUE(null_default->nullable);

  const Output* out = mod.output("out");
  ASSERT_NE(out, nullptr);
  EXPECT_EQ(out->location.line, 44u);
  EXPECT_EQ(out->value_line, 46u);
  EXPECT_TRUE(out->sensitive);

  ASSERT_EQ(mod.resources.size(), 3u);
  EXPECT_EQ(mod.resources[0].provider, "aws");
  EXPECT_EQ(mod.resources[1].provider, "google");
  EXPECT_EQ(mod.resources[2].mode, Resource::Mode::kData);
  EXPECT_EQ(mod.resources[2].provider, "http");

  ASSERT_EQ(mod.required_providers.size(), 4u);
  EXPECT_EQ(mod.required_providers[0].name, "aws");
  EXPECT_EQ(mod.required_providers[0].source, "hashicorp/aws");
  EXPECT_THAT(mod.required_providers[0].version_constraints, ElementsAre("~> 5.0"));
  EXPECT_EQ(mod.required_providers[1].name, "legacy");
  EXPECT_THAT(mod.required_providers[1].version_constraints, ElementsAre("1.2.3"));
  EXPECT_EQ(mod.required_providers[2].name, "google");
  EXPECT_TRUE(mod.required_providers[2].implied);
  EXPECT_EQ(mod.required_providers[3].name, "http");

  EXPECT_THAT(mod.required_version, ElementsAre(">= 1.6"));
  ASSERT_EQ(mod.backends.size(), 1u);
  EXPECT_EQ(mod.backends[0].type, "s3");
  EXPECT_EQ(mod.backends[0].location.line, 7u);
  ASSERT_EQ(mod.module_calls.size(), 1u);
  EXPECT_EQ(mod.module_calls[0].source, "terraform-aws-modules/vpc/aws");
  EXPECT_EQ(mod.module_calls[0].version, "5.8.1");
  ASSERT_EQ(mod.providers.size(), 1u);
  EXPECT_EQ(mod.providers[0].alias, "west");

  EXPECT_THAT(keys(mod),
              ElementsAre("backend.s3", "data.http.ip", "local.x", "module.net", "output.out",
                          "provider.aws.west", "required_providers.aws",
                          "required_providers.legacy", "required_version",
                          "resource.aws_instance.web", "resource.google_compute_instance.vm",
                          "variable.null_default", "variable.typed"));
  // Bodies compare as sorted, whitespace-collapsed arguments.
  EXPECT_EQ(mod.declarations.at("output.out").content,
            "description=\"d\"\nsensitive=true\nvalue={ a = 1 }\n");
}

TEST(LoadModuleTree, JsonDeclarations) {
  TempModule m;
  m.write("main.tf.json", R"json({
  "//": "comment",
  "variable": {
    "region": {
      "type": "string",
      "default": "eu-west-1"
    },
    "zones": {"type": "list(string)", "nullable": false}
  },
  "output": [
    {"a": {"value": "${var.region}"}},
    {"b": {"value": null, "sensitive": true}}
  ],
  "resource": {
    "aws_instance": {
      "web": {"count": 2, "tags": {"Name": "${var.region}"}, "lifecycle": {"ignore_changes": ["tags"]}},
      "db": [{"provider": "aws.east"}]
    }
  },
  "terraform": {"required_version": ">= 1.6", "backend": {"s3": {"bucket": "b"}}},
  "locals": {"l": [1, 2]},
  "module": {"child": {"source": "./child", "providers": {"aws": "aws.east"}}},
  "future_block": {"ignored": true}
})json");
  m.write("child/main.tf", "variable \"v\" {\n  default = 1\n}\n");
  auto tree = loadModuleTree(m.path());
  ASSERT_TRUE(tree.ok()) << tree.status();
  const Module& mod = tree->root().declarations();
  const Variable* region = mod.variable("region");
  ASSERT_NE(region, nullptr);
  EXPECT_EQ(region->location, (SourceLocation{"main.tf.json", 4}));
  EXPECT_EQ(region->type_text, "string");
  EXPECT_TRUE(region->has_default);
  EXPECT_EQ(mod.variable("zones")->type_text, "list(string)");
  EXPECT_FALSE(mod.variable("zones")->nullable);
  ASSERT_EQ(mod.outputs.size(), 2u);
  EXPECT_EQ(mod.output("a")->location.line, 11u);
  EXPECT_EQ(debugString(*mod.output("a")->value), "(tmpl (interp (trav var .region)))");
  EXPECT_TRUE(mod.output("b")->sensitive);
  ASSERT_EQ(mod.resources.size(), 2u);
  EXPECT_EQ(mod.resources[0].name, "web");
  ASSERT_EQ(mod.resources[0].block->body.blocks.size(), 1u);
  EXPECT_EQ(mod.resources[0].block->body.blocks[0].type, "lifecycle");
  EXPECT_EQ(mod.resources[1].provider, "aws");
  EXPECT_THAT(mod.required_version, ElementsAre(">= 1.6"));
  ASSERT_EQ(mod.backends.size(), 1u);
  EXPECT_EQ(mod.locals[0].name, "l");
  EXPECT_EQ(mod.declarations.at("local.l").content, "[1,2]");
  ASSERT_EQ(tree->modules.size(), 2u);
  EXPECT_EQ(tree->root().children.at("child")->path, "child");
}

TEST(LoadModuleTree, LaterDeclarationsReplaceEarlierOnes) {
  TempModule m;
  m.write("a.tf", "variable \"x\" {}\n");
  m.write("b.tf", "variable \"x\" {\n  default = 2\n}\n");
  auto tree = loadModuleTree(m.path());
  ASSERT_TRUE(tree.ok());
  ASSERT_EQ(tree->root().declarations().variables.size(), 1u);
  EXPECT_EQ(tree->root().declarations().variables[0].location.file, "b.tf");
}

TEST(LoadModuleTree, SyntaxAndSchemaErrorsAnywhereFailTheLoad) {
  {
    TempModule m;
    m.write("main.tf", "module \"c\" {\n  source = \"./child\"\n}\n");
    m.write("child/broken.tf", "variable \"x\" {\n  type = \n}\n");
    auto tree = loadModuleTree(m.path());
    EXPECT_EQ(tree.status().message(),
              "child/broken.tf:2:10: expected the start of an expression, but found newline");
  }
  {
    TempModule m;
    m.write("main.tf", "resource \"aws_instance\" {\n}\n");
    EXPECT_EQ(loadModuleTree(m.path()).status().message(),
              "main.tf:1:1: a resource block takes exactly two labels (its type and name), but "
              "this one has 1");
  }
  {
    TempModule m;
    m.write("main.tf", "terraform {\n  backend {\n  }\n}\n");
    EXPECT_THAT(loadModuleTree(m.path()).status().message(),
                HasSubstr("main.tf:2:3: a backend block takes exactly one label"));
  }
  {
    TempModule m;
    m.write("main.tf.json", R"({"variable": {"x": {"type": "string", "type": "number"}}})");
    EXPECT_THAT(loadModuleTree(m.path()).status().message(),
                HasSubstr("main.tf.json:1:39: the argument \"type\" is set twice"));
  }
  {
    TempModule m;
    m.write("main.tf.json", R"([1])");
    EXPECT_THAT(loadModuleTree(m.path()).status().message(),
                HasSubstr("must contain one JSON object"));
  }
  {
    TempModule m;
    m.write("big.tf", std::string(100, '#'));
    LoadOptions options;
    options.max_file_bytes = 99;
    EXPECT_EQ(loadModuleTree(m.path(), options).status().message(),
              "big.tf: the file is larger than 99 bytes; no configuration file is this large");
    options.max_file_bytes = 100;
    EXPECT_TRUE(loadModuleTree(m.path(), options).ok());
  }
  EXPECT_THAT(loadModuleTree("/nonexistent/module").status().message(),
              HasSubstr("cannot read the module directory"));
}

TEST(LoadModuleTree, LocalModulesCyclesAndDiamonds) {
  TempModule m;
  m.write("main.tf", R"(module "a" {
  source = "./modules/a"
}
module "b" {
  source = "./modules/b/"
}
module "self" {
  source = "."
}
module "remote" {
  source = "git::https://example.com/x.git"
}
)");
  m.write("modules/a/main.tf", "module \"shared\" {\n  source = \"../shared\"\n}\n");
  m.write("modules/b/main.tf", "module \"shared\" {\n  source = \"../shared\"\n}\n");
  m.write("modules/shared/main.tf",
          "module \"back\" {\n  source = \"../..\"\n}\nvariable \"s\" {\n  default = 1\n}\n");
  auto tree = loadModuleTree(m.path());
  ASSERT_TRUE(tree.ok()) << tree.status();
  std::vector<std::string> paths;
  for (const auto& mod : tree->modules) {
    paths.push_back(mod->path);
    EXPECT_THAT(mod->source_problems, IsEmpty()) << mod->path;
  }
  EXPECT_THAT(paths, ElementsAre("", "modules/a", "modules/shared", "modules/b"));
  const LoadedModule& root = tree->root();
  EXPECT_EQ(root.children.size(), 2u); // "self" closes a cycle; "remote" is not local
  EXPECT_EQ(root.children.at("a")->children.at("shared"),
            root.children.at("b")->children.at("shared"));
  EXPECT_TRUE(root.children.at("a")->children.at("shared")->children.empty());
  EXPECT_EQ(tree->modules[2]->declarations().variable("s")->location.file,
            "modules/shared/main.tf");
}

TEST(LoadModuleTree, EscapingSourcesAndSymlinksAreProblemsNotErrors) {
  TempModule outside;
  outside.write("shared.tf", "variable \"from_outside\" {\n  default = 1\n}\n");
  outside.write("mod/main.tf", "");
  TempModule m;
  m.write("main.tf", R"(module "up" {
  source = "../x"
}
module "missing" {
  source = "./nope"
}
module "linked" {
  source = "./link"
}
module "file" {
  source = "./main.tf"
}
)");
  std::filesystem::create_directory_symlink(outside.path() / "mod", m.path() / "link");
  std::filesystem::create_symlink(outside.path() / "shared.tf", m.path() / "shared.tf");
  std::filesystem::create_symlink(m.path() / "gone.tf", m.path() / "dangling.tf");
  auto tree = loadModuleTree(m.path());
  ASSERT_TRUE(tree.ok()) << tree.status();
  const LoadedModule& root = tree->root();
  ASSERT_EQ(root.source_problems.size(), 6u);
  const auto& p = root.source_problems;
  EXPECT_EQ(p[0].kind, SourceProblem::Kind::kFileUnresolvable);
  EXPECT_EQ(p[0].name, "dangling.tf");
  EXPECT_EQ(p[1].kind, SourceProblem::Kind::kFileSymlinkOutside);
  EXPECT_EQ(p[1].detail, (outside.path() / "shared.tf").string());
  EXPECT_EQ(p[2].kind, SourceProblem::Kind::kCallEscapes);
  EXPECT_EQ(p[2].name, "up");
  EXPECT_EQ(p[2].location, (SourceLocation{"main.tf", 1}));
  EXPECT_EQ(p[3].kind, SourceProblem::Kind::kCallUnresolvable);
  EXPECT_EQ(p[4].kind, SourceProblem::Kind::kCallSymlinkOutside);
  EXPECT_EQ(p[4].detail, std::filesystem::canonical(outside.path() / "mod").string());
  EXPECT_EQ(p[5].kind, SourceProblem::Kind::kCallUnresolvable);
  EXPECT_EQ(p[5].detail, "not a directory");
  // A symlinked file outside the root is still read.
  EXPECT_NE(root.declarations().variable("from_outside"), nullptr);
  EXPECT_EQ(tree->modules.size(), 1u);
}

} // namespace
} // namespace captf::lint
