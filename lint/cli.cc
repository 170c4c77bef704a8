#include "lint/cli.h"

#include <algorithm>
#include <set>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "contract/git.h"
#include "contract/git_source.h"
#include "contract/strings.h"
#include "lint/checks/module_checks.h"
#include "lint/finding.h"
#include "lint/module/loader.h"
#include "lint/report/output.h"

namespace captf::lint {

using contract::strAppend;
using contract::strCat;

namespace {

constexpr std::string_view kProgram = "tfcapi-lint";

std::string joined(const std::vector<std::string>& items) {
  std::string out;
  for (const std::string& item : items) {
    strAppend(out, out.empty() ? "" : ", ", item);
  }
  return out;
}

// Flags shared by `module` and `image` (docs/lint.md#flags).
struct CheckFlags {
  std::string role;
  std::string contract = "v1alpha1";
  bool json = false;
  bool sarif = false;
  bool strict = false;
  std::vector<std::string> allow_warning;
  std::vector<std::string> positionals;
};

void addCheckFlags(CLI::App& cmd, CheckFlags& flags, std::string_view positional_name) {
  cmd.add_option("--role", flags.role, "cluster, machine or machinepool (required)");
  cmd.add_option("--contract", flags.contract, "the contract version")->capture_default_str();
  cmd.add_flag("--json", flags.json, "print a JSON report instead of text");
  cmd.add_flag("--sarif", flags.sarif, "print a SARIF 2.1.0 log instead of text");
  cmd.add_flag("--strict", flags.strict, "warnings count as errors for the exit code");
  cmd.add_option("--allow-warning", flags.allow_warning,
                 "downgrade this check's warnings to info (repeatable, comma-separated)")
      ->delimiter(',');
  cmd.add_option(std::string(positional_name), flags.positionals);
}

class Cli {
public:
  Cli(std::ostream& out, std::ostream& err, const ContractSource& contracts, const BuildInfo& build,
      const ImageEnvironment& image_env, const GitEnvironment& git_env)
      : out_(out), err_(err), contracts_(contracts), build_(build), image_env_(image_env),
        git_env_(git_env) {}

  int run(std::span<const std::string> args) {
    CLI::App app{"tfcapi-lint checks a CAPTF module or image against the module contract.",
                 std::string(kProgram)};
    app.require_subcommand(0, 1);
    std::string version_mode;
    CLI::Option* version_opt =
        app.add_option("--version", version_mode, "print the version (--version=raw: all fields)")
            ->expected(0, 1);

    CheckFlags module_flags;
    CLI::App* module_cmd = app.add_subcommand(
        "module", "check a module directory, or a git::URL//path?ref=REF module address");
    addCheckFlags(*module_cmd, module_flags, "module-dir");
    std::string git_credentials;
    module_cmd->add_option("--git-credentials", git_credentials,
                           "a directory holding a Git credentials Secret's keys (username, "
                           "password, token, ssh-privatekey, known_hosts, ca.crt)");

    CheckFlags image_flags;
    std::string platform = "linux/amd64";
    bool all_platforms = false;
    bool insecure = false;
    CLI::App* image_cmd = app.add_subcommand("image", "check an OCI image");
    addCheckFlags(*image_cmd, image_flags, "image-ref");
    image_cmd->add_option("--platform", platform, "the platform to check in an index")
        ->capture_default_str();
    image_cmd->add_flag("--all-platforms", all_platforms, "check every platform");
    image_cmd->add_flag("--insecure", insecure, "allow a plain-HTTP registry");

    bool version_json = false;
    std::vector<std::string> version_args;
    CLI::App* version_cmd = app.add_subcommand("version", "print the version");
    version_cmd->add_flag("--json", version_json, "print JSON");
    version_cmd->add_option("args", version_args);

    std::vector<std::string> argv_rest(args.begin() + (args.empty() ? 0 : 1), args.end());
    std::reverse(argv_rest.begin(), argv_rest.end()); // CLI11 takes them reversed
    try {
      app.parse(argv_rest);
    } catch (const CLI::CallForHelp&) {
      out_ << helpFor(app, args);
      return kExitOk;
    } catch (const CLI::ParseError& e) {
      return usage(app, commandPath(args), e.what());
    }

    if (version_opt->count() > 0) {
      if (version_mode == "raw") {
        out_ << "{Version:" << build_.version << " Commit:" << build_.commit
             << " Date:" << build_.date << "}\n";
      } else {
        out_ << kProgram << " " << build_.version << "\n";
      }
      return kExitOk;
    }
    if (module_cmd->parsed()) {
      return runModule(*module_cmd, module_flags, git_credentials);
    }
    if (image_cmd->parsed()) {
      return runImage(*image_cmd, image_flags, platform, image_cmd->count("--platform") > 0,
                      all_platforms, insecure);
    }
    if (version_cmd->parsed()) {
      if (!version_args.empty()) {
        return usage(*version_cmd, strCat(kProgram, " version"),
                     strCat("unexpected argument \"", version_args.front(), "\""));
      }
      return printVersion(version_json);
    }
    err_ << app.help();
    return kExitUsage;
  }

private:
  static std::string commandPath(std::span<const std::string> args) {
    for (std::size_t i = 1; i < args.size(); ++i) {
      if (args[i] == "module" || args[i] == "image" || args[i] == "version") {
        return strCat(kProgram, " ", args[i]);
      }
      if (!args[i].starts_with('-')) {
        break;
      }
    }
    return std::string(kProgram);
  }

  static std::string helpFor(CLI::App& app, std::span<const std::string> args) {
    const std::string path = commandPath(args);
    if (path != kProgram) {
      return app.get_subcommand(path.substr(kProgram.size() + 1))->help();
    }
    return app.help();
  }

  int usage(CLI::App& cmd, std::string_view path, std::string_view message) {
    err_ << path << ": " << message << "\n\n" << cmd.help();
    return kExitUsage;
  }

  // The usage checks shared by module and image (docs/lint.md#exit-codes), in the spec's order.
  int validate(CLI::App& cmd, std::string_view path, const CheckFlags& flags,
               std::string_view positional_message) {
    if (flags.role.empty()) {
      return usage(cmd, path, "--role is required");
    }
    if (flags.positionals.size() != 1) {
      return usage(cmd, path, positional_message);
    }
    const std::vector<std::string> versions = contracts_.versions();
    if (std::find(versions.begin(), versions.end(), flags.contract) == versions.end()) {
      return usage(
          cmd, path,
          strCat("unknown contract \"", flags.contract, "\" (known: ", joined(versions), ")"));
    }
    const std::vector<std::string> roles = contracts_.roles(flags.contract);
    if (std::find(roles.begin(), roles.end(), flags.role) == roles.end()) {
      return usage(cmd, path,
                   strCat("unknown role \"", flags.role, "\" (known: ", joined(roles), ")"));
    }
    if (flags.json && flags.sarif) {
      return usage(cmd, path, "--json and --sarif cannot be used together");
    }
    return kExitOk;
  }

  int runModule(CLI::App& cmd, const CheckFlags& flags, const std::string& git_credentials) {
    const std::string path = strCat(kProgram, " module");
    if (const int rc = validate(cmd, path, flags, "exactly one module directory is required");
        rc != kExitOk) {
      return rc;
    }
    const absl::StatusOr<RoleContract> contract = contracts_.role(flags.contract, flags.role);
    if (!contract.ok()) {
      return usage(cmd, path, std::string(contract.status().message()));
    }
    const std::string& source = flags.positionals.front();
    if (!source.starts_with("git::")) {
      if (!git_credentials.empty()) {
        return usage(cmd, path, "--git-credentials applies to git:: addresses only");
      }
      return lintModule(source, source, *contract, flags, path);
    }
    const absl::StatusOr<contract::GitModuleAddress> address =
        contract::parseGitModuleAddress(source);
    if (!address.ok()) {
      return usage(cmd, path, strCat(source, ": ", address.status().message()));
    }
    contract::git::Credentials credentials;
    if (!git_credentials.empty()) {
      absl::StatusOr<contract::git::Credentials> loaded =
          contract::git::credentialsFromDirectory(git_credentials);
      if (!loaded.ok()) {
        return usage(cmd, path, std::string(loaded.status().message()));
      }
      credentials = *std::move(loaded);
    }
    absl::StatusOr<std::unique_ptr<GitCheckout>> checkout =
        fetchGitModule(*address, credentials, git_env_);
    if (!checkout.ok()) {
      err_ << path << ": " << checkout.status().message() << "\n";
      return kExitUnparsable;
    }
    // The report names the address, and files relative to the module, as
    // for a directory.
    return lintModule((*checkout)->moduleDir().string(), source, *contract, flags, path);
  }

  // Loads and checks the module in `dir`; the report calls it `name`.
  int lintModule(const std::string& dir, const std::string& name, const RoleContract& contract,
                 const CheckFlags& flags, std::string_view path) {
    absl::StatusOr<ModuleTree> tree = loadModuleTree(dir);
    if (!tree.ok()) {
      err_ << path << ": " << tree.status().message() << "\n";
      return kExitUnparsable;
    }
    Report report;
    report.module = name;
    report.contract = flags.contract;
    report.role = flags.role;
    report.file_set =
        tree->root().files.empty() ? "no module" : std::string(tree->root().fileSet());
    report.findings = runModuleChecks(*tree, contract);
    allowWarnings(report.findings,
                  std::set<std::string>(flags.allow_warning.begin(), flags.allow_warning.end()));
    sortFindings(report.findings);
    return emit(report, flags, path);
  }

  int runImage(CLI::App& cmd, const CheckFlags& flags, const std::string& platform,
               bool platform_explicit, bool all_platforms, bool insecure) {
    const std::string path = strCat(kProgram, " image");
    if (const int rc = validate(cmd, path, flags, "exactly one image reference is required");
        rc != kExitOk) {
      return rc;
    }
    const absl::StatusOr<RoleContract> contract = contracts_.role(flags.contract, flags.role);
    if (!contract.ok()) {
      return usage(cmd, path, std::string(contract.status().message()));
    }
    const std::string& ref = flags.positionals.front();
    if (const absl::Status s = validateImageReference(ref); !s.ok()) {
      return usage(cmd, path, std::string(s.message()));
    }
    const absl::StatusOr<oci::Platform> wanted = oci::parsePlatform(platform);
    if (!wanted.ok()) {
      return usage(cmd, path, std::string(wanted.status().message()));
    }
    ImageLintOptions options;
    options.ref = ref;
    options.select.platform = *wanted;
    options.select.platform_explicit = platform_explicit;
    options.select.all_platforms = all_platforms;
    options.insecure = insecure;
    options.http = image_env_.http;
    options.keychain = image_env_.keychain;
    options.limits = image_env_.limits;
    options.temp_dir = image_env_.temp_dir;
    absl::StatusOr<Report> report = lintImage(options, *contract);
    if (!report.ok()) {
      err_ << path << ": " << report.status().message() << "\n";
      return kExitUnparsable;
    }
    allowWarnings(report->findings,
                  std::set<std::string>(flags.allow_warning.begin(), flags.allow_warning.end()));
    sortFindings(report->findings);
    return emit(*report, flags, path);
  }

  int emit(const Report& report, const CheckFlags& flags, std::string_view path) {
    if (flags.json || flags.sarif) {
      const absl::StatusOr<std::string> doc =
          flags.json ? renderJson(report) : renderSarif(report, build_.version);
      if (!doc.ok()) {
        err_ << path << ": " << doc.status().message() << "\n";
        return kExitUnparsable;
      }
      out_ << *doc;
    } else {
      out_ << renderText(report);
    }
    return exitCodeFor(summarize(report.findings),
                       flags.strict ? Strictness::kStrict : Strictness::kDefault);
  }

  int printVersion(bool json) {
    if (!json) {
      out_ << kProgram << " " << build_.version << "\n";
      return kExitOk;
    }
    nlohmann::ordered_json doc = nlohmann::ordered_json::object();
    doc["version"] = build_.version;
    doc["commit"] = build_.commit;
    doc["date"] = build_.date;
    doc["contract"] = contracts_.versions();
    out_ << doc.dump(2) << "\n";
    return kExitOk;
  }

  std::ostream& out_;
  std::ostream& err_;
  const ContractSource& contracts_;
  const BuildInfo& build_;
  const ImageEnvironment& image_env_;
  const GitEnvironment& git_env_;
};

} // namespace

int runCli(std::span<const std::string> args, std::ostream& out, std::ostream& err,
           const ContractSource& contracts, const BuildInfo& build,
           const ImageEnvironment& image_env, const GitEnvironment& git_env) {
  return Cli(out, err, contracts, build, image_env, git_env).run(args);
}

} // namespace captf::lint
