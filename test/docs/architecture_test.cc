// The layering of docs/architecture.md, enforced: every first-party
// `#include "..."` of a product folder must name the folder itself or one
// that the page's table lists under "depends on". The table is the rule, so
// the page and the code cannot disagree; a new arrow is a new table entry
// (and, the page says, a decision record).
#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace captf::docs {
namespace {

namespace fs = std::filesystem;

// The first path segments of first-party includes. Generated protobuf code
// (`captf/runner/...`) belongs to contract/.
const std::vector<std::string> kRoots = {"contract/", "runner/",  "lint/",
                                         "webhooks/", "manager/", "captf/"};

struct Layering {
  // folder (e.g. "manager/kube/", or a file such as "manager/main.cc") ->
  // the folders it may include besides itself.
  std::map<std::string, std::set<std::string>> allowed;
};

std::vector<std::string> backticked(const std::string& cell) {
  std::vector<std::string> out;
  static const std::regex kTick("`([^`]+)`");
  for (std::sregex_iterator it(cell.begin(), cell.end(), kTick), end; it != end; ++it) {
    out.push_back((*it)[1]);
  }
  return out;
}

std::string asFolder(std::string path) {
  if (path.ends_with(".cc") || path.ends_with(".h") || path.ends_with('/')) {
    return path;
  }
  return path + "/";
}

// Reads the folder table of docs/architecture.md: rows whose first cell is a
// backticked product folder; the third cell lists what it depends on
// ("nothing first-party" and "—" list nothing).
Layering parseTable(const std::string& markdown) {
  Layering layering;
  std::istringstream in(markdown);
  for (std::string line; std::getline(in, line);) {
    if (!line.starts_with("| `")) {
      continue;
    }
    std::vector<std::string> cells;
    std::stringstream row(line.substr(1));
    for (std::string cell; std::getline(row, cell, '|');) {
      cells.push_back(cell);
    }
    if (cells.size() < 3) {
      continue;
    }
    const auto names = backticked(cells[0]);
    if (names.size() != 1) {
      continue;
    }
    const std::string folder = asFolder(names[0]);
    if (std::none_of(kRoots.begin(), kRoots.end(),
                     [&](const std::string& root) { return folder.starts_with(root); })) {
      continue; // config/, templates/, test/, bench/: not checked
    }
    std::set<std::string> deps;
    for (const std::string& dep : backticked(cells[2])) {
      deps.insert(asFolder(dep));
    }
    layering.allowed[folder] = deps;
  }
  return layering;
}

// The table folder that `path` belongs to: the longest that prefixes it.
std::string moduleOf(const Layering& layering, std::string path) {
  if (path.starts_with("captf/")) {
    path = "contract/" + path;
  }
  std::string best;
  for (const auto& [folder, deps] : layering.allowed) {
    if ((path == folder || (folder.ends_with('/') && path.starts_with(folder))) &&
        folder.size() > best.size()) {
      best = folder;
    }
  }
  return best;
}

struct Violation {
  std::string file;
  std::string include;
  bool operator==(const Violation&) const = default;
};

// Every first-party include of `files` (path -> contents) that crosses a
// forbidden arrow, or that names a folder the table does not know.
std::vector<Violation> violations(const Layering& layering,
                                  const std::map<std::string, std::string>& files) {
  std::vector<Violation> out;
  static const std::regex kInclude(R"re(^\s*#\s*include\s+"([^"]+)")re");
  for (const auto& [file, contents] : files) {
    const std::string from = moduleOf(layering, file);
    if (from.empty()) {
      continue;
    }
    std::istringstream in(contents);
    for (std::string line; std::getline(in, line);) {
      std::smatch m;
      if (!std::regex_search(line, m, kInclude)) {
        continue;
      }
      const std::string include = m[1];
      if (std::none_of(kRoots.begin(), kRoots.end(),
                       [&](const std::string& root) { return include.starts_with(root); })) {
        continue; // third-party
      }
      const std::string to = moduleOf(layering, include);
      const auto& deps = layering.allowed.at(from);
      // A dependency may name a folder or one header of it.
      if (to.empty() || (to != from && !deps.contains(to) && !deps.contains(include))) {
        out.push_back({file, include});
      }
    }
  }
  return out;
}

std::string readFile(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream buf;
  buf << in.rdbuf();
  return buf.str();
}

fs::path sourceDir() {
  const char* dir = std::getenv("CAPTF_SOURCE_DIR");
  return dir != nullptr ? fs::path(dir) : fs::path(".");
}

TEST(ArchitectureTest, EveryIncludeFollowsTheArrowsOfTheFolderTable) {
  const Layering layering = parseTable(readFile(sourceDir() / "docs/architecture.md"));
  ASSERT_TRUE(layering.allowed.contains("contract/"));
  ASSERT_TRUE(layering.allowed.contains("manager/kube/"));
  EXPECT_TRUE(layering.allowed.at("contract/").empty()) << "contract knows nobody";
  std::map<std::string, std::string> files;
  for (const char* root : {"contract", "runner", "lint", "webhooks", "manager"}) {
    for (const auto& entry : fs::recursive_directory_iterator(sourceDir() / root)) {
      const std::string ext = entry.path().extension().string();
      if (entry.is_regular_file() && (ext == ".cc" || ext == ".h")) {
        files[fs::relative(entry.path(), sourceDir()).generic_string()] = readFile(entry.path());
      }
    }
  }
  ASSERT_GT(files.size(), 100U);
  for (const auto& [file, contents] : files) {
    EXPECT_NE(moduleOf(layering, file), "") << file << " is in no folder of docs/architecture.md";
  }
  for (const Violation& v : violations(layering, files)) {
    ADD_FAILURE() << v.file << " includes \"" << v.include << "\": " << moduleOf(layering, v.file)
                  << " may not depend on " << moduleOf(layering, v.include)
                  << " (docs/architecture.md)";
  }
}

// The checker itself, on a table and files made up here.
TEST(ArchitectureTest, ForbiddenArrowsAreFound) {
  const Layering layering = parseTable(R"(
| folder | holds | depends on |
|---|---|---|
| `contract/` | the contract | nothing first-party |
| `runner/` | the runner | `contract` |
| `manager/kube/` | the client runtime | `contract/strings.h` (header-only) |
| `manager/api/` | types | `contract` |
| `manager/main.cc` | the executable | `manager/kube`, `manager/api` |
| `test/` | tests | everything |
)");
  EXPECT_EQ(layering.allowed.size(), 5U);
  const std::map<std::string, std::string> files = {
      {"contract/a.cc", "#include \"contract/b.h\"\n#include \"captf/runner/v1/x.pb.h\"\n"
                        "#include <vector>\n#include \"absl/status/status.h\"\n"},
      {"runner/r.cc", "#include \"contract/a.h\"\n#include \"manager/kube/client.h\"\n"},
      {"manager/kube/k.h", "  #  include \"manager/api/types.h\"\n"},
      {"manager/kube/s.cc", "#include \"contract/strings.h\"\n#include \"contract/roles.h\"\n"},
      {"manager/api/t.cc", "#include \"manager/api/x.h\"\n#include \"contract/roles.h\"\n"},
      {"manager/main.cc", "#include \"manager/kube/k.h\"\n#include \"runner/r.h\"\n"},
      {"manager/unknown/u.cc", "#include \"manager/kube/k.h\"\n"},
  };
  EXPECT_THAT(violations(layering, files),
              ::testing::UnorderedElementsAre(Violation{"runner/r.cc", "manager/kube/client.h"},
                                              Violation{"manager/kube/k.h", "manager/api/types.h"},
                                              Violation{"manager/kube/s.cc", "contract/roles.h"},
                                              Violation{"manager/main.cc", "runner/r.h"}));
}

} // namespace
} // namespace captf::docs
