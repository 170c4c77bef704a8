#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "contract/image_labels.h"

namespace captf::contract {
namespace {

using ::testing::HasSubstr;

TEST(QuantityTest, KubernetesQuantitySyntax) {
  for (const char* good : {"4", "16Gi", "500m", "1.5", "1e3", "+2", ".5", "2E-3"}) {
    EXPECT_TRUE(isQuantity(good)) << good;
  }
  for (const char* bad : {"", "-1", "Gi", "1GB", "1.5.5", "e3", "1e", "four"}) {
    EXPECT_FALSE(isQuantity(bad)) << bad;
  }
}

TEST(CapacityLabelTest, ParsesResourceQuantities) {
  auto parsed = parseCapacityLabel(R"({"cpu":"4","memory":"16Gi","nvidia.com/gpu":"1"})");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->at("cpu"), "4");
  EXPECT_EQ(parsed->at("memory"), "16Gi");
  EXPECT_EQ(parsed->at("nvidia.com/gpu"), "1");
}

TEST(CapacityLabelTest, SaysWhatIsWrong) {
  EXPECT_THAT(std::string(parseCapacityLabel("[1]").status().message()),
              HasSubstr("not a JSON object"));
  EXPECT_THAT(std::string(parseCapacityLabel("{}").status().message()),
              HasSubstr("names no resource"));
  EXPECT_THAT(std::string(parseCapacityLabel(R"({"cpu":4})").status().message()),
              HasSubstr("\"cpu\" is not a quantity string"));
  EXPECT_THAT(std::string(parseCapacityLabel(R"({"":"1"})").status().message()),
              HasSubstr("empty"));
}

TEST(NodeInfoLabelTest, ParsesEitherKey) {
  auto both = parseNodeInfoLabel(R"({"architecture":"arm64","operatingSystem":"linux"})");
  ASSERT_TRUE(both.ok()) << both.status();
  EXPECT_EQ(both->architecture, "arm64");
  EXPECT_EQ(both->operating_system, "linux");
  auto one = parseNodeInfoLabel(R"({"operatingSystem":"linux"})");
  ASSERT_TRUE(one.ok());
  EXPECT_FALSE(one->architecture.has_value());
}

TEST(NodeInfoLabelTest, RefusesUnknownValuesAndKeys) {
  EXPECT_THAT(std::string(parseNodeInfoLabel(R"({"architecture":"x86"})").status().message()),
              HasSubstr("amd64, arm64"));
  EXPECT_THAT(std::string(parseNodeInfoLabel(R"({"os":"linux"})").status().message()),
              HasSubstr("unknown key \"os\""));
  EXPECT_FALSE(parseNodeInfoLabel("{}").ok());
  EXPECT_FALSE(parseNodeInfoLabel(R"({"operatingSystem":""})").ok());
}

} // namespace
} // namespace captf::contract
