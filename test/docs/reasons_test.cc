// The reasons docs/reference/conditions.md and docs/reference/events.md list
// are the ones the code sets, both ways: a documented reason that nothing
// sets or emits misleads whoever writes an alert or a runbook for it, and a
// reason the code sets that the pages do not list is unexplained. The pages
// are parsed as a reader sees them; the code is read from manager/ and
// webhooks/ under CAPTF_SOURCE_DIR.
#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "test/docs/reference_pages.h"

namespace captf::docs {
namespace {

namespace fs = std::filesystem;
using ::testing::ElementsAre;
using ::testing::IsEmpty;
using ::testing::UnorderedElementsAre;

// Documented but deliberately not set yet, each with why. Keep it short: an
// entry is a promise the code has not kept.
const std::map<std::string, std::string>& notYetSet() {
  static const auto* allowed = new std::map<std::string, std::string>{};
  return *allowed;
}

fs::path repoDir() {
  const char* dir = std::getenv("CAPTF_SOURCE_DIR");
  return dir != nullptr ? fs::path(dir) : fs::path(".");
}

std::string slurp(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream buf;
  buf << in.rdbuf();
  return buf.str();
}

// The backquoted reason of each table row that `row` matches (conditions.md:
// `| False | \`Reason\` | ...`; events.md: `| \`Reason\` | Warning | ...`).
std::set<std::string> tableReasons(const std::string& page, const std::regex& row) {
  std::set<std::string> out;
  std::istringstream lines(page);
  for (std::string line; std::getline(lines, line);) {
    std::smatch m;
    if (std::regex_search(line, m, row)) {
      out.insert(m[1]);
    }
  }
  return out;
}

std::set<std::string> documentedConditionReasons(const std::string& page) {
  static const std::regex kRow(R"re(^\| (?:True|False|Unknown) \| `(\w+)` \|)re");
  return tableReasons(page, kRow);
}

std::set<std::string> documentedEventReasons(const std::string& page) {
  static const std::regex kRow(R"re(^\| `(\w+)` \| (?:Normal|Warning))re");
  return tableReasons(page, kRow);
}

// manager/ and webhooks/ sources (.cc and .h) without manager/api/conditions.h,
// where the constants are only defined.
std::map<std::string, std::string> codeSources() {
  std::map<std::string, std::string> sources;
  for (const char* root : {"manager", "webhooks"}) {
    for (const auto& entry : fs::recursive_directory_iterator(repoDir() / root)) {
      const std::string ext = entry.path().extension().string();
      if (!entry.is_regular_file() || (ext != ".cc" && ext != ".h")) {
        continue;
      }
      const std::string relative = fs::relative(entry.path(), repoDir()).generic_string();
      if (relative != "manager/api/conditions.h") {
        sources[relative] = withoutComments(slurp(entry.path()));
      }
    }
  }
  return sources;
}

// Whether the code uses `reason` other than to compare with it: its string
// literal anywhere, or a conditions.h constant of that value named other
// than next to == or !=. Reasons reach a condition or an Event through
// helpers (gitReason(), stateEventReason(), a kind's waiting reason), which
// a call-site scan cannot follow.
bool usedInCode(const std::string& reason, const std::map<std::string, std::string>& sources,
                const std::map<std::string, std::string>& constants) {
  std::vector<std::string> names;
  for (const auto& [name, value] : constants) {
    if (value == reason) {
      names.push_back(name);
    }
  }
  const std::string literal = "\"" + reason + "\"";
  const auto word = [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_';
  };
  const auto comparison = [](std::string_view two) { return two == "==" || two == "!="; };
  for (const auto& [file, text] : sources) {
    if (text.find(literal) != std::string::npos) {
      return true;
    }
    for (const std::string& name : names) {
      for (size_t at = text.find(name); at != std::string::npos; at = text.find(name, at + 1)) {
        const size_t end = at + name.size();
        if ((at > 0 && word(text[at - 1])) || (end < text.size() && word(text[end]))) {
          continue; // part of a longer name
        }
        size_t before = at;
        while (before > 0 && (word(text[before - 1]) || text[before - 1] == ':')) {
          --before; // the qualifier (cond::, api::conditions::)
        }
        while (before > 0 && std::isspace(static_cast<unsigned char>(text[before - 1])) != 0) {
          --before;
        }
        size_t after = end;
        while (after < text.size() && std::isspace(static_cast<unsigned char>(text[after])) != 0) {
          ++after;
        }
        const std::string_view view(text);
        const bool compared = (before >= 2 && comparison(view.substr(before - 2, 2))) ||
                              (after + 2 <= text.size() && comparison(view.substr(after, 2)));
        if (!compared) {
          return true;
        }
      }
    }
  }
  return false;
}

class ReasonsTest : public ::testing::Test {
protected:
  void SetUp() override {
    conditions_page_ = slurp(repoDir() / "docs/reference/conditions.md");
    events_page_ = slurp(repoDir() / "docs/reference/events.md");
    constants_ = stringConstants(slurp(repoDir() / "manager/api/conditions.h"));
    ASSERT_FALSE(conditions_page_.empty()) << "set CAPTF_SOURCE_DIR to the repository";
    ASSERT_FALSE(constants_.empty());
    sources_ = codeSources();
  }

  // The sources that set conditions: manager/api/ only defines them (its
  // EnumNames tables pair each status with its name).
  std::map<std::string, std::string> settingSources() const {
    std::map<std::string, std::string> out;
    for (const auto& [file, text] : sources_) {
      if (!file.starts_with("manager/api/")) {
        out.emplace(file, text);
      }
    }
    return out;
  }

  std::string conditions_page_;
  std::string events_page_;
  std::map<std::string, std::string> constants_;
  std::map<std::string, std::string> sources_;
};

TEST_F(ReasonsTest, EveryDocumentedConditionReasonIsSetByTheCode) {
  const std::set<std::string> documented = documentedConditionReasons(conditions_page_);
  ASSERT_GT(documented.size(), 50U) << "the conditions page no longer parses";
  const ConditionReasonSites set = scanConditionReasons(settingSources(), constants_);
  std::vector<std::string> never;
  for (const std::string& reason : documented) {
    if (!set.reasons.contains(reason) && !usedInCode(reason, sources_, constants_) &&
        !notYetSet().contains(reason)) {
      never.push_back(reason);
    }
  }
  EXPECT_THAT(never, IsEmpty())
      << "docs/reference/conditions.md lists condition reasons the code never sets: set them, "
         "or remove them from manager/api/conditions.h and the catalogue of "
         "test/docs/reference_pages.cc";
}

TEST_F(ReasonsTest, EveryConditionReasonTheCodeSetsIsDocumented) {
  const std::set<std::string> documented = documentedConditionReasons(conditions_page_);
  const ConditionReasonSites set = scanConditionReasons(settingSources(), constants_);
  ASSERT_GT(set.reasons.size(), 40U) << "the scan finds no condition reasons any more";
  std::vector<std::string> undocumented;
  for (const auto& [reason, files] : set.reasons) {
    if (!documented.contains(reason)) {
      undocumented.push_back(reason + " (" + *files.begin() + ")");
    }
  }
  EXPECT_THAT(undocumented, IsEmpty())
      << "condition reasons set in the code that docs/reference/conditions.md does not list: "
         "give each a constant in manager/api/conditions.h and describe it in the catalogue of "
         "test/docs/reference_pages.cc";
}

TEST_F(ReasonsTest, EveryDocumentedEventReasonIsEmittedByTheCode) {
  const std::set<std::string> documented = documentedEventReasons(events_page_);
  ASSERT_GT(documented.size(), 50U) << "the events page no longer parses";
  std::set<std::string> emitted;
  for (const EventSite& site : scanEventSites(sources_, constants_)) {
    emitted.insert(site.reasons.begin(), site.reasons.end());
  }
  std::vector<std::string> never;
  for (const std::string& reason : documented) {
    if (!emitted.contains(reason) && !usedInCode(reason, sources_, constants_) &&
        !notYetSet().contains(reason)) {
      never.push_back(reason);
    }
  }
  EXPECT_THAT(never, IsEmpty()) << "docs/reference/events.md lists Event reasons no code emits";
}

TEST_F(ReasonsTest, EveryEventReasonTheCodeEmitsIsDocumented) {
  const std::set<std::string> documented = documentedEventReasons(events_page_);
  std::vector<std::string> undocumented;
  size_t sites = 0;
  for (const EventSite& site : scanEventSites(sources_, constants_)) {
    ++sites;
    for (const std::string& reason : site.reasons) {
      if (!documented.contains(reason)) {
        undocumented.push_back(reason + " (" + site.file + ")");
      }
    }
  }
  ASSERT_GT(sites, 50U) << "the scan finds no Event calls any more";
  EXPECT_THAT(undocumented, IsEmpty())
      << "Event reasons emitted in the code that docs/reference/events.md does not list: "
         "describe them in eventCatalogue() of test/docs/reference_pages.cc and regenerate";
}

// The allowlist holds only documented reasons that are still unset: one the
// code sets since is taken off.
TEST_F(ReasonsTest, TheNotYetSetListHoldsOnlyUnsetDocumentedReasons) {
  const std::set<std::string> conditions = documentedConditionReasons(conditions_page_);
  const std::set<std::string> events = documentedEventReasons(events_page_);
  const ConditionReasonSites set = scanConditionReasons(settingSources(), constants_);
  for (const auto& [reason, where] : notYetSet()) {
    EXPECT_TRUE(conditions.contains(reason) || events.contains(reason)) << reason;
    EXPECT_FALSE(set.reasons.contains(reason) || usedInCode(reason, sources_, constants_))
        << reason << " is set now: take it off notYetSet()";
  }
}

// The pieces, on text made up here.
TEST(ReasonScanTest, TablesParseAsTheyRender) {
  EXPECT_THAT(documentedConditionReasons("## Paused\n\n| Status | Reason | Meaning |\n|---|---|"
                                         "---|\n| True | `Paused` | |\n| False | `NotPaused` | "
                                         "x |\n| [Ready](#ready) | normal | y |\n"),
              UnorderedElementsAre("Paused", "NotPaused"));
  EXPECT_THAT(documentedEventReasons("| Reason | Type | Meaning | Emitted in |\n|---|---|---|---|\n"
                                     "| `JobCreated` | Normal | a Job | `a.cc` |\n"
                                     "| `ConditionChanged` | Normal, Warning | b | `b.cc` |\n"),
              UnorderedElementsAre("JobCreated", "ConditionChanged"));
}

TEST(ReasonScanTest, ConditionScanFindsArgumentsAfterAStatusAndReasonLiterals) {
  const std::map<std::string, std::string> sources = {{"a.cc", withoutComments(R"src(
void f() {
  pass.set(cond::kPaused, ConditionStatus::kTrue, cond::kReasonPaused, "");
  // pass.set(cond::kPaused, ConditionStatus::kTrue, "InAComment", "(it's");
  out.push_back(ConditionUpdate{cond::kReady, api::ConditionStatus::kFalse,
                                ok ? "Literal" : cond::kReasonNotPaused, msg(a, b)});
  x = found ? HealthCondition{api::ConditionStatus::kTrue, "Healthy", ""} : other;
  setCondition(list, type, found ? ConditionStatus::kTrue : ConditionStatus::kFalse, reasonOf(s));
  if (c->status == ConditionStatus::kTrue && c->reason == "Compared") {}
  condition.reason = "Assigned";
}
)src")}};
  const ConditionReasonSites found = scanConditionReasons(
      sources, {{"kReasonPaused", "Paused"}, {"kReasonNotPaused", "NotPaused"}});
  std::vector<std::string> reasons;
  reasons.reserve(found.reasons.size());
  for (const auto& [reason, files] : found.reasons) {
    reasons.push_back(reason);
  }
  EXPECT_THAT(reasons, ElementsAre("Assigned", "Healthy", "Literal", "NotPaused", "Paused"));
  EXPECT_THAT(found.indirect, ElementsAre("reasonOf(s)"));
}

TEST(ReasonScanTest, AConstantOnlyComparedIsNotUsed) {
  const std::map<std::string, std::string> constants = {{"kReasonA", "A"}, {"kReasonB", "B"}};
  const std::map<std::string, std::string> sources = {
      {"a.cc", "if (r == cond::kReasonA || cond::kReasonA != r) {}\nreturn cond::kReasonB;\n"}};
  EXPECT_FALSE(usedInCode("A", sources, constants));
  EXPECT_TRUE(usedInCode("B", sources, constants));
  EXPECT_TRUE(usedInCode("C", {{"b.cc", "set(\"C\");"}}, constants));
  EXPECT_FALSE(usedInCode("C", {{"b.cc", "set(\"CC\");"}}, constants));
}

} // namespace
} // namespace captf::docs
