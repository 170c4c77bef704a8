#include "contract/git_source.h"

#include <cstddef>
#include <vector>

#include "contract/strings.h"

namespace captf::contract {
namespace {

constexpr std::size_t kMaxUrlBytes = 2048;
constexpr std::size_t kMaxRefBytes = 255;
constexpr std::size_t kMaxPathBytes = 1024;

absl::Status bad(std::string_view what) {
  return absl::InvalidArgumentError(av(what));
}

// Locale-free character classes (user input is bytes).
bool isControl(char c) {
  return static_cast<unsigned char>(c) < 0x20 || c == 0x7f;
}
bool isDigit(char c) {
  return c >= '0' && c <= '9';
}
bool isHex(char c) {
  return isDigit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}
bool isHostChar(char c) {
  return isAsciiAlnum(c) || c == '-' || c == '.' || c == '_';
}

bool contains(std::string_view text, std::string_view part) {
  return text.find(part) != std::string_view::npos;
}
bool startsWith(std::string_view text, std::string_view prefix) {
  return text.starts_with(prefix);
}
bool endsWith(std::string_view text, std::string_view suffix) {
  return text.size() >= suffix.size() && text.substr(text.size() - suffix.size()) == suffix;
}

std::vector<std::string_view> split(std::string_view text, char separator) {
  std::vector<std::string_view> parts;
  for (;;) {
    const std::size_t at = text.find(separator);
    parts.push_back(text.substr(0, at));
    if (at == std::string_view::npos) {
      return parts;
    }
    text = text.substr(at + 1);
  }
}

std::string lower(std::string_view text) {
  std::string out(text);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') {
      c = static_cast<char>(c - 'A' + 'a');
    }
  }
  return out;
}

// A DNS name or IPv4 address, or a bracketed IPv6 address.
absl::Status validateHost(std::string_view host) {
  if (host.empty()) {
    return bad("URL has no host");
  }
  if (host.front() == '[') {
    if (host.size() < 3 || host.back() != ']') {
      return bad("URL has an unterminated IPv6 address");
    }
    for (char c : host.substr(1, host.size() - 2)) {
      if (!isHex(c) && c != ':' && c != '.') {
        return bad("URL's IPv6 address has a character other than hex digits, ':' and '.'");
      }
    }
    return absl::OkStatus();
  }
  if (host.size() > 253) {
    return bad("URL's host is longer than 253 bytes");
  }
  for (char c : host) {
    if (!isHostChar(c)) {
      return bad(strCat("URL's host has the character '", std::string(1, c),
                        "' (a host is letters, digits, '-', '.' and '_')"));
    }
  }
  if (host.front() == '.' || host.front() == '-' || contains(host, "..")) {
    return bad("URL's host is not a valid name");
  }
  return absl::OkStatus();
}

absl::Status validatePort(std::string_view port) {
  if (port.empty() || port.size() > 5) {
    return bad("URL's port is not a number from 1 to 65535");
  }
  int value = 0;
  for (char c : port) {
    if (!isDigit(c)) {
      return bad("URL's port is not a number from 1 to 65535");
    }
    value = value * 10 + (c - '0');
  }
  if (value < 1 || value > 65535) {
    return bad("URL's port is not a number from 1 to 65535");
  }
  return absl::OkStatus();
}

absl::Status validateUrlPath(std::string_view path) {
  if (path.size() < 2 || path.front() != '/') {
    return bad("URL has no repository path");
  }
  for (char c : path) {
    if (isControl(c) || c == ' ' || c == '\\') {
      return bad("URL's path has a space, a backslash or a control character");
    }
  }
  for (std::string_view part : split(path.substr(1), '/')) {
    if (part == "..") {
      return bad("URL's path has a '..' component");
    }
  }
  return absl::OkStatus();
}

absl::Status validateUser(std::string_view user) {
  if (user.empty()) {
    return bad("URL has an empty user name before '@'");
  }
  for (char c : user) {
    if (!isAsciiAlnum(c) && c != '-' && c != '.' && c != '_') {
      return bad("URL's user name is not letters, digits, '-', '.' and '_'");
    }
  }
  return absl::OkStatus();
}

// host[:port] as written after the scheme (and user).
absl::Status splitHostPort(std::string_view authority, GitUrl& out) {
  std::string_view host = authority;
  std::string_view port;
  if (!authority.empty() && authority.front() == '[') {
    const std::size_t close = authority.find(']');
    if (close == std::string_view::npos) {
      return bad("URL has an unterminated IPv6 address");
    }
    host = authority.substr(0, close + 1);
    std::string_view rest = authority.substr(close + 1);
    if (!rest.empty()) {
      if (rest.front() != ':') {
        return bad("URL has characters after its IPv6 address");
      }
      port = rest.substr(1);
      if (auto s = validatePort(port); !s.ok()) {
        return s;
      }
    }
  } else if (const std::size_t colon = authority.rfind(':'); colon != std::string_view::npos) {
    host = authority.substr(0, colon);
    port = authority.substr(colon + 1);
    if (auto s = validatePort(port); !s.ok()) {
      return s;
    }
  }
  if (auto s = validateHost(host); !s.ok()) {
    return s;
  }
  out.host = lower(host);
  out.port = std::string(port);
  return absl::OkStatus();
}

std::string canonicalOf(const GitUrl& url) {
  std::string out = url.scheme == GitScheme::kHttps ? "https://" : "ssh://";
  if (url.scheme == GitScheme::kSsh) {
    out += strCat(url.user, "@");
  }
  out += strCat(url.host);
  if (!url.port.empty()) {
    out += strCat(":", url.port);
  }
  out += strCat(url.path);
  return out;
}

absl::StatusOr<GitUrl> parseSchemeUrl(std::string_view rest, GitScheme scheme) {
  GitUrl url;
  url.scheme = scheme;
  const std::size_t slash = rest.find('/');
  std::string_view authority = rest.substr(0, slash);
  url.path = slash == std::string_view::npos ? "" : std::string(rest.substr(slash));
  if (const std::size_t at = authority.rfind('@'); at != std::string_view::npos) {
    std::string_view user = authority.substr(0, at);
    if (scheme == GitScheme::kHttps) {
      return bad("https URL carries user information; put credentials in the Secret instead");
    }
    if (contains(user, ":")) {
      return bad("ssh URL carries a password; use a private key in the Secret instead");
    }
    if (auto s = validateUser(user); !s.ok()) {
      return s;
    }
    url.user = std::string(user);
    authority = authority.substr(at + 1);
  } else if (scheme == GitScheme::kSsh) {
    url.user = "git";
  }
  if (auto s = splitHostPort(authority, url); !s.ok()) {
    return s;
  }
  if (auto s = validateUrlPath(url.path); !s.ok()) {
    return s;
  }
  url.canonical = canonicalOf(url);
  return url;
}

// A ref name component by git's rules.
bool validComponent(std::string_view part) {
  return !part.empty() && part.front() != '.' && !endsWith(part, ".lock");
}

} // namespace

absl::StatusOr<GitUrl> parseGitUrl(std::string_view url) {
  if (url.empty()) {
    return bad("URL is empty");
  }
  if (url.size() > kMaxUrlBytes) {
    return bad(strCat("URL is longer than ", kMaxUrlBytes, " bytes"));
  }
  for (char c : url) {
    if (isControl(c) || c == ' ') {
      return bad("URL has a space or a control character");
    }
  }
  if (contains(url, "?") || contains(url, "#")) {
    return bad("URL has a query or a fragment");
  }
  if (startsWith(url, "https://")) {
    return parseSchemeUrl(url.substr(8), GitScheme::kHttps);
  }
  if (startsWith(url, "ssh://")) {
    return parseSchemeUrl(url.substr(6), GitScheme::kSsh);
  }
  if (const std::size_t scheme = url.find("://"); scheme != std::string_view::npos) {
    return bad(
        strCat("URL scheme \"", url.substr(0, scheme), "\" is not supported (https or ssh)"));
  }
  // scp-like: user@host:path.
  const std::size_t at = url.find('@');
  const std::size_t colon = url.find(':');
  if (at == std::string_view::npos || colon == std::string_view::npos || colon < at) {
    return bad("URL is neither https://, ssh:// nor user@host:path");
  }
  GitUrl out;
  out.scheme = GitScheme::kSsh;
  std::string_view user = url.substr(0, at);
  if (auto s = validateUser(user); !s.ok()) {
    return s;
  }
  out.user = std::string(user);
  std::string_view host = url.substr(at + 1, colon - at - 1);
  if (auto s = validateHost(host); !s.ok()) {
    return s;
  }
  out.host = lower(host);
  std::string_view path = url.substr(colon + 1);
  out.path = startsWith(path, "/") ? std::string(path) : strCat("/", path);
  if (auto s = validateUrlPath(out.path); !s.ok()) {
    return s;
  }
  out.canonical = canonicalOf(out);
  return out;
}

bool isCommitId(std::string_view text) {
  if (text.size() != 40) {
    return false;
  }
  for (char c : text) {
    if (!isDigit(c) && !(c >= 'a' && c <= 'f')) {
      return false;
    }
  }
  return true;
}

absl::Status validateGitRef(const GitRef& ref) {
  const std::string_view name = ref.name;
  if (ref.kind == GitRefKind::kCommit) {
    return isCommitId(name) ? absl::OkStatus()
                            : bad("commit is not a full 40-digit lower-case hex object id");
  }
  const std::string_view what = ref.kind == GitRefKind::kBranch ? "branch" : "tag";
  if (name.empty()) {
    return bad(strCat(what, " name is empty"));
  }
  if (name.size() > kMaxRefBytes) {
    return bad(strCat(what, " name is longer than ", kMaxRefBytes, " bytes"));
  }
  if (name == "@") {
    return bad(strCat(what, " name \"@\" is not allowed"));
  }
  if (startsWith(name, "refs/")) {
    return bad(strCat(what, " name starts with refs/; write the short name"));
  }
  for (char c : name) {
    if (isControl(c) || c == ' ' || c == '~' || c == '^' || c == ':' || c == '?' || c == '*' ||
        c == '[' || c == '\\') {
      return bad(strCat(what, " name has a character git does not allow (space, ~ ^ : ? * [ "
                              "\\ or a control character)"));
    }
  }
  if (name.front() == '-') {
    return bad(strCat(what, " name starts with '-'"));
  }
  if (contains(name, "..") || contains(name, "@{")) {
    return bad(strCat(what, R"( name has ".." or "@{")"));
  }
  if (name.back() == '.') {
    return bad(strCat(what, " name ends with '.'"));
  }
  for (std::string_view part : split(name, '/')) {
    if (!validComponent(part)) {
      return bad(strCat(what, " name has an empty component, a component starting with '.' or "
                              "one ending in \".lock\""));
    }
  }
  return absl::OkStatus();
}

std::string fullRefName(const GitRef& ref) {
  switch (ref.kind) {
  case GitRefKind::kBranch:
    return strCat("refs/heads/", ref.name);
  case GitRefKind::kTag:
    return strCat("refs/tags/", ref.name);
  case GitRefKind::kCommit:
    break;
  }
  return ref.name;
}

std::string describeGitRef(const GitRef& ref) {
  switch (ref.kind) {
  case GitRefKind::kBranch:
    return strCat("branch ", ref.name);
  case GitRefKind::kTag:
    return strCat("tag ", ref.name);
  case GitRefKind::kCommit:
    break;
  }
  return strCat("commit ", std::string_view(ref.name).substr(0, 12));
}

absl::Status validateRepositoryPath(std::string_view path) {
  if (path.empty()) {
    return absl::OkStatus();
  }
  if (path.size() > kMaxPathBytes) {
    return bad(strCat("path is longer than ", kMaxPathBytes, " bytes"));
  }
  if (path.front() == '/') {
    return bad("path is absolute; write it relative to the repository root");
  }
  for (char c : path) {
    if (c == '\0' || c == '\\' || isControl(c)) {
      return bad("path has a backslash or a control character");
    }
  }
  for (std::string_view part : split(path, '/')) {
    if (part.empty()) {
      return bad("path has an empty component (\"//\" or a trailing '/')");
    }
    if (part == "..") {
      return bad("path has a \"..\" component");
    }
    if (part == ".") {
      return bad("path has a \".\" component");
    }
    if (part == ".git") {
      return bad("path names the .git directory");
    }
  }
  return absl::OkStatus();
}

std::string gitSourceIdentity(const GitUrl& url, std::string_view path, std::string_view commit,
                              std::string_view runtime_image) {
  return strCat("git+", url.canonical, "//", path, "@", commit, " runtime=", runtime_image);
}

absl::StatusOr<GitModuleAddress> parseGitModuleAddress(std::string_view address) {
  constexpr std::string_view kPrefix = "git::";
  if (!startsWith(address, kPrefix)) {
    return bad("a Git module address starts with git::");
  }
  std::string_view rest = address.substr(kPrefix.size());
  std::string_view query;
  if (const std::size_t q = rest.find('?'); q != std::string_view::npos) {
    query = rest.substr(q + 1);
    rest = rest.substr(0, q);
  }
  // The subdirectory separator is the first "//" after the scheme's.
  std::size_t search = 0;
  if (const std::size_t scheme = rest.find("://"); scheme != std::string_view::npos) {
    search = scheme + 3;
  }
  std::string_view url_text = rest;
  std::string_view path;
  if (const std::size_t sep = rest.find("//", search); sep != std::string_view::npos) {
    url_text = rest.substr(0, sep);
    path = rest.substr(sep + 2);
  }
  GitModuleAddress out;
  auto url = parseGitUrl(url_text);
  if (!url.ok()) {
    return url.status();
  }
  out.url = *std::move(url);
  if (auto s = validateRepositoryPath(path); !s.ok()) {
    return s;
  }
  out.path = std::string(path);
  if (!query.empty()) {
    for (std::string_view param : split(query, '&')) {
      const std::size_t eq = param.find('=');
      std::string_view key = param.substr(0, eq);
      if (key != "ref") {
        return bad(strCat("query parameter \"", key, "\" is not supported (only ref=)"));
      }
      if (eq == std::string_view::npos || eq + 1 == param.size()) {
        return bad("ref= has no value");
      }
      if (out.ref) {
        return bad("ref= is given twice");
      }
      std::string name(param.substr(eq + 1));
      GitRef probe{isCommitId(name) ? GitRefKind::kCommit : GitRefKind::kBranch, name};
      if (auto s = validateGitRef(probe); !s.ok()) {
        return bad(strCat("ref: ", s.message()));
      }
      out.ref = std::move(name);
    }
  }
  return out;
}

} // namespace captf::contract
