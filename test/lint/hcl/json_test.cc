#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "lint/hcl/json.h"

namespace captf::lint::hcl {
namespace {

using ::testing::HasSubstr;

TEST(ParseJson, ValuesKeysAndPositions) {
  auto doc = parseJson(R"({
  "variable": {
    "region": {"type": "string", "default": "eu-west-1"},
    "count": {"default": 3, "big": 12345678901234567890, "f": -1.5e3}
  },
  "flag": true,
  "none": null,
  "list": [1, "two", [false]]
})",
                       "vars.tf.json");
  ASSERT_TRUE(doc.ok()) << doc.status();
  ASSERT_TRUE(doc->isObject());
  ASSERT_EQ(doc->members.size(), 4u);
  EXPECT_EQ(doc->members[0].key, "variable");
  EXPECT_EQ(doc->members[0].pos.line, 2u);
  EXPECT_EQ(doc->members[0].pos.column, 3u);
  const JsonValue* variables = doc->find("variable");
  ASSERT_NE(variables, nullptr);
  EXPECT_EQ(variables->members[1].key, "count");
  EXPECT_EQ(variables->members[1].pos.line, 4u);
  EXPECT_EQ(variables->members[1].pos.column, 5u);
  const JsonValue* count = variables->find("count");
  EXPECT_EQ(count->find("default")->text, "3");
  EXPECT_EQ(count->find("big")->text, "12345678901234567890");
  EXPECT_EQ(count->find("f")->text, "-1.5e3");
  EXPECT_EQ(count->find("f")->pos.line, 4u);
  EXPECT_TRUE(doc->find("flag")->boolean);
  EXPECT_EQ(doc->find("none")->type, JsonValue::Type::kNull);
  const JsonValue* list = doc->find("list");
  ASSERT_EQ(list->elements.size(), 3u);
  EXPECT_EQ(list->elements[1].text, "two");
  EXPECT_EQ(list->pos.line, 8u);
  EXPECT_EQ(list->pos.column, 11u);
  EXPECT_EQ(jsonToString(*list), R"([1,"two",[false]])");
}

TEST(ParseJson, DuplicateKeysAreKept) {
  auto doc = parseJson(R"({"output": {"a": {}}, "output": {"b": {}}})", "d.tf.json");
  ASSERT_TRUE(doc.ok());
  ASSERT_EQ(doc->members.size(), 2u);
  EXPECT_EQ(doc->members[1].value.members[0].key, "b");
}

TEST(ParseJson, EscapedQuotesDoNotConfusePositions) {
  auto doc = parseJson("{\n  \"a\\\"b\": 1,\n      \"c\\\\\": 2}", "e.tf.json");
  ASSERT_TRUE(doc.ok()) << doc.status();
  EXPECT_EQ(doc->members[0].key, "a\"b");
  EXPECT_EQ(doc->members[0].pos.column, 3u);
  EXPECT_EQ(doc->members[1].key, "c\\");
  EXPECT_EQ(doc->members[1].pos.column, 7u);
}

TEST(ParseJson, Errors) {
  EXPECT_THAT(parseJson("{\n  \"a\": tru\n}", "x.tf.json").status().message(),
              HasSubstr("x.tf.json:2:"));
  EXPECT_THAT(parseJson("{\"a\": 1,}", "x.tf.json").status().message(), HasSubstr("invalid JSON"));
  EXPECT_THAT(parseJson("", "x.tf.json").status().message(), HasSubstr("invalid JSON"));
  EXPECT_THAT(parseJson("{\"a\": \"\xFF\"}", "x.tf.json").status().message(),
              HasSubstr("x.tf.json:1:8: invalid UTF-8"));
  EXPECT_THAT(parseJson("{} {}", "x.tf.json").status().message(), HasSubstr("invalid JSON"));
  EXPECT_THAT(parseJson("1e999", "x.tf.json").status().message(), HasSubstr("invalid JSON"));
  // The kind of error at its position, never what was read.
  EXPECT_EQ(parseJson("{\"a\": \"CANARY-7f3a", "x.tf.json").status().message(),
            "x.tf.json:1:19: invalid JSON: unexpected end of input");
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  EXPECT_THAT(parseJson(deep, "x.tf.json").status().message(),
              HasSubstr("JSON nesting is too deep: more than 256 levels"));
}

TEST(JsonToExpression, StringsAreTemplates) {
  auto doc = parseJson(R"({"tags": "${var.captf_tags}", "n": 1, "o": {"k-${x}": ["a", null]}})",
                       "m.tf.json");
  ASSERT_TRUE(doc.ok());
  auto e = jsonToExpression(*doc, "m.tf.json");
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_EQ(debugString(**e),
            "(object (tags (tmpl (interp (trav var .captf_tags)))) (n 1) (o (object ((tmpl \"k-\" "
            "(interp (trav x))) (tuple (tmpl \"a\") null)))))");
  const auto refs = references(**e);
  ASSERT_EQ(refs.size(), 2u);
  EXPECT_EQ(refs[0]->root, "var");

  auto bad = parseJson(R"({"v": "${"})", "m.tf.json");
  ASSERT_TRUE(bad.ok());
  EXPECT_THAT(jsonToExpression(*bad, "m.tf.json").status().message(), HasSubstr("m.tf.json:1:"));
}

} // namespace
} // namespace captf::lint::hcl
