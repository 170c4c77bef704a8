#include "contract/image_reference.h"

#include <algorithm>
#include <cctype>

#include "contract/strings.h"

namespace captf::contract {
namespace {

// distribution/reference: NameTotalLengthMax.
constexpr std::size_t kMaxNameLength = 255;
constexpr std::size_t kMaxTagLength = 128;

bool isLowerAlnum(char c) {
  return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}
bool isWord(char c) {
  return isAsciiAlnum(c) || c == '_';
}
bool isLowerHex(char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
}

// [a-z0-9]+((\.|_|__|-+)[a-z0-9]+)*
bool isPathComponent(std::string_view s) {
  std::size_t i = 0;
  auto alnum_run = [&]() {
    const std::size_t start = i;
    while (i < s.size() && isLowerAlnum(s[i])) {
      ++i;
    }
    return i > start;
  };
  if (!alnum_run()) {
    return false;
  }
  while (i < s.size()) {
    if (s[i] == '.') {
      ++i;
    } else if (s[i] == '_') {
      ++i;
      if (i < s.size() && s[i] == '_') {
        ++i;
      }
    } else if (s[i] == '-') {
      while (i < s.size() && s[i] == '-') {
        ++i;
      }
    } else {
      return false;
    }
    if (!alnum_run()) {
      return false;
    }
  }
  return true;
}

// [a-zA-Z0-9]([a-zA-Z0-9-]*[a-zA-Z0-9])?
bool isDomainComponent(std::string_view s) {
  return !s.empty() && isAsciiAlnum(s.front()) && isAsciiAlnum(s.back()) &&
         std::all_of(s.begin(), s.end(), [](char c) { return isAsciiAlnum(c) || c == '-'; });
}

bool validHost(std::string_view host) {
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    const std::string_view v6 = host.substr(1, host.size() - 2);
    return !v6.empty() && std::all_of(v6.begin(), v6.end(), [](char c) {
      return std::isxdigit(static_cast<unsigned char>(c)) != 0 || c == ':' || c == '.';
    });
  }
  std::size_t start = 0;
  while (true) {
    const std::size_t dot = host.find('.', start);
    if (!isDomainComponent(host.substr(start, dot - start))) {
      return false;
    }
    if (dot == std::string_view::npos) {
      return true;
    }
    start = dot + 1;
  }
}

bool validDomain(std::string_view domain) {
  std::string_view host = domain;
  // A port follows the last colon outside IPv6 brackets.
  const std::size_t bracket = domain.rfind(']');
  const std::size_t colon = domain.rfind(':');
  if (colon != std::string_view::npos && (bracket == std::string_view::npos || colon > bracket)) {
    const std::string_view port = domain.substr(colon + 1);
    if (port.empty() || port.size() > 5 || !std::all_of(port.begin(), port.end(), [](char c) {
          return std::isdigit(static_cast<unsigned char>(c)) != 0;
        })) {
      return false;
    }
    host = domain.substr(0, colon);
  }
  return validHost(host);
}

std::optional<std::string> digestError(std::string_view digest) {
  const std::size_t colon = digest.find(':');
  if (colon == std::string_view::npos) {
    return "the digest must be <algorithm>:<hex>, for example sha256:<64 hex digits>";
  }
  const std::string_view algorithm = digest.substr(0, colon);
  const std::string_view hex = digest.substr(colon + 1);
  std::size_t want = 0;
  if (algorithm == "sha256") {
    want = 64;
  } else if (algorithm == "sha512") {
    want = 128;
  } else {
    return "unsupported digest algorithm \"" + std::string(algorithm) + "\": use sha256 or sha512";
  }
  if (hex.size() != want || !std::all_of(hex.begin(), hex.end(), isLowerHex)) {
    return "a " + std::string(algorithm) + " digest is " + std::to_string(want) +
           " lowercase hexadecimal digits";
  }
  return std::nullopt;
}

} // namespace

std::optional<ImageReference> parseImageReference(std::string_view ref, std::string* error,
                                                  VersionRequired version) {
  auto fail = [error](std::string why) -> std::optional<ImageReference> {
    if (error != nullptr) {
      *error = std::move(why);
    }
    return std::nullopt;
  };
  if (ref.empty()) {
    return fail("must not be empty");
  }
  if (std::any_of(ref.begin(), ref.end(), [](char c) {
        return std::isspace(static_cast<unsigned char>(c)) != 0 ||
               static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) >= 0x7f;
      })) {
    return fail("must not contain whitespace, control or non-ASCII characters");
  }
  ImageReference out;
  std::string_view rest = ref;
  if (const std::size_t at = rest.find('@'); at != std::string_view::npos) {
    out.digest = std::string(rest.substr(at + 1));
    rest = rest.substr(0, at);
    if (out.digest.find('@') != std::string::npos) {
      return fail("must contain at most one \"@\"");
    }
    if (auto e = digestError(out.digest)) {
      return fail(*e);
    }
  }
  const std::size_t last_slash = rest.rfind('/');
  const std::size_t tag_colon = rest.rfind(':');
  if (tag_colon != std::string_view::npos &&
      (last_slash == std::string_view::npos || tag_colon > last_slash)) {
    out.tag = std::string(rest.substr(tag_colon + 1));
    rest = rest.substr(0, tag_colon);
    if (out.tag.empty()) {
      return fail("the tag after \":\" must not be empty");
    }
    if (out.tag.size() > kMaxTagLength) {
      return fail("the tag must be at most " + std::to_string(kMaxTagLength) + " characters");
    }
    if (!isWord(out.tag.front()) || !std::all_of(out.tag.begin(), out.tag.end(), [](char c) {
          return isWord(c) || c == '.' || c == '-';
        })) {
      return fail("invalid tag \"" + out.tag +
                  R"(": a tag is letters, digits, "_", "." and "-", not starting with "." or "-")");
    }
  }
  if (rest.empty()) {
    return fail("the repository name must not be empty");
  }
  if (rest.size() > kMaxNameLength) {
    return fail("the repository name must be at most " + std::to_string(kMaxNameLength) +
                " characters");
  }
  // The first component is a registry when it looks like a host: it has a
  // "." or ":" or is "localhost" (the rule container runtimes apply).
  if (const std::size_t slash = rest.find('/'); slash != std::string_view::npos) {
    const std::string_view first = rest.substr(0, slash);
    if (first.find('.') != std::string_view::npos || first.find(':') != std::string_view::npos ||
        first == "localhost" || first.front() == '[') {
      if (!validDomain(first)) {
        return fail("invalid registry \"" + std::string(first) +
                    "\": want a host name or IP address with an optional :port");
      }
      out.domain = std::string(first);
      rest = rest.substr(slash + 1);
    }
  }
  out.path = std::string(rest);
  std::size_t start = 0;
  while (true) {
    const std::size_t slash = rest.find('/', start);
    const std::string_view component = rest.substr(start, slash - start);
    if (component.empty()) {
      return fail("the repository path must not contain empty components (\"//\" or a "
                  "leading or trailing \"/\")");
    }
    if (!isPathComponent(component)) {
      if (std::any_of(component.begin(), component.end(),
                      [](char c) { return c >= 'A' && c <= 'Z'; })) {
        return fail("repository path component \"" + std::string(component) +
                    "\" must be lowercase");
      }
      return fail("invalid repository path component \"" + std::string(component) +
                  R"(": lowercase letters and digits, separated by ".", "_", "__" or "-")");
    }
    if (slash == std::string_view::npos) {
      break;
    }
    start = slash + 1;
  }
  if (version == VersionRequired::kYes && out.tag.empty() && out.digest.empty()) {
    return fail("must name a tag (:v1.2.3) or a digest (@sha256:...): the tag or digest is the "
                "module version");
  }
  return out;
}

std::optional<std::string> pinnedReference(std::string_view ref, std::string_view digest) {
  std::string error;
  const std::optional<ImageReference> parsed = parseImageReference(ref, &error);
  if (!parsed) {
    return std::nullopt;
  }
  std::string out = parsed->domain.empty() ? parsed->path : parsed->domain + "/" + parsed->path;
  return out + "@" + std::string(digest);
}

} // namespace captf::contract
