// The replay driver of the libFuzzer targets in builds without libFuzzer
// (every preset but `fuzz`): feeds the empty input and every regular file
// under the paths on the command line, in name order, to
// LLVMFuzzerTestOneInput once each, so that every target compiles with the
// product and its corpus stays crash-free under the sanitizers of the build.
// Fails when the paths hold no input at all (a corpus that went missing).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

void feed(const std::string& input) {
  LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(input.data()), input.size());
}

} // namespace

int main(int argc, char** argv) {
  namespace fs = std::filesystem;
  std::vector<fs::path> inputs;
  for (int i = 1; i < argc; ++i) {
    const fs::path path(argv[i]);
    if (fs::is_directory(path)) {
      for (const auto& entry : fs::recursive_directory_iterator(path)) {
        if (entry.is_regular_file()) {
          inputs.push_back(entry.path());
        }
      }
    } else if (fs::is_regular_file(path)) {
      inputs.push_back(path);
    } else {
      std::fprintf(stderr, "fuzz replay: %s: no such file or directory\n", argv[i]);
      return 2;
    }
  }
  if (inputs.empty()) {
    std::fprintf(stderr, "fuzz replay: no corpus input under the given paths\n");
    return 2;
  }
  std::sort(inputs.begin(), inputs.end());
  feed("");
  for (const fs::path& path : inputs) {
    std::ifstream in(path, std::ios::binary);
    feed(std::string(std::istreambuf_iterator<char>(in), {}));
  }
  std::printf("fuzz replay: %zu inputs and the empty one, no crash\n", inputs.size());
  return 0;
}
