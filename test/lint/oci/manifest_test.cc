#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "lint/oci/manifest.h"

namespace captf::lint::oci {
namespace {

using ::testing::HasSubstr;

constexpr std::string_view kDigest =
    "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

std::string descriptor(std::string_view type, std::string_view platform = "") {
  std::string out = std::string(R"({"mediaType":")") + std::string(type) + R"(","digest":")" +
                    std::string(kDigest) + R"(","size":12)";
  if (!platform.empty()) {
    out += R"(,"platform":)" + std::string(platform);
  }
  return out + "}";
}

TEST(Manifest, ParsesAnOciIndexWithPlatforms) {
  const std::string doc =
      std::string(R"({"schemaVersion":2,"mediaType":")") + std::string(kOciIndex) +
      R"(","manifests":[)" +
      descriptor(kOciManifest, R"({"os":"linux","architecture":"arm64","variant":"v8"})") + "]}";
  absl::StatusOr<Manifest> m = parseManifest(doc, kOciIndex);
  ASSERT_TRUE(m.ok()) << m.status();
  const Index& index = std::get<Index>(*m);
  ASSERT_EQ(index.manifests.size(), 1u);
  ASSERT_TRUE(index.manifests[0].platform.has_value());
  EXPECT_EQ(index.manifests[0].platform->str(), "linux/arm64/v8");
  EXPECT_EQ(index.manifests[0].size, 12);
}

TEST(Manifest, ParsesADockerManifestListFromTheContentType) {
  const std::string doc =
      R"({"schemaVersion":2,"manifests":[)" + descriptor(kDockerManifest) + "]}";
  absl::StatusOr<Manifest> m = parseManifest(doc, std::string(kDockerList) + "; charset=utf-8");
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(std::get<Index>(*m).media_type, kDockerList);
}

TEST(Manifest, ParsesImageManifestsOfBothFormats) {
  for (std::string_view type : {kOciManifest, kDockerManifest}) {
    const std::string doc = R"({"schemaVersion":2,"config":)" + descriptor(kOciConfig) +
                            R"(,"layers":[)" +
                            descriptor("application/vnd.oci.image.layer.v1.tar+zstd") + "]}";
    absl::StatusOr<Manifest> m = parseManifest(doc, type);
    ASSERT_TRUE(m.ok()) << m.status();
    const ImageManifest& image = std::get<ImageManifest>(*m);
    EXPECT_EQ(image.media_type, type);
    EXPECT_EQ(image.layers.size(), 1u);
    EXPECT_EQ(image.config.digest, kDigest);
  }
}

TEST(Manifest, SniffsTheKindWithoutAContentType) {
  const std::string index = R"({"manifests":[]})";
  ASSERT_TRUE(parseManifest(index, "application/octet-stream").ok());
  EXPECT_TRUE(std::holds_alternative<Index>(*parseManifest(index, "")));
}

TEST(Manifest, RejectsMalformedDocuments) {
  EXPECT_THAT(std::string(parseManifest("{", kOciIndex).status().message()),
              HasSubstr("not valid JSON (at byte"));
  EXPECT_FALSE(parseManifest("[]", kOciIndex).ok());
  EXPECT_FALSE(parseManifest(R"({"manifests":{}})", kOciIndex).ok());
  // A bad digest is refused (it becomes a path and a URL).
  EXPECT_THAT(
      std::string(
          parseManifest(R"({"manifests":[{"mediaType":"x","digest":"sha256:../../etc","size":1}]})",
                        kOciIndex)
              .status()
              .message()),
      HasSubstr("invalid digest"));
  EXPECT_FALSE(parseManifest(std::string(R"({"manifests":[{"digest":")") + std::string(kDigest) +
                                 R"(","size":-1}]})",
                             kOciIndex)
                   .ok());
  EXPECT_THAT(
      std::string(parseManifest(R"({"schemaVersion":1,"fsLayers":[]})", "").status().message()),
      HasSubstr("schema 1"));
  EXPECT_THAT(std::string(parseManifest(std::string(R"({"mediaType":")") +
                                            std::string(kOciManifest) + R"(","manifests":[]})",
                                        kOciIndex)
                              .status()
                              .message()),
              HasSubstr("declares mediaType"));
  EXPECT_THAT(std::string(parseManifest(R"({"mediaType":"text/plain"})", "").status().message()),
              HasSubstr("unsupported manifest media type"));
}

TEST(Config, ReadsUserEntrypointLabelsAndPlatform) {
  absl::StatusOr<ImageConfig> c = parseConfig(
      R"({"os":"linux","architecture":"arm64","variant":"v8","config":{"User":"65532:65532",
          "Entrypoint":["/bin/tofu"],"Cmd":null,"Labels":{"io.captf.role":"machine"}}})");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->platform.str(), "linux/arm64/v8");
  EXPECT_EQ(c->user, "65532:65532");
  EXPECT_EQ(c->entrypoint, std::vector<std::string>{"/bin/tofu"});
  EXPECT_TRUE(c->cmd.empty());
  EXPECT_EQ(c->labels.at("io.captf.role"), "machine");
  EXPECT_FALSE(parseConfig(R"({"config":{"Labels":{"a":1}}})").ok());
  EXPECT_FALSE(parseConfig(R"({"config":{"User":7}})").ok());
}

TEST(Platform, ParsesTheFlag) {
  EXPECT_EQ(parsePlatform("linux/amd64")->str(), "linux/amd64");
  EXPECT_EQ(parsePlatform("linux/arm/v7")->variant, "v7");
  for (std::string_view bad :
       {"linux", "linux/", "/amd64", "linux/amd64/v8/x", "Linux/AMD64", ""}) {
    EXPECT_FALSE(parsePlatform(bad).ok()) << bad;
  }
}

TEST(Platform, SatisfiesAsGoContainerRegistry) {
  const Platform amd64{"linux", "amd64", "", "", {}};
  const Platform arm64v8{"linux", "arm64", "v8", "", {}};
  const Platform arm64{"linux", "arm64", "", "", {}};
  EXPECT_TRUE(satisfies(amd64, amd64));
  EXPECT_FALSE(satisfies(arm64v8, amd64));
  EXPECT_TRUE(satisfies(arm64v8, arm64)); // no variant asked: any
  EXPECT_FALSE(satisfies(arm64, arm64v8));
  Platform windows{"windows", "amd64", "", "10.0.17763", {"win32k"}};
  Platform want_windows{"windows", "amd64", "", "", {"win32k"}};
  EXPECT_TRUE(satisfies(windows, want_windows));
  want_windows.os_features = {"other"};
  EXPECT_FALSE(satisfies(windows, want_windows));
}

TEST(Digest, ValidatesAndComputes) {
  EXPECT_TRUE(validateDigest(kDigest).ok());
  EXPECT_FALSE(validateDigest("sha256:ABC").ok());
  EXPECT_FALSE(validateDigest(std::string("sha256:") + std::string(64, 'G')).ok());
  EXPECT_FALSE(validateDigest("md5:0123").ok());
  EXPECT_EQ(digestOf("abc"),
            "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST(Layers, CompressionFromMediaType) {
  EXPECT_EQ(*layerCompression("application/vnd.oci.image.layer.v1.tar"), Compression::kNone);
  EXPECT_EQ(*layerCompression("application/vnd.oci.image.layer.v1.tar+gzip"), Compression::kGzip);
  EXPECT_EQ(*layerCompression("application/vnd.oci.image.layer.v1.tar+zstd"), Compression::kZstd);
  EXPECT_EQ(*layerCompression("application/vnd.docker.image.rootfs.diff.tar.gzip"),
            Compression::kGzip);
  EXPECT_FALSE(layerCompression("application/vnd.oci.image.layer.v1.tar+gzip+encrypted").ok());
}

} // namespace
} // namespace captf::lint::oci
