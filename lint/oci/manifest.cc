#include "lint/oci/manifest.h"

#include <algorithm>
#include <array>

#include <nlohmann/json.hpp>
#include <openssl/evp.h>

#include "contract/json_error.h"
#include "contract/status_macros.h"
#include "contract/strings.h"

namespace captf::lint::oci {

using contract::strAppend;
using contract::strCat;

namespace {

using json = nlohmann::json;

bool isLowerHex(std::string_view s) {
  return std::all_of(s.begin(), s.end(),
                     [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

bool isPlatformPart(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
  });
}

absl::StatusOr<json> parseJson(std::string_view bytes, std::string_view what) {
  json doc;
  try {
    doc = json::parse(bytes.begin(), bytes.end());
  } catch (const json::parse_error& e) {
    return absl::InvalidArgumentError(
        strCat(what, " is not valid JSON (at byte ", static_cast<uint64_t>(e.byte), ")"));
  } catch (const json::exception& e) {
    return absl::InvalidArgumentError(
        strCat(what, " is not valid JSON: ", contract::jsonErrorKind(e)));
  }
  if (!doc.is_object()) {
    return absl::InvalidArgumentError(strCat(what, " is not a JSON object"));
  }
  return doc;
}

// An optional string member: "" when absent; an error when of another type.
absl::StatusOr<std::string> optString(const json& obj, std::string_view key,
                                      std::string_view what) {
  const auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) {
    return std::string();
  }
  if (!it->is_string()) {
    return absl::InvalidArgumentError(strCat(what, ": \"", key, "\" is not a string"));
  }
  return it->get<std::string>();
}

absl::StatusOr<std::vector<std::string>> optStrings(const json& obj, std::string_view key,
                                                    std::string_view what) {
  std::vector<std::string> out;
  const auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) {
    return out;
  }
  if (!it->is_array()) {
    return absl::InvalidArgumentError(strCat(what, ": \"", key, "\" is not an array"));
  }
  for (const json& item : *it) {
    if (!item.is_string()) {
      return absl::InvalidArgumentError(strCat(what, ": \"", key, "\" holds a non-string"));
    }
    out.push_back(item.get<std::string>());
  }
  return out;
}

absl::StatusOr<std::map<std::string, std::string>>
optStringMap(const json& obj, std::string_view key, std::string_view what) {
  std::map<std::string, std::string> out;
  const auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) {
    return out;
  }
  if (!it->is_object()) {
    return absl::InvalidArgumentError(strCat(what, ": \"", key, "\" is not an object"));
  }
  for (const auto& [k, v] : it->items()) {
    if (!v.is_string()) {
      return absl::InvalidArgumentError(
          strCat(what, ": \"", key, "\" value of \"", k, "\" is not a string"));
    }
    out[k] = v.get<std::string>();
  }
  return out;
}

absl::StatusOr<Platform> platformFrom(const json& obj, std::string_view what) {
  Platform p;
  CAPTF_ASSIGN_OR_RETURN(p.os, optString(obj, "os", what));
  CAPTF_ASSIGN_OR_RETURN(p.architecture, optString(obj, "architecture", what));
  CAPTF_ASSIGN_OR_RETURN(p.variant, optString(obj, "variant", what));
  CAPTF_ASSIGN_OR_RETURN(p.os_version, optString(obj, "os.version", what));
  CAPTF_ASSIGN_OR_RETURN(p.os_features, optStrings(obj, "os.features", what));
  return p;
}

absl::StatusOr<Descriptor> descriptorFrom(const json& obj, std::string_view what) {
  if (!obj.is_object()) {
    return absl::InvalidArgumentError(strCat(what, " is not an object"));
  }
  Descriptor d;
  CAPTF_ASSIGN_OR_RETURN(d.media_type, optString(obj, "mediaType", what));
  CAPTF_ASSIGN_OR_RETURN(d.digest, optString(obj, "digest", what));
  if (absl::Status s = validateDigest(d.digest); !s.ok()) {
    return absl::InvalidArgumentError(strCat(what, ": ", s.message()));
  }
  const auto size = obj.find("size");
  if (size == obj.end() || !size->is_number_integer() || size->get<int64_t>() < 0) {
    return absl::InvalidArgumentError(strCat(what, ": \"size\" is missing or not a size"));
  }
  d.size = size->get<int64_t>();
  if (const auto p = obj.find("platform"); p != obj.end() && !p->is_null()) {
    if (!p->is_object()) {
      return absl::InvalidArgumentError(strCat(what, ": \"platform\" is not an object"));
    }
    CAPTF_ASSIGN_OR_RETURN(d.platform, platformFrom(*p, strCat(what, " platform")));
  }
  CAPTF_ASSIGN_OR_RETURN(d.annotations, optStringMap(obj, "annotations", what));
  return d;
}

absl::StatusOr<std::vector<Descriptor>> descriptors(const json& doc, std::string_view key,
                                                    std::string_view what) {
  const auto it = doc.find(key);
  if (it == doc.end() || !it->is_array()) {
    return absl::InvalidArgumentError(strCat(what, ": \"", key, "\" is missing or not an array"));
  }
  std::vector<Descriptor> out;
  out.reserve(it->size());
  for (std::size_t i = 0; i < it->size(); ++i) {
    CAPTF_ASSIGN_OR_RETURN(Descriptor d,
                           descriptorFrom((*it)[i], strCat(what, " ", key, "[", i, "]")));
    out.push_back(std::move(d));
  }
  return out;
}

bool isManifestType(std::string_view media_type) {
  return isIndexType(media_type) || isImageManifestType(media_type);
}

} // namespace

std::string manifestAcceptHeader() {
  return strCat(kOciIndex, ", ", kDockerList, ", ", kOciManifest, ", ", kDockerManifest);
}

std::string Platform::str() const {
  std::string out = strCat(os, "/", architecture);
  if (!variant.empty()) {
    strAppend(out, "/", variant);
  }
  return out;
}

absl::StatusOr<Platform> parsePlatform(std::string_view text) {
  std::vector<std::string_view> parts;
  std::size_t start = 0;
  while (true) {
    const std::size_t slash = text.find('/', start);
    parts.push_back(text.substr(start, slash == std::string_view::npos ? slash : slash - start));
    if (slash == std::string_view::npos) {
      break;
    }
    start = slash + 1;
  }
  if (parts.size() < 2 || parts.size() > 3 ||
      !std::all_of(parts.begin(), parts.end(), isPlatformPart)) {
    return absl::InvalidArgumentError(
        strCat("invalid platform \"", text, "\": want os/arch or os/arch/variant"));
  }
  Platform p;
  p.os = std::string(parts[0]);
  p.architecture = std::string(parts[1]);
  if (parts.size() == 3) {
    p.variant = std::string(parts[2]);
  }
  return p;
}

bool satisfies(const Platform& have, const Platform& want) {
  const auto field = [](const std::string& w, const std::string& h) { return w.empty() || w == h; };
  return field(want.os, have.os) && field(want.architecture, have.architecture) &&
         field(want.variant, have.variant) && field(want.os_version, have.os_version) &&
         std::all_of(want.os_features.begin(), want.os_features.end(), [&](const std::string& f) {
           return std::find(have.os_features.begin(), have.os_features.end(), f) !=
                  have.os_features.end();
         });
}

bool isIndexType(std::string_view media_type) {
  return media_type == kOciIndex || media_type == kDockerList;
}

bool isImageManifestType(std::string_view media_type) {
  return media_type == kOciManifest || media_type == kDockerManifest;
}

absl::StatusOr<Manifest> parseManifest(std::string_view bytes, std::string_view content_type) {
  // A Content-Type may carry parameters ("...; charset=utf-8").
  content_type = content_type.substr(0, content_type.find(';'));
  while (!content_type.empty() && content_type.back() == ' ') {
    content_type.remove_suffix(1);
  }
  CAPTF_ASSIGN_OR_RETURN(const json doc, parseJson(bytes, "the manifest"));
  CAPTF_ASSIGN_OR_RETURN(const std::string declared, optString(doc, "mediaType", "the manifest"));
  if (const auto sv = doc.find("schemaVersion");
      sv != doc.end() && sv->is_number_integer() && sv->get<int64_t>() == 1) {
    return absl::UnimplementedError(
        "the manifest is Docker schema 1, which is deprecated and not supported");
  }
  std::string type;
  if (isManifestType(content_type)) {
    type = std::string(content_type);
    if (!declared.empty() && declared != type) {
      return absl::InvalidArgumentError(strCat("the manifest declares mediaType \"", declared,
                                               "\" but was served as \"", content_type, "\""));
    }
  } else if (!declared.empty()) {
    type = declared;
  } else if (doc.contains("manifests")) {
    type = std::string(kOciIndex);
  } else if (doc.contains("config") && doc.contains("layers")) {
    type = std::string(kOciManifest);
  }
  if (isIndexType(type)) {
    Index index;
    index.media_type = type;
    CAPTF_ASSIGN_OR_RETURN(index.manifests, descriptors(doc, "manifests", "the index"));
    return index;
  }
  if (isImageManifestType(type)) {
    ImageManifest m;
    m.media_type = type;
    const auto config = doc.find("config");
    if (config == doc.end()) {
      return absl::InvalidArgumentError("the manifest has no \"config\"");
    }
    CAPTF_ASSIGN_OR_RETURN(m.config, descriptorFrom(*config, "the manifest config"));
    CAPTF_ASSIGN_OR_RETURN(m.layers, descriptors(doc, "layers", "the manifest"));
    return m;
  }
  return absl::InvalidArgumentError(
      strCat("unsupported manifest media type \"", type.empty() ? content_type : type, "\""));
}

absl::StatusOr<ImageConfig> parseConfig(std::string_view bytes) {
  CAPTF_ASSIGN_OR_RETURN(const json doc, parseJson(bytes, "the image config"));
  ImageConfig c;
  CAPTF_ASSIGN_OR_RETURN(c.platform, platformFrom(doc, "the image config"));
  const auto config = doc.find("config");
  if (config == doc.end() || config->is_null()) {
    return c;
  }
  if (!config->is_object()) {
    return absl::InvalidArgumentError("the image config: \"config\" is not an object");
  }
  CAPTF_ASSIGN_OR_RETURN(c.user, optString(*config, "User", "the image config"));
  CAPTF_ASSIGN_OR_RETURN(c.entrypoint, optStrings(*config, "Entrypoint", "the image config"));
  CAPTF_ASSIGN_OR_RETURN(c.cmd, optStrings(*config, "Cmd", "the image config"));
  CAPTF_ASSIGN_OR_RETURN(c.labels, optStringMap(*config, "Labels", "the image config"));
  return c;
}

absl::Status validateDigest(std::string_view digest) {
  const std::size_t colon = digest.find(':');
  if (colon != std::string_view::npos) {
    const std::string_view alg = digest.substr(0, colon);
    const std::string_view hex = digest.substr(colon + 1);
    if (((alg == "sha256" && hex.size() == 64) || (alg == "sha512" && hex.size() == 128)) &&
        isLowerHex(hex)) {
      return absl::OkStatus();
    }
  }
  return absl::InvalidArgumentError(
      strCat("invalid digest \"", digest.substr(0, 140), "\": want sha256:<64 hex digits>"));
}

std::string digestOf(std::string_view bytes, std::string_view algorithm) {
  const EVP_MD* md = algorithm == "sha512" ? EVP_sha512() : EVP_sha256();
  std::array<unsigned char, EVP_MAX_MD_SIZE> out{};
  unsigned int len = 0;
  EVP_Digest(bytes.data(), bytes.size(), out.data(), &len, md, nullptr);
  static constexpr std::string_view kHex = "0123456789abcdef";
  std::string text = strCat(algorithm == "sha512" ? "sha512" : "sha256", ":");
  for (unsigned int i = 0; i < len; ++i) {
    text += kHex[out[i] >> 4];
    text += kHex[out[i] & 0xF];
  }
  return text;
}

absl::StatusOr<Compression> layerCompression(std::string_view media_type) {
  static constexpr std::array<std::string_view, 3> kOciTar = {
      "application/vnd.oci.image.layer.v1.tar",
      "application/vnd.oci.image.layer.nondistributable.v1.tar",
      "application/vnd.docker.image.rootfs.diff.tar"};
  for (std::string_view base : kOciTar) {
    if (media_type == base) {
      return Compression::kNone;
    }
    if (media_type.starts_with(base) && media_type.substr(base.size()) == "+gzip") {
      return Compression::kGzip;
    }
    if (media_type.starts_with(base) && media_type.substr(base.size()) == "+zstd") {
      return Compression::kZstd;
    }
  }
  if (media_type == "application/vnd.docker.image.rootfs.diff.tar.gzip" ||
      media_type == "application/vnd.docker.image.rootfs.foreign.diff.tar.gzip") {
    return Compression::kGzip;
  }
  return absl::UnimplementedError(strCat("unsupported layer media type \"", media_type, "\""));
}

} // namespace captf::lint::oci
