#include "lint/oci/auth.h"

#include <cstdlib>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_replace.h"
#include "contract/digest.h"
#include "contract/strings.h"

namespace captf::lint::oci {

using contract::strCat;

namespace {

using json = nlohmann::json;

bool isTokenChar(char c) {
  // RFC 7230 tchar, plus '/' and '=' for token68 values.
  return absl::ascii_isalnum(static_cast<unsigned char>(c)) ||
         std::string_view("!#$%&'*+-.^_`|~/=").find(c) != std::string_view::npos;
}

void skipSpace(std::string_view s, std::size_t& i) {
  while (i < s.size() && (s[i] == ' ' || s[i] == '\t')) {
    ++i;
  }
}

std::string getenv(const char* name) {
  const char* v = std::getenv(name);
  return v == nullptr ? "" : v;
}

// "https://host:5000/v1/" -> "host:5000".
std::string normalizeKey(std::string_view key) {
  if (const std::size_t sep = key.find("://"); sep != std::string_view::npos) {
    key = key.substr(sep + 3);
  }
  key = key.substr(0, key.find('/'));
  return absl::AsciiStrToLower(std::string(key));
}

} // namespace

absl::StatusOr<std::vector<Challenge>> parseChallenges(std::string_view h) {
  std::vector<Challenge> out;
  std::size_t i = 0;
  const auto bad = [&](std::string_view why) {
    return absl::InvalidArgumentError(
        strCat("malformed WWW-Authenticate header \"", h, "\": ", why));
  };
  while (true) {
    skipSpace(h, i);
    while (i < h.size() && h[i] == ',') {
      ++i;
      skipSpace(h, i);
    }
    if (i >= h.size()) {
      break;
    }
    const std::size_t start = i;
    while (i < h.size() && isTokenChar(h[i]) && h[i] != '=') {
      ++i;
    }
    if (i == start) {
      return bad("expected an authentication scheme");
    }
    Challenge challenge;
    challenge.scheme = absl::AsciiStrToLower(std::string(h.substr(start, i - start)));
    // Parameters: name=value pairs separated by commas, until the next
    // scheme (a token not followed by '=').
    for (bool first = true;; first = false) {
      skipSpace(h, i);
      const std::size_t name_start = i;
      while (i < h.size() && isTokenChar(h[i]) && h[i] != '=') {
        ++i;
      }
      const std::size_t name_end = i;
      std::size_t j = i;
      skipSpace(h, j);
      if (name_end == name_start || j >= h.size() || h[j] != '=') {
        i = name_start;
        if (first && name_end > name_start) {
          // A token68 right after the scheme ("Basic abc=="): skip it.
          std::size_t t = name_end;
          while (t < h.size() && h[t] == '=') {
            ++t;
          }
          skipSpace(h, t);
          if (t >= h.size() || h[t] == ',') {
            i = t;
          }
        }
        break; // the next challenge starts at i
      }
      const std::string name =
          absl::AsciiStrToLower(std::string(h.substr(name_start, name_end - name_start)));
      i = j + 1;
      skipSpace(h, i);
      std::string value;
      if (i < h.size() && h[i] == '"') {
        ++i;
        bool closed = false;
        while (i < h.size()) {
          const char c = h[i++];
          if (c == '\\' && i < h.size()) {
            value += h[i++];
          } else if (c == '"') {
            closed = true;
            break;
          } else {
            value += c;
          }
        }
        if (!closed) {
          return bad("unterminated quoted string");
        }
      } else {
        // A token; leniently anything up to ',' or white space, because
        // registries send unquoted URLs (realm=https://...).
        const std::size_t v = i;
        while (i < h.size() && h[i] != ',' && h[i] != ' ' && h[i] != '\t' && h[i] != '"') {
          ++i;
        }
        value = std::string(h.substr(v, i - v));
      }
      challenge.params[name] = std::move(value);
      skipSpace(h, i);
      if (i < h.size() && h[i] == ',') {
        ++i;
        continue;
      }
      if (i < h.size()) {
        return bad(strCat("expected ',' after parameter \"", name, "\""));
      }
      break;
    }
    out.push_back(std::move(challenge));
  }
  if (out.empty()) {
    return bad("no challenge");
  }
  return out;
}

KeychainEnv KeychainEnv::fromEnvironment() {
  return {getenv("HOME"), getenv("DOCKER_CONFIG"), getenv("REGISTRY_AUTH_FILE"),
          getenv("XDG_RUNTIME_DIR")};
}

std::optional<std::filesystem::path> keychainFile(const KeychainEnv& env) {
  std::error_code ec;
  std::filesystem::path docker;
  if (!env.docker_config.empty()) {
    docker = std::filesystem::path(env.docker_config) / "config.json";
  } else if (!env.home.empty()) {
    docker = std::filesystem::path(env.home) / ".docker" / "config.json";
  }
  if (!docker.empty() && std::filesystem::is_regular_file(docker, ec)) {
    return docker;
  }
  if (!env.registry_auth_file.empty() &&
      std::filesystem::is_regular_file(env.registry_auth_file, ec)) {
    return std::filesystem::path(env.registry_auth_file);
  }
  if (!env.xdg_runtime_dir.empty()) {
    auto podman = std::filesystem::path(env.xdg_runtime_dir) / "containers" / "auth.json";
    if (std::filesystem::is_regular_file(podman, ec)) {
      return podman;
    }
  }
  return std::nullopt;
}

absl::StatusOr<std::optional<Credentials>> lookupCredentials(std::string_view registry,
                                                             const KeychainEnv& env) {
  const std::optional<std::filesystem::path> file = keychainFile(env);
  if (!file) {
    return std::optional<Credentials>();
  }
  std::ifstream in(*file, std::ios::binary);
  std::stringstream content;
  content << in.rdbuf();
  return lookupCredentialsIn(registry, content.str(),
                             strCat("the registry credentials file ", file->string()));
}

absl::StatusOr<std::optional<Credentials>>
lookupCredentialsIn(std::string_view registry, std::string_view config, std::string_view where) {
  const json doc = json::parse(config.begin(), config.end(), nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object()) {
    return absl::InvalidArgumentError(strCat(where, " is not a JSON object"));
  }
  const auto auths = doc.find("auths");
  if (auths == doc.end() || !auths->is_object()) {
    return std::optional<Credentials>();
  }
  std::string want = absl::AsciiStrToLower(std::string(registry));
  const bool hub = want == "index.docker.io";
  for (const auto& [key, entry] : auths->items()) {
    const std::string k = normalizeKey(key);
    if (!(k == want || (hub && (k == "docker.io" || k == "registry-1.docker.io")))) {
      continue;
    }
    if (!entry.is_object()) {
      continue;
    }
    Credentials c;
    if (const auto a = entry.find("auth");
        a != entry.end() && a->is_string() && !a->get<std::string>().empty()) {
      absl::StatusOr<std::string> decoded = base64Decode(a->get<std::string>());
      const std::size_t colon = decoded.ok() ? decoded->find(':') : std::string::npos;
      if (colon == std::string::npos) {
        return absl::InvalidArgumentError(
            strCat(where, ": the \"auth\" entry for ", key, " is not base64 of user:password"));
      }
      c.username = decoded->substr(0, colon);
      c.password = decoded->substr(colon + 1);
    } else {
      if (const auto u = entry.find("username"); u != entry.end() && u->is_string()) {
        c.username = u->get<std::string>();
      }
      if (const auto p = entry.find("password"); p != entry.end() && p->is_string()) {
        c.password = p->get<std::string>();
      }
    }
    if (!c.username.empty() || !c.password.empty()) {
      return std::optional<Credentials>(std::move(c));
    }
  }
  return std::optional<Credentials>();
}

std::string basicAuthorization(const Credentials& credentials) {
  return strCat("Basic ",
                contract::base64Encode(strCat(credentials.username, ":", credentials.password)));
}

absl::Status checkTokenRealm(const Url& realm, std::string_view registry, bool insecure) {
  if (realm.scheme == "https") {
    return absl::OkStatus();
  }
  const absl::StatusOr<Url> own = parseUrl(strCat("http://", registry, "/"));
  if (realm.scheme == "http" && insecure && own.ok() &&
      absl::EqualsIgnoreCase(own->host, realm.host)) {
    return absl::OkStatus();
  }
  return absl::PermissionDeniedError(
      strCat("the registry ", registry, " names a token realm at ", realm.scheme, "://",
             realm.authority(), ", which is refused: a token realm must be https",
             insecure ? ", or plain HTTP on the registry's own host" : ""));
}

absl::StatusOr<std::string> parseTokenResponse(std::string_view body) {
  const json doc = json::parse(body.begin(), body.end(), nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object()) {
    return absl::InvalidArgumentError("the token endpoint's answer is not a JSON object");
  }
  for (const char* key : {"token", "access_token"}) {
    if (const auto t = doc.find(key);
        t != doc.end() && t->is_string() && !t->get<std::string>().empty()) {
      return t->get<std::string>();
    }
  }
  return absl::InvalidArgumentError("the token endpoint's answer has no \"token\"");
}

absl::StatusOr<std::string> base64Decode(std::string_view data) {
  // Docker config files wrap long values and some writers use the URL-safe
  // alphabet or drop the padding: Abseil takes unpadded input of either.
  const std::string compact = absl::StrReplaceAll(contract::av(data), {{"\n", ""}, {"\r", ""}});
  std::string out;
  if (absl::Base64Unescape(compact, &out) || absl::WebSafeBase64Unescape(compact, &out)) {
    return out;
  }
  return absl::InvalidArgumentError("invalid base64");
}

std::string queryEscape(std::string_view s) {
  static constexpr std::string_view kHex = "0123456789ABCDEF";
  std::string out;
  for (const char c : s) {
    if (absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.' ||
        c == '~') {
      out += c;
    } else {
      const auto u = static_cast<unsigned char>(c);
      out += '%';
      out += kHex[u >> 4];
      out += kHex[u & 15];
    }
  }
  return out;
}

} // namespace captf::lint::oci
