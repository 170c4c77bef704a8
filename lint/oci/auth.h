#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "lint/oci/http.h"

// Registry authentication (docs/lint.md#image-mode): WWW-Authenticate challenges, the
// bearer-token exchange's request and answer, and basic credentials from the
// Docker/Podman default keychain files.
namespace captf::lint::oci {

// One challenge of a WWW-Authenticate header (RFC 7235).
struct Challenge {
  std::string scheme;                        // lower case: "bearer", "basic"
  std::map<std::string, std::string> params; // keys lower case; values unquoted
};

// Parses a WWW-Authenticate header value: one or more challenges
// `scheme param="value", param=token, ...` separated by commas. Quoted
// strings may contain commas and backslash escapes. Malformed input is an
// InvalidArgument error.
absl::StatusOr<std::vector<Challenge>> parseChallenges(std::string_view header);

struct Credentials {
  std::string username;
  std::string password;
};

// Where the keychain files are looked for; taken from the environment by
// fromEnvironment(), set directly by tests.
struct KeychainEnv {
  std::string home;
  std::string docker_config;      // $DOCKER_CONFIG
  std::string registry_auth_file; // $REGISTRY_AUTH_FILE
  std::string xdg_runtime_dir;    // $XDG_RUNTIME_DIR

  static KeychainEnv fromEnvironment();
};

// The file the keychain reads: $DOCKER_CONFIG/config.json (or
// ~/.docker/config.json) when it exists; otherwise $REGISTRY_AUTH_FILE, or
// $XDG_RUNTIME_DIR/containers/auth.json, when it exists; otherwise none.
std::optional<std::filesystem::path> keychainFile(const KeychainEnv& env);

// Basic credentials for `registry` (host[:port]) from the keychain file's
// "auths": "auth" (base64 user:password) or "username"/"password". Keys
// match with or without a scheme and path ("https://host/v1/"); Docker Hub
// ("index.docker.io") also matches "docker.io" and
// "https://index.docker.io/v1/". Credential helpers (credsStore,
// credHelpers) are not run. A file that cannot be parsed is an error; no
// entry is std::nullopt (anonymous).
absl::StatusOr<std::optional<Credentials>> lookupCredentials(std::string_view registry,
                                                             const KeychainEnv& env);

// The same lookup in a Docker config document held in memory (a
// Kubernetes `kubernetes.io/dockerconfigjson` Secret's `.dockerconfigjson`);
// `where` names it in errors, which never include a credential.
absl::StatusOr<std::optional<Credentials>>
lookupCredentialsIn(std::string_view registry, std::string_view config, std::string_view where);

// "Basic <base64(user:password)>".
std::string basicAuthorization(const Credentials& credentials);

// Whether the realm of a registry's Bearer challenge may be asked for a
// token (docs/decisions/lint-image-registry.md, "Token realm"): an https URL
// on any host (Docker Hub's is auth.docker.io, for registry-1.docker.io);
// an http URL only when the registry is configured for plain HTTP
// (`insecure`) and only on the registry's own host, any port. `registry` is
// the reference's host[:port]. Otherwise PermissionDenied naming the
// registry and the realm's scheme and host[:port], never more of it. The
// caller checks every redirect of the token request the same way.
absl::Status checkTokenRealm(const Url& realm, std::string_view registry, bool insecure);

// The token endpoint's answer: "token", or "access_token" when "token" is
// absent.
absl::StatusOr<std::string> parseTokenResponse(std::string_view body);

// Decodes a base64 value of a Docker config file: the standard or the
// URL-safe alphabet, padded or not, line breaks ignored. (Encoding is
// contract::base64Encode.)
absl::StatusOr<std::string> base64Decode(std::string_view data);

// Percent-encodes a query component.
std::string queryEscape(std::string_view s);

} // namespace captf::lint::oci
