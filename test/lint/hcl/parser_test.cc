#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "lint/hcl/parser.h"

namespace captf::lint::hcl {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

// Parses `src` as a standalone expression and renders it.
std::string expr(std::string_view src) {
  auto parsed = parseExpression(src, "test.hcl");
  if (!parsed.ok()) {
    return "ERROR: " + std::string(parsed.status().message());
  }
  return debugString(**parsed);
}

// The error message of parsing `src` as a file ("" if it parses).
std::string fileError(std::string_view src) {
  auto parsed = parseFile("main.tf", std::string(src));
  return parsed.ok() ? "" : std::string(parsed.status().message());
}

TEST(ParseFile, AttributesAndBlocksWithLabels) {
  auto file = parseFile("main.tf", R"(region = "eu-west-1"

resource "aws_instance" "web" {
  ami           = var.ami
  instance_type = "t3.small"

  root_block_device {
    volume_size = 20
  }
}

locals {}
terraform { required_version = ">= 1.6" }
)");
  ASSERT_TRUE(file.ok()) << file.status();
  EXPECT_EQ(file->filename, "main.tf");
  ASSERT_EQ(file->body.attributes.size(), 1u);
  EXPECT_EQ(file->body.attributes[0].name, "region");
  ASSERT_EQ(file->body.blocks.size(), 3u);

  const Block& resource = file->body.blocks[0];
  EXPECT_EQ(resource.type, "resource");
  ASSERT_EQ(resource.labels.size(), 2u);
  EXPECT_EQ(resource.labels[0].value, "aws_instance");
  EXPECT_TRUE(resource.labels[0].quoted);
  EXPECT_EQ(resource.labels[1].value, "web");
  EXPECT_EQ(resource.range.start.line, 3u);
  EXPECT_EQ(resource.range.end.line, 10u);
  ASSERT_EQ(resource.body.attributes.size(), 2u);
  EXPECT_EQ(debugString(*resource.body.attributes[0].expr), "(trav var .ami)");
  EXPECT_EQ(resource.body.attributes[1].name_range.start.line, 5u);
  EXPECT_EQ(resource.body.attributes[1].name_range.start.column, 3u);
  ASSERT_EQ(resource.body.blocks.size(), 1u);
  EXPECT_EQ(resource.body.blocks[0].type, "root_block_device");
  EXPECT_EQ(file->text(resource.body.blocks[0].range),
            "root_block_device {\n    volume_size = 20\n  }");

  EXPECT_TRUE(file->body.blocks[1].body.attributes.empty());
  const Block& terraform = file->body.blocks[2];
  ASSERT_EQ(terraform.body.attributes.size(), 1u);
  EXPECT_EQ(file->text(terraform.body.attributes[0].expr->range()), "\">= 1.6\"");
}

TEST(ParseFile, UnquotedLabelsAndEmptyFile) {
  auto file = parseFile("a.tf", "provider aws {\n}\n");
  ASSERT_TRUE(file.ok()) << file.status();
  EXPECT_EQ(file->body.blocks[0].labels[0].value, "aws");
  EXPECT_FALSE(file->body.blocks[0].labels[0].quoted);

  auto empty = parseFile("empty.tf", "");
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE(empty->body.attributes.empty());
  auto comments = parseFile("c.tf", "# only\n// comments\n/* here */\n");
  ASSERT_TRUE(comments.ok()) << comments.status();
}

TEST(ParseFile, NewlinesEndArguments) {
  EXPECT_EQ(fileError("a = 1 b = 2\n"),
            "main.tf:1:7: an argument definition must end with a newline, but found identifier "
            "\"b\"");
  EXPECT_EQ(fileError("a = 1"), "");
  EXPECT_EQ(fileError("a = (1 +\n 2)\n"), "");
  EXPECT_THAT(fileError("a = 1\n+ 2\n"), StartsWith("main.tf:2:1: expected an argument"));
  EXPECT_THAT(fileError("x {\n}\ny {\n} z = 1\n"),
              HasSubstr("a block definition must end with a newline"));
}

TEST(ParseFile, SingleLineBlocks) {
  auto file = parseFile("main.tf", "variable \"a\" { type = string }\nvariable \"b\" {}\n");
  ASSERT_TRUE(file.ok()) << file.status();
  EXPECT_EQ(file->body.blocks[0].body.attributes[0].name, "type");
  EXPECT_TRUE(file->body.blocks[1].body.attributes.empty());

  EXPECT_THAT(fileError("variable \"a\" { type = string, default = 1 }\n"),
              HasSubstr("a single-line block must end with \"}\" right after its one argument"));
  EXPECT_THAT(fileError("a { b {} }\n"), HasSubstr("a single-line block may contain only one"));
}

TEST(ParseFile, DuplicateArgumentIsAnError) {
  EXPECT_EQ(fileError("a = 1\nb = 2\na = 3\n"),
            "main.tf:3:1: the argument \"a\" was already set at line 1; each argument may be set "
            "only once");
  // Repeated blocks are fine, and the same name may appear in different bodies.
  EXPECT_EQ(fileError("x {\n a = 1\n}\nx {\n a = 2\n}\n"), "");
}

TEST(ParseFile, BlockSyntaxErrors) {
  EXPECT_EQ(fileError("resource \"a\" \"b\" {\n  x = 1\n"),
            "main.tf:1:18: unclosed block: this \"{\" has no matching \"}\"");
  EXPECT_THAT(fileError("resource \"a\" 3 {\n}\n"),
              HasSubstr("expected a quoted label or \"{\" for the \"resource\" block, but found "
                        "number 3"));
  EXPECT_THAT(fileError("resource \"${x}\" {\n}\n"),
              HasSubstr("a block label must be a literal string"));
  EXPECT_THAT(fileError("resource\n{\n}\n"), HasSubstr("expected \"=\" to set the argument"));
  EXPECT_THAT(fileError("= 1\n"), HasSubstr("expected an argument or block definition, but found "
                                            "'='"));
  EXPECT_THAT(fileError("}\n"), HasSubstr("main.tf:1:1:"));
}

TEST(ParseExpression, LiteralsAndPrecedence) {
  EXPECT_EQ(expr("null"), "null");
  EXPECT_EQ(expr("true"), "true");
  EXPECT_EQ(expr("1.5e3"), "1.5e3");
  EXPECT_EQ(expr("1 + 2 * 3"), "(+ 1 (* 2 3))");
  EXPECT_EQ(expr("1 - 2 - 3"), "(- (- 1 2) 3)");
  EXPECT_EQ(expr("a || b && c"), "(|| (trav a) (&& (trav b) (trav c)))");
  EXPECT_EQ(expr("a == b != c"), "(!= (== (trav a) (trav b)) (trav c))");
  EXPECT_EQ(expr("1 + 2 < 4 == true"), "(== (< (+ 1 2) 4) true)");
  EXPECT_EQ(expr("-a.b * 2 % 3 / 4"), "(/ (% (* (neg (trav a .b)) 2) 3) 4)");
  EXPECT_EQ(expr("!!x"), "(not (not (trav x)))");
  EXPECT_EQ(expr("(1 + 2) * 3"), "(* (paren (+ 1 2)) 3)");
  EXPECT_EQ(expr("a >= 1 && a <= 2 || a > 9"),
            "(|| (&& (>= (trav a) 1) (<= (trav a) 2)) (> (trav a) 9))");
}

TEST(ParseExpression, Conditionals) {
  EXPECT_EQ(expr("a ? b : c"), "(? (trav a) (trav b) (trav c))");
  EXPECT_EQ(expr("a ? b : c ? d : e"), "(? (trav a) (trav b) (? (trav c) (trav d) (trav e)))");
  EXPECT_EQ(expr("x == null ? [] : [x]"), "(? (== (trav x) null) (tuple) (tuple (trav x)))");
  EXPECT_THAT(expr("a ? b"), HasSubstr("expected \":\" in the conditional expression"));
}

TEST(ParseExpression, Traversals) {
  EXPECT_EQ(expr("var.a.b"), "(trav var .a .b)");
  EXPECT_EQ(expr("aws_instance.web[0].id"), "(trav aws_instance .web [0] .id)");
  EXPECT_EQ(expr("local.m[\"key\"]"), "(trav local .m [\"key\"])");
  EXPECT_EQ(expr("a.0.b"), "(trav a [0] .b)");
  EXPECT_EQ(expr("a.0.1"), "(trav a [0] [1])");
  EXPECT_EQ(expr("aws_subnet.private[count.index].id"),
            "(rel (index (trav aws_subnet .private) (trav count .index)) .id)");
  EXPECT_EQ(expr("f(x).a[0]"), "(rel (call f (trav x)) .a [0])");
  EXPECT_EQ(expr("hyphen-name.x"), "(trav hyphen-name .x)");
  EXPECT_THAT(expr("a.1e5"), HasSubstr("a legacy index must be a whole number"));
  EXPECT_THAT(expr("a.+"), HasSubstr("expected an attribute name after \".\""));
}

TEST(ParseExpression, Splats) {
  EXPECT_EQ(expr("aws_instance.web.*.id"), "(splat.* (trav aws_instance .web) (rel * .id))");
  EXPECT_EQ(expr("aws_instance.web[*].id"), "(splat[*] (trav aws_instance .web) (rel * .id))");
  EXPECT_EQ(expr("x[*].a[0].b"), "(splat[*] (trav x) (rel * .a [0] .b))");
  EXPECT_EQ(expr("x[*].a[var.i]"), "(splat[*] (trav x) (index (rel * .a) (trav var .i)))");
  // An attribute splat applies only attribute steps; the index applies to the result.
  EXPECT_EQ(expr("x.*.a[0]"), "(rel (splat.* (trav x) (rel * .a)) [0])");
  EXPECT_EQ(expr("x[*]"), "(splat[*] (trav x) *)");
}

TEST(ParseFile, SplatBeforeANewline) {
  auto file = parseFile("s.tf", "a = x[*].id\nb = y.*.id\nc = z[*]\n");
  ASSERT_TRUE(file.ok()) << file.status();
  ASSERT_EQ(file->body.attributes.size(), 3u);
  EXPECT_EQ(debugString(*file->body.attributes[0].expr), "(splat[*] (trav x) (rel * .id))");
  EXPECT_EQ(debugString(*file->body.attributes[2].expr), "(splat[*] (trav z) *)");
}

TEST(ParseExpression, FunctionCalls) {
  EXPECT_EQ(expr("max(1, 2, 3)"), "(call max 1 2 3)");
  EXPECT_EQ(expr("concat(a, b,)"), "(call concat (trav a) (trav b))");
  EXPECT_EQ(expr("min(var.list...)"), "(call min (trav var .list) ...)");
  EXPECT_EQ(expr("f()"), "(call f)");
  EXPECT_EQ(expr("provider::aws::arn_parse(x)"), "(call provider::aws::arn_parse (trav x))");
  EXPECT_EQ(expr("merge(\n  var.a,\n  var.b\n)"), "(call merge (trav var .a) (trav var .b))");
  EXPECT_THAT(expr("f(a..., b)"), HasSubstr("an argument expanded with \"...\" must be the last"));
  EXPECT_THAT(expr("f(a b)"), HasSubstr("expected \",\" or \")\" in the arguments of f()"));
  EXPECT_THAT(expr("f(a"), HasSubstr("expected \",\" or \")\""));
}

TEST(ParseExpression, TuplesAndObjects) {
  EXPECT_EQ(expr("[]"), "(tuple)");
  EXPECT_EQ(expr("[1, \"two\", [3],]"), "(tuple 1 (tmpl \"two\") (tuple 3))");
  EXPECT_EQ(expr("[\n 1,\n 2\n]"), "(tuple 1 2)");
  EXPECT_EQ(expr("{}"), "(object)");
  EXPECT_EQ(expr("{ a = 1, \"b\" = 2, c: 3 }"), "(object (a 1) (b 2) (c 3))");
  EXPECT_EQ(expr("{\n  a = 1\n  b = {\n    c = [1,\n 2]\n  }\n}"),
            "(object (a 1) (b (object (c (tuple 1 2)))))");
  // A parenthesized or traversal key is an expression, not a name.
  EXPECT_EQ(expr("{ (var.k) = 1 }"), "(object ((paren (trav var .k)) 1))");
  EXPECT_EQ(expr("{ \"${var.k}\" = 1 }"), "(object ((tmpl (interp (trav var .k))) 1))");
  EXPECT_THAT(expr("{ a = 1 b = 2 }"),
              HasSubstr("expected a newline or \",\" after the object item, but found "
                        "identifier \"b\""));
  EXPECT_THAT(expr("{ a 1 }"), HasSubstr("expected \"=\" or \":\" after the object key"));
  EXPECT_THAT(expr("{ a = 1"), HasSubstr("after the object item, but found end of file"));
  EXPECT_THAT(expr("[1 2]"), HasSubstr("expected \",\" or \"]\" in the tuple"));
}

TEST(ParseExpression, ForExpressions) {
  EXPECT_EQ(expr("[for s in var.list : upper(s)]"),
            "(for[] _ s (trav var .list) (call upper (trav s)))");
  EXPECT_EQ(expr("[for i, s in var.list : s if i > 0]"),
            "(for[] i s (trav var .list) (trav s) if (> (trav i) 0))");
  EXPECT_EQ(expr("{for k, v in var.map : v => k...}"),
            "(for{} k v (trav var .map) (trav v) (trav k) ...)");
  EXPECT_EQ(expr("{\n  for az in var.zones :\n  az => cidrsubnet(var.cidr, 8, index(var.zones, "
                 "az))\n  if az != \"\"\n}"),
            "(for{} _ az (trav var .zones) (trav az) (call cidrsubnet (trav var .cidr) 8 (call "
            "index (trav var .zones) (trav az))) if (!= (trav az) (tmpl)))");
  // "for" alone is an ordinary variable.
  EXPECT_EQ(expr("[for]"), "(tuple (trav for))");
  EXPECT_THAT(expr("[for x of y : x]"), HasSubstr("expected \"in\""));
  EXPECT_THAT(expr("{for k, v in m : k}"), HasSubstr("expected \"=>\""));
  EXPECT_THAT(expr("[for x in y : x"), HasSubstr("expected \"]\" to close the for expression"));
}

TEST(ParseTemplates, QuotedEscapesAndInterpolation) {
  EXPECT_EQ(expr(R"("plain")"), R"((tmpl "plain"))");
  EXPECT_EQ(expr(R"("")"), "(tmpl)");
  EXPECT_EQ(expr(R"("a\nb\t\"q\" \\ \u00e9 \U0001F600")"),
            "(tmpl \"a\\nb\\t\\\"q\\\" \\\\ \xC3\xA9 \xF0\x9F\x98\x80\")");
  EXPECT_EQ(expr(R"("$${literal} %%{also}")"), R"((tmpl "${literal} %{also}"))");
  EXPECT_EQ(expr(R"("${var.name}-${count.index + 1}")"),
            "(tmpl (interp (trav var .name)) \"-\" (interp (+ (trav count .index) 1)))");
  EXPECT_EQ(expr(R"("${ {a = "}"}.a }")"), R"((tmpl (interp (rel (object (a (tmpl "}"))) .a))))");
  EXPECT_EQ(expr(R"("${"nested ${x}"}")"), R"((tmpl (interp (tmpl "nested " (interp (trav x))))))");
  EXPECT_THAT(expr(R"("bad \q")"), HasSubstr("test.hcl:1:6: invalid escape sequence \\q"));
  EXPECT_THAT(expr(R"("\u12")"), HasSubstr("needs 4 hexadecimal digits"));
  EXPECT_THAT(expr(R"("\uD800")"), HasSubstr("not a valid Unicode scalar value"));
  EXPECT_THAT(expr("\"open"), HasSubstr("test.hcl:1:1: unterminated string"));
  EXPECT_THAT(expr("\"a\nb\""), HasSubstr("a quoted string cannot span lines"));
  EXPECT_THAT(expr(R"("${x ]}")"), HasSubstr("expected \"}\" to close the interpolation"));
}

TEST(ParseTemplates, Directives) {
  EXPECT_EQ(expr(R"("%{ if var.on }yes%{ else }no%{ endif }")"),
            R"((tmpl (if (trav var .on) (then "yes") (else "no"))))");
  EXPECT_EQ(
      expr(R"("%{ for i, n in var.names }${i}=${n},%{ endfor }")"),
      R"((tmpl (for i n (trav var .names) (do (interp (trav i)) "=" (interp (trav n)) ","))))");
  EXPECT_EQ(expr(R"("%{if a}%{if b}x%{endif}%{endif}")"),
            R"((tmpl (if (trav a) (then (if (trav b) (then "x"))))))");
  EXPECT_THAT(expr(R"("%{ if a }x")"),
              HasSubstr("expected %{ endif } to close the %{ if } at line 1"));
  EXPECT_THAT(
      expr(R"("%{ if a }x%{ endfor }")"),
      HasSubstr("expected %{ endif } to close the %{ if } at line 1, but found %{ endfor }"));
  EXPECT_THAT(expr(R"("x%{ endif }")"), HasSubstr("%{ endif } has no matching opening directive"));
  EXPECT_THAT(expr(R"("%{ while x }")"), HasSubstr("unknown template directive \"while\""));
  EXPECT_THAT(expr(R"("%{ if a }%{ else }%{ else }%{ endif }")"),
              HasSubstr("expected %{ endif } to close the %{ if } at line 1, but found %{ else }"));
}

TEST(ParseTemplates, StripMarkers) {
  EXPECT_EQ(expr(R"("a   ${~ x ~}   b")"), R"((tmpl "a" (interp (trav x)) "b"))");
  EXPECT_EQ(expr(R"("a ${~x} b")"), R"((tmpl "a" (interp (trav x)) " b"))");
  EXPECT_EQ(expr("<<EOT\n%{ for x in xs ~}\n${x}\n%{ endfor ~}\nEOT\n"),
            R"((heredoc (for _ x (trav xs) (do (interp (trav x)) "\n"))))");
  EXPECT_EQ(expr("<<EOT\nitems:\n  %{~ if on ~}\n  on\n  %{~ endif }\nEOT\n"),
            R"((heredoc "items:" (if (trav on) (then "on")) "\n"))");
  EXPECT_THAT(expr("a ~ b"), HasSubstr("invalid character '~'"));
}

TEST(ParseTemplates, Heredocs) {
  EXPECT_EQ(expr("<<EOT\nhello\n  world\nEOT\n"), R"((heredoc "hello\n  world\n"))");
  EXPECT_EQ(expr("<<-EOT\n    hello\n      world\n\n    ${x}\n    EOT\n"),
            R"((heredoc "hello\n  world\n\n" (interp (trav x)) "\n"))");
  // A line that starts with an interpolation has no indentation to strip.
  EXPECT_EQ(expr("<<-EOT\n  a\n${x}\n  EOT"), R"((heredoc "  a\n" (interp (trav x)) "\n"))");
  // Heredocs take no backslash escapes, and the end marker may be indented.
  EXPECT_EQ(expr("<<EOF\nC:\\path \"quoted\" $${x}\n  EOF"),
            R"((heredoc "C:\\path \"quoted\" ${x}\n"))");
  EXPECT_EQ(expr("<<EOT\nEOTX\nEOT\n"), R"((heredoc "EOTX\n"))");
  EXPECT_EQ(expr("<<EOT\nEOT\n"), "(heredoc)");
  EXPECT_EQ(expr("<<EOT\r\nwin\r\nEOT\r\n"), "(heredoc \"win\r\\n\")");
  EXPECT_THAT(expr("<<EOT\nno end\n"),
              HasSubstr("test.hcl:1:1: unterminated heredoc: no line containing only \"EOT\""));
  EXPECT_THAT(expr("<<EOT x\nEOT\n"), HasSubstr("the marker <<EOT must be followed by a newline"));
  EXPECT_THAT(expr("<< EOT\nEOT\n"), HasSubstr("\"<<\" must be followed by an identifier"));

  auto file = parseFile("user_data.tf", R"(resource "aws_launch_template" "nodes" {
  user_data = base64encode(<<-EOT
    #cloud-config
    write_files:
      - path: /etc/kubernetes/labels
        content: ${jsonencode(var.node_labels)}
    EOT
  )
  name = "x"
}
)");
  ASSERT_TRUE(file.ok()) << file.status();
  const Body& body = file->body.blocks[0].body;
  ASSERT_EQ(body.attributes.size(), 2u);
  EXPECT_EQ(debugString(*body.attributes[0].expr),
            "(call base64encode (heredoc \"#cloud-config\\nwrite_files:\\n  - path: "
            "/etc/kubernetes/labels\\n    content: \" (interp (call jsonencode (trav var "
            ".node_labels))) \"\\n\"))");
  EXPECT_EQ(body.attributes[1].name_range.start.line, 9u);
}

TEST(ParseFile, Comments) {
  auto file = parseFile("c.tf", R"(# hash
a = 1 # trailing
// slashes
b = /* inline */ 2
/* block
   over lines */
c = "# not a comment // nor this"
)");
  ASSERT_TRUE(file.ok()) << file.status();
  ASSERT_EQ(file->body.attributes.size(), 3u);
  EXPECT_EQ(debugString(*file->body.attributes[1].expr), "2");
  EXPECT_EQ(debugString(*file->body.attributes[2].expr), R"((tmpl "# not a comment // nor this"))");
  EXPECT_EQ(fileError("a = 1 /* open\n"),
            "main.tf:1:7: unterminated comment: \"/*\" has no matching \"*/\"");
}

TEST(ParseFile, UnicodeIdentifiersAndColumns) {
  auto file = parseFile("u.tf", "locals {\n  café = \"é\"\n  名前 = local.café\n  Ω_1-x = 1\n}\n");
  ASSERT_TRUE(file.ok()) << file.status();
  const Body& body = file->body.blocks[0].body;
  ASSERT_EQ(body.attributes.size(), 3u);
  EXPECT_EQ(body.attributes[0].name, "café");
  EXPECT_EQ(body.attributes[1].name, "名前");
  EXPECT_EQ(debugString(*body.attributes[1].expr), "(trav local .café)");
  EXPECT_EQ(body.attributes[2].name, "Ω_1-x");
  // Columns count characters: "名前 = " is 5 characters but 9 bytes.
  EXPECT_EQ(body.attributes[1].expr->range().start.column, 8u);
  EXPECT_EQ(body.attributes[1].expr->range().start.byte, 35u);
  EXPECT_EQ(fileError("a = \"é\" ¤\n"), "main.tf:1:9: invalid character U+00A4");
  EXPECT_EQ(fileError("_ok = 1\n"), "");
  EXPECT_EQ(fileError("1abc = 1\n"),
            "main.tf:1:1: expected an argument or block definition, but found number 1");
}

TEST(ParseFile, InvalidUtf8IsReportedWithItsPosition) {
  EXPECT_EQ(fileError("a = 1\nb = \"\xC3\x28\"\n"),
            "main.tf:2:6: invalid UTF-8 encoding (byte 0xC3); HCL and JSON files must be UTF-8 "
            "text");
  EXPECT_THAT(fileError("x = \"\xED\xA0\x80\"\n"), HasSubstr("main.tf:1:6: invalid UTF-8"));
  EXPECT_THAT(fileError("x = \"\xC0\xAF\"\n"), HasSubstr("invalid UTF-8"));         // overlong
  EXPECT_THAT(fileError("x = \"\xF4\x90\x80\x80\"\n"), HasSubstr("invalid UTF-8")); // > U+10FFFF
  EXPECT_THAT(fileError("x = \"\xE2\x82\""), HasSubstr("invalid UTF-8"));           // truncated
}

TEST(ParseFile, NestingLimitIsAnErrorNotACrash) {
  const std::string deep_tuple = "a = " + std::string(100000, '[') + std::string(100000, ']');
  EXPECT_THAT(fileError(deep_tuple), HasSubstr("nesting is too deep: more than 256 levels"));

  std::string chain = "a = 1";
  for (int i = 0; i < 50000; ++i) {
    chain += " + 1";
  }
  EXPECT_THAT(fileError(chain), HasSubstr("nesting is too deep"));

  std::string blocks;
  for (int i = 0; i < 1000; ++i) {
    blocks += "b {\n";
  }
  EXPECT_THAT(fileError(blocks), HasSubstr("nesting is too deep"));

  const std::string deep_template = "a = " + std::string(3000, '"');
  EXPECT_FALSE(fileError(deep_template).empty());
  std::string nested_interp = "a = ";
  for (int i = 0; i < 1000; ++i) {
    nested_interp += "\"${";
  }
  EXPECT_THAT(fileError(nested_interp), HasSubstr("nesting is too deep"));

  // Within the limit, deep nesting parses.
  ParseOptions options;
  options.max_nesting_depth = 2000;
  const std::string ok = "a = " + std::string(200, '[') + std::string(200, ']');
  EXPECT_TRUE(parseFile("ok.tf", ok, options).ok());
}

TEST(ParseFile, ErrorsNameFileLineAndColumn) {
  EXPECT_EQ(fileError("variable \"x\" {\n  default = [1, 2\n}\n"),
            "main.tf:3:1: expected \",\" or \"]\" in the tuple, but found '}'");
  EXPECT_EQ(fileError("a = $\n"), "main.tf:1:5: invalid character '$'");
  EXPECT_EQ(fileError("a = ${x}\n"),
            "main.tf:1:5: a template interpolation (\"${\") is only valid inside a string");
  EXPECT_EQ(fileError("a = 1 &\n"), "main.tf:1:7: invalid character '&': did you mean \"&&\"?");
  EXPECT_EQ(fileError("a =\n"), "main.tf:1:4: expected the start of an expression, but found "
                                "newline");
}

TEST(ParseTemplate, BareTemplatesForJson) {
  auto t = parseTemplate("prefix-${var.name}-%{ if x }y%{ endif }", "a.tf.json");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(debugString(**t),
            R"((tmpl "prefix-" (interp (trav var .name)) "-" (if (trav x) (then "y"))))");
  auto escaped = parseTemplate("no \\n escapes, $${kept}", "a.tf.json");
  ASSERT_TRUE(escaped.ok());
  EXPECT_EQ(debugString(**escaped), R"((tmpl "no \\n escapes, ${kept}"))");
  auto empty = parseTemplate("", "a.tf.json");
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ(debugString(**empty), "(tmpl)");
  EXPECT_THAT(parseTemplate("${", "a.tf.json").status().message(),
              HasSubstr("a.tf.json:1:3: expected the start of an expression"));
}

TEST(References, FollowScopes) {
  auto e = parseExpression(
      "{ for k, v in var.m : k => [for x in v : x + local.n if x != each.key] }", "r.hcl");
  ASSERT_TRUE(e.ok()) << e.status();
  std::vector<std::string> names;
  for (const ScopeTraversalExpr* ref : references(**e)) {
    names.push_back(debugString(*ref));
  }
  EXPECT_THAT(names,
              ::testing::ElementsAre("(trav var .m)", "(trav local .n)", "(trav each .key)"));

  auto t = parseExpression("\"%{ for s in var.list }${s}${var.sep}%{ endfor }\"", "r.hcl");
  ASSERT_TRUE(t.ok());
  names.clear();
  for (const ScopeTraversalExpr* ref : references(**t)) {
    names.push_back(debugString(*ref));
  }
  EXPECT_THAT(names, ::testing::ElementsAre("(trav var .list)", "(trav var .sep)"));

  auto o = parseExpression("{ name = var.n, (var.k) = 1 }", "r.hcl");
  ASSERT_TRUE(o.ok());
  names.clear();
  for (const ScopeTraversalExpr* ref : references(**o)) {
    names.push_back(debugString(*ref));
  }
  EXPECT_THAT(names, ::testing::ElementsAre("(trav var .n)", "(trav var .k)"));
}

TEST(ParseExpression, StandaloneRejectsTrailingTokens) {
  EXPECT_THAT(expr("string number"),
              HasSubstr("extra characters after the expression: found identifier \"number\""));
  EXPECT_EQ(expr("\n object({\n  a = string\n  b = optional(number, 1)\n })\n"),
            "(call object (object (a (trav string)) (b (call optional (trav number) 1))))");
}

} // namespace
} // namespace captf::lint::hcl
