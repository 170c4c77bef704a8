#pragma once

// Builders for image tests: tar layers (libarchive's writer), OCI image
// layouts on disk, and a small distribution-API server over a layout, with
// optional Basic or Bearer authentication.

#include <atomic>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "lint/oci/manifest.h"

namespace captf::lint::oci::testing {

// A lint-clean machine module (aws_instance), the module of the fixture images.
inline constexpr std::string_view kMachineModuleTf = R"(terraform {
  required_version = ">= 1.8.0"
  required_providers {
    aws = {
      source = "hashicorp/aws"
    }
  }
}

variable "captf_contract" { type = string }
variable "captf_cluster" { type = any }
variable "captf_object" { type = any }
variable "captf_tags" { type = map(string) }
variable "captf_cluster_outputs" { type = any }
variable "machine_name" { type = string }
variable "bootstrap_format" { type = string }
variable "control_plane" { type = bool }

variable "bootstrap_data" {
  type      = string
  sensitive = true
}

variable "failure_domain" {
  type    = string
  default = null
}

variable "kubernetes_version" {
  type    = string
  default = null
}

resource "aws_instance" "node" {
  ami       = var.captf_cluster_outputs.ami
  user_data = var.bootstrap_data
  tags      = merge(var.captf_tags, { Name = var.machine_name })
}

output "provider_id" { value = "aws:///${aws_instance.node.availability_zone}/${aws_instance.node.id}" }
output "addresses" { value = [{ type = "InternalIP", address = aws_instance.node.private_ip }] }
output "failure_domain" { value = aws_instance.node.availability_zone }
output "interruptible" { value = false }
output "health" { value = { state = "running", healthy = true } }
)";

struct TarEntry {
  std::string name;
  char type = 'f'; // 'f' file, 'd' directory, 'l' symlink, 'h' hard link
  std::string content;
  std::string link;
  unsigned mode = 0644;
  int64_t uid = 0;
  int64_t gid = 0;
};

inline TarEntry file(std::string name, std::string content, unsigned mode = 0644) {
  return {std::move(name), 'f', std::move(content), "", mode};
}
inline TarEntry dir(std::string name, unsigned mode = 0755) {
  return {std::move(name), 'd', "", "", mode};
}
inline TarEntry symlink(std::string name, std::string target) {
  return {std::move(name), 'l', "", std::move(target), 0777};
}
inline TarEntry hardlink(std::string name, std::string target) {
  return {std::move(name), 'h', "", std::move(target), 0644};
}

// A tar archive of `entries`, compressed as asked.
std::string makeLayer(const std::vector<TarEntry>& entries, Compression compression);

// A directory that is removed at the end of the test.
class TempDir {
public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }

private:
  std::filesystem::path path_;
};

struct ImageSpec {
  std::vector<std::vector<TarEntry>> layers;
  Compression compression = Compression::kGzip;
  std::string os = "linux";
  std::string architecture = "amd64";
  std::string variant;
  std::string user = "65532";
  std::map<std::string, std::string> labels;
  std::vector<std::string> entrypoint;
  bool docker = false; // Docker v2 media types
};

// A module image that passes every image check for role machine (labels,
// user, runtime, providers mirror, module files).
ImageSpec goodMachineImage();

// Writes blobs into an OCI image layout.
class LayoutBuilder {
public:
  explicit LayoutBuilder(std::filesystem::path dir);
  // Adds a blob and returns its descriptor (media type set).
  Descriptor blob(std::string_view bytes, std::string media_type);
  // Adds an image (layers, config, manifest) and returns the manifest's
  // descriptor, without a platform.
  Descriptor image(const ImageSpec& spec);
  // Adds an index of `manifests` and returns its descriptor.
  Descriptor index(const std::vector<Descriptor>& manifests, bool docker = false);
  // Writes index.json listing `manifests` (with a ref name each if given).
  void finish(const std::vector<Descriptor>& manifests,
              const std::vector<std::string>& ref_names = {});
  const std::filesystem::path& dir() const { return dir_; }

private:
  std::filesystem::path dir_;
};

nlohmann::json descriptorJson(const Descriptor& d);

// A distribution API v2 server on 127.0.0.1 that serves one repository
// from a layout directory (manifests by tag via index.json ref names, or by
// digest; blobs by digest).
class FakeRegistry {
public:
  enum class Auth { kNone, kBasic, kBearer };
  struct Options {
    Auth auth = Auth::kNone;
    std::string username = "user";
    std::string password = "secret";
    std::string repository = "team/module";
    // With kBearer: the token endpoint wants Basic credentials too.
    bool token_needs_credentials = false;
    // Accept connections and never answer (timeouts).
    bool stall = false;
  };
  FakeRegistry(std::filesystem::path layout, Options options);
  ~FakeRegistry();
  FakeRegistry(const FakeRegistry&) = delete;
  FakeRegistry& operator=(const FakeRegistry&) = delete;

  std::string host() const; // 127.0.0.1:PORT
  int tokenRequests() const { return token_requests_.load(); }
  // The scope of the last token request.
  std::string lastScope() const;

private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  std::atomic<int> token_requests_{0};
};

// One run of tfcapi-lint with --json: exit code, the parsed report, the
// output streams.
struct LintRun {
  int code = -1;
  nlohmann::json report;
  std::string out;
  std::string err;
  // The ids of the findings, in report order.
  std::vector<std::string> ids() const {
    std::vector<std::string> out_ids;
    if (report.is_object()) {
      for (const auto& f : report["findings"]) {
        out_ids.push_back(f["id"].get<std::string>());
      }
    }
    return out_ids;
  }
  // The findings of one id: "severity file message".
  std::vector<std::string> of(std::string_view id) const {
    std::vector<std::string> found;
    if (report.is_object()) {
      for (const auto& f : report["findings"]) {
        if (f["id"] == id) {
          found.push_back(f["severity"].get<std::string>() + " " + f["file"].get<std::string>() +
                          " " + f["message"].get<std::string>());
        }
      }
    }
    return found;
  }
};

} // namespace captf::lint::oci::testing
