// crdgen: writes the CRDs of the seven kinds, their kustomization and the
// API reference, all from the type descriptions in manager/api.
//
//   crdgen <repository root>           write config/crd/bases/*.yaml,
//                                      config/crd/kustomization.yaml and
//                                      docs/reference/api.md
//   crdgen --check <repository root>   exit 1 if any of them differs
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <string_view>

#include "manager/api/crd.h"

namespace {

std::string readFile(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

bool writeFile(const std::filesystem::path& p, const std::string& content) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out << content;
  return static_cast<bool>(out);
}

} // namespace

int main(int argc, char** argv) {
  bool check = false;
  std::string dir;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg == "--check") {
      check = true;
    } else if (dir.empty()) {
      dir = arg;
    } else {
      dir.clear();
      break;
    }
  }
  if (dir.empty()) {
    std::fprintf(stderr, "usage: crdgen [--check] <repository root>\n");
    return 2;
  }
  const std::filesystem::path repo(dir);
  const std::filesystem::path root = repo / "config" / "crd";
  const auto crds = captf::api::allCrds();
  std::vector<std::pair<std::filesystem::path, std::string>> files;
  files.reserve(crds.size());
  for (const auto& crd : crds) {
    files.emplace_back(root / "bases" / captf::api::crdFileName(crd),
                       captf::api::renderCrdYaml(crd));
  }
  files.emplace_back(root / "kustomization.yaml", captf::api::renderKustomization(crds));
  files.emplace_back(repo / "docs" / "reference" / "api.md", captf::api::renderApiReference(crds));

  int status = 0;
  if (!check) {
    std::error_code ec;
    std::filesystem::create_directories(root / "bases", ec);
    std::filesystem::create_directories(repo / "docs" / "reference", ec);
  }
  for (const auto& [path, content] : files) {
    if (check) {
      if (readFile(path) != content) {
        std::fprintf(stderr, "crdgen: %s is out of date\n", path.c_str());
        status = 1;
      }
    } else if (!writeFile(path, content)) {
      std::fprintf(stderr, "crdgen: cannot write %s\n", path.c_str());
      status = 1;
    }
  }
  return status;
}
