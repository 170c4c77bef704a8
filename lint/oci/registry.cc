#include <algorithm>
#include <array>
#include <cstddef>
#include <fstream>
#include <utility>

#include <nlohmann/json.hpp>
#include <openssl/evp.h>

#include "contract/status_macros.h"
#include "contract/strings.h"
#include "lint/oci/source.h"

namespace captf::lint::oci {

using contract::strAppend;
using contract::strCat;

struct Hasher::Impl {
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  std::string algorithm;
  ~Impl() { EVP_MD_CTX_free(ctx); }
};

Hasher::Hasher(std::string_view algorithm) : impl_(std::make_unique<Impl>()) {
  impl_->algorithm = algorithm == "sha512" ? "sha512" : "sha256";
  EVP_DigestInit_ex(impl_->ctx, algorithm == "sha512" ? EVP_sha512() : EVP_sha256(), nullptr);
}
Hasher::~Hasher() = default;

void Hasher::update(std::string_view data) {
  EVP_DigestUpdate(impl_->ctx, data.data(), data.size());
}

std::string Hasher::finish() {
  std::array<unsigned char, EVP_MAX_MD_SIZE> out{};
  unsigned int len = 0;
  EVP_DigestFinal_ex(impl_->ctx, out.data(), &len);
  static constexpr std::string_view kHex = "0123456789abcdef";
  std::string text = strCat(impl_->algorithm, ":");
  for (unsigned int i = 0; i < len; ++i) {
    text += kHex[out[i] >> 4];
    text += kHex[out[i] & 0xF];
  }
  return text;
}

absl::Status verifyBlob(std::string_view bytes, const Descriptor& d) {
  if (std::cmp_not_equal(bytes.size(), d.size)) {
    return absl::DataLossError(
        strCat("blob ", d.digest, " has ", bytes.size(), " bytes, the descriptor says ", d.size));
  }
  const std::string algorithm = d.digest.substr(0, d.digest.find(':'));
  if (const std::string got = digestOf(bytes, algorithm); got != d.digest) {
    return absl::DataLossError(strCat("blob ", d.digest, " has digest ", got));
  }
  return absl::OkStatus();
}

namespace {

// The error codes of the distribution spec (OCI distribution-spec 1.1,
// "Error Codes").
constexpr std::array<std::string_view, 14> kSpecErrorCodes = {
    "BLOB_UNKNOWN",          "BLOB_UPLOAD_INVALID", "BLOB_UPLOAD_UNKNOWN", "DIGEST_INVALID",
    "MANIFEST_BLOB_UNKNOWN", "MANIFEST_INVALID",    "MANIFEST_UNKNOWN",    "NAME_INVALID",
    "NAME_UNKNOWN",          "SIZE_INVALID",        "UNAUTHORIZED",        "DENIED",
    "UNSUPPORTED",           "TOOMANYREQUESTS"};

// A non-2xx answer as an error message quotes it: "404 MANIFEST_UNKNOWN",
// the status plus the first error code of a distribution-spec error
// document when it is one of the spec's codes. Nothing else of a body is
// ever quoted: the registry and its token realm are whatever the image
// reference names, and the manager copies these messages into a status
// others read (docs/decisions/lint-image-registry.md, "Error answers").
std::string describe(const HttpResponse& r) {
  std::string out = strCat(r.status);
  const nlohmann::json doc = nlohmann::json::parse(r.body, nullptr, /*allow_exceptions=*/false);
  if (doc.is_object() && doc.contains("errors") && doc["errors"].is_array() &&
      !doc["errors"].empty() && doc["errors"][0].is_object()) {
    const auto code = doc["errors"][0].find("code");
    if (code != doc["errors"][0].end() && code->is_string() &&
        std::ranges::find(kSpecErrorCodes, code->get<std::string>()) != kSpecErrorCodes.end()) {
      strAppend(out, " ", code->get<std::string>());
    }
  }
  return out;
}

// "https://auth.example.com:8443": where a URL points, without its path and
// query.
std::string originOf(const Url& url) {
  return strCat(url.scheme, "://", url.authority());
}

class RegistrySource final : public ImageSource {
public:
  RegistrySource(std::string given, RegistryReference ref, RegistryOptions options)
      : given_(std::move(given)), ref_(std::move(ref)), options_(std::move(options)),
        http_(options_.http) {}

  const std::string& name() const override { return given_; }

  absl::StatusOr<FetchedManifest> root() override {
    CAPTF_ASSIGN_OR_RETURN(FetchedManifest m, fetchManifest(ref_.identifier()));
    if (!ref_.digest.empty() && m.digest != ref_.digest) {
      return absl::DataLossError(strCat(given_, ": the manifest's digest is ", m.digest));
    }
    return m;
  }

  absl::StatusOr<FetchedManifest> manifest(const Descriptor& d) override {
    CAPTF_ASSIGN_OR_RETURN(FetchedManifest m, fetchManifest(d.digest));
    if (absl::Status s = verifyBlob(m.bytes, d); !s.ok()) {
      return absl::DataLossError(strCat(given_, ": manifest ", s.message()));
    }
    if (m.media_type.empty()) {
      m.media_type = d.media_type;
    }
    return m;
  }

  absl::StatusOr<std::string> blob(const Descriptor& d, uint64_t max_bytes) override {
    if (std::cmp_greater(d.size, max_bytes)) {
      return absl::ResourceExhaustedError(strCat(given_, ": blob ", d.digest, " has ", d.size,
                                                 " bytes, more than the limit of ", max_bytes));
    }
    CAPTF_ASSIGN_OR_RETURN(
        HttpResponse r, request(strCat("/v2/", ref_.repository, "/blobs/", d.digest), {},
                                static_cast<uint64_t>(d.size), nullptr, strCat("blob ", d.digest)));
    if (r.status != 200) {
      return failed(r, strCat("blob ", d.digest));
    }
    if (absl::Status s = verifyBlob(r.body, d); !s.ok()) {
      return absl::DataLossError(strCat(given_, ": ", s.message()));
    }
    return std::move(r.body);
  }

  absl::StatusOr<std::filesystem::path>
  blobFile(const Descriptor& d, const std::filesystem::path& scratch_dir) override {
    std::filesystem::path dest =
        scratch_dir / strCat("blob-", d.digest.substr(d.digest.find(':') + 1));
    std::ofstream out(dest, std::ios::binary | std::ios::trunc);
    if (!out) {
      return absl::InternalError(strCat("cannot write ", dest.string()));
    }
    Hasher hasher(d.digest.substr(0, d.digest.find(':')));
    uint64_t total = 0;
    const std::function<absl::Status(std::string_view)> sink = [&](std::string_view chunk) {
      hasher.update(chunk);
      total += chunk.size();
      out.write(chunk.data(), static_cast<std::streamsize>(chunk.size()));
      return out ? absl::OkStatus()
                 : absl::InternalError(strCat("writing ", dest.string(), " failed"));
    };
    const std::string what = strCat("layer ", d.digest);
    CAPTF_ASSIGN_OR_RETURN(HttpResponse r,
                           request(strCat("/v2/", ref_.repository, "/blobs/", d.digest), {},
                                   static_cast<uint64_t>(d.size), &sink, what));
    if (r.status != 200) {
      return failed(r, what);
    }
    out.close();
    if (std::cmp_not_equal(total, d.size)) {
      return absl::DataLossError(
          strCat(given_, ": ", what, " has ", total, " bytes, the manifest says ", d.size));
    }
    if (const std::string got = hasher.finish(); got != d.digest) {
      return absl::DataLossError(strCat(given_, ": ", what, " has digest ", got));
    }
    return dest;
  }

private:
  absl::Status failed(const HttpResponse& r, std::string_view what) const {
    const std::string msg = strCat(given_, ": GET ", what, " from ", ref_.registry, "/",
                                   ref_.repository, " answered ", describe(r));
    switch (r.status) {
    case 401:
    case 403:
      return absl::PermissionDeniedError(msg);
    case 404:
      return absl::NotFoundError(msg);
    default:
      return absl::UnavailableError(msg);
    }
  }

  absl::StatusOr<FetchedManifest> fetchManifest(const std::string& identifier) {
    const std::string what = strCat("manifest ", identifier);
    CAPTF_ASSIGN_OR_RETURN(HttpResponse r,
                           request(strCat("/v2/", ref_.repository, "/manifests/", identifier),
                                   {{"Accept", manifestAcceptHeader()}}, kMaxManifestBytes, nullptr,
                                   what));
    if (r.status != 200) {
      return failed(r, what);
    }
    FetchedManifest m;
    m.media_type = r.header("Content-Type");
    m.media_type = m.media_type.substr(0, m.media_type.find(';'));
    const std::string algorithm =
        identifier.starts_with("sha512:") ? std::string("sha512") : std::string("sha256");
    m.digest = digestOf(r.body, algorithm);
    m.bytes = std::move(r.body);
    return m;
  }

  // Sets up the scheme and authorization (once).
  absl::Status ensureReady() {
    if (ready_) {
      return absl::OkStatus();
    }
    if (options_.docker_configs.empty()) {
      CAPTF_ASSIGN_OR_RETURN(credentials_, lookupCredentials(ref_.registry, options_.keychain));
    }
    for (const auto& [where, document] : options_.docker_configs) {
      CAPTF_ASSIGN_OR_RETURN(credentials_, lookupCredentialsIn(ref_.registry, document, where));
      if (credentials_) {
        break;
      }
    }
    std::vector<std::string> schemes = {"https"};
    if (options_.insecure) {
      schemes.emplace_back("http");
    }
    absl::Status last;
    for (const std::string& scheme : schemes) {
      absl::StatusOr<HttpResponse> ping = http_.get(strCat(scheme, "://", ref_.registry, "/v2/"),
                                                    {}, static_cast<uint64_t>(64 * 1024));
      if (!ping.ok()) {
        last = ping.status();
        continue;
      }
      base_ = strCat(scheme, "://", ref_.registry);
      if (ping->status == 200) {
        ready_ = true;
        return absl::OkStatus();
      }
      if (ping->status != 401) {
        return absl::UnavailableError(
            strCat(given_, ": the registry ", ref_.registry, " answered ", describe(*ping),
                   " to GET /v2/: it does not speak the distribution API v2"));
      }
      CAPTF_RETURN_IF_ERROR(authenticate(*ping, ""));
      ready_ = true;
      return absl::OkStatus();
    }
    const std::string hint = options_.insecure ? "" : " (use --insecure for a plain-HTTP registry)";
    return {last.code(), strCat(given_, ": cannot reach the registry ", ref_.registry, ": ",
                                last.message(), hint)};
  }

  // Answers a 401: picks the Bearer challenge (or Basic) and sets
  // authorization_.
  absl::Status authenticate(const HttpResponse& unauthorized, std::string_view scope) {
    std::vector<Challenge> challenges;
    for (const std::string& value : unauthorized.headerValues("WWW-Authenticate")) {
      absl::StatusOr<std::vector<Challenge>> parsed = parseChallenges(value);
      if (!parsed.ok()) {
        return absl::PermissionDeniedError(strCat(given_, ": ", parsed.status().message()));
      }
      challenges.insert(challenges.end(), parsed->begin(), parsed->end());
    }
    const Challenge* bearer = nullptr;
    const Challenge* basic = nullptr;
    for (const Challenge& c : challenges) {
      if (c.scheme == "bearer" && bearer == nullptr) {
        bearer = &c;
      } else if (c.scheme == "basic" && basic == nullptr) {
        basic = &c;
      }
    }
    if (bearer != nullptr) {
      return fetchToken(*bearer, scope);
    }
    if (basic != nullptr) {
      if (!credentials_) {
        return absl::PermissionDeniedError(
            strCat(given_, ": the registry ", ref_.registry,
                   " asks for a user and password (Basic), and the Docker config has none for it"));
      }
      authorization_ = basicAuthorization(*credentials_);
      return absl::OkStatus();
    }
    return absl::PermissionDeniedError(
        strCat(given_, ": the registry ", ref_.registry,
               " answered 401 without a Bearer or Basic WWW-Authenticate challenge"));
  }

  // The realm (and every redirect of the token request) must pass
  // checkTokenRealm before anything is sent to it.
  absl::Status allowRealm(const Url& url) const {
    if (absl::Status allowed = checkTokenRealm(url, ref_.registry, options_.insecure);
        !allowed.ok()) {
      return absl::PermissionDeniedError(strCat(given_, ": ", allowed.message()));
    }
    return absl::OkStatus();
  }

  absl::Status fetchToken(const Challenge& challenge, std::string_view scope) {
    const auto realm = challenge.params.find("realm");
    if (realm == challenge.params.end() || realm->second.empty()) {
      return absl::PermissionDeniedError(
          strCat(given_, ": the registry's Bearer challenge has no realm"));
    }
    const absl::StatusOr<Url> realm_url = parseUrl(realm->second);
    if (!realm_url.ok()) {
      return absl::PermissionDeniedError(strCat(given_, ": the registry ", ref_.registry,
                                                " names a token realm that is not an https URL"));
    }
    CAPTF_RETURN_IF_ERROR(allowRealm(*realm_url));
    const std::string endpoint =
        strCat("the token endpoint ", originOf(*realm_url), " of the registry ", ref_.registry);
    std::string url = realm->second;
    std::string query;
    if (const auto service = challenge.params.find("service"); service != challenge.params.end()) {
      strAppend(query, "service=", queryEscape(service->second));
    }
    std::string want_scope(scope);
    if (want_scope.empty()) {
      const auto s = challenge.params.find("scope");
      want_scope =
          s != challenge.params.end() ? s->second : strCat("repository:", ref_.repository, ":pull");
    }
    strAppend(query, query.empty() ? "" : "&", "scope=", queryEscape(want_scope));
    strAppend(url, url.find('?') == std::string::npos ? "?" : "&", query);
    Headers headers;
    if (credentials_) {
      headers.emplace_back("Authorization", basicAuthorization(*credentials_));
    }
    absl::StatusOr<HttpResponse> r =
        http_.get(url, headers, 1u << 20, [this](const Url& next) { return allowRealm(next); });
    if (!r.ok()) {
      if (r.status().code() == absl::StatusCode::kPermissionDenied) {
        return r.status(); // a redirect allowRealm refused
      }
      return {r.status().code(), strCat(given_, ": ", endpoint, ": ", r.status().message())};
    }
    if (r->status != 200) {
      return absl::PermissionDeniedError(strCat(given_, ": ", endpoint, " answered ", describe(*r),
                                                credentials_ ? "" : " (no credentials were sent)"));
    }
    absl::StatusOr<std::string> token = parseTokenResponse(r->body);
    if (!token.ok()) {
      return absl::PermissionDeniedError(
          strCat(given_, ": ", endpoint, ": ", token.status().message()));
    }
    authorization_ = strCat("Bearer ", *token);
    return absl::OkStatus();
  }

  // A request with authorization; a 401 with a Bearer challenge (for
  // example for another scope) gets one new token and one retry.
  absl::StatusOr<HttpResponse> request(const std::string& path, const Headers& headers,
                                       uint64_t max_body,
                                       const std::function<absl::Status(std::string_view)>* sink,
                                       std::string_view what) {
    CAPTF_RETURN_IF_ERROR(ensureReady());
    for (int attempt = 0;; ++attempt) {
      Headers h = headers;
      if (authorization_) {
        h.emplace_back("Authorization", *authorization_);
      }
      const std::string url = strCat(base_, path);
      absl::StatusOr<HttpResponse> r =
          sink != nullptr ? http_.download(url, h, max_body, *sink) : http_.get(url, h, max_body);
      if (!r.ok()) {
        return absl::Status(r.status().code(),
                            strCat(given_, ": GET ", what, ": ", r.status().message()));
      }
      if (r->status != 401 || attempt > 0) {
        return r;
      }
      std::string scope;
      for (const std::string& value : r->headerValues("WWW-Authenticate")) {
        absl::StatusOr<std::vector<Challenge>> parsed = parseChallenges(value);
        if (parsed.ok()) {
          for (const Challenge& c : *parsed) {
            if (c.scheme == "bearer" && c.params.contains("scope")) {
              scope = c.params.at("scope");
            }
          }
        }
      }
      CAPTF_RETURN_IF_ERROR(authenticate(*r, scope));
    }
  }

  std::string given_;
  RegistryReference ref_;
  RegistryOptions options_;
  HttpClient http_;
  bool ready_ = false;
  std::string base_;
  std::optional<Credentials> credentials_;
  std::optional<std::string> authorization_;
};

} // namespace

std::unique_ptr<ImageSource> openRegistry(std::string given, RegistryReference ref,
                                          RegistryOptions options) {
  return std::make_unique<RegistrySource>(std::move(given), std::move(ref), std::move(options));
}

} // namespace captf::lint::oci
