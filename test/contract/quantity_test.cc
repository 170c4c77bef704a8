#include <gtest/gtest.h>

#include "contract/image_labels.h"
#include "contract/logging.h"
#include "contract/quantity.h"

namespace captf::contract {
namespace {

TEST(QuantityPartsTest, SplitsSignNumberAndSuffix) {
  const auto q = parseQuantity("-1.50e+3");
  ASSERT_TRUE(q.has_value());
  EXPECT_EQ(q->sign, '-');
  EXPECT_EQ(q->whole, "1");
  EXPECT_TRUE(q->point);
  EXPECT_EQ(q->fraction, "50");
  EXPECT_EQ(q->suffix, "e+3");

  const auto bytes = parseQuantity("64Ki");
  ASSERT_TRUE(bytes.has_value());
  EXPECT_EQ(bytes->sign, 0);
  EXPECT_EQ(bytes->whole, "64");
  EXPECT_FALSE(bytes->point);
  EXPECT_EQ(bytes->suffix, "Ki");

  const auto dot = parseQuantity("1.");
  ASSERT_TRUE(dot.has_value());
  EXPECT_TRUE(dot->point);
  EXPECT_TRUE(dot->fraction.empty());
}

TEST(QuantityPartsTest, RefusesWhatKubernetesRefuses) {
  for (const char* bad :
       {"", "+", "-", ".", "Ki", "1ki", "1KiB", "1 Mi", "1e", "1e+", "1.5.5", "e3", "--1", "1m2"}) {
    EXPECT_FALSE(parseQuantity(bad).has_value()) << bad;
  }
}

// The two views agree with the grammar: what either takes, it takes.
TEST(QuantityPartsTest, CapacityAndByteSizesAreViewsOfTheOneGrammar) {
  for (const char* text : {"0", "4096", "64Ki", "1M", "7Ei", "1.5", "500m", "2E-3", "+2", "-1"}) {
    const bool quantity = parseQuantity(text).has_value();
    if (isQuantity(text) || parseByteQuantity(text).has_value()) {
      EXPECT_TRUE(quantity) << text;
    }
  }
  EXPECT_FALSE(isQuantity("-1"));                      // a capacity is never negative
  EXPECT_FALSE(parseByteQuantity("500m").has_value()); // a byte is not divided
}

} // namespace
} // namespace captf::contract
