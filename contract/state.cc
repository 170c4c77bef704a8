#include "contract/state.h"

#include <algorithm>
#include <charconv>
#include <cstddef>
#include <map>
#include <optional>

#include <zlib.h>

#include "contract/json_adapter.h"
#include "contract/strings.h"

namespace captf::contract {
namespace {

constexpr std::string_view kPartInfix = "-part-";

absl::Status inconsistent(std::string_view detail) {
  return absl::FailedPreconditionError(strCat("state chunks: ", detail));
}

absl::Status corrupt(std::string_view detail) {
  return absl::DataLossError(strCat("state: ", detail));
}

// "<base>-part-<n>" → n; nullopt when `name` is not of that form.
std::optional<std::size_t> partIndex(std::string_view base_name, std::string_view name) {
  if (!name.starts_with(base_name)) {
    return std::nullopt;
  }
  std::string_view rest = name.substr(base_name.size());
  if (!rest.starts_with(kPartInfix)) {
    return std::nullopt;
  }
  rest.remove_prefix(kPartInfix.size());
  if (rest.empty() || rest.front() == '0') {
    return std::nullopt;
  }
  std::size_t index = 0;
  const auto parsed = std::from_chars(rest.data(), rest.data() + rest.size(), index);
  if (parsed.ec != std::errc() || parsed.ptr != rest.data() + rest.size()) {
    return std::nullopt;
  }
  return index;
}

} // namespace

StateProblem stateProblem(const absl::Status& status) {
  switch (status.code()) {
  case absl::StatusCode::kFailedPrecondition:
    return StateProblem::kInconsistent;
  case absl::StatusCode::kUnimplemented:
    return StateProblem::kEncrypted;
  case absl::StatusCode::kDataLoss:
    return StateProblem::kCorrupt;
  default:
    return StateProblem::kNone;
  }
}

absl::StatusOr<std::vector<std::string>> orderChunks(std::string_view base_name,
                                                     std::vector<NamedChunk> chunks) {
  if (chunks.empty()) {
    return inconsistent("no chunk");
  }
  if (chunks.size() > kMaxStateChunks) {
    return inconsistent(strCat(chunks.size(), " chunks, over the limit of ", kMaxStateChunks));
  }
  std::map<std::size_t, std::string*> by_index;
  for (NamedChunk& chunk : chunks) {
    std::optional<std::size_t> index;
    if (chunk.name == base_name) {
      index = 0;
    } else {
      index = partIndex(base_name, chunk.name);
    }
    if (!index) {
      return inconsistent(strCat("Secret ", chunk.name, " is not a chunk of ", base_name));
    }
    if (!by_index.emplace(*index, &chunk.data).second) {
      return inconsistent(strCat("chunk ", *index, " appears twice"));
    }
  }
  std::vector<std::string> ordered;
  ordered.reserve(by_index.size());
  std::size_t expected = 0;
  for (auto& [index, data] : by_index) {
    if (index != expected) {
      return inconsistent(strCat("chunk ", expected, " is missing (have ", by_index.size(),
                                 " chunks up to ", by_index.rbegin()->first, ")"));
    }
    ordered.push_back(std::move(*data));
    ++expected;
  }
  return ordered;
}

absl::StatusOr<std::string> assembleState(std::span<const std::string> ordered_chunks) {
  if (ordered_chunks.empty()) {
    return inconsistent("no chunk");
  }
  if (ordered_chunks.size() > kMaxStateChunks) {
    return corrupt(strCat(ordered_chunks.size(), " chunks, over the limit of ", kMaxStateChunks));
  }
  z_stream stream{};
  // 15 window bits + 16: gzip framing only.
  if (inflateInit2(&stream, 15 + 16) != Z_OK) {
    return absl::InternalError("zlib: inflateInit2 failed");
  }
  struct Closer {
    z_stream* stream;
    ~Closer() { inflateEnd(stream); }
  } closer{&stream};

  std::string out;
  std::string buffer(std::size_t{256} * 1024, '\0');
  bool ended = false;
  std::size_t compressed = 0;
  for (std::size_t i = 0; i < ordered_chunks.size(); ++i) {
    const std::string& chunk = ordered_chunks[i];
    compressed += chunk.size();
    if (ended) {
      if (!chunk.empty()) {
        return corrupt(strCat("data after the end of the gzip stream (chunk ", i, ")"));
      }
      continue;
    }
    // zlib's next_in is not const-qualified.
    stream.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(chunk.data()));
    stream.avail_in = static_cast<uInt>(chunk.size());
    while (stream.avail_in > 0 && !ended) {
      stream.next_out = reinterpret_cast<Bytef*>(buffer.data());
      stream.avail_out = static_cast<uInt>(buffer.size());
      const int rc = inflate(&stream, Z_NO_FLUSH);
      const std::size_t produced = buffer.size() - stream.avail_out;
      if (out.size() + produced > kMaxStateBytes) {
        return corrupt(strCat("decompresses to more than ", kMaxStateBytes, " bytes"));
      }
      out.append(buffer.data(), produced);
      if (rc == Z_STREAM_END) {
        ended = true;
        if (stream.avail_in > 0) {
          return corrupt(strCat("data after the end of the gzip stream (chunk ", i, ")"));
        }
      } else if (rc == Z_BUF_ERROR && produced == 0) {
        break;
      } else if (rc != Z_OK && rc != Z_BUF_ERROR) {
        return corrupt(strCat("not a gzip stream (",
                              stream.msg != nullptr ? stream.msg : "zlib error", ", chunk ", i,
                              ")"));
      }
    }
  }
  if (!ended) {
    return corrupt(strCat("the gzip stream is truncated (", compressed, " compressed bytes in ",
                          ordered_chunks.size(), " chunks)"));
  }
  return out;
}

absl::StatusOr<StateSummary> inspectState(std::string_view state_json) {
  auto parsed = parseJson(state_json, "state");
  if (!parsed.ok()) {
    return corrupt(std::string(parsed.status().message()));
  }
  // A local value: GCC's -Wnull-dereference misfires on *std::move(parsed) bound
  // to a reference.
  const nlohmann::json state = *std::move(parsed);
  if (!state.is_object()) {
    return corrupt("not a JSON object");
  }
  const auto version = state.find("version");
  if (version == state.end()) {
    if (state.contains("encrypted_data")) {
      return absl::UnimplementedError(
          "state: encrypted by OpenTofu client-side state encryption, which is not supported");
    }
    return corrupt("no version field");
  }
  if (!version->is_number_integer() || version->get<std::int64_t>() != kSupportedStateVersion) {
    return corrupt(strCat("unsupported state version ", version->dump(), " (want ",
                          kSupportedStateVersion, ")"));
  }
  StateSummary summary;
  summary.version = kSupportedStateVersion;
  const auto serial = state.find("serial");
  if (serial == state.end() || !serial->is_number_integer() || serial->get<std::int64_t>() < 0) {
    return corrupt("serial is missing or not a non-negative integer");
  }
  summary.serial = serial->get<std::int64_t>();
  const auto lineage = state.find("lineage");
  if (lineage == state.end() || !lineage->is_string()) {
    return corrupt("lineage is missing or not a string");
  }
  summary.lineage = lineage->get<std::string>();
  if (const auto tf = state.find("terraform_version"); tf != state.end() && tf->is_string()) {
    summary.terraform_version = tf->get<std::string>();
  }
  if (const auto outputs = state.find("outputs"); outputs != state.end() && !outputs->is_null()) {
    if (!outputs->is_object()) {
      return corrupt("outputs is not an object");
    }
    summary.outputs = *outputs;
  }
  if (const auto resources = state.find("resources");
      resources != state.end() && !resources->is_null()) {
    if (!resources->is_array()) {
      return corrupt("resources is not a list");
    }
    for (const nlohmann::json& resource : *resources) {
      if (!resource.is_object()) {
        return corrupt("a resource is not an object");
      }
      const auto mode = resource.find("mode");
      if (mode != resource.end() && mode->is_string() &&
          mode->get_ref<const std::string&>() == "managed") {
        ++summary.managed_resources;
      }
    }
  }
  return summary;
}

} // namespace captf::contract
