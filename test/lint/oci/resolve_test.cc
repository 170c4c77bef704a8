#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "lint/oci/resolve.h"
#include "test/lint/oci/oci_test_util.h"

namespace captf::lint::oci {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using testing::ImageSpec;
using testing::LayoutBuilder;

ImageSpec spec(std::string os, std::string arch, std::string variant = "") {
  ImageSpec s;
  s.os = std::move(os);
  s.architecture = std::move(arch);
  s.variant = std::move(variant);
  s.layers.push_back({testing::file("captf/module/main.tf", "x")});
  return s;
}

Descriptor withPlatform(Descriptor d, std::string os, std::string arch, std::string variant = "") {
  d.platform = Platform{std::move(os), std::move(arch), std::move(variant), "", {}};
  return d;
}

std::vector<std::string> platforms(const Resolution& r) {
  std::vector<std::string> out;
  out.reserve(r.images.size());
  for (const SelectedImage& i : r.images) {
    out.push_back(i.platform.str());
  }
  return out;
}

class Resolve : public ::testing::Test {
protected:
  absl::StatusOr<Resolution> resolve(const SelectOptions& options, std::string ref = "") {
    absl::StatusOr<std::unique_ptr<ImageSource>> source =
        openLayout("oci:test", LayoutReference{tmp_.path().string(), std::move(ref)});
    if (!source.ok()) {
      return source.status();
    }
    return resolveImages(**source, options);
  }
  // An index: amd64, arm64/v8, an unknown/unknown attestation, and an entry
  // without a platform (its config says s390x), nested one level.
  Descriptor multiPlatformIndex(bool docker = false) {
    const Descriptor amd64 = withPlatform(layout_.image(spec("linux", "amd64")), "linux", "amd64");
    const Descriptor arm64 =
        withPlatform(layout_.image(spec("linux", "arm64", "v8")), "linux", "arm64", "v8");
    const Descriptor attestation =
        withPlatform(layout_.image(spec("linux", "amd64")), "unknown", "unknown");
    const Descriptor s390x = layout_.image(spec("linux", "s390x"));
    const Descriptor nested = layout_.index({s390x}, docker);
    return layout_.index({attestation, arm64, amd64, nested}, docker);
  }
  testing::TempDir tmp_;
  LayoutBuilder layout_{tmp_.path()};
};

TEST_F(Resolve, PicksTheRequestedPlatformFromAnIndex) {
  const Descriptor index = multiPlatformIndex();
  layout_.finish({index});
  SelectOptions o;
  absl::StatusOr<Resolution> r = resolve(o);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->is_index);
  EXPECT_EQ(r->digest, index.digest);
  EXPECT_THAT(platforms(*r), ElementsAre("linux/amd64"));
  o.platform = *parsePlatform("linux/arm64");
  r = resolve(o);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_THAT(platforms(*r), ElementsAre("linux/arm64/v8"));
}

TEST_F(Resolve, WalksNestedIndexesAndTakesThePlatformFromTheConfig) {
  layout_.finish({multiPlatformIndex(/*docker=*/true)});
  SelectOptions o;
  o.platform = *parsePlatform("linux/s390x");
  absl::StatusOr<Resolution> r = resolve(o);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_THAT(platforms(*r), ElementsAre("linux/s390x"));
}

TEST_F(Resolve, AllPlatformsSkipsAttestations) {
  layout_.finish({multiPlatformIndex()});
  SelectOptions o;
  o.all_platforms = true;
  absl::StatusOr<Resolution> r = resolve(o);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_THAT(platforms(*r), ElementsAre("linux/arm64/v8", "linux/amd64", "linux/s390x"));
}

TEST_F(Resolve, AMissingPlatformIsAPlatformError) {
  layout_.finish({multiPlatformIndex()});
  SelectOptions o;
  o.platform = *parsePlatform("linux/ppc64le");
  absl::StatusOr<Resolution> r = resolve(o);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->images.empty());
  EXPECT_EQ(r->platform_error, "the index has no manifest for linux/ppc64le");
}

TEST_F(Resolve, ASingleImageIsCheckedAsIsUnlessThePlatformWasExplicit) {
  const Descriptor arm = layout_.image(spec("linux", "arm64"));
  layout_.finish({arm}, {"v1"});
  SelectOptions o; // default linux/amd64, not explicit
  absl::StatusOr<Resolution> r = resolve(o, "v1");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_FALSE(r->is_index);
  EXPECT_EQ(r->digest, arm.digest);
  EXPECT_THAT(platforms(*r), ElementsAre("linux/arm64"));
  o.platform_explicit = true;
  r = resolve(o, "v1");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->platform_error, "the image is for linux/arm64, not linux/amd64");
}

TEST_F(Resolve, LayoutRefNamesSelectAndUnknownOnesFail) {
  const Descriptor a = layout_.image(spec("linux", "amd64"));
  const Descriptor b = layout_.image(spec("linux", "arm64"));
  layout_.finish({a, b}, {"a", "b"});
  absl::StatusOr<Resolution> r = resolve({}, "a");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->digest, a.digest);
  EXPECT_THAT(std::string(resolve({}, "zzz").status().message()),
              HasSubstr("has no manifest named \"zzz\""));
  // Without a name, index.json is the index.
  r = resolve({});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->is_index);
  EXPECT_THAT(platforms(*r), ElementsAre("linux/amd64"));
}

TEST_F(Resolve, ATamperedBlobIsAnError) {
  const Descriptor a = layout_.image(spec("linux", "amd64"));
  layout_.finish({a});
  std::filesystem::resize_file(tmp_.path() / "blobs" / "sha256" / a.digest.substr(7), 10);
  absl::StatusOr<Resolution> r = resolve({});
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(std::string(r.status().message()), HasSubstr(a.digest));
}

} // namespace
} // namespace captf::lint::oci
