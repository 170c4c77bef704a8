#include "test/lint/oci/oci_test_util.h"

#include <cstdlib>
#include <fstream>
#include <mutex>
#include <sstream>

#include <archive.h>
#include <archive_entry.h>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <gtest/gtest.h>
#include <unistd.h>

#include "lint/oci/auth.h"

namespace captf::lint::oci::testing {
namespace {

namespace beast = boost::beast;
namespace http = beast::http;
namespace net = boost::asio;
using tcp = net::ip::tcp;
using json = nlohmann::json;

std::string readAll(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string percentDecode(std::string_view s) {
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size()) {
      out += static_cast<char>(std::stoi(std::string(s.substr(i + 1, 2)), nullptr, 16));
      i += 2;
    } else {
      out += s[i];
    }
  }
  return out;
}

std::string layerType(Compression c, bool docker) {
  if (docker) {
    return "application/vnd.docker.image.rootfs.diff.tar.gzip";
  }
  switch (c) {
  case Compression::kNone:
    return "application/vnd.oci.image.layer.v1.tar";
  case Compression::kGzip:
    return "application/vnd.oci.image.layer.v1.tar+gzip";
  case Compression::kZstd:
    return "application/vnd.oci.image.layer.v1.tar+zstd";
  }
  return "";
}

} // namespace

std::string makeLayer(const std::vector<TarEntry>& entries, Compression compression) {
  archive* a = archive_write_new();
  archive_write_set_format_pax_restricted(a);
  if (compression == Compression::kGzip) {
    archive_write_add_filter_gzip(a);
  } else if (compression == Compression::kZstd) {
    archive_write_add_filter_zstd(a);
  }
  std::vector<char> buffer(16u << 20);
  size_t used = 0;
  EXPECT_EQ(archive_write_open_memory(a, buffer.data(), buffer.size(), &used), ARCHIVE_OK)
      << archive_error_string(a);
  for (const TarEntry& e : entries) {
    archive_entry* entry = archive_entry_new();
    archive_entry_set_pathname(entry, e.name.c_str());
    archive_entry_set_perm(entry, static_cast<mode_t>(e.mode));
    archive_entry_set_uid(entry, e.uid);
    archive_entry_set_gid(entry, e.gid);
    switch (e.type) {
    case 'd':
      archive_entry_set_filetype(entry, AE_IFDIR);
      break;
    case 'l':
      archive_entry_set_filetype(entry, AE_IFLNK);
      archive_entry_set_symlink(entry, e.link.c_str());
      break;
    case 'h':
      archive_entry_set_filetype(entry, AE_IFREG);
      archive_entry_set_hardlink(entry, e.link.c_str());
      break;
    default:
      archive_entry_set_filetype(entry, AE_IFREG);
      archive_entry_set_size(entry, static_cast<la_int64_t>(e.content.size()));
      break;
    }
    EXPECT_EQ(archive_write_header(a, entry), ARCHIVE_OK) << archive_error_string(a);
    if (e.type == 'f' && !e.content.empty()) {
      archive_write_data(a, e.content.data(), e.content.size());
    }
    archive_entry_free(entry);
  }
  archive_write_close(a);
  archive_write_free(a);
  return {buffer.data(), used};
}

TempDir::TempDir() {
  std::string pattern = (std::filesystem::path(::testing::TempDir()) / "oci-XXXXXX").string();
  EXPECT_NE(::mkdtemp(pattern.data()), nullptr);
  path_ = pattern;
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

ImageSpec goodMachineImage() {
  ImageSpec spec;
  spec.labels = {{"io.captf.role", "machine"},
                 {"io.captf.contract", "v1alpha1"},
                 {"io.captf.runtime", "tofu"},
                 {"io.captf.capacity", R"({"cpu":"4","memory":"16Gi"})"},
                 {"io.captf.node-info", R"({"architecture":"amd64","operatingSystem":"linux"})"}};
  spec.layers.push_back({
      dir("usr/"),
      dir("usr/local/"),
      dir("usr/local/bin/"),
      file("usr/local/bin/tofu", "#!/bin/true\n", 0755),
      dir("captf/"),
      symlink("captf/runtime", "/usr/local/bin/tofu"),
      dir("captf/module/"),
      file("captf/module/main.tf", std::string(kMachineModuleTf)),
      dir("captf/providers/"),
      dir("captf/providers/registry.opentofu.org/"),
      dir("captf/providers/registry.opentofu.org/hashicorp/"),
      dir("captf/providers/registry.opentofu.org/hashicorp/aws/"),
      file("captf/providers/registry.opentofu.org/hashicorp/aws/index.json", "{}"),
      file("captf/providers/registry.opentofu.org/hashicorp/aws/"
           "terraform-provider-aws_5.0.0_linux_amd64.zip",
           "zip"),
  });
  return spec;
}

LayoutBuilder::LayoutBuilder(std::filesystem::path dir) : dir_(std::move(dir)) {
  std::filesystem::create_directories(dir_ / "blobs" / "sha256");
  std::ofstream(dir_ / "oci-layout") << R"({"imageLayoutVersion":"1.0.0"})";
}

Descriptor LayoutBuilder::blob(std::string_view bytes, std::string media_type) {
  Descriptor d;
  d.media_type = std::move(media_type);
  d.digest = digestOf(bytes);
  d.size = static_cast<int64_t>(bytes.size());
  std::ofstream(dir_ / "blobs" / "sha256" / d.digest.substr(7), std::ios::binary) << bytes;
  return d;
}

nlohmann::json descriptorJson(const Descriptor& d) {
  json j = {{"mediaType", d.media_type}, {"digest", d.digest}, {"size", d.size}};
  if (d.platform) {
    j["platform"] = {{"os", d.platform->os}, {"architecture", d.platform->architecture}};
    if (!d.platform->variant.empty()) {
      j["platform"]["variant"] = d.platform->variant;
    }
  }
  if (!d.annotations.empty()) {
    j["annotations"] = d.annotations;
  }
  return j;
}

Descriptor LayoutBuilder::image(const ImageSpec& spec) {
  json layers = json::array();
  json diff_ids = json::array();
  for (const auto& entries : spec.layers) {
    const std::string tar = makeLayer(entries, spec.compression);
    layers.push_back(descriptorJson(blob(tar, layerType(spec.compression, spec.docker))));
    diff_ids.push_back(digestOf(makeLayer(entries, Compression::kNone)));
  }
  json config = {{"os", spec.os},
                 {"architecture", spec.architecture},
                 {"rootfs", {{"type", "layers"}, {"diff_ids", diff_ids}}},
                 {"config", json::object()}};
  if (!spec.variant.empty()) {
    config["variant"] = spec.variant;
  }
  if (!spec.user.empty()) {
    config["config"]["User"] = spec.user;
  }
  if (!spec.labels.empty()) {
    config["config"]["Labels"] = spec.labels;
  }
  if (!spec.entrypoint.empty()) {
    config["config"]["Entrypoint"] = spec.entrypoint;
  }
  const Descriptor cfg = blob(config.dump(), std::string(spec.docker ? kDockerConfig : kOciConfig));
  const std::string type(spec.docker ? kDockerManifest : kOciManifest);
  json manifest = {{"schemaVersion", 2},
                   {"mediaType", type},
                   {"config", descriptorJson(cfg)},
                   {"layers", layers}};
  return blob(manifest.dump(), type);
}

Descriptor LayoutBuilder::index(const std::vector<Descriptor>& manifests, bool docker) {
  json list = json::array();
  for (const Descriptor& d : manifests) {
    list.push_back(descriptorJson(d));
  }
  const std::string type(docker ? kDockerList : kOciIndex);
  json doc = {{"schemaVersion", 2}, {"mediaType", type}, {"manifests", list}};
  return blob(doc.dump(), type);
}

void LayoutBuilder::finish(const std::vector<Descriptor>& manifests,
                           const std::vector<std::string>& ref_names) {
  json list = json::array();
  for (std::size_t i = 0; i < manifests.size(); ++i) {
    json d = descriptorJson(manifests[i]);
    if (i < ref_names.size()) {
      d["annotations"]["org.opencontainers.image.ref.name"] = ref_names[i];
    }
    list.push_back(d);
  }
  json doc = {{"schemaVersion", 2}, {"mediaType", kOciIndex}, {"manifests", list}};
  std::ofstream(dir_ / "index.json") << doc.dump();
}

struct FakeRegistry::Impl {
  std::filesystem::path layout;
  Options options;
  FakeRegistry* owner = nullptr;
  net::io_context ioc;
  tcp::acceptor acceptor{ioc};
  std::atomic<bool> stop{false};
  std::mutex mu;
  std::string last_scope;
  std::vector<tcp::socket> stalled;
  std::thread thread;

  std::string host() const {
    return "127.0.0.1:" + std::to_string(acceptor.local_endpoint().port());
  }

  void serve() {
    while (!stop) {
      tcp::socket socket(ioc);
      beast::error_code ec;
      acceptor.accept(socket, ec);
      if (stop || ec) {
        return;
      }
      if (options.stall) {
        stalled.push_back(std::move(socket));
        continue;
      }
      handle(socket);
    }
  }

  http::response<http::string_body> answer(int status, std::string body,
                                           const std::string& type = "application/json") {
    http::response<http::string_body> res{static_cast<http::status>(status), 11};
    res.set(http::field::content_type, type);
    res.body() = std::move(body);
    res.prepare_payload();
    return res;
  }

  http::response<http::string_body> notFound(std::string_view code) {
    return answer(404, json{{"errors", {{{"code", code}, {"message", "not found"}}}}}.dump());
  }

  void handle(tcp::socket& socket) {
    beast::flat_buffer buffer;
    http::request<http::string_body> req;
    beast::error_code ec;
    http::read(socket, buffer, req, ec);
    if (ec) {
      return;
    }
    http::response<http::string_body> res = route(req);
    res.keep_alive(false);
    http::write(socket, res, ec);
    socket.shutdown(tcp::socket::shutdown_both, ec);
  }

  http::response<http::string_body> route(const http::request<http::string_body>& req) {
    const std::string target(req.target());
    const std::string path = target.substr(0, target.find('?'));
    const std::string query =
        target.find('?') == std::string::npos ? "" : target.substr(target.find('?') + 1);
    const std::string authorization(req[http::field::authorization]);
    const std::string basic = basicAuthorization({options.username, options.password});
    if (path == "/token") {
      owner->token_requests_++;
      {
        std::scoped_lock lock(mu);
        const std::size_t at = query.find("scope=");
        last_scope = at == std::string::npos
                         ? ""
                         : percentDecode(query.substr(at + 6, query.find('&', at) - at - 6));
      }
      if (options.token_needs_credentials && authorization != basic) {
        return answer(401, R"({"details":"bad credentials"})");
      }
      return answer(200, R"({"token":"tok-123","expires_in":300})");
    }
    if (options.auth == Auth::kBasic && authorization != basic) {
      auto res = answer(
          401, R"({"errors":[{"code":"UNAUTHORIZED","message":"authentication required"}]})");
      res.set(http::field::www_authenticate, "Basic realm=\"fake\"");
      return res;
    }
    if (options.auth == Auth::kBearer && authorization != "Bearer tok-123") {
      auto res = answer(
          401, R"({"errors":[{"code":"UNAUTHORIZED","message":"authentication required"}]})");
      std::string challenge =
          "Bearer realm=\"http://" + host() + R"(/token",service="fake-registry")";
      if (path != "/v2/") {
        challenge += ",scope=\"repository:" + options.repository + ":pull\"";
      }
      res.set(http::field::www_authenticate, challenge);
      return res;
    }
    if (path == "/v2/") {
      return answer(200, "{}");
    }
    const std::string prefix = "/v2/" + options.repository + "/";
    if (!path.starts_with(prefix)) {
      return notFound("NAME_UNKNOWN");
    }
    const std::string rest = path.substr(prefix.size());
    if (rest.starts_with("blobs/")) {
      const std::string digest = rest.substr(6);
      const auto file = layout / "blobs" / "sha256" / digest.substr(7);
      if (!digest.starts_with("sha256:") || !std::filesystem::exists(file)) {
        return notFound("BLOB_UNKNOWN");
      }
      return answer(200, readAll(file), "application/octet-stream");
    }
    if (rest.starts_with("manifests/")) {
      std::string ref = rest.substr(10);
      std::string type;
      if (!ref.starts_with("sha256:")) {
        const json index = json::parse(readAll(layout / "index.json"));
        std::string found;
        for (const auto& d : index["manifests"]) {
          if (d.contains("annotations") &&
              d["annotations"].value("org.opencontainers.image.ref.name", "") == ref) {
            found = d["digest"].get<std::string>();
            type = d["mediaType"].get<std::string>();
          }
        }
        if (found.empty()) {
          return notFound("MANIFEST_UNKNOWN");
        }
        ref = found;
      }
      const auto file = layout / "blobs" / "sha256" / ref.substr(7);
      if (!std::filesystem::exists(file)) {
        return notFound("MANIFEST_UNKNOWN");
      }
      std::string body = readAll(file);
      if (type.empty()) {
        type = json::parse(body).value("mediaType", std::string(kOciManifest));
      }
      return answer(200, std::move(body), type);
    }
    return notFound("UNSUPPORTED");
  }
};

FakeRegistry::FakeRegistry(std::filesystem::path layout, Options options)
    : impl_(std::make_unique<Impl>()) {
  impl_->layout = std::move(layout);
  impl_->options = std::move(options);
  impl_->owner = this;
  const tcp::endpoint endpoint(net::ip::make_address("127.0.0.1"), 0);
  impl_->acceptor.open(endpoint.protocol());
  impl_->acceptor.bind(endpoint);
  impl_->acceptor.listen();
  impl_->thread = std::thread([this] { impl_->serve(); });
}

FakeRegistry::~FakeRegistry() {
  impl_->stop = true;
  {
    // Unblock accept().
    net::io_context ioc;
    tcp::socket poke(ioc);
    beast::error_code ec;
    poke.connect(impl_->acceptor.local_endpoint(), ec);
  }
  impl_->thread.join();
}

std::string FakeRegistry::host() const {
  return impl_->host();
}

std::string FakeRegistry::lastScope() const {
  std::scoped_lock lock(impl_->mu);
  return impl_->last_scope;
}

} // namespace captf::lint::oci::testing
