// The generated reference pages are the checked-in ones, and the generator
// finds what it claims to find (docs/decisions/docs-site.md).
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "test/docs/reference_pages.h"

namespace captf::docs {
namespace {

namespace fs = std::filesystem;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::UnorderedElementsAre;

fs::path sourceDir() {
  const char* dir = std::getenv("CAPTF_SOURCE_DIR");
  return dir != nullptr ? fs::path(dir) : fs::path(".");
}

std::string readFile(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream buf;
  buf << in.rdbuf();
  return buf.str();
}

TEST(ReferencePagesTest, CheckedInPagesAreWhatTheCodeGenerates) {
  auto pages = referencePages(sourceDir());
  ASSERT_TRUE(pages.ok()) << pages.status().message();
  ASSERT_EQ(pages->size(), 4U);
  for (const ReferencePage& page : *pages) {
    const std::string checked_in = readFile(sourceDir() / page.path);
    EXPECT_TRUE(checked_in == page.contents)
        << page.path << " differs from what the code generates; regenerate with `" << kRegenerate
        << "` and commit the result";
  }
}

TEST(ReferencePagesTest, FlagsPageListsTheManagersFlagsWithDefaults) {
  const std::string page = flagsPage();
  EXPECT_THAT(page, HasSubstr("| `--sync-period` | duration | `10m0s` |"));
  EXPECT_THAT(page, HasSubstr("| `--leader-elect` | bool | `false` |"));
  EXPECT_THAT(page, HasSubstr("| `-v`, `--v` |"));
  EXPECT_THAT(page, HasSubstr("watch-filter=&lt;value&gt;"));
}

TEST(ReferencePagesTest, MetricsPageHasEveryLayersFamilies) {
  auto page = metricsPage();
  ASSERT_TRUE(page.ok()) << page.status().message();
  for (const char* family :
       {"| `captf_jobs_total` | counter | `kind`, `op`, `result` | alpha |",
        "| `captf_jobs_active` | gauge |", "| `captf_run_report_rejections_total` | counter |",
        "| `controller_runtime_reconcile_total` | counter |", "| `workqueue_depth` | gauge |",
        "| `rest_client_requests_total` | counter |", "| `captf_cache_objects` | gauge |"}) {
    EXPECT_THAT(*page, HasSubstr(family));
  }
}

TEST(ReferencePagesTest, ConditionConstantsWithoutDescriptionFailGeneration) {
  const std::string header = readFile(sourceDir() / "manager/api/conditions.h");
  ASSERT_TRUE(conditionsPage(header).ok());
  auto page = conditionsPage(header + "\ninline constexpr std::string_view kReasonBrandNew = "
                                      "\"BrandNew\";\n");
  ASSERT_FALSE(page.ok());
  EXPECT_THAT(std::string(page.status().message()), HasSubstr("kReasonBrandNew"));
}

TEST(ReferencePagesTest, StringConstantsSpanLines) {
  EXPECT_EQ(stringConstants("inline constexpr std::string_view kA = \"A\";\n"
                            "inline constexpr std::string_view kLong =\n    \"Long\";\n"),
            (std::map<std::string, std::string>{{"kA", "A"}, {"kLong", "Long"}}));
}

// The scanner on sources made up here.
TEST(ReferencePagesTest, EventScanFindsLiteralsTernariesConstantsAndExpressions) {
  const std::map<std::string, std::string> sources = {{"a.cc", R"src(
void Pass::event(kube::EventType type, std::string_view reason, const std::string& note);
void f() {
  pass.event(kube::EventType::kNormal, "JobCreated", "Job " + name + " (a, b)");
  deps_.events.event(*object, found ? kube::EventType::kNormal : kube::EventType::kWarning,
                     found ? "SecretFound" : "SecretNotFound", "Resolve", "x");
  pass.event(kube::EventType::kWarning, cond::kReasonOutputsInvalid, message);
  pass.event(kube::EventType::kWarning, reasonOf(status), message);
  events->event(object, type, reason, "Reconcile", note);
  makeEvent(x, EventType::kNormal, "NotACall");
}
)src"}};
  const auto sites = scanEventSites(sources, {{"kReasonOutputsInvalid", "OutputsInvalid"}});
  ASSERT_EQ(sites.size(), 4U);
  EXPECT_THAT(sites[0].reasons, ElementsAre("JobCreated"));
  EXPECT_THAT(sites[0].types, ElementsAre("Normal"));
  EXPECT_THAT(sites[1].reasons, UnorderedElementsAre("SecretFound", "SecretNotFound"));
  EXPECT_THAT(sites[1].types, UnorderedElementsAre("Normal", "Warning"));
  EXPECT_THAT(sites[2].reasons, ElementsAre("OutputsInvalid"));
  EXPECT_THAT(sites[3].reasons, IsEmpty());
  EXPECT_THAT(sites[3].indirect, ElementsAre("reasonOf(status)"));
}

TEST(ReferencePagesTest, EventReasonsTheCatalogueLacksFailGeneration) {
  const std::string header = readFile(sourceDir() / "manager/api/conditions.h");
  auto page = eventsPage(
      {{"manager/x.cc", R"(void f() { pass.event(kube::EventType::kNormal, "BrandNew", ""); })"},
       {"manager/y.cc", "void g() { pass.event(kube::EventType::kNormal, pick(), \"\"); }"}},
      header);
  ASSERT_FALSE(page.ok());
  const std::string message(page.status().message());
  EXPECT_THAT(message, HasSubstr("Event reason BrandNew (manager/x.cc)"));
  EXPECT_THAT(message, HasSubstr("the reason `pick()` of an Event in manager/y.cc"));
  // ... and the catalogue's reasons that these sources do not emit.
  EXPECT_THAT(message, HasSubstr("lists JobCreated, which no event(...) call emits"));
}

} // namespace
} // namespace captf::docs
