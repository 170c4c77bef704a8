#include <sstream>
#include <utility>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "lint/checks/image_checks.h"
#include "lint/cli.h"
#include "lint/contract_source.h"
#include "test/lint/oci/oci_test_util.h"

// Every image check of docs/lint.md#image-checks, passing and failing, on images written as
// OCI layouts and linted through the command line (`oci:` references).
namespace captf::lint {
namespace {

using oci::testing::dir;
using oci::testing::file;
using oci::testing::hardlink;
using oci::testing::ImageSpec;
using oci::testing::symlink;
using oci::testing::TarEntry;
using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

using Result = oci::testing::LintRun;

class ImageChecks : public ::testing::Test {
protected:
  // Writes `spec` as the only image of a layout and lints it.
  Result lint(const ImageSpec& spec, std::vector<std::string> extra = {},
              std::string role = "machine") {
    oci::testing::LayoutBuilder layout(tmp_.path() / std::to_string(n_++));
    layout.finish({layout.image(spec)});
    return lintRef("oci:" + layout.dir().string(), std::move(extra), std::move(role));
  }

  Result lintRef(const std::string& ref, std::vector<std::string> extra = {},
                 std::string role = "machine") {
    std::vector<std::string> args = {"tfcapi-lint", "image",         ref,
                                     "--role",      std::move(role), "--json"};
    args.insert(args.end(), extra.begin(), extra.end());
    std::ostringstream out;
    std::ostringstream err;
    const ContractTables contracts;
    const BuildInfo build;
    ImageEnvironment env;
    env.temp_dir = tmp_.path();
    Result r;
    r.code = runCli(args, out, err, contracts, build, env);
    r.out = out.str();
    r.err = err.str();
    if (!r.out.empty()) {
      r.report = nlohmann::json::parse(r.out, nullptr, false);
    }
    return r;
  }

  // The good image with its single layer's entries replaced by `mutate`.
  static ImageSpec good(const std::function<void(std::vector<TarEntry>&)>& mutate = {}) {
    ImageSpec spec = oci::testing::goodMachineImage();
    if (mutate) {
      mutate(spec.layers[0]);
    }
    return spec;
  }

  static void erase(std::vector<TarEntry>& entries, std::string_view prefix) {
    std::erase_if(entries, [&](const TarEntry& e) { return e.name.starts_with(prefix); });
  }

  oci::testing::TempDir tmp_;
  int n_ = 0;
};

TEST_F(ImageChecks, TheGoodImageIsClean) {
  const Result r = lint(good());
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_EQ(r.report["image"]["platforms"], nlohmann::json::array({"linux/amd64"}));
  EXPECT_FALSE(r.report.contains("module"));
  // Only the module's own findings (it is a minimal module) remain.
  for (const std::string& id : r.ids()) {
    EXPECT_FALSE(id.starts_with("image/")) << id;
  }
}

TEST_F(ImageChecks, ModulePresent) {
  const Result r = lint(good([](auto& e) {
    erase(e, "captf/module/");
    e.push_back(dir("captf/module/"));
    e.push_back(file("captf/module/README.md", "no config"));
  }));
  EXPECT_EQ(r.code, 1);
  EXPECT_THAT(r.of("image/module-present"),
              ElementsAre("error /captf/module /captf/module has no .tf, .tf.json, .tofu or "
                          ".tofu.json file"));
  // The module lint is skipped.
  for (const std::string& id : r.ids()) {
    EXPECT_TRUE(id.starts_with("image/")) << id;
  }
  EXPECT_THAT(r.ids(), Not(Contains("image/providers-complete")));
}

TEST_F(ImageChecks, ModuleFindingsArePrefixed) {
  const Result r = lint(good([](auto& e) {
    e.push_back(file("captf/module/backend.tf", "terraform {\n  backend \"s3\" {}\n}\n"));
  }));
  EXPECT_EQ(r.code, 1);
  EXPECT_THAT(r.of("module/backend"), ElementsAre(HasSubstr("error /captf/module/backend.tf ")));
}

TEST_F(ImageChecks, RuntimePresent) {
  EXPECT_THAT(lint(good([](auto& e) { erase(e, "captf/runtime"); })).of("image/runtime-present"),
              ElementsAre(HasSubstr("/captf/runtime is missing")));
  EXPECT_THAT(lint(good([](auto& e) {
                erase(e, "captf/runtime");
                e.push_back(symlink("captf/runtime", "/bin/nowhere"));
              })).of("image/runtime-present"),
              ElementsAre(HasSubstr("which is not in the image")));
  EXPECT_THAT(lint(good([](auto& e) {
                erase(e, "captf/runtime");
                e.push_back(dir("captf/runtime/"));
              })).of("image/runtime-present"),
              ElementsAre(HasSubstr("not a regular file")));
  // Numeric user 65532 does not own the root-owned 0754 binary: other bits.
  EXPECT_THAT(lint(good([](auto& e) {
                erase(e, "usr/local/bin/tofu");
                e.push_back(file("usr/local/bin/tofu", "b", 0754));
              })).of("image/runtime-present"),
              ElementsAre(HasSubstr("not executable by user \"65532\" (mode 0754, owner 0:0)")));
  // ...but its group bits apply when the user's group matches.
  ImageSpec grouped = good([](auto& e) {
    erase(e, "usr/local/bin/tofu");
    e.push_back(file("usr/local/bin/tofu", "b", 0750));
  });
  grouped.user = "65532:0";
  EXPECT_THAT(lint(grouped).ids(), Not(Contains("image/runtime-present")));
  // Root: any x bit.
  ImageSpec root = good([](auto& e) {
    erase(e, "usr/local/bin/tofu");
    e.push_back(file("usr/local/bin/tofu", "b", 0700));
  });
  root.user = "";
  EXPECT_THAT(lint(root).ids(), Not(Contains("image/runtime-present")));
}

TEST_F(ImageChecks, RuntimeVersion) {
  ImageSpec spec = good();
  spec.labels["io.captf.runtime"] = "terraform";
  const Result r = lint(spec);
  EXPECT_THAT(r.of("image/runtime-version"),
              ElementsAre(HasSubstr("label io.captf.runtime is \"terraform\"")));
  EXPECT_EQ(r.code, 1); // providers-complete: terraform's registry has no package now
  EXPECT_THAT(lint(good()).ids(), Not(Contains("image/runtime-version")));
}

TEST_F(ImageChecks, ProvidersAbsent) {
  const Result r = lint(good([](auto& e) { erase(e, "captf/providers"); }));
  EXPECT_THAT(r.of("image/providers-absent"),
              ElementsAre(HasSubstr("info /captf/providers /captf/providers does not exist")));
  EXPECT_EQ(r.code, 0);
}

TEST_F(ImageChecks, ProvidersLayout) {
  const Result r = lint(good([](auto& e) {
    e.push_back(file("captf/providers/stray.txt", "x"));
    e.push_back(file("captf/providers/registry.opentofu.org/hashicorp/aws/provider.zip", "x"));
    e.push_back(dir("captf/providers/registry.opentofu.org/hashicorp/aws/5.0.0/notatarget/"));
    e.push_back(dir("captf/providers/registry.opentofu.org/hashicorp/aws/5.1.0/linux_arm64/"));
    e.push_back(file("captf/providers/registry.opentofu.org/hashicorp/aws/5.1.0/linux_arm64/"
                     "terraform-provider-aws",
                     "b", 0755));
  }));
  EXPECT_THAT(r.of("image/providers-layout"),
              ElementsAre(HasSubstr("error /captf/providers/registry.opentofu.org/hashicorp/aws/"
                                    "5.0.0/notatarget "),
                          HasSubstr("/hashicorp/aws/provider.zip "),
                          HasSubstr("error /captf/providers/stray.txt ")));
}

TEST_F(ImageChecks, ProvidersComplete) {
  // The module also needs random (implied by a resource) and a three-part source.
  const Result missing = lint(good([](auto& e) {
    e.push_back(file("captf/module/extra.tf",
                     "terraform {\n  required_providers {\n    kubernetes = {\n      source = "
                     "\"registry.opentofu.org/hashicorp/kubernetes\"\n    }\n  }\n}\n"
                     "resource \"random_id\" \"x\" {}\n"));
    e.push_back(symlink("captf/providers/registry.opentofu.org/hashicorp/aws/5.0.0", "/gone"));
  }));
  EXPECT_THAT(missing.of("image/providers-complete"),
              ElementsAre(HasSubstr("provider registry.opentofu.org/hashicorp/kubernetes is "
                                    "required by the module but /captf/providers has no "
                                    "linux_amd64 package"),
                          HasSubstr("provider registry.opentofu.org/hashicorp/random is required"),
                          HasSubstr("5.0.0 is a symlink to /gone, which does not exist")));
  // Unpacked packages count, including through a symlinked target directory.
  const Result unpacked = lint(good([](auto& e) {
    e.push_back(file("captf/module/extra.tf", "resource \"random_id\" \"x\" {}\n"));
    e.push_back(dir("captf/providers/registry.opentofu.org/hashicorp/random/3.6.0/linux_arm64/"));
    e.push_back(symlink("captf/providers/registry.opentofu.org/hashicorp/random/3.6.0/linux_amd64",
                        "linux_arm64"));
  }));
  EXPECT_THAT(unpacked.ids(), Not(Contains("image/providers-complete")));
  EXPECT_THAT(unpacked.ids(), Not(Contains("image/providers-layout")));
  // Another platform needs its own package.
  ImageSpec arm = good();
  arm.architecture = "arm64";
  EXPECT_THAT(lint(arm).of("image/providers-complete"),
              ElementsAre(HasSubstr("no linux_arm64 package")));
}

TEST_F(ImageChecks, ReservedPaths) {
  const Result r = lint(good([](auto& e) {
    e.push_back(file("captf/work/a", "x"));
    e.push_back(symlink("captf/work/b", "a"));
    e.push_back(dir("captf/bin/"));
    e.push_back(file("var/run/captf/credentials/token", "x"));
  }));
  EXPECT_THAT(r.of("image/reserved-paths"),
              ElementsAre("error /captf/work /captf/work holds 2 files or links: the Job mounts "
                          "an emptyDir there, so they are shadowed at run time",
                          HasSubstr("error /var/run/captf/credentials ")));
}

TEST_F(ImageChecks, LabelRoleAndContract) {
  ImageSpec unset = good();
  unset.labels.erase("io.captf.role");
  unset.labels.erase("io.captf.contract");
  const Result r = lint(unset);
  EXPECT_THAT(r.of("image/label-role"),
              ElementsAre(HasSubstr("info  label io.captf.role is not set")));
  EXPECT_THAT(r.of("image/label-contract"), ElementsAre(HasSubstr("info  ")));
  ImageSpec wrong = good();
  wrong.labels["io.captf.role"] = "cluster";
  wrong.labels["io.captf.contract"] = "v1beta1";
  const Result w = lint(wrong);
  EXPECT_THAT(w.of("image/label-role"), ElementsAre(HasSubstr("error ")));
  EXPECT_THAT(w.of("image/label-contract"), ElementsAre(HasSubstr("warning ")));
}

TEST_F(ImageChecks, LabelCapacity) {
  ImageSpec none = good();
  none.labels.erase("io.captf.capacity");
  none.labels.erase("io.captf.node-info");
  EXPECT_THAT(lint(none).of("image/label-capacity"), ElementsAre(HasSubstr("info ")));
  ImageSpec bad = good();
  bad.labels["io.captf.capacity"] = R"({"cpu":"four"})";
  bad.labels["io.captf.node-info"] = R"({"architecture":"x86"})";
  const Result r = lint(bad);
  EXPECT_THAT(r.of("image/label-capacity"),
              ElementsAre(HasSubstr("error  label io.captf.capacity is invalid"),
                          HasSubstr("error  label io.captf.node-info is invalid")));
  EXPECT_EQ(r.code, 1);
  // Other roles ignore them.
  ImageSpec pool = good();
  pool.labels["io.captf.role"] = "machinepool";
  EXPECT_THAT(lint(pool, {}, "machinepool").of("image/label-capacity"),
              ElementsAre(HasSubstr("info  labels io.captf.capacity and io.captf.node-info are "
                                    "read for the machine role only")));
}

TEST_F(ImageChecks, UserRootUnresolvedAndModuleReadable) {
  for (std::string user : {"", "root", "0", "0:0", "root:wheel"}) {
    ImageSpec spec = good();
    spec.user = user;
    EXPECT_THAT(lint(spec).ids(), Contains("image/user-root")) << user;
  }
  ImageSpec named = good([](auto& e) { e.push_back(file("captf/module/secret.tf", "", 0600)); });
  named.user = "captf";
  const Result n = lint(named);
  EXPECT_THAT(n.ids(), Contains("image/user-unresolved"));
  EXPECT_THAT(n.ids(), Not(Contains("image/module-readable")));
  ImageSpec numeric = good([](auto& e) {
    e.push_back(file("captf/module/secret.tf", "", 0600));
    e.push_back(dir("captf/module/private/", 0700));
    e.push_back(file("captf/module/private/x.tf", ""));
  });
  const Result r = lint(numeric);
  EXPECT_THAT(r.of("image/module-readable"),
              ElementsAre("warning /captf/module/private 2 paths are not readable (files) or "
                          "traversable (directories) by user 65532: /captf/module/private, "
                          "/captf/module/secret.tf"));
  EXPECT_THAT(lint(good()).ids(), Not(Contains("image/module-readable")));
}

TEST_F(ImageChecks, ModuleLink) {
  const Result r = lint(good([](auto& e) {
    e.push_back(file("etc/hosts", "x"));
    e.push_back(symlink("captf/module/hosts.tf", "/etc/hosts"));
    e.push_back(hardlink("captf/module/hard.tf", "etc/hosts"));
    e.push_back(symlink("captf/module/ok.tf", "main.tf"));
  }));
  EXPECT_THAT(r.of("image/module-link"),
              ElementsAre(HasSubstr("error /captf/module/hard.tf /captf/module/hard.tf is a hard "
                                    "link to /etc/hosts"),
                          HasSubstr("error /captf/module/hosts.tf /captf/module/hosts.tf is a "
                                    "symlink to /etc/hosts, which resolves to /etc/hosts, outside "
                                    "/captf/module")));
}

TEST_F(ImageChecks, Entrypoint) {
  ImageSpec spec = good();
  spec.entrypoint = {"/usr/local/bin/tofu"};
  EXPECT_THAT(lint(spec).of("image/entrypoint"),
              ElementsAre(HasSubstr("info  the image sets Entrypoint")));
  EXPECT_THAT(lint(good()).ids(), Not(Contains("image/entrypoint")));
}

TEST_F(ImageChecks, PlatformAndAllPlatforms) {
  oci::testing::LayoutBuilder layout(tmp_.path() / "multi");
  ImageSpec arm = good([](auto& e) {
    e.push_back(file("captf/providers/registry.opentofu.org/hashicorp/aws/"
                     "terraform-provider-aws_5.0.0_linux_arm64.zip",
                     "zip"));
  });
  arm.architecture = "arm64";
  arm.labels["io.captf.capacity"] = R"({"cpu":"8"})";
  oci::Descriptor amd = layout.image(good());
  amd.platform = oci::Platform{"linux", "amd64", "", "", {}};
  oci::Descriptor armd = layout.image(arm);
  armd.platform = oci::Platform{"linux", "arm64", "", "", {}};
  const oci::Descriptor index = layout.index({amd, armd});
  layout.finish({index});
  const std::string ref = "oci:" + layout.dir().string();

  const Result one = lintRef(ref, {"--platform", "linux/arm64"});
  EXPECT_EQ(one.report["image"]["digest"], index.digest);
  EXPECT_EQ(one.report["image"]["platforms"], nlohmann::json::array({"linux/arm64"}));

  const Result missing = lintRef(ref, {"--platform", "linux/s390x"});
  EXPECT_EQ(missing.code, 1);
  EXPECT_THAT(missing.of("image/platform"),
              ElementsAre("error  the index has no manifest for linux/s390x"));
  EXPECT_EQ(missing.report["image"]["platforms"], nlohmann::json::array());

  const Result all = lintRef(ref, {"--all-platforms"});
  EXPECT_EQ(all.report["image"]["platforms"],
            nlohmann::json::array({"linux/amd64", "linux/arm64"}));
  EXPECT_THAT(all.of("image/label-capacity"),
              ElementsAre(HasSubstr("warning  label io.captf.capacity differs between platforms")));
  for (const auto& f : all.report["findings"]) {
    if (f["id"] != "image/label-capacity") {
      EXPECT_THAT(f["message"].get<std::string>(), ::testing::StartsWith("[linux/")) << f;
    }
  }
}

TEST_F(ImageChecks, TextOutputStartsWithTheImageLine) {
  oci::testing::LayoutBuilder layout(tmp_.path() / "text");
  const oci::Descriptor image = layout.image(good());
  layout.finish({image});
  const std::string ref = "oci:" + layout.dir().string();
  std::vector<std::string> args = {"tfcapi-lint", "image", ref, "--role", "machine"};
  std::ostringstream out;
  std::ostringstream err;
  const ContractTables contracts;
  ImageEnvironment env;
  env.temp_dir = tmp_.path();
  EXPECT_EQ(runCli(args, out, err, contracts, BuildInfo{}, env), 0) << err.str();
  EXPECT_THAT(out.str(), ::testing::StartsWith("image " + ref + " (" + image.digest +
                                               ") platforms linux/amd64\n"));
  EXPECT_THAT(out.str(), HasSubstr("(read terraform files)\n"));
}

TEST_F(ImageChecks, UsageAndPullErrorsHaveTheirExitCodes) {
  EXPECT_EQ(lintRef("UPPER/Case:x").code, 3);
  EXPECT_EQ(lintRef("ghcr.io/x/y", {"--platform", "linux"}).code, 3);
  EXPECT_EQ(lintRef("oci:" + (tmp_.path() / "missing").string()).code, 2);
  const Result unreachable = lintRef("127.0.0.1:1/team/module:v1", {"--insecure"});
  EXPECT_EQ(unreachable.code, 2);
  EXPECT_THAT(
      unreachable.err,
      HasSubstr("tfcapi-lint image: 127.0.0.1:1/team/module:v1: cannot reach the registry"));
  // The extraction cap is exit 2 too.
  oci::testing::LayoutBuilder layout(tmp_.path() / "big");
  layout.finish({layout.image(good())});
  std::vector<std::string> args = {"tfcapi-lint", "image", "oci:" + layout.dir().string(), "--role",
                                   "machine"};
  std::ostringstream out;
  std::ostringstream err;
  const ContractTables contracts;
  ImageEnvironment env;
  env.temp_dir = tmp_.path();
  env.limits.max_kept_bytes = 1024;
  EXPECT_EQ(runCli(args, out, err, contracts, BuildInfo{}, env), 2);
  EXPECT_THAT(err.str(), HasSubstr("exceeds the extraction limit"));
}

} // namespace
} // namespace captf::lint
