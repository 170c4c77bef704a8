// libFuzzer target: state Secrets are untrusted input (anyone who can write
// Secrets in a tenant namespace can write them). The bytes are used twice:
// as gzip chunk payloads of an object's state Secrets (the first byte picks
// the number of chunks), and, when they parse as a JSON array, as the Secret
// objects themselves (read as state and as backups). Nothing may crash,
// hang, leak or allocate without bound. Inputs go up to 1 MiB, a chunk's
// size (LLVMFuzzerInitialize below), so that a gzip bomb fits. Built only
// with Clang (-fsanitize=fuzzer); see CMakeLists.txt.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "contract/digest.h"
#include "contract/json_adapter.h"
#include "manager/workspace/backups.h"
#include "manager/workspace/outputs.h"
#include "manager/workspace/state.h"
#include "test/fuzz_check.h"

namespace {

constexpr std::string_view kSuffix = "0123456789abcdef-m";

nlohmann::json chunkSecret(std::size_t index, std::string_view payload) {
  return {{"metadata",
           {{"name", captf::workspace::stateChunkName(kSuffix, index)},
            {"labels", {{"tfstateSecretSuffix", kSuffix}}}}},
          {"data", {{"tfstate", captf::contract::base64Encode(payload)}}}};
}

void exercise(const std::vector<nlohmann::json>& secrets) {
  const captf::workspace::ReadState read = captf::workspace::readState(kSuffix, secrets);
  if (read.status == captf::workspace::StateStatus::kRead) {
    static_cast<void>(captf::workspace::decodeClusterOutputs(read.summary.outputs));
    static_cast<void>(captf::workspace::decodeMachineOutputs(read.summary.outputs, "a", "b", true));
    static_cast<void>(captf::workspace::decodeMachinePoolOutputs(read.summary.outputs));
  }
  const auto sets = captf::workspace::listBackups(kSuffix, secrets);
  static_cast<void>(captf::workspace::backupsToPrune(sets, 2));
  static_cast<void>(captf::workspace::findRestoreBackup("1", sets));
}

} // namespace

// Without a -max_len of its own, a run gets -max_len=1048576 (libFuzzer's default, 4096, is far
// below a 1 MiB state chunk).
// NOLINTNEXTLINE(readability-identifier-naming): the name libFuzzer looks for.
extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv) {
  captf::fuzz::defaultMaxLen(argc, argv, 1048576);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  if (!bytes.empty()) {
    const std::size_t pieces = static_cast<unsigned char>(bytes.front()) % 4 + 1;
    const std::string_view rest = bytes.substr(1);
    const std::size_t piece = rest.size() / pieces + 1;
    std::vector<nlohmann::json> secrets;
    for (std::size_t i = 0; i < pieces; ++i) {
      const std::size_t at = std::min(i * piece, rest.size());
      secrets.push_back(chunkSecret(i, rest.substr(at, piece)));
    }
    exercise(secrets);
  }
  auto parsed = captf::contract::parseJson(bytes, "fuzz");
  if (parsed.ok() && parsed->is_array()) {
    // Moved, not copied: a copy of a deeply nested input recurses.
    exercise(std::vector<nlohmann::json>(std::make_move_iterator(parsed->begin()),
                                         std::make_move_iterator(parsed->end())));
  }
  return 0;
}
