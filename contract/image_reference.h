#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace captf::contract {

// The parts of an OCI image reference.
struct ImageReference {
  std::string domain; // "registry.example.com:5000"; empty when the reference has none
  std::string path;   // "team/module"
  std::string tag;    // "v1.2.3"; may be empty when a digest is given
  std::string digest; // "sha256:<64 hex>"; may be empty when a tag is given
};

// Parses `[domain/]path[:tag][@digest]` with the grammar of the
// distribution reference library (the one container runtimes use):
//   domain     host[:port], host a DNS name, "localhost" or [IPv6]
//   path       lowercase components [a-z0-9]+ joined by ".", "_", "__" or "-"+
//   tag        [A-Za-z0-9_][A-Za-z0-9_.-]{0,127}
//   digest     sha256:<64 lowercase hex> or sha512:<128 lowercase hex>
// Syntax only: nothing is resolved or pulled. With VersionRequired::kYes
// (a module source: the tag or digest is the module version,
// docs/contract.md) a reference without either is refused; kNo accepts it
// (tools that default to "latest", as tfcapi-lint does for an image to
// inspect). On error returns nullopt and sets *error to a sentence a user
// can act on.
enum class VersionRequired { kYes, kNo };
[[nodiscard]] std::optional<ImageReference>
parseImageReference(std::string_view ref, std::string* error,
                    VersionRequired version = VersionRequired::kYes);

// `ref` pinned to `digest`: "[domain/]path@<digest>" (the tag and any
// digest of `ref` dropped); nullopt when `ref` does not parse.
[[nodiscard]] std::optional<std::string> pinnedReference(std::string_view ref,
                                                         std::string_view digest);

} // namespace captf::contract
