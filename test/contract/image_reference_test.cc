#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "contract/image_reference.h"

namespace captf::contract {
namespace {

const std::string kSha256(64, 'a');

struct Accepted {
  std::string ref;
  std::string domain;
  std::string path;
  std::string tag;
  std::string digest;
};

TEST(ImageReferenceTest, AcceptsValidReferences) {
  const std::vector<Accepted> cases = {
      {"registry.example.com/modules/cluster:v1.2.3", "registry.example.com", "modules/cluster",
       "v1.2.3", ""},
      {"localhost:5000/pool:0.1.0", "localhost:5000", "pool", "0.1.0", ""},
      {"localhost/pool:latest", "localhost", "pool", "latest", ""},
      {"busybox:1.36", "", "busybox", "1.36", ""},
      {"team/module:v1", "", "team/module", "v1", ""},
      {"r.example.com/a/b@sha256:" + kSha256, "r.example.com", "a/b", "", "sha256:" + kSha256},
      {"r.example.com/a:v1@sha256:" + kSha256, "r.example.com", "a", "v1", "sha256:" + kSha256},
      {"r.example.com/a@sha512:" + std::string(128, '0'), "r.example.com", "a", "",
       "sha512:" + std::string(128, '0')},
      {"[::1]:5000/mod:v1", "[::1]:5000", "mod", "v1", ""},
      {"10.0.0.1:5000/my_mod__x/a-b--c.d:V_1.0-rc.1", "10.0.0.1:5000", "my_mod__x/a-b--c.d",
       "V_1.0-rc.1", ""},
      {"example.invalid/captf/set-by-clusterclass:unset", "example.invalid",
       "captf/set-by-clusterclass", "unset", ""},
  };
  for (const Accepted& c : cases) {
    std::string error;
    const auto got = parseImageReference(c.ref, &error);
    ASSERT_TRUE(got.has_value()) << c.ref << ": " << error;
    EXPECT_EQ(got->domain, c.domain) << c.ref;
    EXPECT_EQ(got->path, c.path) << c.ref;
    EXPECT_EQ(got->tag, c.tag) << c.ref;
    EXPECT_EQ(got->digest, c.digest) << c.ref;
  }
}

struct Rejected {
  std::string ref;
  std::string error;
};

TEST(ImageReferenceTest, RejectsInvalidReferencesWithAReason) {
  const std::vector<Rejected> cases = {
      {"", "must not be empty"},
      {"registry.example.com/modules/cluster",
       "must name a tag (:v1.2.3) or a digest (@sha256:...): the tag or digest is the module "
       "version"},
      {"Registry/module:v1", "repository path component \"Registry\" must be lowercase"},
      {"r.example.com/Team/module:v1", "repository path component \"Team\" must be lowercase"},
      {"r.example.com/mod:", "the tag after \":\" must not be empty"},
      {"r.example.com/mod:-v1",
       "invalid tag \"-v1\": a tag is letters, digits, \"_\", \".\" and \"-\", not starting with "
       "\".\" or \"-\""},
      {"r.example.com/mod:" + std::string(129, 'a'), "the tag must be at most 128 characters"},
      {"r.example.com/mod@sha256:abc", "a sha256 digest is 64 lowercase hexadecimal digits"},
      {"r.example.com/mod@sha256:" + std::string(64, 'A'),
       "a sha256 digest is 64 lowercase hexadecimal digits"},
      {"r.example.com/mod@md5:" + kSha256,
       "unsupported digest algorithm \"md5\": use sha256 or sha512"},
      {"r.example.com/mod@" + kSha256,
       "the digest must be <algorithm>:<hex>, for example sha256:<64 hex digits>"},
      {"r.example.com/mod@sha256:" + kSha256 + "@sha256:" + kSha256,
       "must contain at most one \"@\""},
      {"r.example.com//mod:v1",
       "the repository path must not contain empty components (\"//\" or a leading or trailing "
       "\"/\")"},
      {"r.example.com/mod/:v1",
       "the repository path must not contain empty components (\"//\" or a leading or trailing "
       "\"/\")"},
      {"r.example.com/-mod:v1",
       "invalid repository path component \"-mod\": lowercase letters and digits, separated by "
       "\".\", \"_\", \"__\" or \"-\""},
      {"r.example.com/mod___x:v1",
       "invalid repository path component \"mod___x\": lowercase letters and digits, separated "
       "by \".\", \"_\", \"__\" or \"-\""},
      {"bad_host.example.com/mod:v1",
       "invalid registry \"bad_host.example.com\": want a host name or IP address with an "
       "optional :port"},
      {"r.example.com:port/mod:v1",
       "invalid registry \"r.example.com:port\": want a host name or IP address with an optional "
       ":port"},
      {"r.example.com/mod :v1", "must not contain whitespace, control or non-ASCII characters"},
      {"r.example.com/mod:v1\n", "must not contain whitespace, control or non-ASCII characters"},
      {":v1", "the repository name must not be empty"},
      {"r.example.com/" + std::string(250, 'a') + ":v1",
       "the repository name must be at most 255 characters"},
  };
  for (const Rejected& c : cases) {
    std::string error;
    EXPECT_FALSE(parseImageReference(c.ref, &error).has_value()) << c.ref;
    EXPECT_EQ(error, c.error) << c.ref;
  }
}

TEST(ImageReferenceTest, ToleratesANullErrorPointer) {
  EXPECT_FALSE(parseImageReference("UPPER", nullptr).has_value());
}

// Without a required version (tools that default to "latest") the same
// grammar applies; only the missing tag or digest is accepted.
TEST(ImageReferenceTest, TheVersionIsOptionalOnlyWhenAsked) {
  std::string error;
  EXPECT_FALSE(parseImageReference("ghcr.io/org/module", &error).has_value());
  EXPECT_THAT(error, ::testing::HasSubstr("tag"));
  const auto parsed = parseImageReference("ghcr.io/org/module", &error, VersionRequired::kNo);
  ASSERT_TRUE(parsed.has_value()) << error;
  EXPECT_EQ(parsed->domain, "ghcr.io");
  EXPECT_EQ(parsed->path, "org/module");
  EXPECT_TRUE(parsed->tag.empty());
  EXPECT_FALSE(parseImageReference("ghcr.io/Org/module", &error, VersionRequired::kNo));
  EXPECT_THAT(error, ::testing::HasSubstr("lowercase"));
}

TEST(PinnedReference, DropsTheTagAndKeepsTheRegistry) {
  const std::string digest = "sha256:" + std::string(64, 'a');
  EXPECT_EQ(pinnedReference("registry.local:5000/team/module:v1", digest),
            "registry.local:5000/team/module@" + digest);
  EXPECT_EQ(pinnedReference("team/module:v1@sha256:" + std::string(64, 'b'), digest),
            "team/module@" + digest);
  EXPECT_FALSE(pinnedReference("not a reference", digest).has_value());
}

} // namespace
} // namespace captf::contract
