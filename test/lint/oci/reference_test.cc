#include <gtest/gtest.h>

#include "lint/oci/reference.h"
#include "test/lint/oci/oci_test_util.h"

namespace captf::lint::oci {
namespace {

TEST(Reference, DefaultsToDockerHubAndLatest) {
  absl::StatusOr<RegistryReference> r = parseRegistryReference("alpine");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->registry, "index.docker.io");
  EXPECT_EQ(r->repository, "library/alpine");
  EXPECT_EQ(r->tag, "latest");
  EXPECT_EQ(r->str(), "index.docker.io/library/alpine:latest");
  EXPECT_EQ(parseRegistryReference("docker.io/org/x:1")->repository, "org/x");
}

TEST(Reference, ReadsRegistryPortTagAndDigest) {
  const std::string digest =
      "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
  absl::StatusOr<RegistryReference> r =
      parseRegistryReference("127.0.0.1:5000/team/module:v1.2@" + digest);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->registry, "127.0.0.1:5000");
  EXPECT_EQ(r->repository, "team/module");
  EXPECT_EQ(r->tag, "v1.2");
  EXPECT_EQ(r->identifier(), digest);
  EXPECT_EQ(parseRegistryReference("localhost/x")->registry, "localhost");
  EXPECT_EQ(parseRegistryReference("ghcr.io/org/mod")->identifier(), "latest");
}

TEST(Reference, RejectsInvalidOnes) {
  for (std::string_view bad :
       {"", "UPPER/case", "ghcr.io/org/mod:", "ghcr.io/org/mod:-x", "ghcr.io/org//mod", "ghcr.io/",
        "ghcr.io/org/mod@sha256:abc", "ghcr.io/org/mod:a b"}) {
    EXPECT_FALSE(parseRegistryReference(bad).ok()) << bad;
  }
}

TEST(Reference, LayoutReferences) {
  EXPECT_TRUE(isLayoutReference("oci:/tmp/x"));
  EXPECT_FALSE(isLayoutReference("ghcr.io/x"));
  absl::StatusOr<LayoutReference> l = parseLayoutReference("oci:/some/dir:v1");
  ASSERT_TRUE(l.ok());
  EXPECT_EQ(l->dir, "/some/dir");
  EXPECT_EQ(l->ref, "v1");
  EXPECT_EQ(parseLayoutReference("oci:relative")->dir, "relative");
  EXPECT_FALSE(parseLayoutReference("oci:").ok());
  // A directory whose name has a colon is the directory.
  testing::TempDir tmp;
  const auto dir = tmp.path() / "with:colon";
  std::filesystem::create_directories(dir);
  l = parseLayoutReference("oci:" + dir.string());
  ASSERT_TRUE(l.ok());
  EXPECT_EQ(l->dir, dir.string());
  EXPECT_EQ(l->ref, "");
}

} // namespace
} // namespace captf::lint::oci
