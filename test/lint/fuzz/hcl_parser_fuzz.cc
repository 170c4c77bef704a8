// libFuzzer target for the HCL native-syntax and JSON readers. Every entry
// point that takes untrusted module text is driven with the same input; a
// successful parse is then walked the way the checks walk it.
//
//   cmake --preset fuzz && cmake --build build/fuzz --target captf_lint_hcl_parser_fuzz
//   build/fuzz/test/lint/captf_lint_hcl_parser_fuzz -dict=test/lint/fuzz/hcl.dict
//       -max_total_time=600 /tmp/corpus test/lint/fuzz/corpus   (one command line)
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "lint/hcl/json.h"
#include "lint/hcl/parser.h"

namespace {

using namespace captf::lint::hcl;

void exercise(const Expression& expr) {
  (void)debugString(expr);
  (void)references(expr);
}

void exercise(const Body& body) {
  forEachExpression(body, [](const Expression& e) { exercise(e); });
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  const std::string input(reinterpret_cast<const char*>(data), size);

  if (auto file = parseFile("fuzz.tf", input); file.ok()) {
    exercise(file->body);
  }
  if (auto expr = parseExpression(input, "fuzz.hcl"); expr.ok()) {
    exercise(**expr);
  }
  if (auto tmpl = parseTemplate(input, "fuzz.tf.json"); tmpl.ok()) {
    exercise(**tmpl);
  }
  if (auto json = parseJson(input, "fuzz.tf.json"); json.ok()) {
    (void)jsonToString(*json);
    if (auto expr = jsonToExpression(*json, "fuzz.tf.json"); expr.ok()) {
      exercise(**expr);
    }
  }
  return 0;
}
