// Image mode against the rig's local OCI registry (Debian's docker-registry,
// plain HTTP on loopback): a fixture image for every image check of spec
// docs/lint.md#image-checks, passing and failing, pushed with `test/rig/rig image push` (gzip and
// zstd layers, OCI and Docker media types) and `rig image index` (an OCI
// index and a Docker manifest list with an unknown/unknown attestation).
#include <filesystem>
#include <fstream>
#include <sstream>
#include <utility>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <sys/stat.h>

#include "lint/cli.h"
#include "lint/contract_source.h"
#include "test/lint/oci/oci_test_util.h"
#include "test/rig/fixture.h"

namespace captf::lint {
namespace {

using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

std::string sourceDir() {
  const char* dir = std::getenv("CAPTF_SOURCE_DIR");
  return dir != nullptr ? dir : CAPTF_LINT_SOURCE_DIR;
}

std::string rigCommand() {
  return sourceDir() + "/test/rig/rig";
}

// A root filesystem on disk, pushed as a one-layer image.
class Rootfs {
public:
  explicit Rootfs(std::filesystem::path dir) : dir_(std::move(dir)) {
    std::filesystem::create_directories(dir_);
  }
  Rootfs& file(const std::string& rel, std::string_view content, mode_t mode = 0644) {
    const auto p = dir_ / rel;
    std::filesystem::create_directories(p.parent_path());
    std::ofstream(p, std::ios::binary) << content;
    ::chmod(p.c_str(), mode);
    return *this;
  }
  Rootfs& dir(const std::string& rel, mode_t mode = 0755) {
    std::filesystem::create_directories(dir_ / rel);
    ::chmod((dir_ / rel).c_str(), mode);
    return *this;
  }
  Rootfs& link(const std::string& rel, const std::string& target) {
    const auto p = dir_ / rel;
    std::filesystem::create_directories(p.parent_path());
    std::filesystem::remove(p);
    std::filesystem::create_symlink(target, p);
    return *this;
  }
  Rootfs& remove(const std::string& rel) {
    std::filesystem::remove_all(dir_ / rel);
    return *this;
  }
  const std::filesystem::path& path() const { return dir_; }

private:
  std::filesystem::path dir_;
};

using Lint = oci::testing::LintRun;

class ImageE2e : public ::testing::Test {
protected:
  static void SetUpTestSuite() { env_ = &rig::shared(rig::Tier::kE2e); }

  void SetUp() override {
    std::string pattern =
        (std::filesystem::path(::testing::TempDir()) / "lint-e2e-XXXXXX").string();
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
    tmp_ = pattern;
  }
  void TearDown() override {
    std::error_code ec;
    std::filesystem::remove_all(tmp_, ec);
  }

  // The passing machine image's filesystem.
  Rootfs good(const std::string& name) {
    Rootfs fs(tmp_ / name);
    fs.file("usr/local/bin/tofu", "#!/bin/true\n", 0755)
        .link("captf/runtime", "/usr/local/bin/tofu")
        .file("captf/module/main.tf", oci::testing::kMachineModuleTf)
        .file("captf/providers/registry.opentofu.org/hashicorp/aws/index.json", "{}")
        .file("captf/providers/registry.opentofu.org/hashicorp/aws/"
              "terraform-provider-aws_5.0.0_linux_amd64.zip",
              "zip")
        .file("captf/providers/registry.opentofu.org/hashicorp/aws/"
              "terraform-provider-aws_5.0.0_linux_arm64.zip",
              "zip");
    return fs;
  }

  static std::vector<std::string> goodLabels() {
    return {"io.captf.role=machine", "io.captf.contract=v1alpha1", "io.captf.runtime=tofu",
            R"(io.captf.capacity={"cpu":"4","memory":"16Gi"})",
            R"(io.captf.node-info={"architecture":"amd64","operatingSystem":"linux"})"};
  }

  // Pushes `fs` as REPO:TAG; returns the reference with the tag.
  std::string push(const Rootfs& fs, const std::string& repo, const std::string& tag,
                   std::vector<std::string> flags = {},
                   const std::vector<std::string>& labels = goodLabels(),
                   const std::string& user = "65532") {
    const std::string ref = env_->registry + "/" + repo + ":" + tag;
    std::vector<std::string> argv = {rigCommand(), "image", "push",   "--rootfs", fs.path(),
                                     "--ref",      ref,     "--user", user};
    for (const std::string& l : labels) {
      argv.emplace_back("--label");
      argv.push_back(l);
    }
    argv.insert(argv.end(), flags.begin(), flags.end());
    const rig::CommandResult r = rig::run(argv);
    EXPECT_EQ(r.exit_code, 0) << r.output;
    return ref;
  }

  // Pushes an index of pushed images; returns its reference.
  std::string index(const std::string& repo, const std::string& tag,
                    const std::vector<std::string>& images, std::vector<std::string> flags = {}) {
    const std::string ref = env_->registry + "/" + repo + ":" + tag;
    std::vector<std::string> argv = {rigCommand(), "image", "index", "--ref", ref};
    argv.insert(argv.end(), flags.begin(), flags.end());
    argv.insert(argv.end(), images.begin(), images.end());
    const rig::CommandResult r = rig::run(argv);
    EXPECT_EQ(r.exit_code, 0) << r.output;
    return ref;
  }

  Lint lint(const std::string& ref, std::vector<std::string> extra = {},
            const std::string& role = "machine", bool json = true) {
    std::vector<std::string> args = {"tfcapi-lint", "image", ref, "--role", role, "--insecure"};
    if (json) {
      args.emplace_back("--json");
    }
    args.insert(args.end(), extra.begin(), extra.end());
    std::ostringstream out;
    std::ostringstream err;
    const ContractTables contracts;
    ImageEnvironment image_env;
    image_env.temp_dir = tmp_;
    image_env.http.connect_timeout = std::chrono::seconds(10);
    image_env.http.io_timeout = std::chrono::seconds(30);
    Lint r;
    r.code = runCli(args, out, err, contracts, BuildInfo{}, image_env);
    r.out = out.str();
    r.err = err.str();
    if (json && !r.out.empty()) {
      r.report = nlohmann::json::parse(r.out, nullptr, false);
    }
    return r;
  }

  static std::vector<std::string> imageIds(const Lint& r) {
    std::vector<std::string> out;
    for (const std::string& id : r.ids()) {
      if (id.starts_with("image/")) {
        out.push_back(id);
      }
    }
    return out;
  }

  static const rig::Env* env_;
  std::filesystem::path tmp_;
};

const rig::Env* ImageE2e::env_ = nullptr;

TEST_F(ImageE2e, APassingImageInEveryLayerAndManifestFormat) {
  const Rootfs fs = good("good");
  for (const auto& [tag, flags] : std::vector<std::pair<std::string, std::vector<std::string>>>{
           {"gzip", {}}, {"zstd", {"--compression", "zstd"}}, {"docker", {"--format", "docker"}}}) {
    const std::string ref = push(fs, "lint/good", tag, flags);
    const Lint r = lint(ref);
    EXPECT_EQ(r.code, 0) << tag << ": " << r.out << r.err;
    EXPECT_THAT(imageIds(r), ::testing::IsEmpty()) << tag << ": " << r.out;
    EXPECT_EQ(r.report["image"]["ref"], ref);
    EXPECT_EQ(r.report["image"]["platforms"], nlohmann::json::array({"linux/amd64"}));
    EXPECT_THAT(r.report["image"]["digest"].get<std::string>(), ::testing::StartsWith("sha256:"));
  }
  // Text output names the image first.
  const Lint text = lint(env_->registry + "/lint/good:gzip", {}, "machine", /*json=*/false);
  EXPECT_EQ(text.code, 0) << text.err;
  EXPECT_THAT(text.out,
              ::testing::StartsWith("image " + env_->registry + "/lint/good:gzip (sha256:"));
}

TEST_F(ImageE2e, ModulePresentAndModuleFindings) {
  Rootfs fs = good("nomodule");
  fs.remove("captf/module").file("captf/module/README.md", "not a module");
  const Lint missing = lint(push(fs, "lint/nomodule", "v1"));
  EXPECT_EQ(missing.code, 1);
  EXPECT_THAT(missing.of("image/module-present"),
              ElementsAre("error /captf/module /captf/module has no .tf, .tf.json, .tofu or "
                          ".tofu.json file"));
  EXPECT_THAT(missing.ids(), Not(Contains(::testing::StartsWith("module/"))));

  Rootfs bad = good("backend");
  bad.file("captf/module/backend.tf", "terraform {\n  backend \"s3\" {}\n}\n");
  const Lint r = lint(push(bad, "lint/backend", "v1"));
  EXPECT_EQ(r.code, 1);
  EXPECT_THAT(r.of("module/backend"), ElementsAre(HasSubstr("error /captf/module/backend.tf ")));
}

TEST_F(ImageE2e, RuntimePresentAndRuntimeVersion) {
  Rootfs missing = good("noruntime");
  missing.remove("captf/runtime");
  EXPECT_THAT(lint(push(missing, "lint/runtime", "missing")).of("image/runtime-present"),
              ElementsAre(HasSubstr("/captf/runtime is missing")));
  Rootfs dangling = good("dangling");
  dangling.link("captf/runtime", "/usr/bin/tofu");
  EXPECT_THAT(lint(push(dangling, "lint/runtime", "dangling")).of("image/runtime-present"),
              ElementsAre(HasSubstr("which is not in the image")));
  Rootfs noexec = good("noexec");
  noexec.file("usr/local/bin/tofu", "x", 0744);
  EXPECT_THAT(lint(push(noexec, "lint/runtime", "noexec")).of("image/runtime-present"),
              ElementsAre(HasSubstr("is not executable by user \"65532\"")));
  std::vector<std::string> labels = goodLabels();
  labels[2] = "io.captf.runtime=terraform";
  const Lint version = lint(push(good("version"), "lint/runtime", "version", {}, labels));
  EXPECT_THAT(version.of("image/runtime-version"),
              ElementsAre(HasSubstr("label io.captf.runtime is \"terraform\"")));
}

TEST_F(ImageE2e, Providers) {
  Rootfs absent = good("absent");
  absent.remove("captf/providers");
  const Lint a = lint(push(absent, "lint/providers", "absent"));
  EXPECT_EQ(a.code, 0) << a.out;
  EXPECT_THAT(a.of("image/providers-absent"), ElementsAre(HasSubstr("info /captf/providers ")));

  Rootfs bad = good("badmirror");
  bad.file("captf/providers/stray.txt", "x")
      .file("captf/module/random.tf", "resource \"random_id\" \"x\" {}\n");
  const Lint b = lint(push(bad, "lint/providers", "bad"));
  EXPECT_EQ(b.code, 1);
  EXPECT_THAT(b.of("image/providers-layout"),
              ElementsAre(HasSubstr("error /captf/providers/stray.txt ")));
  EXPECT_THAT(
      b.of("image/providers-complete"),
      ElementsAre(HasSubstr("provider registry.opentofu.org/hashicorp/random is required")));
}

TEST_F(ImageE2e, ReservedPaths) {
  Rootfs fs = good("reserved");
  fs.file("captf/work/state", "x").file("captf/config/inputs.json", "{}").dir("captf/bin");
  const Lint r = lint(push(fs, "lint/reserved", "v1"));
  EXPECT_EQ(r.code, 1);
  EXPECT_THAT(r.of("image/reserved-paths"),
              ElementsAre(HasSubstr("error /captf/config /captf/config holds 1 file or link"),
                          HasSubstr("error /captf/work /captf/work holds 1 file or link")));
}

TEST_F(ImageE2e, Labels) {
  const Lint unset = lint(push(good("nolabels"), "lint/labels", "unset", {}, {}));
  EXPECT_THAT(unset.of("image/label-role"), ElementsAre(HasSubstr("info ")));
  EXPECT_THAT(unset.of("image/label-contract"), ElementsAre(HasSubstr("info ")));
  EXPECT_THAT(unset.of("image/label-capacity"), ElementsAre(HasSubstr("info ")));
  EXPECT_EQ(unset.code, 0);
  const Lint wrong = lint(
      push(good("badlabels"), "lint/labels", "wrong", {},
           {"io.captf.role=cluster", "io.captf.contract=v0", R"(io.captf.capacity={"cpu":4})"}));
  EXPECT_EQ(wrong.code, 1);
  EXPECT_THAT(wrong.of("image/label-role"), ElementsAre(HasSubstr("error ")));
  EXPECT_THAT(wrong.of("image/label-contract"), ElementsAre(HasSubstr("warning ")));
  EXPECT_THAT(wrong.of("image/label-capacity"),
              ElementsAre(HasSubstr("error  label io.captf.capacity is invalid")));
}

TEST_F(ImageE2e, UserChecksAndEntrypoint) {
  const Lint root =
      lint(push(good("root"), "lint/user", "root", {"--entrypoint", "/bin/sh"}, goodLabels(), ""));
  EXPECT_THAT(imageIds(root), ElementsAre("image/entrypoint", "image/user-root"));
  EXPECT_EQ(root.code, 0);
  EXPECT_EQ(lint(push(good("root"), "lint/user", "root2", {}, goodLabels(), ""), {"--strict"}).code,
            1);
  Rootfs hidden = good("named");
  hidden.file("captf/module/secret.tf", "", 0600);
  const Lint named = lint(push(hidden, "lint/user", "named", {}, goodLabels(), "captf"));
  EXPECT_THAT(imageIds(named), ElementsAre("image/user-unresolved"));
  const Lint numeric = lint(push(hidden, "lint/user", "numeric"));
  EXPECT_THAT(numeric.of("image/module-readable"),
              ElementsAre(HasSubstr("warning /captf/module/secret.tf 1 path is not readable")));
  EXPECT_EQ(lint(push(hidden, "lint/user", "numeric2"),
                 {"--allow-warning", "image/module-readable", "--strict"})
                .code,
            0);
}

TEST_F(ImageE2e, ModuleLink) {
  Rootfs fs = good("links");
  fs.file("etc/hosts", "127.0.0.1 localhost\n")
      .link("captf/module/hosts.tf", "/etc/hosts")
      .link("captf/module/alias.tf", "main.tf");
  const Lint r = lint(push(fs, "lint/links", "v1"));
  EXPECT_EQ(r.code, 1);
  EXPECT_THAT(r.of("image/module-link"),
              ElementsAre(HasSubstr("error /captf/module/hosts.tf /captf/module/hosts.tf is a "
                                    "symlink to /etc/hosts")));
}

TEST_F(ImageE2e, MultiPlatformIndexAndManifestList) {
  const Rootfs fs = good("multi");
  const std::string amd = push(fs, "lint/multi", "amd64");
  std::vector<std::string> arm_labels = goodLabels();
  arm_labels[3] = R"(io.captf.capacity={"cpu":"8","memory":"16Gi"})";
  const std::string arm = push(fs, "lint/multi", "arm64",
                               {"--platform", "linux/arm64", "--compression", "zstd"}, arm_labels);
  for (const std::string format : {"oci", "docker"}) {
    const std::string ref =
        index("lint/multi", "index-" + format, {arm, amd}, {"--format", format, "--unknown", amd});
    const Lint def = lint(ref);
    EXPECT_EQ(def.code, 0) << format << ": " << def.out << def.err;
    EXPECT_EQ(def.report["image"]["platforms"], nlohmann::json::array({"linux/amd64"}));

    const Lint arm64 = lint(ref, {"--platform", "linux/arm64"});
    EXPECT_EQ(arm64.report["image"]["platforms"], nlohmann::json::array({"linux/arm64"}));
    EXPECT_EQ(arm64.report["image"]["digest"], def.report["image"]["digest"]);

    const Lint missing = lint(ref, {"--platform", "linux/s390x"});
    EXPECT_EQ(missing.code, 1);
    EXPECT_THAT(missing.of("image/platform"),
                ElementsAre("error  the index has no manifest for linux/s390x"));

    const Lint all = lint(ref, {"--all-platforms"});
    EXPECT_EQ(all.report["image"]["platforms"],
              nlohmann::json::array({"linux/arm64", "linux/amd64"}))
        << format;
    EXPECT_THAT(
        all.of("image/label-capacity"),
        ElementsAre(HasSubstr("warning  label io.captf.capacity differs between platforms")));
  }
  // A single image asked for another platform explicitly.
  const Lint wrong = lint(amd, {"--platform", "linux/arm64"});
  EXPECT_THAT(wrong.of("image/platform"),
              ElementsAre("error  the image is for linux/amd64, not linux/arm64"));
}

TEST_F(ImageE2e, PullErrorsExitTwo) {
  const Lint unknown = lint(env_->registry + "/lint/good:no-such-tag");
  EXPECT_EQ(unknown.code, 2);
  EXPECT_THAT(unknown.err, HasSubstr("lint/good:no-such-tag"));
  EXPECT_THAT(unknown.err, HasSubstr("404"));
  // The rig's registry speaks plain HTTP: without --insecure it is unreachable.
  std::vector<std::string> args = {"tfcapi-lint", "image", env_->registry + "/lint/good:gzip",
                                   "--role", "machine"};
  std::ostringstream out;
  std::ostringstream err;
  const ContractTables contracts;
  ImageEnvironment image_env;
  image_env.http.connect_timeout = std::chrono::seconds(10);
  EXPECT_EQ(runCli(args, out, err, contracts, BuildInfo{}, image_env), 2);
  EXPECT_THAT(err.str(), HasSubstr("use --insecure"));
}

} // namespace
} // namespace captf::lint
