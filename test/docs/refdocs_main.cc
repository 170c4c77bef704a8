// captf_refdocs: writes the generated reference pages (reference_pages.h)
// into a checkout.
//   captf_refdocs [SOURCE_DIR]     regenerate docs/reference/{flags,metrics,
//                                  conditions,events}.md under SOURCE_DIR
//                                  (default $CAPTF_SOURCE_DIR, else .)
// Exits 1 with the reason when the code and the catalogues disagree; then
// no page is written.
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "test/docs/reference_pages.h"

int main(int argc, char** argv) {
  namespace fs = std::filesystem;
  fs::path source = ".";
  if (argc > 1) {
    source = argv[1];
  } else if (const char* dir = std::getenv("CAPTF_SOURCE_DIR"); dir != nullptr) {
    source = dir;
  }
  auto pages = captf::docs::referencePages(source);
  if (!pages.ok()) {
    std::cerr << "captf_refdocs: " << pages.status().message() << "\n";
    return 1;
  }
  for (const captf::docs::ReferencePage& page : *pages) {
    const fs::path path = source / page.path;
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << page.contents;
    if (!out) {
      std::cerr << "captf_refdocs: cannot write " << path << "\n";
      return 1;
    }
    std::cout << "wrote " << page.path << "\n";
  }
  return 0;
}
