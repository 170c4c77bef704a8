#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "lint/module/type_constraint.h"

namespace captf::lint {
namespace {

using ::testing::HasSubstr;

std::string roundTrip(std::string_view text) {
  auto type = parseTypeConstraint(text);
  return type.ok() ? toString(*type) : "ERROR: " + std::string(type.status().message());
}

bool accepts(std::string_view declared, std::string_view contract) {
  auto d = parseTypeConstraint(declared);
  auto c = parseTypeConstraint(contract);
  EXPECT_TRUE(d.ok()) << declared << ": " << d.status();
  EXPECT_TRUE(c.ok()) << contract << ": " << c.status();
  return d.ok() && c.ok() && compatible(*d, *c);
}

TEST(ParseTypeConstraint, AllForms) {
  EXPECT_EQ(roundTrip("string"), "string");
  EXPECT_EQ(roundTrip("any"), "any");
  EXPECT_EQ(roundTrip("list(map(number))"), "list(map(number))");
  EXPECT_EQ(roundTrip("set(bool)"), "set(bool)");
  EXPECT_EQ(roundTrip("tuple([string, number])"), "tuple([string, number])");
  EXPECT_EQ(roundTrip("object({host=string, port=number})"), "object({host=string, port=number})");
  EXPECT_EQ(roundTrip("object({\n  host : string\n  port = number\n})"),
            "object({host=string, port=number})");
  EXPECT_EQ(
      roundTrip(
          "object({pods = optional(list(string), [\"a, b\", \"c)\"]), n = optional(number)})"),
      "object({pods=optional(list(string)), n=optional(number)})");
  EXPECT_EQ(roundTrip("object({\"quoted\" = string})"), "object({quoted=string})");
}

TEST(ParseTypeConstraint, Errors) {
  EXPECT_THAT(roundTrip("strin"), HasSubstr("unknown type keyword \"strin\""));
  EXPECT_THAT(roundTrip("\"string\""), HasSubstr("a type must be a keyword"));
  EXPECT_THAT(roundTrip("list"), HasSubstr("the list type constructor requires an argument"));
  EXPECT_THAT(roundTrip("list(string, number)"), HasSubstr("requires one argument"));
  EXPECT_THAT(roundTrip("optional(string)"), HasSubstr("only valid for an attribute"));
  EXPECT_THAT(roundTrip("object({a = string, a = number})"), HasSubstr("defined twice"));
  EXPECT_THAT(roundTrip("map(string) extra"), HasSubstr("extra characters after the expression"));
  EXPECT_THAT(roundTrip("list(string"), HasSubstr("expected"));
  EXPECT_THAT(roundTrip("frobnicate(string)"), HasSubstr("unknown type constructor"));
}

TEST(Compatible, SpecExamples) {
  // docs/lint.md#type-compatibility examples.
  EXPECT_TRUE(accepts("object({name=string,namespace=string})", "any"));
  EXPECT_TRUE(accepts("any", "object({name=string, namespace=string})"));
  EXPECT_TRUE(accepts("object({pods=optional(list(string), []), services=optional(list(string), "
                      "[]), service_domain=optional(string), api_server_port=optional(number)})",
                      "object({pods=list(string), services=list(string), service_domain=string, "
                      "api_server_port=number})"));
  EXPECT_FALSE(accepts("string", "bool"));
}

TEST(Compatible, Rules) {
  // Primitives match only themselves: no conversions.
  EXPECT_FALSE(accepts("string", "number"));
  EXPECT_FALSE(accepts("number", "string"));
  EXPECT_TRUE(accepts("bool", "bool"));
  // Sequences.
  EXPECT_TRUE(accepts("list(string)", "set(string)"));
  EXPECT_TRUE(accepts("set(string)", "list(string)"));
  EXPECT_FALSE(accepts("list(number)", "list(string)"));
  EXPECT_TRUE(accepts("list(string)", "tuple([string, string])"));
  EXPECT_FALSE(accepts("list(string)", "tuple([string, number])"));
  EXPECT_TRUE(accepts("tuple([string, number])", "tuple([string, number])"));
  EXPECT_FALSE(accepts("tuple([string])", "tuple([string, string])"));
  EXPECT_FALSE(accepts("tuple([string])", "list(string)"));
  // Kinds.
  EXPECT_FALSE(accepts("map(string)", "list(string)"));
  EXPECT_FALSE(accepts("map(string)", "object({a=string})"));
  EXPECT_TRUE(accepts("map(any)", "map(string)"));
  // Objects: declared attributes must be passed, unless optional; extra
  // contract attributes are fine.
  EXPECT_TRUE(accepts("object({host=string})", "object({host=string, port=number})"));
  EXPECT_FALSE(accepts("object({host=string, zone=string})", "object({host=string})"));
  EXPECT_TRUE(accepts("object({host=string, zone=optional(string)})", "object({host=string})"));
  EXPECT_FALSE(accepts("object({port=optional(string)})", "object({port=number})"));
  EXPECT_FALSE(accepts("object({port=string})", "object({port=number})"));
}

} // namespace
} // namespace captf::lint
